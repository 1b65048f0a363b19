package vecsum

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOutlierClippedExactly: one outlier row is clipped to radius C like any other, and the release is
// the clipped sum to rounding. The accumulator used to add every row to the running sum and subtract the
// clipping correction at the end, so an outlier of 1e20 swallowed the other rows' contribution (ulp(1e20)
// = 16384, against noise of a few hundred) and one of 1e160 was refused ("squared norm overflows",
// the outlier that once broke --json). The clipping error itself (1e320) overflows and is +Inf, a diagnostic.
func TestOutlierClippedExactly(t *testing.T) {
	const n = 1000
	sig := []float64{1, 2}
	mu := []float64{0.5, -1}
	plan, err := PlanNormal(sig, n, 1, 1e-6, 0)
	require.NoError(t, err)
	for _, outlier := range []float64{1e20, -1e160, 1e300} {
		x := normalRows(newRand("outlier"), n, mu, sig)
		x[2*7] = outlier // row 8, column 1
		want := clippedSumByHand(plan, x, mu)
		for _, chunk := range []int{2 * n, 2 * 3} { // one Add, and Adds of 3 rows
			acc, err := plan.NewAccumulator(mu)
			require.NoError(t, err)
			for i := 0; i < len(x); i += chunk {
				require.NoError(t, acc.Add(x[i:min(i+chunk, len(x))]), "outlier %g", outlier)
			}
			res, err := acc.Release(newRand("outlier-noise"))
			require.NoError(t, err)
			noise := newRand("outlier-noise")
			for j := range want {
				got := res.Sum[j] - plan.NoiseSigmas[j]*noise.NormFloat64()
				require.InDelta(t, want[j], got, 1e-9*float64(n), "outlier %g, column %d", outlier, j)
			}
			require.GreaterOrEqual(t, res.ClippedRows, 1)
			if math.Abs(outlier) > 1e155 {
				require.True(t, math.IsInf(res.ClipError, 1), "clip error %v", res.ClipError)
			}
		}
	}
}

// clippedSumByHand is Algorithm 3's clipped sum row by row: mu + (x - mu) min(1, C / ||(x - mu) . b||),
// with the norm scaled by its largest entry so that it does not overflow.
func clippedSumByHand(p *NormalPlan, x, mu []float64) []float64 {
	d := len(mu)
	out := make([]float64, d)
	v := make([]float64, d)
	for i := 0; i < len(x); i += d {
		m := 0.0
		for j := range v {
			v[j] = (x[i+j] - mu[j]) * p.Scaling[j]
			m = math.Max(m, math.Abs(v[j]))
		}
		s := 0.0
		for j := range v {
			s += (v[j] / m) * (v[j] / m)
		}
		f := math.Min(1, p.ClipRadius/(m*math.Sqrt(s)))
		for j := range out {
			out[j] += mu[j] + (x[i+j]-mu[j])*f
		}
	}
	return out
}
