package scenario_test

import (
	"testing"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// BenchmarkParseConsensus1000 parses a 1,000-agent consensus scenario. Each iteration draws
// another graph (its seed), so no computation is served from a previous one.
func BenchmarkParseConsensus1000(b *testing.B) {
	files := make([][]byte, b.N)
	for i := range files {
		files[i] = dpsimtest.ConsensusYAML(1000, i+1)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := scenario.Parse(files[i], "large.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}
