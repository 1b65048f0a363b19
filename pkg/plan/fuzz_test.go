package plan_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// FuzzPlan is FuzzParse carried through the dynamics, which the plan solves since the scenario
// parser no longer does: whatever a file holds, loading and planning its points return a plan
// or an error, never a panic. The seeds are the shipped and the malformed scenarios; large
// graphs are skipped (a fuzz input must stay cheap: the rate of a dense graph is O(n^3)).
func FuzzPlan(f *testing.F) {
	for _, pattern := range []string{"../../scenarios/*.yaml", "../scenario/testdata/malformed/*.yaml"} {
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
		s, err := scenario.Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		if s.Network != nil && s.Network.N > 200 || s.Steps > 2000 {
			return
		}
		for _, pt := range s.Expand() {
			p, err := plan.New(pt, plan.Options{})
			if (p == nil) == (err == nil) {
				t.Fatalf("plan.New returned plan %v and error %v", p != nil, err)
			}
		}
	})
}
