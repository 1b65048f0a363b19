package estimate

import "math"

// ProjectScore is the eavesdropper's score in the distinguishing game between the adjacent pair
// (x0, x0prime) (docs/math.md section 6): the projection of the estimate on the pair's difference
// d = x0 - x0prime, centred at the midpoint and normalised by ||d||^2:
//
//	score = <xhat0 - (x0 + x0prime)/2, d> / ||d||^2,
//
// so score = +1/2 when xhat0 = x0, -1/2 when xhat0 = x0prime, and components of the error orthogonal
// to d do not count. For an estimate with Gaussian error of covariance P the score is
// N(+-1/2, d'Pd/||d||^4) under the two hypotheses: thresholding it is the Neyman-Pearson test when P
// is isotropic on d. It returns NaN when the lengths differ or d = 0 (no pair to tell apart).
func ProjectScore(xhat0, x0, x0prime []float64) float64 {
	if len(xhat0) != len(x0) || len(x0) != len(x0prime) {
		return math.NaN()
	}
	var num, den float64
	for k := range x0 {
		d := x0[k] - x0prime[k]
		num += (xhat0[k] - 0.5*(x0[k]+x0prime[k])) * d
		den += d * d
	}
	if den == 0 {
		return math.NaN()
	}
	return num / den
}
