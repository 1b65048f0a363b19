package auditcmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneRunCLI: `dpsim audit --one-run --json` on the 1,000-agent scenario, sound (structured
// Laplace) and iid-naive; the JSON carries epsilon_lb_one_run and the verdict.
func TestOneRunCLI(t *testing.T) {
	src, err := os.ReadFile("../../../scenarios/audit-consensus-onerun.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ noise, want string }{{"structured", "consistent"}, {"iid-naive", "violation"}} {
		path := filepath.Join(t.TempDir(), "s.yaml")
		y := strings.Replace(string(src), "noise: structured", "noise: "+c.noise, 1)
		if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if err := Run([]string{"--one-run", "--json", "--log-level", "error", path}, &out, &errb); err != nil {
			t.Fatalf("%s: %v\n%s", c.noise, err, errb.String())
		}
		var r map[string]any
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v\n%s", c.noise, err, out.String())
		}
		lb, ok := r["epsilon_lb_one_run"].(float64)
		if !ok {
			t.Fatalf("%s: no epsilon_lb_one_run in %s", c.noise, out.String())
		}
		t.Logf("%s: epsilon_lb_one_run %.4f, %v of %v correct, %.3fs, %s", c.noise, lb, r["correct"], r["guesses"], r["elapsed_seconds"], r["verdict"])
		if r["verdict"] != c.want {
			t.Errorf("%s: verdict %v, want %s", c.noise, r["verdict"], c.want)
		}
		if c.noise == "structured" && !(lb >= 0.5 && lb <= 1) {
			t.Errorf("sound: epsilon_lb_one_run %g, want in [0.5, 1]", lb)
		}
	}
	var out, errb bytes.Buffer
	if err := Run([]string{"--one-run", "--trials", "1000", "x.yaml"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "--trials") {
		t.Errorf("--one-run --trials: %v", err)
	}
}
