package metrics

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/trace"
)

func TestAccumulatorRejectsBadRecords(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	for _, c := range []struct {
		name string
		rec  trace.ControlRecord
		want string
	}{
		{"step beyond T", trace.ControlRecord{Step: 101, X: []float64{0, 0}}, "outside 0..100"},
		{"negative episode", trace.ControlRecord{Episode: -1, X: []float64{0, 0}}, "negative"},
		{"short x", trace.ControlRecord{X: []float64{0}}, "x has 1 values, want 2"},
		{"nan x", trace.ControlRecord{X: []float64{0, nan()}}, "not finite"},
		{"eve at T", trace.ControlRecord{Step: 100, X: []float64{0, 0}, EveX0: []float64{0, 0}}, "final step"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewAccumulator(p, 1)
			require.NoError(t, err)
			require.ErrorContains(t, a.AddControl(&c.rec), c.want)
		})
	}
	a, err := NewAccumulator(p, 1)
	require.NoError(t, err)
	r := trace.ControlRecord{X: []float64{0, 0}}
	require.NoError(t, a.AddControl(&r))
	require.ErrorContains(t, a.AddControl(&r), "twice")
	require.ErrorContains(t, a.AddConsensus(&trace.ConsensusRecord{X: []float64{0}}), "consensus record")
	// A record without X (a missing piece) is ignored; the episode stays incomplete.
	require.NoError(t, a.AddControl(&trace.ControlRecord{Episode: 1, Step: 3}))
	res := a.Results()
	require.Equal(t, 0, res.Runs)
	require.Equal(t, []int{0}, res.IncompleteEpisodes)
}

// With more agents than MaxDeviationAgents, the accumulator keeps the deviation series of
// evenly spaced agents only (first and last among them) - exactly those agents' numbers - and
// max_abs_deviation over every agent: results and memory are O(T), not O(N T).
func TestDeviationTrackedAgents(t *testing.T) {
	require.Equal(t, []int{0, 1, 2}, TrackedAgents(3))
	tr := TrackedAgents(1000)
	require.Len(t, tr, MaxDeviationAgents)
	require.Equal(t, 0, tr[0])
	require.Equal(t, 999, tr[len(tr)-1])
	require.True(t, slices.IsSorted(tr))

	const n, steps, runs = 200, 6, 3
	p := planOf(t, largeConsensus(t, n, steps))
	acc, err := NewAccumulator(p, 1)
	require.NoError(t, err)
	// x_i(t) = i + ep*t: x* = mean of x(0) = (n-1)/2 in every episode.
	xstar := float64(n-1) / 2
	for ep := 0; ep < runs; ep++ {
		for st := 0; st <= steps; st++ {
			x := make([]float64, n)
			for i := range x {
				x[i] = float64(i) + float64(ep*st)
			}
			require.NoError(t, acc.AddConsensus(&trace.ConsensusRecord{Episode: ep, Step: st, X: x}))
		}
	}
	c := acc.Results().Consensus
	require.Equal(t, TrackedAgents(n), c.DeviationAgents)
	require.Len(t, c.Deviation, MaxDeviationAgents)
	for k, i := range c.DeviationAgents {
		for st := 0; st <= steps; st++ {
			// mean over episodes of i + ep*t - x* = i - x* + t (0+1+2)/3
			require.InDelta(t, float64(i)-xstar+float64(st), c.Deviation[k].Mean[st], 1e-9, "agent %d step %d", i, st)
		}
	}
	for st := 0; st <= steps; st++ {
		// max_i |i + ep*t - x*| = x* + ep*t (agent n-1), mean over episodes x* + t
		require.InDelta(t, xstar+float64(st), c.MaxAbsDeviation.Mean[st], 1e-9, "step %d", st)
	}
}

// Accumulator.Results clamps the lower 95% limit of the nonnegative quantities at 0 (a normal
// interval mean - 1.96 SE can go below 0 with few runs); the signed ones keep theirs.
func TestResultsClampNonnegative(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	acc, err := NewAccumulator(p, 1)
	require.NoError(t, err)
	tr := playControl(t, p, 1, 3)
	for i := range tr.Control {
		require.NoError(t, acc.AddControl(&tr.Control[i]))
	}
	raw := acc.results() // before the clamp
	negative := 0
	for _, s := range raw.Control.TrackingSqError {
		for _, lo := range s.Lo {
			if lo < 0 {
				negative++
			}
		}
	}
	require.Positive(t, negative, "3 runs: the raw intervals of some mean squares go below 0")
	res := acc.Results()
	for i, s := range res.Control.TrackingSqError {
		for k, lo := range s.Lo {
			require.GreaterOrEqual(t, lo, 0.0, "tracking_sq_error[%d] step %d", i, k)
			require.Equal(t, raw.Control.TrackingSqError[i].Hi[k], s.Hi[k])
			require.Equal(t, raw.Control.TrackingSqError[i].Mean[k], s.Mean[k])
		}
	}
	for _, st := range res.Control.FinalSqError {
		require.GreaterOrEqual(t, st.Lo, 0.0)
	}
	for _, lo := range res.Control.EveSqError.Lo {
		require.GreaterOrEqual(t, lo, 0.0)
	}
	signed := 0
	for _, lo := range res.Control.TrackingError[0].Lo {
		if lo < 0 {
			signed++
		}
	}
	require.Positive(t, signed, "tracking errors are signed: their intervals are not clamped")
}

// The accumulator's BoundSeries is its Results' BoundSeries, bit for bit, after every episode:
// the live view's running mean square is the one the report will hold against the bound.
func TestBoundSeriesIsTheResults(t *testing.T) {
	for _, name := range []string{"cloud-vehicle", "consensus-gaussian"} {
		t.Run(name, func(t *testing.T) {
			_, p := loadPlan(t, name)
			a, err := NewAccumulator(p, 1)
			require.NoError(t, err)
			runs, s := a.BoundSeries()
			require.Zero(t, runs)
			require.Equal(t, SeriesPoints(p.Steps+1), s.Len())
			for ep := range 3 {
				for step := 0; step <= p.Steps; step++ {
					x := make([]float64, a.dim)
					for i := range x {
						x[i] = float64((ep+1)*(i+1)) + float64(step%7)
					}
					if a.control {
						require.NoError(t, a.AddControl(&trace.ControlRecord{Episode: ep, Step: step, X: x}))
					} else {
						require.NoError(t, a.AddConsensus(&trace.ConsensusRecord{Episode: ep, Step: step, X: x}))
					}
				}
				runs, s := a.BoundSeries()
				require.Equal(t, ep+1, runs)
				require.Equal(t, *a.Results().BoundSeries(), s)
			}
		})
	}
}
