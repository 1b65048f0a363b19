package noise

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// SampleGaussian returns one N(0, sigma^2) draw from r (r.NormFloat64 scaled).
func SampleGaussian(r *rand.Rand, sigma float64) float64 {
	return sigma * r.NormFloat64()
}

// SampleLaplace returns one Laplace(0, b) draw from r by the inverse CDF: with U uniform on (0, 1),
// X = b ln(2U) for U < 1/2 and X = -b ln(2(1-U)) otherwise. Density exp(-|x|/b)/(2b), mean 0,
// E|X| = b, variance 2 b^2. U = 0 (probability 2^-53) is redrawn so the result is always finite.
func SampleLaplace(r *rand.Rand, b float64) float64 {
	u := r.Float64()
	for u == 0 {
		u = r.Float64()
	}
	if u < 0.5 {
		return b * math.Log(2*u)
	}
	return -b * math.Log(2*(1-u))
}

// sampler returns the unit-scale sampler of a mechanism: N(0,1) or Laplace(0,1).
func sampler(dist privacy.Mechanism) (func(*rand.Rand) float64, error) {
	switch dist {
	case privacy.Gaussian:
		return func(r *rand.Rand) float64 { return r.NormFloat64() }, nil
	case privacy.Laplace:
		return func(r *rand.Rand) float64 { return SampleLaplace(r, 1) }, nil
	}
	return nil, fmt.Errorf("noise: unknown distribution %q (allowed: %s, %s)", dist, privacy.Gaussian, privacy.Laplace)
}

// unitLaw describes eta's law for Describe.
func unitLaw(dist privacy.Mechanism) string {
	if dist == privacy.Laplace {
		return "Laplace(0,1)"
	}
	return "N(0,1)"
}

// Variance returns the variance of one unit-scale draw of the mechanism: 1 (Gaussian) or 2 (Laplace).
// A structured stream's gamma(t) has covariance Variance(dist) * C_m A_m^t S S' A_m^t' C_m'.
func Variance(dist privacy.Mechanism) float64 {
	if dist == privacy.Laplace {
		return 2
	}
	return 1
}
