package scenario

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dpsim/dpsim/pkg/dynamics"
)

// Every shipped scenario builds with pkg/dynamics.
func TestShippedScenariosBuild(t *testing.T) {
	for _, path := range shipped(t) {
		s, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		switch s.Kind {
		case CloudControl:
			sys, err := s.System()
			if err != nil {
				t.Fatalf("%s: System: %v", path, err)
			}
			K, L, err := s.Gains()
			if err != nil {
				t.Fatalf("%s: Gains: %v", path, err)
			}
			ref, err := s.Reference()
			if err != nil {
				t.Fatalf("%s: Reference: %v", path, err)
			}
			if _, err := dynamics.NewObserverController(sys, K, L, ref, s.Controller.Xhat0); err != nil {
				t.Fatalf("%s: controller: %v", path, err)
			}
			if _, err := s.PrivateSystem(); err != nil {
				t.Fatalf("%s: PrivateSystem: %v", path, err)
			}
		case Consensus:
			g, err := s.Graph()
			if err != nil {
				t.Fatalf("%s: Graph: %v", path, err)
			}
			if g.N != len(s.X0) {
				t.Errorf("%s: graph has %d nodes, x0 %d", path, g.N, len(s.X0))
			}
		}
	}
}

// The LQR scenario reproduces the paper's gains K_P = [3.4240; 4.3095], L = [0.8266; 0.6973]
// to 4 digits (the authors' dlqr designs).
func TestLQRGainsMatchPaper(t *testing.T) {
	s, err := Load("../../scenarios/cloud-vehicle-lqr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	K, L, err := s.Gains()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"K[0]", K.At(0, 0), 3.4240}, {"K[1]", K.At(0, 1), 4.3095},
		{"L[0]", L.At(0, 0), 0.8266}, {"L[1]", L.At(1, 0), 0.6973},
	} {
		if math.Abs(c.got-c.want) > 5e-5 {
			t.Errorf("%s = %.6f, want %.4f", c.name, c.got, c.want)
		}
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings for a stabilising design: %v", s.Warnings)
	}
}

func TestNamedGraphs(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		n     int
		edges int
	}{
		{"{name: ring, n: 6}", 6, 6},
		{"{name: path, n: 5}", 5, 4},
		{"{name: complete, n: 5}", 5, 10},
		{"{name: grid, rows: 3, cols: 4}", 12, 17},
		{"{name: random-regular, n: 20, degree: 4, seed: 7}", 20, 40},
	} {
		doc := "kind: consensus\nsteps: 3\nepisodes: 1\ngraph: " + tc.spec + "\nx0: [" +
			strings.TrimSuffix(strings.Repeat("1, ", tc.n), ", ") + "]\nprivacy: {epsilon: 1, delta: 0.1}\n"
		s, err := Parse([]byte(doc), "g.yaml")
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		g, err := s.Graph()
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if g.N != tc.n || len(g.Edges) != tc.edges || s.Network.N != tc.n {
			t.Errorf("%s: %d nodes %d edges, want %d %d", tc.spec, g.N, len(g.Edges), tc.n, tc.edges)
		}
		// default weight 1/(max degree + 1): every node's sum stays below 1
		for i, sum := range g.WeightSums() {
			if sum >= 1 {
				t.Errorf("%s: node %d weight sum %v", tc.spec, i, sum)
			}
		}
	}
}

// The graph fields allowed per name cover exactly the names pkg/dynamics builds.
func TestGraphNamesAgreeWithDynamics(t *testing.T) {
	var ours []string
	for name := range graphParams {
		ours = append(ours, name)
	}
	sort.Strings(ours)
	theirs := slices.Clone(dynamics.GraphNames)
	sort.Strings(theirs)
	if !slices.Equal(ours, theirs) {
		t.Errorf("scenario graph names %v, dynamics %v", ours, theirs)
	}
}

func TestLargeGraphs(t *testing.T) {
	doc := func(spec string, n int) string {
		return "kind: consensus\nsteps: 3\nepisodes: 1\ngraph: " + spec + "\nx0: [" +
			strings.TrimSuffix(strings.Repeat("1, ", n), ", ") + "]\nprivacy: {epsilon: 1, delta: 0.1}\n"
	}
	_, err := Parse([]byte(doc("{name: complete, n: 2000}", 2000)), "big.yaml")
	if err == nil || !strings.Contains(err.Error(), "complete on 2000 nodes has 1999000 edges, more than the 1000000 allowed") {
		t.Errorf("complete 2000: %v", err)
	}
	// Parse computes no rate (plan.New checks it, TestLargeGraphRate in pkg/plan): no warning
	s, err := Parse([]byte(doc("{name: ring, n: 3000}", 3000)), "ring.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %q", s.Warnings)
	}
}

func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"../../scenarios/*.yaml", "testdata/malformed/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		done := make(chan struct{})
		var s *Scenario
		var err error
		go func() { s, err = Parse(data, "fuzz.yaml"); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute): // a hang detector for fuzzing, not a speed check: a parse takes milliseconds
			t.Fatalf("Parse hangs on %q", data)
		}
		if (s == nil) == (err == nil) {
			t.Fatalf("Parse returned scenario %v and error %v", s != nil, err)
		}
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("error %v is not a *ValidationError", err)
			}
			return
		}
		for _, p := range s.Expand() {
			if p.Privacy.Epsilon <= 0 {
				t.Fatalf("accepted epsilon %v", p.Privacy.Epsilon)
			}
		}
	})
}
