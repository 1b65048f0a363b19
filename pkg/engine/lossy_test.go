package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// A drop-only rule takes the lossy path (fault.Outbox.Drops: one queued message per release,
// its gaps filed with it), and the same rule confined to a window that holds every step takes
// the general path (per-link fates, Release's deliveries) from the same draws: the Results
// are equal bit for bit, link counters included - on the paper's graph, and on a complete
// graph of 70 agents whose publishers have more than 64 subscribers (their gaps then queued
// on their own, on both paths).
func TestLossyPathAsGeneral(t *testing.T) {
	complete := load(t, "consensus-gaussian").Expand()[0].Clone()
	complete.Network = &scenario.GraphSpec{Name: "complete", N: 70, Weight: 0.01}
	complete.X0 = make([]float64, 70)
	for i := range complete.X0 {
		complete.X0[i] = float64(i)
	}
	complete.Steps = 12
	for _, c := range []struct {
		name string
		s    *scenario.Scenario
		runs int
	}{{"paper10", load(t, "consensus-gaussian").Expand()[0].Clone(), 60}, {"complete70", complete, 6}} {
		t.Run(c.name, func(t *testing.T) {
			c.s.Runs = c.runs
			lossy, general := c.s.Clone(), c.s.Clone()
			lossy.Faults.Links = []scenario.LinkFault{{Drop: 0.1}}
			general.Faults.Links = []scenario.LinkFault{{Drop: 0.1, Window: &scenario.StepWindow{From: 0, To: c.s.Steps}}}
			a, _, err := Run(context.Background(), planOf(t, lossy), sim.NewSeeds(5), Options{Workers: 1})
			require.NoError(t, err)
			b, _, err := Run(context.Background(), planOf(t, general), sim.NewSeeds(5), Options{Workers: 1})
			require.NoError(t, err)
			var dropped uint64
			for _, l := range a.Links {
				dropped += l.Dropped
			}
			require.Positive(t, dropped)
			assert.Equal(t, a, b)
		})
	}
}
