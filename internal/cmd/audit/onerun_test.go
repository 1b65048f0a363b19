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

// TestOneRunCLIGauss: a Gaussian claim (1, 1e-5) on the same 1,000 agents: the verdict reads the
// Gauss statistic (one_run_bound "gauss", epsilon_lb_one_run = epsilon_lb_one_run_gauss), the other
// bounds are reported beside it, and the text output states the statistic's assumption.
func TestOneRunCLIGauss(t *testing.T) {
	src, err := os.ReadFile("../../../scenarios/audit-consensus-onerun.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(string(src), "mechanism: laplace", "mechanism: gaussian\n  delta: 0.00001\n  calibration: tight", 1)
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := Run([]string{"--one-run", "--json", "--log-level", "error", path}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var r map[string]any
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("bound %v: eps_lb %v (gauss %v, mu_lb %v, T %v, variance %v; f-DP %v, Steinke %v; expected %v): %v", r["one_run_bound"], r["epsilon_lb_one_run"],
		r["epsilon_lb_one_run_gauss"], r["mu_lb_one_run_gauss"], r["gauss_statistic"], r["gauss_score_variance"],
		r["epsilon_lb_one_run_fdp"], r["epsilon_lb_one_run_steinke"], r["epsilon_lb_expected_at_claim"], r["verdict"])
	if r["one_run_bound"] != "gauss" {
		t.Errorf("one_run_bound %v, want gauss", r["one_run_bound"])
	}
	for _, k := range []string{"epsilon_lb_one_run_gauss", "mu_lb_one_run_gauss", "gauss_statistic", "gauss_score_variance", "epsilon_lb_one_run_fdp", "epsilon_lb_one_run_steinke"} {
		if _, ok := r[k].(float64); !ok {
			t.Errorf("no %s in %s", k, out.String())
		}
	}
	if r["epsilon_lb_one_run"] != r["epsilon_lb_one_run_gauss"] {
		t.Errorf("epsilon_lb_one_run %v is not the Gauss statistic's %v", r["epsilon_lb_one_run"], r["epsilon_lb_one_run_gauss"])
	}
	out.Reset()
	if err := Run([]string{"--one-run", "--log-level", "error", path}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Gauss statistic (Agrawal et al. 2026) bound", "EXACTLY N(0, var_i)", "independent of each other"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the text output does not say %q:\n%s", want, out.String())
		}
	}
}
