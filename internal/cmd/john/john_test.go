package johncmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/rng"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// randomCSV writes n seeded Gaussian rows of dimension d, with a header and a comment.
func randomCSV(t *testing.T, n, d int) string {
	r := rng.New(3, rng.Label("cli-test"))
	var b strings.Builder
	b.WriteString("# a random polytope\n")
	for j := 0; j < d; j++ {
		if j > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "x%d", j+1)
	}
	b.WriteString("\n")
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%.17g", r.NormFloat64())
		}
		b.WriteString("\n")
	}
	return writeFile(t, "A.csv", b.String())
}

func run(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := Run(args, &out, &errb)
	return out.String(), errb.String(), err
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, s)
	}
	return m
}

// TestCubeJSON: the cube's John ellipsoid is the unit ball; the JSON carries the keys.
func TestCubeJSON(t *testing.T) {
	p := writeFile(t, "cube.csv", "1,0,0\n0,1,0\n0,0,1\n")
	out, _, err := run("--input", p, "--json", "--seed", "5")
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, out)
	for _, k := range []string{"weights", "sum_weights", "max_leverage", "logdet_q", "iterations", "method", "time_ms", "q", "converged"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks key %q", k)
		}
	}
	// the exact method draws nothing: no seed is printed, whatever --seed says
	if _, has := m["seed"]; m["method"] != "exact" || has || m["xi"].(float64) != 1e-9 {
		t.Errorf("method %v, seed %v, xi %v: want exact, no seed, xi 1e-9", m["method"], m["seed"], m["xi"])
	}
	fast, _, err := run("--input", p, "--json", "--seed", "5", "--method", "fast")
	if err != nil {
		t.Fatal(err)
	}
	if f := decode(t, fast); f["seed"].(float64) != 5 || f["seed_source"] != "flag" || f["xi"].(float64) != 0.1 {
		t.Errorf("fast: seed %v source %v xi %v", f["seed"], f["seed_source"], f["xi"])
	}
	if math.Abs(m["max_leverage"].(float64)-1) > 1e-12 || math.Abs(m["sum_weights"].(float64)-3) > 1e-12 || math.Abs(m["logdet_q"].(float64)) > 1e-12 {
		t.Errorf("cube: %v %v %v", m["max_leverage"], m["sum_weights"], m["logdet_q"])
	}
	for _, w := range m["weights"].([]any) {
		if math.Abs(w.(float64)-1) > 1e-12 {
			t.Errorf("weight %v, want 1", w)
		}
	}
	if _, ok := m["guarantee"]; ok {
		t.Error("exact output carries a guarantee key")
	}
}

// TestMethods: fast and dp on a random polytope reach the target; dp reports its noise
// scale and no guarantee; the seed is drawn and printed when absent.
func TestMethods(t *testing.T) {
	p := randomCSV(t, 400, 4)
	cases := []struct {
		name string
		args []string
	}{
		{"fast", []string{"--method", "fast", "--seed", "1"}},
		{"dp sigma", []string{"--method", "dp", "--noise-scale", "0.1", "--eps0", "0.001", "--seed", "1"}},
		{"dp calibrated seeded", []string{"--method", "dp", "--epsilon", "1", "--delta", "1e-6", "--eps0", "0.001", "--seed", "2"}},
		{"dp calibrated", []string{"--method", "dp", "--epsilon", "1", "--delta", "1e-6", "--eps0", "0.001"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := run(append([]string{"--input", p, "--json"}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			m := decode(t, out)
			if tc.name == "dp calibrated" {
				// Seeded from crypto/rand: only what holds for every draw is checked here.
				if m["seed_source"] != "crypto" || m["noise_source"] != "calibrated-heuristic" {
					t.Errorf("seed source %v noise source %v", m["seed_source"], m["noise_source"])
				}
				return
			}
			if m["converged"] != true || m["max_leverage"].(float64) > 1.1 {
				t.Errorf("max_leverage %v", m["max_leverage"])
			}
			if math.Abs(m["sum_weights"].(float64)-4) > 1e-9 || len(m["weights"].([]any)) != 400 {
				t.Errorf("sum %v, %d weights", m["sum_weights"], len(m["weights"].([]any)))
			}
			if strings.HasPrefix(tc.name, "dp") {
				if m["guarantee"] != "none (noise scale only)" || m["noise_scale"] == nil || m["guarantee_note"] == "" {
					t.Errorf("dp fields: %v %v", m["guarantee"], m["noise_scale"])
				}
				if m["local_sensitivity"] == nil {
					t.Error("no local sensitivity with --eps0")
				}
			}
		})
	}
}

// TestTable: the human output is a table naming the verification quantities and the seed.
func TestTable(t *testing.T) {
	p := randomCSV(t, 200, 3)
	out, _, err := run("--input", p, "--method", "dp", "--noise-scale", "0.2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"max_leverage", "sum_weights", "logdet_q", "iterations", "seed", "(crypto)", "noise_scale", "none (noise scale only)", "guarantee note"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestMalformedInput(t *testing.T) {
	cases := []struct {
		name, csv, want string
	}{
		{"bad number", "1,2\n3,abc\n5,6\n", "line 2 (data row 2), column 2: \"abc\" is not a number"},
		{"bad number after header", "a,b\n1,2\n3,4\n5,x\n", "line 4 (data row 3), column 2 (b)"},
		{"mixed first row", "1,abc\n3,4\n5,6\n", "line 1 (data row 1), column 2: \"abc\" is not a number (a first row is a header only when every cell is non-numeric, or with --header)"},
		{"ragged", "1,2,3\n4,5\n6,7,8\n7,8,9\n", "line 2 (data row 2): 2 columns, expected 3 like the first row"},
		{"NaN", "1,2\nNaN,3\n4,5\n", "column 1: \"NaN\" is not a finite number"},
		{"empty", "# nothing\n", "no data rows"},
		{"too few rows", "1,2,3\n4,5,6\n", "need at least d rows"},
		{"quote", "1,\"2\n3,4\n", "malformed CSV"},
		{"rank deficient", "1,2\n2,4\n3,6\n", "rank"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, "bad.csv", tc.csv)
			_, _, err := run("--input", p, "--seed", "1")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "bad.csv") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
	if _, _, err := run("--input", filepath.Join(t.TempDir(), "missing.csv"), "--seed", "1"); err == nil {
		t.Error("missing file accepted")
	}
}

func TestUsage(t *testing.T) {
	_, stderr, err := run("-h")
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, f := range []string{"--input", "--method", "--xi", "--max-iter", "--epsilon", "--delta", "--eps0", "--noise-scale", "--seed", "--json", "--plot-out", "--sketch-size", "--sample-size", "--check-every", "--workers", "--log-level"} {
		if !strings.Contains(stderr, strings.TrimPrefix(f, "-")) {
			t.Errorf("usage does not explain %s", f)
		}
	}
	p := writeFile(t, "cube.csv", "1,0\n0,1\n")
	bad := [][]string{
		{},
		{"--input", p, "--method", "newton"},
		{"--input", p, "--xi", "0"},
		{"--input", p, "--method", "dp"},
		{"--input", p, "--method", "dp", "--epsilon", "1"},
		{"--input", p, "--epsilon", "1"},
		{"--input", p, "--method", "dp", "--noise-scale", "-1"},
		{"--input", p, "--method", "dp", "--epsilon", "1", "--delta", "2", "--eps0", "0.1"},
		{"--input", p, "--max-iter", "-3"},
		{"--input", p, "extra"},
		// regressions: these reached the library and exited 1, or ran 1 iteration (xi = 1e-300)
		{"--input", p, "--xi", "1e-300"},
		{"--input", p, "--xi", "20"},
		{"--input", p, "--method", "fast", "--xi", "1e-8"},
		{"--input", p, "--xi", "1e-8", "--plot-out", t.TempDir()},
		{"--input", p, "--method", "dp", "--epsilon", "0", "--delta", "1e-6", "--eps0", "0.1"},
		{"--input", p, "--method", "dp", "--epsilon", "1", "--delta", "1e-6", "--eps0", "0"},
		{"--input", p, "--method", "dp", "--noise-scale", "0"},
		{"--input", p, "--method", "fast", "--sketch-size", "1000000000"},
		{"--input", p, "--workers", "100000"},
	}
	for _, args := range bad {
		if _, _, err := run(args...); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("%q: error %v, want a usage error", args, err)
		}
	}
	_, _, err = run("--input", p, "--xi", "1e-300")
	if err == nil || !strings.Contains(err.Error(), "--xi 1e-300: must lie in [1e-12, 10]") {
		t.Errorf("--xi 1e-300: %v", err)
	}
	_, stderr, _ = run("-h")
	if !strings.Contains(stderr, "require-converged") || !strings.Contains(stderr, "exit status is 1") {
		t.Error("usage does not document --require-converged and the exit status")
	}
}

// TestErrorMessages: regressions for the messages. The "john:" prefix used to repeat
// ("john: rankdef.csv: john: iteration 1: john: A^T W A ..."; dpsim adds "dpsim john: " itself) and an
// entry of 1e308 was reported as a rank defect.
func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		name, csv, want string
	}{
		{"rank deficient", "1,0\n2,0\n3,0\n", "A^T W A is not positive definite: A (3 x 2) must have rank d = 2"},
		{"overflow", "1,0\n0,1\n1e308,1\n", "rankdef.csv: A's entries are too large: A^T W A overflows float64 (largest |a_ij| = 1e+308 at row 3, column 1, 1-based)"},
		{"malformed", "1,0\n0,x\n1,1\n", "rankdef.csv: line 2 (data row 2), column 2"},
	} {
		p := writeFile(t, "rankdef.csv", tc.csv)
		for _, m := range []string{"exact", "fast"} {
			_, _, err := run("--input", p, "--seed", "1", "--method", m)
			if err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "john:") {
				t.Errorf("%s (%s): error %q, want %q once prefixed by the file and no \"john:\"", tc.name, m, err, tc.want)
			}
			if errors.Is(err, cli.ErrUsage) {
				t.Errorf("%s: a data error is not a usage error", tc.name)
			}
		}
	}
	_, _, err := run("--input", filepath.Join(t.TempDir(), "missing.csv"))
	if err == nil || strings.Contains(err.Error(), "john:") || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: %v", err)
	}
}

// TestNotConverged: a non-converged result is printed, warned about on stderr (whatever the log
// level) and exits 0; --require-converged makes it an error (exit 1, not a usage error).
func TestNotConverged(t *testing.T) {
	p := randomCSV(t, 200, 3)
	args := []string{"--input", p, "--seed", "1", "--xi", "1e-9", "--max-iter", "1", "--log-level", "error"}
	out, stderr, err := run(args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "NOT converged") || !strings.Contains(stderr, "dpsim john: warning: ") ||
		!strings.Contains(stderr, "NOT converged: max leverage - 1 = ") || !strings.Contains(stderr, "raise --max-iter") {
		t.Errorf("stdout %q\nstderr %q", out, stderr)
	}
	out, _, err = run(append(args, "--require-converged", "--json")...)
	if err == nil || errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "--require-converged") {
		t.Errorf("--require-converged: error %v, want a failure naming the flag", err)
	}
	if m := decode(t, out); m["converged"] != false {
		t.Errorf("the result is still printed: %v", m["converged"])
	}
	// converged: no warning, --require-converged is satisfied
	out, stderr, err = run("--input", p, "--seed", "1", "--require-converged")
	if err != nil || strings.Contains(stderr, "warning") || !strings.Contains(out, "converged") {
		t.Errorf("converged run: %v, stderr %q", err, stderr)
	}
}

// TestPlot: --plot-out writes the PNG and SVG and the JSON lists them (the curves themselves:
// pkg/john TestAccuracyCurves).
func TestPlot(t *testing.T) {
	p := randomCSV(t, 300, 3)
	dir := filepath.Join(t.TempDir(), "plots")
	out, _, err := run("--input", p, "--json", "--seed", "2", "--plot-out", dir, "--max-iter", "120")
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, out)
	files := m["plots"].([]any)
	if len(files) != 2 {
		t.Fatalf("plots %v", files)
	}
	for _, f := range files {
		st, err := os.Stat(f.(string))
		if err != nil || st.Size() < 1000 {
			t.Errorf("%v: %v", f, err)
		}
	}
}
