package audit

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The game played in chunks (any size, any workers, recorded in any order) is PlayFast's game:
// the same report, bit for bit.
func TestChunksEqualPlayFast(t *testing.T) {
	cases := []struct {
		scenario          string
		trials, size, thr int
	}{
		{"audit-vehicle-structured", 1500, ChunkTrials, 2},
		{"audit-vehicle-iid-naive", 700, 333, 1},
		{"audit-consensus-laplace", 300, 97, 3},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			g := newGame(t, loadPlan(t, c.scenario), GameOptions{})
			const seed = 17
			want, err := PlayFast(context.Background(), g, FastOptions{Trials: c.trials, Seed: seed})
			require.NoError(t, err)

			got := g.NewOutcome(EngineFast, seed, c.trials)
			var los []int
			for lo := 0; lo < 2*c.trials; lo += c.size {
				los = append(los, lo)
			}
			rand.New(rand.NewPCG(3, 4)).Shuffle(len(los), func(i, j int) { los[i], los[j] = los[j], los[i] })
			for _, lo := range los {
				hi := min(lo+c.size, 2*c.trials)
				scores, err := PlayChunk(context.Background(), g, seed, lo, hi, c.thr)
				require.NoError(t, err)
				require.NoError(t, got.AddChunk(lo, hi, scores))
			}
			want.Elapsed, got.Elapsed = time.Second, time.Second
			rw, err := g.Analyze(want, ReportOptions{})
			require.NoError(t, err)
			rg, err := g.Analyze(got, ReportOptions{})
			require.NoError(t, err)
			require.Equal(t, rw, rg)
			require.Equal(t, want.Episodes, got.Episodes)
		})
	}
}

// A chunk of the wrong shape, or with a score that is not finite (from a forging worker), is
// refused without recording a trial.
func TestAddChunkRefusesMisfits(t *testing.T) {
	g := newGame(t, loadPlan(t, "audit-vehicle-structured"), GameOptions{})
	k := len(g.ScoreNames())
	o := g.NewOutcome(EngineFast, 1, 100)
	for name, c := range map[string]struct {
		lo, hi, n int
	}{
		"short":    {0, 10, 10*k - 1},
		"long":     {0, 10, 10*k + 1},
		"beyond":   {195, 205, 10 * k},
		"negative": {-1, 9, 10 * k},
		"empty":    {5, 5, 0},
	} {
		require.Error(t, o.AddChunk(c.lo, c.hi, make([]float64, c.n)), name)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		s := make([]float64, 10*k)
		s[7] = bad
		require.ErrorContains(t, o.CheckChunk(190, 200, s), "not finite")
		require.ErrorContains(t, o.AddChunk(190, 200, s), "not finite")
	}
	require.Zero(t, o.Episodes)
	require.NoError(t, o.AddChunk(190, 200, make([]float64, 10*k)))
	require.Equal(t, 10, o.Episodes)
}
