package plan_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
)

// TestNoiseFreeMatchesSim: the noise-free tracking error (at T and time-averaged) equals the simulator's own episode with
// noise none (the plant and cloud arithmetic the runs use), at x(T).
func TestNoiseFreeMatchesSim(t *testing.T) {
	for _, name := range []string{"cloud-vehicle.yaml", "cloud-vehicle-fullstate.yaml", "cloud-vehicle-lqr.yaml"} {
		p := newPlan(t, name)
		got, err := p.NoiseFreeTracking()
		require.NoError(t, err, name)

		s := *p.Scenario
		s.Privacy.Noise = noise.None
		q, err := plan.New(&s, plan.Options{})
		require.NoError(t, err)
		pl, err := sim.NewPlant(q, 1)
		require.NoError(t, err)
		ctl, err := sim.NewController(q)
		require.NoError(t, err)
		require.NoError(t, pl.Begin(0, nil))
		ctl.Begin(0)
		y := make([]float64, pl.Ny())
		u := make([]float64, pl.Nu())
		xr := make([]float64, pl.Nx())
		avg := make([]float64, pl.Nx())
		for k := 0; k < q.Steps; k++ {
			q.Reference.At(k, xr)
			for i, x := range pl.State() {
				avg[i] += (x - xr[i]) * (x - xr[i]) / float64(q.Steps+1)
			}
			pl.Emit(y)
			ctl.Step(k, y, u)
			pl.Apply(u)
		}
		q.Reference.At(q.Steps, xr)
		for i, x := range pl.State() {
			want := (x - xr[i]) * (x - xr[i])
			require.InDelta(t, want, got.Final[i], 1e-12*math.Max(1, want), "%s component %d", name, i)
			avg[i] += want / float64(q.Steps+1)
			require.InDelta(t, avg[i], got.Avg[i], 1e-12*math.Max(1, avg[i]), "%s component %d", name, i)
		}
	}
}

// TestPlanConditioning: the shipped vehicle plans are not fragile.
func TestPlanConditioning(t *testing.T) {
	for _, name := range []string{"cloud-vehicle.yaml", "cloud-vehicle-fullstate.yaml", "audit-vehicle-iid-naive.yaml"} {
		c := newPlan(t, name).Conditioning()
		require.False(t, c.Fragile, "%s: %s %v", name, c.Summary(), c.Reasons)
		require.Positive(t, c.Directions, name)
	}
}
