package john

import (
	"math"
	"math/rand/v2"
)

// TruncHalfWidth is the half-width of the support of the weight noise z: Definition 6.5
// truncates N(0, sigma^2) to [-0.5, 0.5], so a noisy weight w = wbar (1 + z) stays in
// [wbar/2, 3 wbar/2].
const TruncHalfWidth = 0.5

// TruncatedNormal draws z ~ N^T(0, sigma^2, [-0.5, 0.5]) (Definition 6.5, density
// phi(z/sigma) / (sigma (Phi(0.5/sigma) - Phi(-0.5/sigma))) on [-0.5, 0.5]). sigma <= 0
// gives 0. It rejects from N(0, sigma^2) when sigma <= 0.5 (acceptance >= 68%) and from
// the uniform law on the interval otherwise (acceptance >= e^{-1/2}); it does not allocate.
func TruncatedNormal(r *rand.Rand, sigma float64) float64 {
	if !(sigma > 0) {
		return 0
	}
	const a = TruncHalfWidth
	if sigma <= a {
		for {
			z := sigma * r.NormFloat64()
			if math.Abs(z) <= a {
				return z
			}
		}
	}
	c := -1 / (2 * sigma * sigma)
	for {
		z := 2*a*r.Float64() - a
		if r.Float64() <= math.Exp(c*z*z) {
			return z
		}
	}
}

// TruncatedVariance is Var z for z ~ N^T(0, sigma^2, [-0.5, 0.5]):
// sigma^2 (1 - 2 alpha phi(alpha) / (2 Phi(alpha) - 1)) with alpha = 0.5/sigma. It tends
// to 1/12 (the uniform law) as sigma grows: the truncation caps the noise.
func TruncatedVariance(sigma float64) float64 {
	if !(sigma > 0) {
		return 0
	}
	alpha := TruncHalfWidth / sigma
	if alpha < 1e-4 {
		return TruncHalfWidth * TruncHalfWidth / 3
	}
	phi := math.Exp(-alpha*alpha/2) / math.Sqrt(2*math.Pi)
	mass := math.Erf(alpha / math.Sqrt2)
	return sigma * sigma * (1 - 2*alpha*phi/mass)
}
