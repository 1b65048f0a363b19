package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/sim"
)

// The lean loop is the same computation as Run: its final estimate equals the eavesdropper
// record of step T-1 bit for bit, episode by episode, for cloud control and consensus.
func TestPlayerMatchesRun(t *testing.T) {
	for _, name := range []string{"cloud-vehicle", "cloud-vehicle-fullstate", "consensus-gaussian", "consensus-laplace"} {
		t.Run(name, func(t *testing.T) {
			_, p := loadPlan(t, name)
			const runs = 6
			_, tr := runFast(t, p, 11, Options{Runs: runs, KeepTraces: true, Workers: 2})
			want := map[int][]float64{}
			for _, r := range tr.Control {
				if r.Step == p.Steps-1 {
					want[r.Episode] = r.EveX0
				}
			}
			for _, r := range tr.Consensus {
				if r.Step == p.Steps-1 {
					want[r.Episode] = r.EveX0
				}
			}
			require.Len(t, want, runs)
			l, err := NewPlayer(p, sim.NewSeeds(11))
			require.NoError(t, err)
			est := make([]float64, l.EstimateDim())
			for ep := runs - 1; ep >= 0; ep-- { // any order: an episode depends on (seed, ep) only
				ok, err := l.Play(ep, nil, est)
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, want[ep], est, "episode %d", ep)
			}
		})
	}
}

// With the same episode (same noise) the estimate moves exactly by the change of x(0): the
// transcript is affine in x(0) and the eavesdropper's least squares recovers the shift (up to
// rounding). This is what makes an explicit x0 the challenger's only lever.
func TestLoopExplicitX0Shift(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle-fullstate")
	l, err := NewPlayer(p, sim.NewSeeds(5))
	require.NoError(t, err)
	require.Equal(t, 2, l.StateDim())
	a, b := make([]float64, 2), make([]float64, 2)
	_, err = l.Play(3, []float64{0, 0}, a)
	require.NoError(t, err)
	_, err = l.Play(3, []float64{0.7, -0.2}, b)
	require.NoError(t, err)
	// the same noise: the estimates differ by the shift, to the secure sampler's grid (the
	// release round_g(x(0) + S eta) moves by the shift rounded to g)
	g := p.Granularity
	require.InDelta(t, 0.7, b[0]-a[0], g+1e-9)
	require.InDelta(t, -0.2, b[1]-a[1], g+1e-9)

	_, err = l.Play(0, []float64{1}, a)
	require.ErrorContains(t, err, "x0 has length 1")
	_, err = l.Play(0, nil, a[:1])
	require.ErrorContains(t, err, "estimate has length 1")

	_, pc := loadPlan(t, "consensus-gaussian")
	lc, err := NewPlayer(pc, sim.NewSeeds(5))
	require.NoError(t, err)
	x0 := append([]float64(nil), pc.Scenario.X0...)
	e0, e1 := make([]float64, len(x0)), make([]float64, len(x0))
	_, err = lc.Play(2, x0, e0)
	require.NoError(t, err)
	x0[0]++
	_, err = lc.Play(2, x0, e1)
	require.NoError(t, err)
	for i := range e0 {
		want := 0.0
		if i == 0 {
			want = 1
		}
		require.InDelta(t, want, e1[i]-e0[i], 1e-9, "agent %d", i)
	}
	_, err = lc.Play(0, x0[:3], e0)
	require.ErrorContains(t, err, "want 10 agents")
}

// The loop allocates only the per-episode random sources (one per emitter, in Begin).
func TestLoopAllocations(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	l, err := NewPlayer(p, sim.NewSeeds(1))
	require.NoError(t, err)
	est := make([]float64, 2)
	x0 := []float64{0, 0}
	ep := 0
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := l.Play(ep, x0, est); err != nil {
			t.Fatal(err)
		}
		ep++
	})
	// rng.New: the *rand.Rand and its PCG source, once per episode, never per step (T = 100).
	require.LessOrEqual(t, allocs, 2.0)
}

// One lean cloud-vehicle episode (T = 100): the auditor's fast-engine unit of work.
func BenchmarkLoopVehicleEpisode(b *testing.B) {
	_, p := loadPlan(b, "cloud-vehicle")
	l, err := NewPlayer(p, sim.NewSeeds(1))
	if err != nil {
		b.Fatal(err)
	}
	est := make([]float64, 2)
	x0 := []float64{0, 0}
	b.ReportAllocs()
	ep := 0
	for b.Loop() {
		if _, err := l.Play(ep, x0, est); err != nil {
			b.Fatal(err)
		}
		ep++
	}
	b.ReportMetric(float64(ep)/b.Elapsed().Seconds(), "episodes/s")
}
