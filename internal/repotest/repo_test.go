package repotest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository stands alone: no file points at a path outside it (the authors' shared
// notes) or at the project's tracker ("issue 3"); the mathematics is in docs/math.md, which the
// pages of docs/ link as math.md (the old MATH.md at the root is matched in capitals only).
func TestNoOutsideReferences(t *testing.T) {
	root := filepath.Join("..", "..")
	bad := regexp.MustCompile(`\.\./shared|(^|[^/\w])MATH\.md|(?i)\bissue\s+#?\d+|\bthe issue's\b`)
	self, _ := filepath.Abs("repo_test.go")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if strings.HasPrefix(name, ".") && path != root || name == "out" || name == "figs" || name == "testdata" && strings.Contains(path, "malformed") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".md", ".yaml", ".yml", ".txt", ".csv":
		default:
			if name != "run" { // .ci/run is skipped with the dot directory; keep scripts here
				return nil
			}
		}
		if abs, _ := filepath.Abs(path); abs == self {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(data), "\n") {
			if m := bad.FindString(line); m != "" {
				t.Errorf("%s:%d: %q points outside the repository or at the tracker: %s", path, i+1, m, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d files checked: the walk went wrong", checked)
	}
	if _, err := os.Stat(filepath.Join(root, "docs", "math.md")); err != nil {
		t.Fatalf("docs/math.md: %v", err)
	}
}
