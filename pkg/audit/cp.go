package audit

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// ClopperPearsonUpper returns the exact one-sided upper confidence bound of level 1-alpha for a binomial
// proportion p after k successes in n trials (Clopper & Pearson 1934): the p_up with
// P(Bin(n, p_up) <= k) = alpha, i.e. the (1-alpha) quantile of Beta(k+1, n-k), so that
// P(p <= p_up) >= 1 - alpha for every p. For k = n it is 1; for k = 0 it is 1 - alpha^(1/n).
//
// It is computed with the inverse regularised incomplete beta (gonum mathext.InvRegIncBeta, Cephes incbi),
// polished by safeguarded Newton/bisection steps on RegIncBeta until the defining equation holds to 1e-9
// relative in alpha (RegIncBeta itself is good to about 1e-11 for parameters near 10^5; asking for more
// only burns iterations). Cost: a few microseconds. Invalid input (n <= 0, k outside [0, n], alpha
// outside (0, 1)) gives NaN.
func ClopperPearsonUpper(k, n int, alpha float64) float64 {
	if n <= 0 || k < 0 || k > n || !(alpha > 0 && alpha < 1) {
		return math.NaN()
	}
	switch {
	case k == n:
		return 1
	case k == 0:
		// P(Bin(n,p) = 0) = (1-p)^n = alpha, written without cancellation for small alpha^(1/n) gaps.
		return -math.Expm1(math.Log(alpha) / float64(n))
	}
	// P(Bin(n,p) <= k) = I_{1-p}(n-k, k+1) = 1 - I_p(k+1, n-k) = alpha.
	return betaQuantile(float64(k+1), float64(n-k), 1-alpha, alpha)
}

// ClopperPearsonLower returns the exact one-sided lower confidence bound of level 1-alpha: the p_lo with
// P(Bin(n, p_lo) >= k) = alpha (the alpha quantile of Beta(k, n-k+1)); 0 for k = 0. By symmetry
// ClopperPearsonLower(k, n, a) = 1 - ClopperPearsonUpper(n-k, n, a).
func ClopperPearsonLower(k, n int, alpha float64) float64 {
	u := ClopperPearsonUpper(n-k, n, alpha)
	if math.IsNaN(u) {
		return u
	}
	return 1 - u
}

// betaQuantile returns x with I_x(a, b) = y, where tail = 1 - y is passed separately so that the
// residual can be evaluated on the small side (1 - I_x(a, b) = I_{1-x}(b, a)) without cancellation.
func betaQuantile(a, b, y, tail float64) float64 {
	x := mathext.InvRegIncBeta(a, b, y)
	if !(x > 0 && x < 1) {
		x = a / (a + b)
	}
	// Residual on the upper tail: r(x) = I_{1-x}(b, a) - tail, decreasing in x.
	resid := func(x float64) float64 { return mathext.RegIncBeta(b, a, 1-x) - tail }
	// Log of the Beta(a, b) density at x, for Newton steps.
	lbeta := lgamma(a) + lgamma(b) - lgamma(a+b)
	logDens := func(x float64) float64 {
		return (a-1)*math.Log(x) + (b-1)*math.Log1p(-x) - lbeta
	}
	r := resid(x)
	if math.Abs(r) <= 1e-9*tail {
		return x
	}
	// Bracket the root, then safeguarded Newton (the residual is monotone).
	lo, hi := 0.0, 1.0
	if r > 0 {
		lo = x
	} else {
		hi = x
	}
	for it := 0; it < 200; it++ {
		d := math.Exp(logDens(x)) // dr/dx = -density
		xn := x + r/d
		if !(xn > lo && xn < hi) || d == 0 || math.IsInf(d, 0) {
			xn = 0.5 * (lo + hi)
		}
		x = xn
		r = resid(x)
		if r > 0 {
			lo = x
		} else {
			hi = x
		}
		if math.Abs(r) <= 1e-9*tail || hi-lo <= 1e-14*x {
			break
		}
	}
	return x
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}
