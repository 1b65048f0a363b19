package privacy

import (
	"fmt"
	"math"
)

// calCheckScale validates mu > 0 and a finite sensitivity >= 0 (the domain of GaussianSatisfies).
func calCheckScale(mu, sensitivity float64) error {
	if math.IsNaN(mu) || mu <= 0 || math.IsInf(mu, 0) {
		return fmt.Errorf("mu = %v: must be finite and > 0", mu)
	}
	if math.IsNaN(sensitivity) || sensitivity < 0 || math.IsInf(sensitivity, 0) {
		return fmt.Errorf("sensitivity = %v: must be finite and >= 0", sensitivity)
	}
	return nil
}

// calCheckCalibrationScale validates the inputs of a calibration: mu > 0 and sensitivity > 0 finite, and
// their product mu*Delta (the shift the noise must hide) a positive finite float64. A zero sensitivity is
// refused rather than answered with sigma = 0: the release then does not depend on the private data and
// needs no noise, and a noise scale of 0 makes every ratio computed from it (sensitivity/sigma) NaN.
func calCheckCalibrationScale(mu, sensitivity float64) (float64, error) {
	if math.IsNaN(mu) || mu <= 0 || math.IsInf(mu, 0) {
		return 0, fmt.Errorf("mu = %v: must be finite and > 0", mu)
	}
	if math.IsNaN(sensitivity) || sensitivity <= 0 || math.IsInf(sensitivity, 0) {
		return 0, fmt.Errorf("sensitivity = %v: must be finite and > 0 (a zero sensitivity means the release does not depend on the private data: no noise is needed and no noise scale is defined)", sensitivity)
	}
	scale := mu * sensitivity
	if math.IsInf(scale, 0) {
		return 0, fmt.Errorf("mu*sensitivity = %v * %v overflows float64 (> %.4g): rescale the data units", mu, sensitivity, math.MaxFloat64)
	}
	if scale == 0 {
		return 0, fmt.Errorf("mu*sensitivity = %v * %v underflows to 0: rescale the data units", mu, sensitivity)
	}
	return scale, nil
}

// calCheckResult refuses a noise scale that is not a positive finite float64 (overflow for eps -> 0 or
// delta -> 0, underflow for a tiny mu*Delta).
func calCheckResult(what string, v, scale, y float64) error {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Errorf("%s = mu*sensitivity/y = %v/%v overflows float64 (y is the largest mu*sensitivity/%s the level allows): the noise needed is not representable (raise epsilon or delta, or rescale the data units)", what, scale, y, what)
	}
	if !(v > 0) {
		return fmt.Errorf("%s = mu*sensitivity/y = %v/%v underflows to 0: rescale the data units", what, scale, y)
	}
	return nil
}

// GaussianSigma returns the noise scale sigma of a Gaussian mechanism gamma = sigma * Lambda_bar * eta,
// eta ~ N(0, I), whose unit-scale Lambda_bar gives the sensitivity Delta_N = sensitivity (Theorem 1;
// Algorithm 1 with Sigma = sigma^2 I), for mu-adjacency and the privacy level (eps, delta):
//
//	Tight:      sigma = mu*Delta / kappa_eps^{-1}(delta)                      (eq. (9), necessary and sufficient)
//	PaperBound: sigma = mu*Delta / (sqrt(PhiInv(delta)^2 + 2 eps) + PhiInv(delta))   (the papers' closed form)
//	Classic:    sigma = mu*Delta * sqrt(2 ln(1.25/delta)) / eps               (Dwork & Roth Thm A.1, eps < 1 only)
//
// PaperBound solves Phi(y/2 - eps/y) = delta, i.e. it drops kappa's second term; it is sufficient but larger
// than Tight, increasingly so as eps shrinks (it reproduces the papers' sigma = 2.5244, 23.4765, 232.8495 for
// eps = 1, 0.1, 0.01, delta = 1e-2, mu = Delta = 1). Classic is refused for eps >= 1, where its proof fails.
// Every sigma returned is a positive finite float64 and satisfies GaussianSatisfies. Refused with an error:
// sensitivity <= 0 (no noise scale is defined), mu*Delta overflowing float64, and a sigma that overflows
// (e.g. paper-bound or classic with eps = 5e-324).
func GaussianSigma(cal Calibration, eps, delta, mu, sensitivity float64) (float64, error) {
	if err := calCheckEpsilon(eps); err != nil {
		return 0, fmt.Errorf("gaussian sigma (%s): %w", cal, err)
	}
	if err := calCheckDelta(delta); err != nil {
		return 0, fmt.Errorf("gaussian sigma (%s): %w", cal, err)
	}
	scale, err := calCheckCalibrationScale(mu, sensitivity)
	if err != nil {
		return 0, fmt.Errorf("gaussian sigma (%s): %w", cal, err)
	}
	// sigma = scale / y with y the largest mu*Delta/sigma the calibration allows.
	var y float64
	switch cal {
	case Tight:
		if y, err = KappaInverse(eps, delta); err != nil {
			return 0, fmt.Errorf("gaussian sigma (%s): %w", cal, err)
		}
	case PaperBound:
		if eps == 0 && delta < 0.5 {
			return 0, fmt.Errorf("gaussian sigma (%s): epsilon = 0 with delta = %v < 0.5 needs infinite noise in the closed-form bound; use %q", cal, delta, Tight)
		}
		y = paperBoundY(eps, PhiInv(delta))
	case Classic:
		if eps <= 0 || eps >= 1 {
			return 0, fmt.Errorf("gaussian sigma (%s): epsilon = %v: the classic calibration sqrt(2 ln(1.25/delta))/eps is only valid for 0 < epsilon < 1; use %q", cal, eps, Tight)
		}
		y = eps / math.Sqrt(2*math.Log(1.25/delta))
	default:
		return 0, fmt.Errorf("gaussian sigma: unknown calibration %q (allowed: %s, %s, %s)", cal, Tight, PaperBound, Classic)
	}
	sigma := scale / y
	if err := calCheckResult("sigma", sigma, scale, y); err != nil {
		return 0, fmt.Errorf("gaussian sigma (%s): epsilon = %v, delta = %v: %w", cal, eps, delta, err)
	}
	// Guard against the last-ulp rounding of scale/y: the defining inequality must hold as computed.
	for i := 0; i < 64 && !GaussianSatisfies(eps, delta, mu, sensitivity, sigma); i++ {
		sigma = math.Nextafter(sigma, math.Inf(1))
	}
	if math.IsInf(sigma, 0) || !GaussianSatisfies(eps, delta, mu, sensitivity, sigma) {
		return 0, fmt.Errorf("gaussian sigma (%s): sigma = %v fails kappa(eps, mu*Delta/sigma) <= delta for epsilon = %v, delta = %v", cal, sigma, eps, delta)
	}
	return sigma, nil
}

// GaussianSatisfies reports whether noise scale sigma gives (eps, delta)-DP under mu-adjacency for a
// mechanism with sensitivity Delta_N = sensitivity: Kappa(eps, mu*Delta/sigma) <= delta, the defining
// inequality of Theorem 1, eq. (9). A zero sensitivity is satisfied by any sigma >= 0; delta = 0 never is
// (for a positive sensitivity); invalid arguments (NaN, negative, delta outside [0, 1)) report false.
func GaussianSatisfies(eps, delta, mu, sensitivity, sigma float64) bool {
	if calCheckEpsilon(eps) != nil || math.IsNaN(delta) || delta < 0 || delta >= 1 ||
		calCheckScale(mu, sensitivity) != nil || math.IsNaN(sigma) || sigma < 0 {
		return false
	}
	scale := mu * sensitivity
	if scale == 0 {
		return true
	}
	if sigma == 0 || delta == 0 {
		return false // kappa(eps, y) > 0 for every y > 0: delta = 0 is never met by Gaussian noise
	}
	return Kappa(eps, scale/sigma) <= delta
}

// LaplaceScale returns the Laplace noise scale b = mu*Delta_L/eps of gamma = b * Lambda_bar * eta,
// eta ~ Laplace(0, 1)^r, with Delta_L = sensitivity the 1-norm sensitivity for the unit-scale Lambda_bar:
// (eps, 0)-DP holds iff Delta_L <= eps/mu in the units of Lambda = b Lambda_bar (Theorem 2, eq. (10);
// Algorithm 2, eq. (14)). A Laplace variable of scale b has variance 2 b^2 (not b^2): compare with a
// Gaussian sigma through sqrt(2) b. The b returned is a positive finite float64: sensitivity <= 0, an
// overflowing mu*Delta and an overflowing b (e.g. eps = 1e-320) are refused with an error.
func LaplaceScale(eps, mu, sensitivity float64) (float64, error) {
	if math.IsNaN(eps) || eps <= 0 || math.IsInf(eps, 0) {
		return 0, fmt.Errorf("laplace scale: epsilon = %v: must be finite and > 0 (pure eps-DP with eps = 0 needs infinite noise)", eps)
	}
	scale, err := calCheckCalibrationScale(mu, sensitivity)
	if err != nil {
		return 0, fmt.Errorf("laplace scale: %w", err)
	}
	b := scale / eps
	if err := calCheckResult("b", b, scale, eps); err != nil {
		return 0, fmt.Errorf("laplace scale: epsilon = %v: %w", eps, err)
	}
	return b, nil
}
