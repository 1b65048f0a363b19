package repotest

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/dpsim/dpsim/"

// goPackage is what `go list -json` says of one package (the fields the layout rules need).
type goPackage struct {
	ImportPath string
	Dir        string
	Name       string
	Imports    []string // direct, non-test
	Deps       []string // transitive, non-test
	GoFiles    []string
}

// listPackages runs `go list -json -deps=false ./...` at the repository root.
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(out)
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: the listing went wrong", len(pkgs))
	}
	return pkgs
}

func rel(path string) string { return strings.TrimPrefix(path, module) }

// The layout (CONTRIBUTING.md): command packages are thin and independent, pkg/bus is the only
// door to NATS, the wire format (pkg/wire) and its readers (pkg/contract, pkg/schema) need no
// NATS, the report reads metrics without the machine, the launcher is a library under the
// commands, not one of them, the vocabulary is a leaf and the machine needs no transport.
func TestImportRules(t *testing.T) {
	for _, p := range listPackages(t) {
		me := rel(p.ImportPath)
		for _, dep := range p.Deps {
			d := rel(dep)
			if strings.HasPrefix(me, "internal/cmd/") && strings.HasPrefix(d, "internal/cmd/") {
				t.Errorf("%s depends on the command package %s: commands import libraries, not each other", me, d)
			}
			if me == "pkg/report" && d == "pkg/sim" {
				t.Errorf("pkg/report depends on the machine (pkg/sim): it reads pkg/metrics only")
			}
			if strings.HasPrefix(d, "internal/cmd/") && !strings.HasPrefix(me, "internal/cmd/") && !strings.HasPrefix(me, "cmd/") {
				t.Errorf("%s depends on the command package %s: libraries never import a command (only the binaries in cmd/ list them)", me, d)
			}
			if (me == "internal/launch" || me == "internal/farm") && (d == "pkg/report" || d == "pkg/engine") {
				t.Errorf("%s depends on %s: the launcher and the farm fill the run's record (pkg/record) and play what they are given; the report and the engine are the run library's (internal/runner)", me, d)
			}
			if me == "pkg/endpoint" && strings.HasPrefix(dep, module) {
				t.Errorf("pkg/endpoint depends on %s: the vocabulary is a leaf every layer can use", d)
			}
			if (me == "pkg/sim" || me == "pkg/trace" || me == "pkg/metrics" || me == "pkg/engine") && d == "pkg/bus" {
				t.Errorf("%s depends on pkg/bus: the machine and the engines run without a transport", me)
			}
			if (me == "pkg/wire" || me == "pkg/contract" || me == "pkg/schema") && (d == "pkg/bus" || strings.HasPrefix(dep, "github.com/nats-io/")) {
				t.Errorf("%s depends on %s: the wire format, and what only reads or writes messages, need no NATS", me, d)
			}
		}
		if me == "pkg/record" {
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, module) && !recordHomes[rel(imp)] {
					t.Errorf("pkg/record imports %s: the run's record is plain data low in the house (it imports only %v)", rel(imp), recordHomeList())
				}
			}
		}
		if me == "pkg/bus" {
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/nats-io/") {
				t.Errorf("%s imports %s: only pkg/bus talks to NATS", me, imp)
			}
		}
	}
}

// Every package says its one concern in a doc.go.
func TestEveryPackageHasDoc(t *testing.T) {
	for _, p := range listPackages(t) {
		me := rel(p.ImportPath)
		if p.Name == "main" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(p.Dir, "doc.go"))
		if err != nil {
			t.Errorf("%s: no doc.go saying the package's one concern", me)
			continue
		}
		if !strings.Contains(string(data), "// Package "+p.Name+" ") {
			t.Errorf("%s/doc.go: no \"// Package %s ...\" comment", me, p.Name)
		}
	}
}

// layoutTable returns the packages CONTRIBUTING.md's layout table names in its first column:
// `dir/name` in full, or after one in full a bare `name` of the same directory
// (`pkg/dynamics`, `privacy` is pkg/privacy).
func layoutTable(t *testing.T) map[string]bool {
	data, err := os.ReadFile(filepath.Join("..", "..", "CONTRIBUTING.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Layout\n")
	if !ok {
		t.Fatal("CONTRIBUTING.md has no \"## Layout\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	named := make(map[string]bool)
	code := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line, " | ", 2)[0]
		dir := ""
		for _, m := range code.FindAllStringSubmatch(first, -1) {
			name := m[1]
			if strings.Contains(name, "/") {
				dir = filepath.Dir(name)
			} else if dir != "" {
				name = dir + "/" + name
			}
			named[name] = true
		}
	}
	return named
}

// packageDirs returns the directories directly under pkg/, internal/ and internal/cmd/ that
// hold Go files, relative to the root.
func packageDirs(t *testing.T) []string {
	root := filepath.Join("..", "..")
	var out []string
	for _, parent := range []string{"pkg", "internal", "internal/cmd"} {
		entries, err := os.ReadDir(filepath.Join(root, parent))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			goFiles, _ := filepath.Glob(filepath.Join(root, parent, e.Name(), "*.go"))
			if len(goFiles) > 0 {
				out = append(out, parent+"/"+e.Name())
			}
		}
	}
	return out
}

// CONTRIBUTING.md's layout table is the one map of the packages: every package directory under
// pkg/, internal/ and internal/cmd/ has its row, and every row names a package that exists.
func TestLayoutTableComplete(t *testing.T) {
	named := layoutTable(t)
	dirs := packageDirs(t)
	if len(dirs) < 30 {
		t.Fatalf("only %d package directories found: the walk went wrong", len(dirs))
	}
	for _, d := range dirs {
		if !named[d] {
			t.Errorf("%s is missing from the layout table of CONTRIBUTING.md: add its row (its one concern)", d)
		}
	}
	for name := range named {
		if _, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(name))); err != nil {
			t.Errorf("CONTRIBUTING.md's layout table names %s, which does not exist", name)
		}
	}
}
