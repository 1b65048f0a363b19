package report

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// fastInput runs a scenario file on the fast engine (runs per point, the file's seed) and
// returns the report Input the launcher would build from it.
func fastInput(t testing.TB, path string, runs int) Input {
	t.Helper()
	s, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := engine.Sweep(context.Background(), s, s.Seed, plan.Options{}, engine.Options{Runs: runs})
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Scenario: s, Seed: s.Seed, Engine: "fast", Mode: "lockstep"}
	for _, p := range pts {
		in.Points = append(in.Points, Point{Scenario: p.Scenario, Plan: p.Plan, Results: p.Results, Requested: runs})
	}
	return in
}

func shipped(name string) string { return filepath.Join("..", "..", "scenarios", name+".yaml") }

// wantOp is, independently of the report's rule table, the comparison each check must make:
// the direction the theory predicts. A check whose words or decision use another operator
// (e.g. "the eavesdropper's error shrinks" decided with >=) fails TestCheckWordsMatchDecision.
var wantOp = map[string]string{
	"calibration":          "<=", // kappa_eps(mu Delta / sigma) <= delta (Theorem 1)
	"calibration-laplace":  "<=", // mu Delta_L / b <= eps (Theorem 2)
	"calibration-lmi":      "<=", // LMI violation <= tolerance
	"velocity-vanishes":    "<=", // MSE at T <= factor x peak
	"position-offset":      "<=", // |MSE - Var(gamma)| <= 3.29 SE
	"position-bounded":     "<=", // last quarter / third quarter <= GrowthRatio
	"eve-no-shrink":        ">=", // late/early >= FlatRatio: the error does not shrink
	"eve-shrinks":          "<",  // late/early < FlatRatio: the leak
	"prop1-bound":          "<",  // upper limit < bound
	"mean-deviation":       "<=", // lower limit <= envelope
	"sum-preserved":        "<=", // drift <= SumTol
	"structured-beats-iid": "<",  // structured / iid-calibrated < 1
	"link-accounting":      "=",  // links that do not add up = 0
}

// comparisonRE finds the comparison a check states: "QUANTITY = VALUE, required OP THRESHOLD".
var comparisonRE = regexp.MustCompile(`= ([^\s,;]+), required (<=|<|>=|=) ([^\s,;]+)`)

// parseNum reads a number as num prints it.
func parseNum(s string) (float64, error) {
	return strconv.ParseFloat(s, 64)
}

// verifyCheck returns why the words of c do not match its decision ("" when they do): the text
// must state one comparison "= V, required OP T", OP must be the one the theory predicts for
// the check's name, and evaluating V OP T with the printed numbers must give c.Pass.
func verifyCheck(c Check) string {
	want, ok := wantOp[c.Name]
	if !ok {
		return fmt.Sprintf("check %q is not in the test's table of operators", c.Name)
	}
	m := comparisonRE.FindAllStringSubmatch(c.Text, -1)
	if len(m) != 1 {
		return fmt.Sprintf("%s: states %d comparisons \"= V, required OP T\", want 1: %s", c.Name, len(m), c.Text)
	}
	v, err1 := parseNum(m[0][1])
	th, err2 := parseNum(m[0][3])
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("%s: unreadable numbers in %q", c.Name, m[0][0])
	}
	op := m[0][2]
	if op != want {
		return fmt.Sprintf("%s: states %q, the theory's direction is %q: %s", c.Name, op, want, c.Text)
	}
	var holds bool
	switch op {
	case "<=":
		holds = v <= th
	case "<":
		holds = v < th
	case ">=":
		holds = v >= th
	case "=":
		holds = v == th
	}
	if holds != c.Pass {
		return fmt.Sprintf("%s: the text says %s %s %s, which is %v, but the check says pass = %v", c.Name, m[0][1], op, m[0][3], holds, c.Pass)
	}
	return ""
}

// TestCheckWordsMatchDecision renders every computed check of several shipped scenarios (and a
// newcomer's 3-state plant) and holds its words to its decision: the comparison the text states
// is the one decided, in the direction the theory predicts, with the numbers printed.
func TestCheckWordsMatchDecision(t *testing.T) {
	cases := []struct {
		name string
		path string
		runs int
	}{
		{"cloud-vehicle", shipped("cloud-vehicle"), 100},
		{"cloud-vehicle-sweep", shipped("cloud-vehicle-sweep"), 60},
		{"cloud-vehicle-fullstate", shipped("cloud-vehicle-fullstate"), 60},
		{"consensus-gaussian", shipped("consensus-gaussian"), 100},
		{"consensus-laplace", shipped("consensus-laplace"), 100},
		{"faults-vehicle-latency", shipped("faults-vehicle-latency"), 60},
		{"faults-consensus-loss", shipped("faults-consensus-loss"), 60},
		{"noisy-3state", filepath.Join("testdata", "noisy-3state.yaml"), 60},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Build(fastInput(t, tc.path, tc.runs))
			if err != nil {
				t.Fatal(err)
			}
			md := string(rep.Markdown)
			for _, c := range rep.Checks {
				seen[c.Name] = true
				if why := verifyCheck(c); why != "" {
					t.Error(why)
				}
				if !strings.Contains(md, checkLine(c)) && c.Point == "" {
					t.Errorf("report.md does not state the check %q", checkLine(c))
				}
			}
		})
	}
	for _, name := range []string{"calibration", "calibration-laplace", "calibration-lmi", "velocity-vanishes", "position-offset",
		"position-bounded", "eve-no-shrink", "eve-shrinks", "prop1-bound", "mean-deviation", "sum-preserved", "structured-beats-iid"} {
		if !seen[name] {
			t.Errorf("no scenario exercised the check %q", name)
		}
	}
}

// TestVerifyCheckCatchesMismatch: the verifier itself fails a check whose direction is flipped,
// whose decision disagrees with its printed numbers, or that states no comparison (such as the
// old "ratio late/early 4.31 stays flat (ratio >= 0.5)").
func TestVerifyCheckCatchesMismatch(t *testing.T) {
	in := controlInput(t)
	rep, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	var eve Check
	for _, c := range rep.Checks {
		if c.Name == "eve-no-shrink" {
			eve = c
		}
	}
	if eve.Name == "" {
		t.Fatal("no eve-no-shrink check in the synthetic control run")
	}
	if why := verifyCheck(eve); why != "" {
		t.Fatalf("the real check fails the verifier: %s", why)
	}
	flipped := eve
	flipped.Text = strings.Replace(eve.Text, "required >= ", "required < ", 1)
	wrongPass := eve
	wrongPass.Pass = !eve.Pass
	old := Check{Name: "eve-no-shrink", Pass: true, Text: "eavesdropper's error E||x0hat(t) - x(0)||^2 from t = 1 to t = 99: 4.8 -> 20.7 (ratio late/early 4.31) stays flat (ratio >= 0.5)"}
	for name, c := range map[string]Check{"flipped": flipped, "wrong pass": wrongPass, "old words": old} {
		if verifyCheck(c) == "" {
			t.Errorf("%s: the verifier accepts %q (pass %v)", name, c.Text, c.Pass)
		}
	}
	if math.IsNaN(0) {
		t.Skip()
	}
}
