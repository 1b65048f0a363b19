package metrics

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEpisodeSink: the sink receives every episode the Results aggregate once, with the
// values of EpisodeColumns: a complete episode waiting for an incomplete lower one when Results
// includes it (not again when Results is called again, nor when it is folded later), the
// others as they are folded; the Welford mean of a column over the episodes is the Results'.
func TestEpisodeSink(t *testing.T) {
	p := planOf(t, load(t, "cloud-vehicle"))
	tr := playControl(t, p, 3, 3)
	a, err := NewAccumulator(p, 3)
	require.NoError(t, err)
	got := map[int][]float64{}
	var order []int
	a.SetEpisodeSink(func(ep int, v []float64) {
		require.NotContains(t, got, ep, "episode %d handed over twice", ep)
		got[ep], order = v, append(order, ep)
	})
	var held []int // episode 0's last record, held back
	for i := range tr.Control {
		r := &tr.Control[i]
		if r.Episode == 0 && r.Step == p.Steps {
			held = append(held, i)
			continue
		}
		require.NoError(t, a.AddControl(r))
	}
	require.Empty(t, got, "episodes 1, 2 wait for episode 0")
	require.Equal(t, 2, a.Results().Runs)
	require.Equal(t, []int{1, 2}, order, "Results hands over the waiting episodes")
	a.Results()
	require.NoError(t, a.AddControl(&tr.Control[held[0]]))
	require.Equal(t, []int{1, 2, 0}, order)
	res := a.Results()
	cols := EpisodeColumns(p)
	require.Equal(t, []string{"final_error_0", "final_error_1", "final_sq_error_0", "final_sq_error_1", "avg_sq_error_0", "avg_sq_error_1",
		"final_abs_error_0", "final_abs_error_1", "eve_final_sq_error"}, cols)
	mean := func(c int) float64 {
		var m float64
		for ep := range 3 {
			m += (got[ep][c] - m) / float64(ep+1)
		}
		return m
	}
	for c := range cols {
		require.Len(t, got[c%3], len(cols))
	}
	require.Equal(t, math.Float64bits(res.Control.FinalSqError[0].Mean), math.Float64bits(mean(2)))
	require.Equal(t, math.Float64bits(res.Control.AvgSqError[1].Mean), math.Float64bits(mean(5)))
	require.Equal(t, res.Control.FinalAbsErrorMax[0], math.Max(got[0][6], math.Max(got[1][6], got[2][6])))
}
