package plan

import (
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/scenario"
)

// The paper's graph has weight sums of exactly 1 at its degree-4 nodes: New warns, with the
// rate, and plans it; loading it says nothing (Parse solves no dynamics).
func TestPaperGraphWarnsAndConverges(t *testing.T) {
	s := load(t, "consensus-gaussian.yaml")
	if len(s.Warnings) != 0 {
		t.Errorf("scenario warnings %q: the dynamics are the plan's", s.Warnings)
	}
	p, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Graph.Edges) != 14 || p.Graph.Edges[0].W != 0.25 {
		t.Errorf("paper graph: %d edges, weight %v", len(p.Graph.Edges), p.Graph.Edges[0].W)
	}
	// degree-4 nodes 2, 5, 7, 10 (1-based, as in the paper) have weight sum exactly 1: agents 1, 4, 6, 9
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "agents 1, 4, 6, 9 (0-based, as x0 and agent.N) have edge-weight sums >= 1") ||
		!strings.Contains(p.Warnings[0], "alpha = ") {
		t.Errorf("warnings %q", p.Warnings)
	}
}

func TestUnstableGainsWarn(t *testing.T) {
	doc := "name: t\nkind: cloud-control\nsteps: 10\nepisodes: 2\nplant: {A: 1, B: 1, C: 1}\n" +
		"controller: {K: 3, L: 0.5}\nprivacy: {epsilon: 1, delta: 0.01}\n"
	s, err := scenario.Parse([]byte(doc), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "controller.K: A - B K has spectral radius 2") {
		t.Errorf("warnings %q, want the unstable state feedback (1 - 1*3 = -2)", p.Warnings)
	}
}

// Above dynamics.MaxDenseRateNodes (scenario.RateCheckNodes) New still checks the rate, with
// the sparse one: a ring of 3,000 nodes (default weight 1/3) plans without warnings.
func TestLargeGraphRate(t *testing.T) {
	n := 3000
	doc := "kind: consensus\nsteps: 3\nepisodes: 1\ngraph: {name: ring, n: 3000}\nx0: [" +
		strings.TrimSuffix(strings.Repeat("1, ", n), ", ") + "]\nprivacy: {epsilon: 1, delta: 0.1}\n"
	s, err := scenario.Parse([]byte(doc), "ring.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !(p.Alpha > 0 && p.Alpha < 1) || len(p.Warnings) != 0 || len(p.GraphWarnings) != 0 {
		t.Errorf("alpha %v, warnings %q, graph warnings %q", p.Alpha, p.Warnings, p.GraphWarnings)
	}
}

// A problem only the dynamics find names the field and its line in the file, as Parse's do.
func TestDynamicsProblemNamesLine(t *testing.T) {
	doc := "name: t\nkind: consensus\nsteps: 3\nepisodes: 1\ngraph: {name: ring, n: 4, weight: 0.5}\n" +
		"x0: [1, 2, 3, 4]\nprivacy: {epsilon: 1, delta: 0.1}\n"
	s, err := scenario.Parse([]byte(doc), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(s, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "scenario r.yaml: graph: consensus rate alpha") ||
		!strings.HasSuffix(err.Error(), "(line 5)") {
		t.Errorf("error %v", err)
	}
}
