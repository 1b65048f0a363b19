package schema_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/schema"
)

var update = flag.Bool("update", false, "rewrite docs/schema from the Go types")

const (
	root      = "../.."
	schemaDir = "../../docs/schema"
)

// The committed schemas are what the Go types generate: a change of a type without
// `go test ./pkg/schema -update` fails here, and so does a schema edited by hand.
func TestGolden(t *testing.T) {
	got, err := schema.Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(schemaDir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(schemaDir, "*.json"))
		for _, p := range old {
			if _, ok := got[filepath.Base(p)]; !ok {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		for name, b := range got {
			if err := os.WriteFile(filepath.Join(schemaDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range schema.Names(got) {
		want, err := os.ReadFile(filepath.Join(schemaDir, name))
		if err != nil {
			t.Errorf("%s: %v (run go test ./pkg/schema -update)", name, err)
			continue
		}
		if !bytes.Equal(want, got[name]) {
			t.Errorf("docs/schema/%s differs from what the Go types generate (run go test ./pkg/schema -update):\n%s", name, firstDiff(string(want), string(got[name])))
		}
	}
	files, _ := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	for _, p := range files {
		if _, ok := got[filepath.Base(p)]; !ok {
			t.Errorf("docs/schema/%s is generated from nothing: remove it (go test ./pkg/schema -update)", filepath.Base(p))
		}
	}
	if len(got) < 15 {
		t.Fatalf("only %d schemas generated", len(got))
	}
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n  committed: " + x + "\n  generated: " + y
		}
	}
	return ""
}
