package golden

import (
	"os"
	"strings"
	"testing"
)

// CheckRefusal checks got, the error of the malformed file at path (its text data), as the
// golden malformed inputs are checked: it contains every "# want: " line of the file (one at
// least), starts with "scenario PATH: ", and equals the golden PATH.err unless the file says
// "# golden: skip" (its message comes from another package: the wants only, and a stale
// golden file is removed). With update the golden file is rewritten instead.
func CheckRefusal(t testing.TB, path, data, got string, update bool) {
	t.Helper()
	wants := 0
	for _, line := range strings.Split(data, "\n") {
		if w, ok := strings.CutPrefix(line, "# want: "); ok {
			wants++
			if !strings.Contains(got, w) {
				t.Errorf("error lacks %q:\n%s", w, got)
			}
		}
	}
	if wants == 0 {
		t.Fatal("no '# want: ' line in the file")
	}
	if !strings.HasPrefix(got, "scenario "+path+": ") {
		t.Errorf("error does not start with the file name:\n%s", got)
	}
	golden := strings.TrimSuffix(path, ".yaml") + ".err"
	if strings.Contains(data, "\n# golden: skip\n") {
		_ = os.Remove(golden)
		return
	}
	if update {
		if err := os.WriteFile(golden, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != strings.TrimSuffix(string(want), "\n") {
		t.Errorf("error differs from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
}
