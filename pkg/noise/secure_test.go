package noise_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// hockeyStick returns sum over the grid cells of max(0, P(cell) - e^eps P'(cell)) for the
// released value round_g(x + N) against round_g(x' + N), N of the given cell-probability law
// (cell(lo, hi) = P(lo <= N < hi)), over the cells within span of x and x'.
func hockeyStick(g, x, xp, eps, span float64, cell func(lo, hi float64) float64) float64 {
	lo := math.Floor((math.Min(x, xp)-span)/g) - 1
	hi := math.Ceil((math.Max(x, xp)+span)/g) + 1
	var sum, comp float64 // Kahan: 10^7 small terms
	e := math.Exp(eps)
	for k := lo; k <= hi; k++ {
		a, b := (k-0.5)*g, (k+0.5)*g
		d := cell(a-x, b-x) - e*cell(a-xp, b-xp)
		if d > 0 {
			y := d - comp
			t := sum + y
			comp = (t - sum) - y
			sum = t
		}
	}
	return sum
}

// normalCell is P(lo <= sigma Z < hi), each tail computed where it keeps its relative precision.
func normalCell(sigma float64) func(lo, hi float64) float64 {
	return func(lo, hi float64) float64 {
		s := sigma * math.Sqrt2
		if lo >= 0 {
			return 0.5 * (math.Erfc(lo/s) - math.Erfc(hi/s))
		}
		if hi <= 0 {
			return 0.5 * (math.Erfc(-hi/s) - math.Erfc(-lo/s))
		}
		return 1 - 0.5*math.Erfc(-lo/s) - 0.5*math.Erfc(hi/s)
	}
}

// laplaceCell is P(lo <= b L < hi) for L standard Laplace.
func laplaceCell(b float64) func(lo, hi float64) float64 {
	F := func(v float64) float64 { // upper tail for v >= 0, lower for v < 0
		if v < 0 {
			return 0.5 * math.Exp(v/b)
		}
		return 1 - 0.5*math.Exp(-v/b)
	}
	return func(lo, hi float64) float64 {
		if lo >= 0 {
			return 0.5*math.Exp(-lo/b) - 0.5*math.Exp(-hi/b)
		}
		return F(hi) - F(lo)
	}
}

// The secure release round_g(x + noise) satisfies the defining inequality of (eps, delta)-DP at
// the calibrated scale, grid included: the hockey-stick divergence, summed exactly over the grid's
// cells, is at most delta for the Gaussian (tight: the real mechanism's is delta, and rounding is
// post-processing) and 0 beyond e^eps for the Laplace - at the grid dpsim uses (2^-20 of the
// scale) and at coarse grids, with x and x' = x + mu anywhere relative to the grid.
func TestSecureReleaseDefiningInequality(t *testing.T) {
	const eps, delta, mu = 1.0, 1e-2, 1.0
	ki, err := privacy.KappaInverse(eps, delta)
	require.NoError(t, err)
	sigma := mu / ki // the tight calibration of a unit sensitivity (eq. 7)
	b := mu / eps    // eq. (14)
	for _, c := range []struct {
		name  string
		scale float64
		g     float64
		cell  func(lo, hi float64) float64
		limit float64
		span  float64
	}{
		{"gaussian, dpsim's grid", sigma, noise.Granularity(sigma), normalCell(sigma), delta, 9 * sigma},
		{"gaussian, grid sigma/8", sigma, sigma / 8, normalCell(sigma), delta, 12 * sigma},
		{"gaussian, grid 2 sigma", sigma, 2 * sigma, normalCell(sigma), delta, 12 * sigma},
		{"laplace, dpsim's grid", b, noise.Granularity(b), laplaceCell(b), 0, 12 * b},
		{"laplace, grid b/3", b, b / 3, laplaceCell(b), 0, 40 * b},
	} {
		xs := []float64{0, 0.3 * c.g, 17.123}
		if c.g < c.scale/1000 { // 10^7 cells a pair: one position against the grid
			xs = []float64{0.3 * c.g}
		}
		for _, x := range xs {
			hs := hockeyStick(c.g, x, x+mu, eps, c.span, c.cell)
			t.Logf("%s, x = %g: hockey-stick %.6g (limit %g)", c.name, x, hs, c.limit)
			require.LessOrEqual(t, hs, c.limit+1e-9, "%s, x = %g", c.name, x)
			if c.limit > 0 && c.g < sigma/1000 {
				require.InDelta(t, delta, hs, 1e-6, "at a fine grid the rounded mechanism is as tight as the real one")
			}
		}
	}
}
