package engine

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// consensus-gaussian / consensus-laplace (paper Figs. 5-7): 500 runs, T = 30, eps in {1, 0.1, 0.01}.
//
// Theory (docs/math.md section 5): with W = I - L, eq. (25) with constant offsets gamma gives exactly
//
//	x(T) = W^T x(0) - (I - W^T) gamma,
//
// so E[x(T) - 1 x*] = W^T x(0) - 1 x* =: d(T) (the noise-free transient, ||d(T)|| <= alpha^T ||x(0) - 1 x*||)
// and E||x(T) - 1 x*||^2 = ||d(T)||^2 + v ||I - W^T||_F^2 with v = Var(gamma_i), which tends to
// (N-1) v, below Proposition 1's bound N v (sum sigma_i^2; 2 sum b_i^2 for Laplace).
func TestConsensusProposition1(t *testing.T) {
	const runs, steps = 500, 30
	type cfg struct {
		mech privacy.Mechanism
		eps  float64
	}
	var cfgs []cfg
	for _, m := range []privacy.Mechanism{privacy.Gaussian, privacy.Laplace} {
		for _, eps := range []float64{1, 0.1, 0.01} {
			cfgs = append(cfgs, cfg{m, eps})
		}
	}
	// Family-wise 5% over the 6 MSE comparisons and the 6 x 10 per-agent mean comparisons.
	zMSE, zDev := zBonferroni(0.05, len(cfgs)), zBonferroni(0.05, 10*len(cfgs))
	for _, c := range cfgs {
		s := consensusVariant(t, c.mech, c.eps, runs, steps)
		p := planOf(t, s)
		res, _ := runFast(t, p, s.Seed, Options{})
		require.Equal(t, runs, res.Runs)
		m := res.Consensus
		n := p.Graph.N
		v := res.NoiseVariance

		// Exact finite-T expectation from W.
		WT := matPow(graphW(p), steps)
		x0 := mat.NewVecDense(n, append([]float64(nil), s.X0...))
		xstar := floats.Sum(s.X0) / float64(n)
		var wx mat.VecDense
		wx.MulVec(WT, x0)
		d := make([]float64, n)
		var dev0 float64
		for i := range d {
			d[i] = wx.AtVec(i) - xstar
			dev0 += (s.X0[i] - xstar) * (s.X0[i] - xstar)
		}
		var iw mat.Dense
		iw.Sub(identity(n), WT)
		frob := mat.Norm(&iw, 2)
		want := floats.Dot(d, d) + v*frob*frob

		f := m.FinalSqDeviation
		t.Logf("%-8s eps=%-5g: E||x(T)-1x*||^2 = %.4g +- %.3g (95%% CI [%.4g, %.4g]); exact %.4g; limit (N-1)v = %.4g; Prop. 1 bound %.4g",
			c.mech, c.eps, f.Mean, f.SE, f.Lo, f.Hi, want, m.OffsetLimit, m.Prop1Bound)
		require.InDelta(t, xstar, m.XStar.Mean, 1e-12)
		require.InDelta(t, float64(n)*v, m.Prop1Bound, 1e-9*m.Prop1Bound)
		// The exact expectation is below the bound (the theory); the report's check is the 95 %
		// upper confidence limit against it, which at Laplace eps = 1 (exact 18 against 20) fails on
		// about 8 % of seeds: the check must say what its numbers say, not pass.
		require.Less(t, want, m.Prop1Bound, "the exact finite-T MSE is below Proposition 1's bound")
		require.Equal(t, f.Hi < m.Prop1Bound, m.FinalBelowBound, "the report's verdict is its confidence limit against the bound")
		require.InDelta(t, want, f.Mean, zMSE*f.SE, "final MSE matches the exact expectation")

		// E[x_i(T) - x*] is the vanishing transient d_i(T) (|d| <= alpha^T ||x(0) - 1x*||), and 0
		// for the noise: within its interval of d_i(T).
		require.LessOrEqual(t, math.Sqrt(floats.Dot(d, d)), math.Pow(m.Alpha, steps)*math.Sqrt(dev0)+1e-9)
		for i := 0; i < n; i++ {
			st := m.Deviation[i].At(steps)
			require.InDelta(t, d[i], st.Mean, zDev*st.SE, "%s eps=%g agent %d: E[x_i(T)-x*] = %.4g +- %.3g, transient %.3g", c.mech, c.eps, i, st.Mean, st.SE, d[i])
		}

		// The network sum is preserved to rounding in every run and step.
		require.Less(t, m.SumRelDevMax, 1e-9)

		// The eavesdropper's estimate x(0) + gamma never improves: its error is ||gamma||^2 at
		// every t, with mean N v.
		e := m.EveSqError
		for tt := 1; tt < steps; tt++ {
			require.InEpsilon(t, e.Mean[0], e.Mean[tt], 1e-9)
		}
		require.InDelta(t, float64(n)*v, e.Mean[0], zMSE*e.SE[0])
	}
}

// A large network (100 agents, random 4-regular graph) also preserves the sum to 1e-9.
func TestConsensusLargeNetworkSum(t *testing.T) {
	s := largeConsensus(t, 100, 50)
	p := planOf(t, s)
	res, _ := runFast(t, p, 3, Options{Runs: 20})
	require.Equal(t, 20, res.Runs)
	require.Less(t, res.Consensus.SumRelDevMax, 1e-9)
	t.Logf("100 agents: max relative sum deviation %.3g, alpha %.4f", res.Consensus.SumRelDevMax, res.Consensus.Alpha)
}
