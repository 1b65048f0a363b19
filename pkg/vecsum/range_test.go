package vecsum

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSigmaRange: standard deviations far from 1 made the plan +Inf or NaN (gain NaN, scaling 0 for
// sigma 1e200 once gave non-finite outputs); they are refused by name, and otherwise every planned
// quantity and the clipping-error estimate are finite.
func TestSigmaRange(t *testing.T) {
	refused := []struct {
		sigmas []float64
		want   string
	}{
		{[]float64{1e200, 1}, "sigma[0] = 1e+200: standard deviations must be at most 1e+50"},
		{[]float64{1, 2 * MaxSigma}, "sigma[1] = 2e+50"},
		{[]float64{1e-300, 1e-300}, "the plan leaves float64: scaling b[0] = +Inf"},
	}
	for _, c := range refused {
		_, err := PlanNormal(c.sigmas, 10, 1, 1e-6, 0)
		require.ErrorIs(t, err, ErrInput)
		require.ErrorContains(t, err, c.want)
	}
	for _, s := range [][]float64{{MaxSigma, MaxSigma, 1}, {1e-100, 1e-100}, {MaxSigma, 1e-300}, {1, 1e-300}} {
		p, err := PlanNormal(s, 10, 1, 1e-6, 0)
		require.NoError(t, err, "%v", s)
		vals := append([]float64{p.ClipRadius, p.ClipRadiusUnscaled, p.ExpectedError, p.ExpectedErrorUnscaled, p.Gain,
			p.NoiseSigmaUnscaled}, append(append(p.Scaling, p.NoiseSigmas...), p.ScaledSigmas...)...)
		ce, err := EstimateClipError(s, p.Scaling, p.ClipRadius, p.N, 200, newRand("range"))
		require.NoError(t, err)
		vals = append(vals, ce.Expected, ce.StdErr, ce.ClipProb, ce.ClipProbStdErr)
		for i, v := range vals {
			require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "sigmas %v: value %d is %v", s, i, v)
		}
	}
}

// TestBoxWidthRange: box widths whose squares overflow gave +Inf noise; they are refused by name. Tiny
// widths whose squares underflow gave an infinite scaling; they now plan finitely.
func TestBoxWidthRange(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		ok     bool
	}{{-1e308, 1e308, false}, {0, 2 * MaxWidth, false}, {-MaxWidth / 2, MaxWidth / 2, true}, {0, 1e-200, true}} {
		p, err := PlanBox(MethodGaussian, []float64{c.lo, 0}, []float64{c.hi, 1e-200}, 1, 1e-6)
		if !c.ok {
			require.ErrorIs(t, err, ErrInput)
			require.ErrorContains(t, err, "dimension 0: width")
			continue
		}
		require.NoError(t, err)
		for _, v := range append(append([]float64{p.ExpectedError}, p.Scaling...), p.NoiseSigmas...) {
			require.False(t, math.IsInf(v, 0) || math.IsNaN(v), "box [%v, %v]: %v", c.lo, c.hi, v)
		}
	}
}
