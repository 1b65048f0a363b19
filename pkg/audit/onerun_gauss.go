package audit

import (
	"math"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// The continuous one-run statistic for Gaussian claims, after A. Agrawal, Y. Wei, J. Singh,
// M. Magdon-Ismail, V. Zikas, "Let's Ask Gauss: Improved One-Run Privacy Auditing" (arXiv:2606.12733,
// 2026), docs/math.md section 6.2.
//
// Steinke et al.'s and Mahloujifar et al.'s bounds (onerun_bound.go, onerun_fdp.go) see only how
// many of r thresholded guesses are right. Instead, every canary's evidence enters as a number: with
// s_i = 2 S_i - 1 the secret sign of canary i and
//
//	z_i = sign(d) (xhat_i - base_i - d/2) / sqrt(var_i)
//
// its score standardised by the estimate's variance var_i (canaryVariances, the noise model of the
// plan), the statistic is T = sum_i s_i z_i / sqrt(m).
//
// Assumption (stated with every result): xhat_i = x_i(0) + e_i with e_i ~ N(0, var_i) EXACTLY, var_i
// the modelled variance, and e_1, ..., e_m independent of each other and of the coins. Then
// z_i = s_i mu_i / 2 + e_i / sqrt(var_i) with mu_i = |d| / sqrt(var_i), so s_i z_i = mu_i / 2 + s_i e_i /
// sqrt(var_i), and s_i e_i / sqrt(var_i) ~ N(0, 1) independently of s_i: T ~ N(sqrt(m) mubar / 2, 1)
// EXACTLY, mubar the mean of the mu_i. No central limit theorem is needed, so
//
//	mu_lb = 2 (T - Phi^{-1}(confidence)) / sqrt(m)
//
// is an exact lower confidence bound on mubar: P[mu_lb > mubar] = 1 - confidence. Canary i's score
// (a post-processing of the transcript) is a Gaussian shift of separation mu_i, i.e. exactly mu_i-GDP,
// so a transcript (eps, delta)-DP in every canary has every mu_i <= kappa^{-1}(eps, delta) (Balle &
// Wang 2018; a Gaussian shift is (eps, delta)-DP iff its mu is at most that) and mubar with them: the
// claim is rejected when mu_lb > kappa^{-1}(eps, delta), which happens with probability at most
// 1 - confidence for a mechanism at or below its claim, exactly 1 - confidence at it. The bound is
// eps_lb = the eps of mu_lb-GDP at the claimed delta (EpsilonForGDP, 0 for mu_lb <= 0): eps_lb > eps
// exactly when mu_lb > kappa^{-1}(eps, delta). Nothing is thresholded and no k is chosen, so no
// choice can be tuned on the run.
//
// The assumption is the model's, not the theorem's: if the noise is not Gaussian, its variance is not
// the modelled one, the estimate is biased, or the agents' errors are correlated (faults), T is not
// N(., 1) and the level does not hold. The report gives the sample variance of the s_i z_i, which is
// 1 up to about sqrt(2/m) when the assumption holds (with equal mu_i).

// oneRunGaussStatistic is T = sum_i s_i z_i / sqrt(m) (see above) and the sample variance of the
// s_i z_i.
func oneRunGaussStatistic(est, base, vari []float64, d float64, bits []int) (t, sampleVar float64) {
	m := len(est)
	sd := math.Copysign(1, d)
	y := make([]float64, m)
	var sum float64
	for i := range est {
		z := sd * (est[i] - base[i] - d/2) / math.Sqrt(vari[i])
		y[i] = float64(2*bits[i]-1) * z
		sum += y[i]
	}
	mean := sum / float64(m)
	for _, v := range y {
		sampleVar += (v - mean) * (v - mean)
	}
	if m > 1 {
		sampleVar /= float64(m - 1)
	}
	return sum / math.Sqrt(float64(m)), sampleVar
}

// OneRunGaussMuLB is the exact lower confidence bound on the canaries' mean separation mubar from
// T ~ N(sqrt(m) mubar / 2, 1): 2 (T - Phi^{-1}(confidence)) / sqrt(m) (negative when T is small; NaN
// for m < 1 or confidence outside (0, 1)).
func OneRunGaussMuLB(t float64, m int, confidence float64) float64 {
	if m < 1 || !(confidence > 0 && confidence < 1) {
		return math.NaN()
	}
	return 2 * (t - privacy.PhiInv(confidence)) / math.Sqrt(float64(m))
}

// OneRunGaussEpsilonLB turns mu_lb into the eps it certifies at delta: EpsilonForGDP(mu_lb, delta),
// 0 for mu_lb <= 0 or NaN, stepped down by one float64 ulp (EpsilonForGDP rounds up; the bound is a
// lower one).
func OneRunGaussEpsilonLB(muLB, delta float64) float64 {
	if !(muLB > 0) {
		return 0
	}
	if math.IsInf(muLB, 1) {
		return math.Inf(1)
	}
	e, err := privacy.EpsilonForGDP(muLB, delta)
	if err != nil || !(e > 0) {
		return 0
	}
	return math.Nextafter(e, 0)
}

// OneRunGaussExpected is the median of the Gauss bound for m canaries of a Gaussian mechanism exactly
// at the claim (eps, delta): every mu_i = kappa^{-1}(eps, delta), so the median of mu_lb is
// mu - 2 Phi^{-1}(confidence) / sqrt(m).
func OneRunGaussExpected(m int, eps, delta, confidence float64) float64 {
	mu, err := privacy.KappaInverse(eps, delta)
	if err != nil || !(mu > 0) {
		return 0
	}
	return OneRunGaussEpsilonLB(OneRunGaussMuLB(math.Sqrt(float64(m))*mu/2, m, confidence), delta)
}
