package john

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The exact method by default is the John ellipsoid to machine accuracy: max leverage <= 1 +
// 1e-9, which certifies log det Q within d ln(1 + 1e-9) of the optimum (the dual's gap); the
// paper's fixed-point iteration, run 20,000 iterations, never exceeds it and comes close.
func TestExactIsExact(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		a := randomPolytope(200, 6, seed)
		res, err := Solve(a, Config{Method: Exact})
		require.NoError(t, err)
		require.True(t, res.Converged)
		require.LessOrEqual(t, res.MaxLeverage, 1+1e-9)
		require.InDelta(t, 6, res.SumWeights, 1e-9)
		gap := 6 * math.Log(res.MaxLeverage) // log det Q* - log det Q <= d ln(max h)
		require.Less(t, gap, 1e-6)
		fp, err := Solve(a, Config{Method: Exact, Trace: true, Xi: 1e-12, MaxIter: 20000})
		require.NoError(t, err)
		require.LessOrEqual(t, fp.LogDetQ, res.LogDetQ+1e-9, "a feasible point's log det cannot beat the optimum")
		require.InDelta(t, res.LogDetQ, fp.LogDetQ, 1e-3)
		// every row inside: h_i <= 1 + 1e-9 means E/sqrt(1+xi) inside P
		for _, w := range res.Weights {
			require.GreaterOrEqual(t, w, 0.0)
		}
		t.Logf("seed %d: %d Wolfe-Atwood iterations, max h - 1 = %.2g, log det Q = %.12f (fixed point after 20000: %.12f)",
			seed, res.Iterations, res.MaxLeverage-1, res.LogDetQ, fp.LogDetQ)
	}
}

// ExactTrace follows the same iterations as Solve: one point per iterate, ending where Solve
// stops, at most 1 + xi.
func TestExactTrace(t *testing.T) {
	a := randomPolytope(200, 6, 4)
	tr, err := ExactTrace(a, 1e-9, MaxIterWolfeAtwood)
	require.NoError(t, err)
	res, err := Solve(a, Config{Method: Exact, Xi: 1e-9})
	require.NoError(t, err)
	require.Len(t, tr, res.Iterations+1)
	for i, p := range tr {
		require.Equal(t, i, p.Iteration)
	}
	require.GreaterOrEqual(t, tr[0].MaxLeverage, 1.0, "max h >= 1 whenever sum w = d")
	require.LessOrEqual(t, tr[len(tr)-1].MaxLeverage, 1+1e-9)
	require.InDelta(t, res.MaxLeverage, tr[len(tr)-1].MaxLeverage, 1e-9)
	// a cap: maxIter iterations and the last iterate recorded
	tr, err = ExactTrace(a, 1e-9, 5)
	require.NoError(t, err)
	require.Len(t, tr, 6)
	require.Greater(t, tr[5].MaxLeverage, 1+1e-9)
	_, err = ExactTrace(a, 0, 10)
	require.Error(t, err)
}

// BenchmarkExactJohn200x6: dpsim john's default exact solve of a random polytope, n = 200, d = 6.
func BenchmarkExactJohn200x6(b *testing.B) {
	a := randomPolytope(200, 6, 1)
	for i := 0; i < b.N; i++ {
		if _, err := Solve(a, Config{Method: Exact}); err != nil {
			b.Fatal(err)
		}
	}
}
