package plan_test

import (
	"testing"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// BenchmarkParsePlan1000 parses a 1,000-agent consensus scenario and plans it: what a command
// does before it runs. Each iteration draws another graph (its seed), so no computation is
// served from a previous one.
func BenchmarkParsePlan1000(b *testing.B) {
	files := make([][]byte, b.N)
	for i := range files {
		files[i] = dpsimtest.ConsensusYAML(1000, i+1)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := scenario.Parse(files[i], "large.yaml")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := plan.New(s, plan.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
