package audit

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpsim/dpsim/pkg/estimate"
	"gonum.org/v1/gonum/mat"
)

// Score orientation. Every score in this file is oriented like the game's default test: LARGER scores
// are evidence for bit 1 (the adjacent input x', mean1), so "guess 1 if score > tau" is the natural test.
// Analyze also tries the opposite orientation unless Options.Orientation restricts it.

// GaussianLLR is the log-likelihood ratio log p(obs | mean1) - log p(obs | mean0) for an observation with
// isotropic Gaussian noise N(mean, sigma^2 I) (or already whitened data, sigma = 1):
//
//	LLR = <obs - (mean0 + mean1)/2, mean1 - mean0> / sigma^2.
//
// By Neyman-Pearson, thresholding it is the most powerful test between the two means (docs/math.md section 6);
// under bit b it is N(-+mu^2/2, mu^2) with mu = ||mean1 - mean0||/sigma, the exact mu-GDP trade-off.
// It returns NaN when the lengths differ or sigma is not positive and finite. No allocation.
func GaussianLLR(obs, mean0, mean1 []float64, sigma float64) float64 {
	if len(obs) != len(mean0) || len(mean0) != len(mean1) || !(sigma > 0) || math.IsInf(sigma, 1) {
		return math.NaN()
	}
	var s float64
	for j, o := range obs {
		d := mean1[j] - mean0[j]
		s += (o - 0.5*(mean0[j]+mean1[j])) * d
	}
	return s / (sigma * sigma)
}

// LaplaceLLR is the log-likelihood ratio log p(obs | mean1) - log p(obs | mean0) for i.i.d. Laplace noise
// of scale b on every coordinate:
//
//	LLR = sum_j (|obs_j - mean0_j| - |obs_j - mean1_j|) / b,
//
// the optimal (Neyman-Pearson) score for the Laplace mechanism (eq. (14)); it lies in
// [-||mean1-mean0||_1/b, +||mean1-mean0||_1/b]. (It is the negative of sum_j (|o_j - m'_j| - |o_j - m_j|)/b,
// the log-ratio in favour of x: the sign makes larger scores point to bit 1.) NaN on bad input. No allocation.
func LaplaceLLR(obs, mean0, mean1 []float64, b float64) float64 {
	if len(obs) != len(mean0) || len(mean0) != len(mean1) || !(b > 0) || math.IsInf(b, 1) {
		return math.NaN()
	}
	var s float64
	for j, o := range obs {
		s += laplaceTerm(o, mean0[j], mean1[j])
	}
	return s / b
}

// laplaceTerm is |o - m0| - |o - m1| in its clamped form: m0 - m1 for o at or beyond m0's side of the
// segment [m0, m1], m1 - m0 beyond m1's, and 2o - m0 - m1 (times the sign of m1 - m0) inside. The two
// expressions are equal in exact arithmetic, but the difference of absolute values rounds differently
// for observations drawn as m + noise under the two hypotheses, and a threshold between those rounded
// copies of the atoms +-(m1 - m0) tells the hypotheses apart through floating point alone (the effect of
// Mironov 2012 on the score, not the mechanism). The clamped form returns exactly the same atom value
// for every observation in a tail and is monotone in o.
func laplaceTerm(o, m0, m1 float64) float64 {
	switch {
	case m0 == m1:
		return 0
	case m0 < m1:
		if o <= m0 {
			return m0 - m1
		}
		if o >= m1 {
			return m1 - m0
		}
		return (o - m0) - (m1 - o)
	default:
		if o >= m0 {
			return m0 - m1
		}
		if o <= m1 {
			return m1 - m0
		}
		return (m0 - o) - (o - m1)
	}
}

// ProjectionScore is the eavesdropper's own score (pkg/estimate.ProjectScore) oriented for the game: the
// projection of its estimate xhat of the secret input on the pair's difference, +1/2 at xhat = xPrime
// (bit 1) and -1/2 at xhat = x (bit 0). It is estimate.ProjectScore(xhat, xPrime, x), reused, not
// re-implemented. NaN when the lengths differ or x = xPrime.
func ProjectionScore(xhat, x, xPrime []float64) float64 {
	return estimate.ProjectScore(xhat, xPrime, x)
}

// ErrDistinguishable is returned by NewGaussianScorer when the mean difference has a component outside the
// range of the covariance: the two hypotheses are told apart with certainty (the rank condition (8) fails),
// so no finite (eps, delta) holds and no likelihood-ratio score is needed.
var ErrDistinguishable = errors.New("audit: mean difference outside the noise covariance's range: perfectly distinguishable")

// GaussianScorer is the likelihood-ratio score for Gaussian observations N(mean_b, Cov) with a known,
// possibly singular covariance (structured noise has rank r < m): with d = mean1 - mean0 and Cov^+ the
// pseudo-inverse,
//
//	LLR(o) = <w, o> - c,   w = Cov^+ d,   c = <w, (mean0 + mean1)/2>,
//
// i.e. the projection of the whitened observation on the whitened difference. Under bit b the score is
// N(-+Mu^2/2, Mu^2) with Mu = sqrt(d' Cov^+ d) (the mechanism is exactly Mu-GDP, and (eps, delta)-DP iff
// Kappa(eps, Mu) <= delta, Theorem 1 eq. (9)).
type GaussianScorer struct {
	w  []float64
	c  float64
	mu float64
}

// NewGaussianScorer prepares the LLR score between N(mean0, cov) and N(mean1, cov). Eigenvalues below
// 1e-12 * the largest are treated as zero; a difference with more than 1e-6 (relative) of its norm in
// their eigenspace gives ErrDistinguishable.
func NewGaussianScorer(mean0, mean1 []float64, cov mat.Symmetric) (*GaussianScorer, error) {
	m := len(mean0)
	if m == 0 || len(mean1) != m || cov == nil || cov.SymmetricDim() != m {
		return nil, fmt.Errorf("audit: gaussian scorer: dimension mismatch (mean0 %d, mean1 %d)", len(mean0), len(mean1))
	}
	d := make([]float64, m)
	var dn float64
	for j := range d {
		d[j] = mean1[j] - mean0[j]
		if math.IsNaN(d[j]) || math.IsInf(d[j], 0) {
			return nil, fmt.Errorf("audit: gaussian scorer: non-finite mean at %d", j)
		}
		dn += d[j] * d[j]
	}
	if dn == 0 {
		return nil, fmt.Errorf("audit: gaussian scorer: mean0 = mean1, nothing to distinguish")
	}
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		return nil, fmt.Errorf("audit: gaussian scorer: eigendecomposition of the covariance failed")
	}
	vals := eig.Values(nil)
	var U mat.Dense
	eig.VectorsTo(&U)
	maxv := 0.0
	for _, v := range vals {
		maxv = math.Max(maxv, v)
	}
	if !(maxv > 0) {
		return nil, fmt.Errorf("audit: gaussian scorer: covariance is zero or not finite")
	}
	for _, v := range vals {
		if v < -1e-9*maxv {
			return nil, fmt.Errorf("audit: gaussian scorer: covariance not positive semidefinite (eigenvalue %g)", v)
		}
	}
	tol := 1e-12 * maxv
	w := make([]float64, m)
	var inRange, mu2 float64
	for k, v := range vals {
		var proj float64
		for j := 0; j < m; j++ {
			proj += U.At(j, k) * d[j]
		}
		if v <= tol {
			continue
		}
		inRange += proj * proj
		mu2 += proj * proj / v
		for j := 0; j < m; j++ {
			w[j] += U.At(j, k) * proj / v
		}
	}
	if math.Sqrt(math.Max(0, dn-inRange)) > 1e-6*math.Sqrt(dn) {
		return nil, ErrDistinguishable
	}
	var c float64
	for j := range w {
		c += w[j] * 0.5 * (mean0[j] + mean1[j])
	}
	return &GaussianScorer{w: w, c: c, mu: math.Sqrt(mu2)}, nil
}

// Score returns the LLR of one observation (NaN on a length mismatch). No allocation.
func (g *GaussianScorer) Score(obs []float64) float64 {
	if len(obs) != len(g.w) {
		return math.NaN()
	}
	s := -g.c
	for j, o := range obs {
		s += g.w[j] * o
	}
	return s
}

// Mu is sqrt(d' Cov^+ d): the Gaussian-DP parameter of the pair (the mean gap of the LLR in standard
// deviations).
func (g *GaussianScorer) Mu() float64 { return g.mu }
