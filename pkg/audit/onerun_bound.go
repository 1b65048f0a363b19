package audit

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// One-run auditing bound of Steinke, Nasr & Jagielski (2023), "Privacy auditing with one (1)
// training run", NeurIPS 2023 (arXiv:2305.08846), docs/math.md section 6.2.
//
// m canaries carry independent fair secret bits S_i; the auditor, from ONE output of the mechanism,
// makes r guesses (abstaining on the other m - r) of which v are correct. If the mechanism is
// (eps, delta)-DP with respect to each S_i (the others held fixed), their Theorem 3.1 with the
// delta term of Corollary 5.4 bounds
//
//	P[v or more correct] <= P[W >= v] + 2 m delta alpha,   W ~ Binomial(r, q), q = e^eps / (1 + e^eps),
//	alpha = max_{i = 1..v} P[v > W >= v - i] / i,
//
// (their Appendix D's p_value_DP_audit). The audit's eps_lb is the largest eps whose p-value is
// still below 1 - confidence: the claim (eps, delta) with any eps <= eps_lb is rejected at that level.

// binomUpper is P[Binomial(r, q) >= v] (1 for v <= 0, 0 for v > r).
func binomUpper(v, r int, q float64) float64 {
	switch {
	case v <= 0:
		return 1
	case v > r:
		return 0
	case q <= 0:
		return 0
	case q >= 1:
		return 1
	}
	// P[W >= v] = I_q(v, r - v + 1)
	return mathext.RegIncBeta(float64(v), float64(r-v+1), q)
}

// binomPMF is P[Binomial(r, q) = k].
func binomPMF(k, r int, q float64) float64 {
	if k < 0 || k > r {
		return 0
	}
	if q <= 0 {
		if k == 0 {
			return 1
		}
		return 0
	}
	if q >= 1 {
		if k == r {
			return 1
		}
		return 0
	}
	lr, _ := math.Lgamma(float64(r + 1))
	lk, _ := math.Lgamma(float64(k + 1))
	lrk, _ := math.Lgamma(float64(r - k + 1))
	return math.Exp(lr - lk - lrk + float64(k)*math.Log(q) + float64(r-k)*math.Log1p(-q))
}

// OneRunPValue is the p-value of v correct guesses out of r with m canaries under the null
// hypothesis that the mechanism is (eps, delta)-DP in each canary (Steinke et al. 2023, Theorem 3.1
// and Corollary 5.4; see above). It is 1 for invalid input (not 0 <= v <= r <= m, eps < 0, delta
// outside [0, 1]): no evidence.
func OneRunPValue(m, r, v int, eps, delta float64) float64 {
	if v < 0 || v > r || r > m || !(eps >= 0) || !(delta >= 0 && delta <= 1) {
		return 1
	}
	q := 1 / (1 + math.Exp(-eps))
	p := binomUpper(v, r, q)
	if delta > 0 {
		var alpha, sum float64
		for i := 1; i <= v; i++ {
			sum += binomPMF(v-i, r, q) // P[v > W >= v - i]
			if sum > float64(i)*alpha {
				alpha = sum / float64(i)
			}
		}
		p += 2 * float64(m) * delta * alpha
	}
	return math.Min(p, 1)
}

// OneRunEpsilonLB is the one-run lower bound on eps at the given confidence: the largest eps (to
// 1e-6) with OneRunPValue(m, r, v, eps, delta) < 1 - confidence, 0 when even eps = 0 is not
// rejected. The p-value increases with eps (q grows and the tails with it), so bisection is exact
// up to its tolerance, rounded down (conservative).
func OneRunEpsilonLB(m, r, v int, delta, confidence float64) float64 {
	beta := 1 - confidence
	if !(beta > 0 && beta < 1) || OneRunPValue(m, r, v, 0, delta) >= beta {
		return 0
	}
	lo, hi := 0.0, 1.0
	for OneRunPValue(m, r, v, hi, delta) < beta {
		lo, hi = hi, 2*hi
		if hi > 1e3 {
			return lo
		}
	}
	for hi-lo > 1e-6 {
		mid := (lo + hi) / 2
		if OneRunPValue(m, r, v, mid, delta) < beta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
