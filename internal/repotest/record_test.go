package repotest

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/record"
)

// maxCommandLines bounds the non-test lines of a command package: a command holds its flags,
// its help and what it prints; behaviour lives in a library under it.
const maxCommandLines = 800

func recordHomeList() []string {
	var l []string
	for h := range recordHomes {
		l = append(l, h)
	}
	sort.Strings(l)
	return l
}

func TestCommandPackagesAreThin(t *testing.T) {
	checked := 0
	for _, p := range listPackages(t) {
		me := rel(p.ImportPath)
		if !strings.HasPrefix(me, "internal/cmd/") {
			continue
		}
		lines := 0
		for _, f := range p.GoFiles {
			lines += countLines(t, filepath.Join(p.Dir, f))
		}
		checked++
		if lines > maxCommandLines {
			t.Errorf("%s has %d non-test lines (at most %d): move its behaviour into a library package and keep the flags, the help and the printing", me, lines, maxCommandLines)
		}
	}
	if checked < 5 {
		t.Fatalf("only %d command packages found: the listing went wrong", checked)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}

// recordHomes are the packages the types of summary.json may come from: the record itself and
// the plain data below it (metrics, the wire counters, the plan's guarantee and sampler).
var recordHomes = map[string]bool{
	"pkg/record": true, "pkg/metrics": true, "pkg/wire": true, "pkg/plan": true, "pkg/privacy": true,
	"pkg/noise": true, "pkg/fault": true, "internal/finitejson": true, "pkg/dynamics": true, "pkg/scenario": true,
}

// summary.json is declared once: every named type reachable from record.Summary is declared in
// pkg/record or in the plain data below it - none in the launcher, the farm, the runner, a
// command, the report or the live view - and no other package declares summary.json's own
// fields.
func TestSummaryDeclaredOnce(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Array || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if seen[ty] {
			return
		}
		seen[ty] = true
		if pp := ty.PkgPath(); strings.HasPrefix(pp, module) && !recordHomes[rel(pp)] {
			t.Errorf("summary.json %s is %s, declared in %s: declare it in pkg/record", path, ty, rel(pp))
		}
		if ty.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			walk(f.Type, path+"."+f.Name)
		}
	}
	walk(reflect.TypeOf(record.Summary{}), "Summary")
	if len(seen) < 20 {
		t.Fatalf("walked %d types of record.Summary: the walk went wrong", len(seen))
	}
	// the fields only summary.json has, declared anywhere else (a second copy of the record)
	own := []string{`json:"launcher_max_rss_bytes"`, `json:"leftover_processes`, `json:"estimated_memory_bytes"`}
	for _, p := range listPackages(t) {
		if rel(p.ImportPath) == "pkg/record" {
			continue
		}
		for _, f := range p.GoFiles {
			data, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			for _, tag := range own {
				if strings.Contains(string(data), tag) {
					t.Errorf("%s/%s declares %s: summary.json is declared once, in pkg/record", rel(p.ImportPath), f, tag)
				}
			}
		}
	}
}
