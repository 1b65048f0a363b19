package vecsum

import (
	"math"
	"math/rand/v2"
)

// ClipError is a Monte Carlo estimate of the error that clipping itself adds to the sum (Section 4
// ignores it: "in this report I will solely focus on the error introduced by the noise").
//
// For a row x ~ N(mu, diag(sigma^2)) centred at the true mean and clipped in the space scaled by b at
// radius C, the clipping error of the row in the original space is
//
//	e = (1 - C/||x~||)_+ x~ / b,   x~ = (x - mu) . b,
//
// which is symmetric about 0, so the n rows' errors are independent with mean 0 and
// E||sum_i e_i||^2 = n E||e||^2 (Expected). Clipping is a rare event (probability p_C ~ 1/n), so plain
// Monte Carlo would see almost no clipped rows; the estimate uses importance sampling with exponential
// tilting of ||x~||^2: x~_j ~ N(0, v_j / (1 - 2 theta v_j)), v_j = (b_j sigma_j)^2, theta chosen so that
// the tilted mean of ||x~||^2 is C^2, and likelihood ratio prod_j (1 - 2 theta v_j)^{-1/2} e^{-theta ||x~||^2},
// which is bounded by its value at ||x~|| = C on the clipping region.
type ClipError struct {
	Expected       float64 // n E||e||^2: expected squared error of the sum caused by clipping
	StdErr         float64 // its Monte Carlo standard error
	PerRow         float64 // E||e||^2
	ClipProb       float64 // estimated Pr[||x~|| > C] (a check of the generalized chi-square quantile)
	ClipProbStdErr float64
	Samples        int
}

// EstimateClipError estimates the clipping error for data standard deviations sigmas, scaling b (nil
// for no scaling), clip radius c in the scaled space and n rows, from samples draws of r.
func EstimateClipError(sigmas, b []float64, c float64, n, samples int, r *rand.Rand) (ClipError, error) {
	if err := checkSigmas(sigmas); err != nil {
		return ClipError{}, err
	}
	if b != nil && len(b) != len(sigmas) {
		return ClipError{}, inputErr("clip error: %d scalings for %d dimensions", len(b), len(sigmas))
	}
	if !(c > 0) || samples < 2 || n < 1 {
		return ClipError{}, inputErr("clip error: need radius > 0 (got %v), samples >= 2 (got %d), n >= 1 (got %d)", c, samples, n)
	}
	d := len(sigmas)
	v := make([]float64, d)
	bj := make([]float64, d)
	vmax, vsum := 0.0, 0.0
	for j, s := range sigmas {
		bj[j] = 1
		if b != nil {
			bj[j] = b[j]
		}
		v[j] = (bj[j] * s) * (bj[j] * s)
		vmax = math.Max(vmax, v[j])
		vsum += v[j]
	}
	c2 := c * c
	theta := 0.0
	if c2 > vsum {
		// solve sum_j v_j / (1 - 2 theta v_j) = C^2 on [0, 1/(2 vmax)) by bisection
		lo, hi := 0.0, 1/(2*vmax)
		for it := 0; it < 200; it++ {
			mid := 0.5 * (lo + hi)
			m := 0.0
			for _, vj := range v {
				m += vj / (1 - 2*mid*vj)
			}
			if m < c2 {
				lo = mid
			} else {
				hi = mid
			}
		}
		theta = lo
	}
	sd := make([]float64, d)
	logM := 0.0
	for j, vj := range v {
		sd[j] = math.Sqrt(vj / (1 - 2*theta*vj))
		logM -= 0.5 * math.Log1p(-2*theta*vj)
	}
	z := make([]float64, d)
	var s1, s2, p1, p2 float64
	for s := 0; s < samples; s++ {
		nrm := 0.0
		for j := range z {
			z[j] = sd[j] * r.NormFloat64()
			nrm += z[j] * z[j]
		}
		if nrm <= c2 {
			continue
		}
		lr := math.Exp(logM - theta*nrm)
		f := 1 - c/math.Sqrt(nrm)
		e2 := 0.0
		for j := range z {
			e := f * z[j] / bj[j]
			e2 += e * e
		}
		g := e2 * lr
		s1 += g
		s2 += g * g
		p1 += lr
		p2 += lr * lr
	}
	m := float64(samples)
	mean := s1 / m
	pm := p1 / m
	out := ClipError{PerRow: mean, ClipProb: pm, Samples: samples,
		StdErr:         math.Sqrt(math.Max(s2/m-mean*mean, 0) / (m - 1)),
		ClipProbStdErr: math.Sqrt(math.Max(p2/m-pm*pm, 0) / (m - 1))}
	out.Expected = float64(n) * out.PerRow
	out.StdErr *= float64(n)
	return out, nil
}
