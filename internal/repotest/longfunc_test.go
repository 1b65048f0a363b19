package repotest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines bounds a non-test function anywhere in the module: a function past it hides a
// second concern. Counted from the func keyword to the closing brace, both included.
const maxFuncLines = 100

// longFunc names one function allowed past maxFuncLines: the file (slash path from the
// repository root), the function (methods by their name alone) and why it stays whole.
type longFunc struct{ file, fn, why string }

// allowLong holds the numerical kernels transcribed from a paper or a reference algorithm,
// where one long function keeps the step-by-step correspondence with the source. Nothing else
// belongs here, and never a function at the edges (commands, launcher, role adapter).
var allowLong = []longFunc{
	{"pkg/john/wa.go", "wolfeAtwood", "the Wolfe-Atwood iteration (Frank-Wolfe with away steps, Todd and Yildirim) with its rank-one updates of M^{-1} and every g_i in one loop; splitting scatters the state the updates share"},
	{"pkg/gchisq/davies.go", "compute", "Davies (1980) algorithm AS 155 re-implemented step by step; splitting hides the correspondence with the paper"},
	{"pkg/gchisq/imhof.go", "deFourier", "the Ooura-Mori double-exponential formula for Fourier integrals, sine and cosine nodes in one pass; splitting hides the correspondence with the paper"},
}

// edge reports whether a file is at the edges of the module (commands, launcher, role
// adapter), whose functions are never exempt from maxFuncLines.
func edge(file string) bool {
	for _, p := range []string{"cmd/", "internal/cmd/", "internal/launch/", "internal/roleproc/"} {
		if strings.HasPrefix(file, p) {
			return true
		}
	}
	return false
}

// funcLengths returns the length in lines of every non-test function (methods included) in
// the module's Go files, keyed "file func" with file a slash path from the root; pos holds
// where each starts (file:line). examples/, testdata/, vendor/, dot directories and
// generated files are skipped.
func funcLengths(t *testing.T, root string) (lengths map[string]int, pos map[string]string) {
	t.Helper()
	lengths, pos = map[string]int{}, map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "examples" || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		file, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		file = filepath.ToSlash(file)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start := fset.Position(fn.Pos()).Line
			key := file + " " + fn.Name.Name
			lines := fset.Position(fn.End()).Line - start + 1
			if lines > lengths[key] { // methods of the same name in one file: the longest
				lengths[key], pos[key] = lines, fmt.Sprintf("%s:%d", file, start)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lengths, pos
}

// No non-test function in the module reaches maxFuncLines lines, but the numerical kernels of
// allowLong (each with its reason); every entry of the list still exists and is still long,
// so the list does not outlive what it excuses.
func TestNoLongFunctions(t *testing.T) {
	lengths, pos := funcLengths(t, filepath.Join("..", ".."))
	if len(lengths) < 500 {
		t.Fatalf("only %d functions found: the walk went wrong", len(lengths))
	}
	for _, p := range longFunctionProblems(lengths, pos, allowLong) {
		t.Error(p)
	}
}

// longFunctionProblems returns, sorted, every function of lengths at or past maxFuncLines that
// the allow-list does not name, and every entry of it that is no longer long, no longer exists,
// gives no reason or excuses a function at the edges.
func longFunctionProblems(lengths map[string]int, pos map[string]string, allow []longFunc) []string {
	var out []string
	listed := map[string]bool{}
	for _, a := range allow {
		key := a.file + " " + a.fn
		listed[key] = true
		if strings.TrimSpace(a.why) == "" {
			out = append(out, fmt.Sprintf("allow-list entry %s %s gives no reason", a.file, a.fn))
		}
		if edge(a.file) {
			out = append(out, fmt.Sprintf("allow-list entry %s %s is at the edges (commands, launcher, role adapter): split it, the edges hold no long kernels", a.file, a.fn))
		}
		switch n, ok := lengths[key]; {
		case !ok:
			out = append(out, fmt.Sprintf("allow-list entry %s %s: no such function any more; remove the entry", a.file, a.fn))
		case n < maxFuncLines:
			out = append(out, fmt.Sprintf("allow-list entry %s: %s is %d lines now, under the limit of %d; remove the entry", pos[key], a.fn, n, maxFuncLines))
		}
	}
	keys := make([]string, 0, len(lengths))
	for key := range lengths {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		n := lengths[key]
		if n < maxFuncLines || listed[key] {
			continue
		}
		_, fn, _ := strings.Cut(key, " ")
		out = append(out, fmt.Sprintf("%s: %s is %d lines (limit %d): split it into functions named for what they do, or, for a numerical kernel transcribed from its source, add it to allowLong in longfunc_test.go with the reason", pos[key], fn, n, maxFuncLines))
	}
	return out
}

// The rule's verdicts on made-up lengths: an unlisted long function, and the allow-list entries
// that rot (gone, short, no reason) or excuse an edge.
func TestLongFunctionProblems(t *testing.T) {
	lengths := map[string]int{"pkg/a/a.go long": 150, "pkg/a/a.go kernel": 120, "pkg/a/a.go shrunk": 40, "internal/cmd/x/x.go big": 130, "pkg/a/a.go short": 99}
	pos := map[string]string{"pkg/a/a.go long": "pkg/a/a.go:10", "pkg/a/a.go kernel": "pkg/a/a.go:200", "pkg/a/a.go shrunk": "pkg/a/a.go:400", "internal/cmd/x/x.go big": "internal/cmd/x/x.go:5"}
	allow := []longFunc{
		{"pkg/a/a.go", "kernel", "a transcribed algorithm"},
		{"pkg/a/a.go", "shrunk", "was long"},
		{"pkg/a/a.go", "gone", "was here"},
		{"internal/cmd/x/x.go", "big", ""},
	}
	got := strings.Join(longFunctionProblems(lengths, pos, allow), "\n")
	for _, want := range []string{
		"pkg/a/a.go:10: long is 150 lines (limit 100): split it",
		"allow-list entry pkg/a/a.go:400: shrunk is 40 lines now, under the limit of 100; remove the entry",
		"allow-list entry pkg/a/a.go gone: no such function any more; remove the entry",
		"allow-list entry internal/cmd/x/x.go big gives no reason",
		"allow-list entry internal/cmd/x/x.go big is at the edges",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, " kernel is ") || strings.Contains(got, " short is ") {
		t.Errorf("a listed kernel or a short function is reported:\n%s", got)
	}
}

// The walk itself: a long function in a temporary module is found with its file:line, a short
// one and a test function are not.
func TestFuncLengthsWalk(t *testing.T) {
	root := t.TempDir()
	long := "package p\n\nfunc long() {\n" + strings.Repeat("\t_ = 0\n", maxFuncLines-2) + "}\n\nfunc short() {}\n"
	for name, src := range map[string]string{
		"p/a.go":          long,
		"p/a_test.go":     strings.Replace(long, "long()", "inTest()", 1),
		"examples/x/e.go": strings.Replace(long, "long()", "inExample()", 1),
		"p/testdata/t.go": strings.Replace(long, "long()", "inTestdata()", 1),
		"p/gen.go":        "// Code generated by hand. DO NOT EDIT.\n\n" + strings.Replace(long, "long()", "generated()", 1),
	} {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lengths, pos := funcLengths(t, root)
	if n := lengths["p/a.go long"]; n != maxFuncLines || pos["p/a.go long"] != "p/a.go:3" {
		t.Errorf("long: %d lines at %s, want %d at p/a.go:3", n, pos["p/a.go long"], maxFuncLines)
	}
	if n := lengths["p/a.go short"]; n != 1 {
		t.Errorf("short: %d lines, want 1", n)
	}
	if len(lengths) != 2 {
		t.Errorf("found %v, want only p/a.go's two functions", lengths)
	}
}
