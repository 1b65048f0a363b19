package audit

import (
	"math"
	"slices"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// AllowedFNR is the (eps, delta)-DP trade-off curve: the smallest false-negative rate any test with
// false-positive rate fpr can have against an (eps, delta)-DP mechanism (Kairouz, Oh & Viswanath 2015;
// Dong, Roth & Su 2019, eq. (5)):
//
//	FNR >= max(0, 1 - delta - e^eps FPR, e^{-eps} (1 - delta - FPR)).
//
// Points strictly below it are impossible for the claim; the empirical curve must stay above it.
func AllowedFNR(eps, delta, fpr float64) float64 {
	a := 1 - delta - math.Exp(eps)*fpr
	b := math.Exp(-eps) * (1 - delta - fpr)
	return math.Max(0, math.Max(a, b))
}

// GDPFNR is the mu-GDP trade-off curve FNR = Phi(PhiInv(1 - FPR) - mu) (Dong, Roth & Su 2019, eq. (6)),
// written as Phi(-PhiInv(fpr) - mu) to keep precision at small fpr. For a Gaussian mechanism with pair
// distance mu in noise units this is the exact Neyman-Pearson curve; the claim (eps, delta) allows
// mu = KappaInverse(eps, delta) (Theorem 1, eq. (9)).
func GDPFNR(mu, fpr float64) float64 {
	switch {
	case fpr <= 0:
		return 1
	case fpr >= 1:
		return 0
	}
	return privacy.Phi(-privacy.PhiInv(fpr) - mu)
}

// curveLevels returns sorted quantile levels in [0, 1]: n/2 evenly spaced and n/4 geometric towards each
// end (down to 1/N), so plots resolve both the body and the tails.
func curveLevels(n, N int) []float64 {
	lv := make([]float64, 0, n+2)
	lin := max(2, n/2)
	for i := 0; i < lin; i++ {
		lv = append(lv, float64(i)/float64(lin-1))
	}
	geo := max(1, n/4)
	pmin := 1 / float64(max(N, 2))
	for i := 0; i < geo; i++ {
		p := pmin * math.Pow(0.5/pmin, float64(i)/float64(max(geo-1, 1)))
		lv = append(lv, p, 1-p)
	}
	slices.Sort(lv)
	return slices.Compact(lv)
}

// empiricalCurve returns the empirical (FPR, FNR) of the tests "guess x' when score > tau" (or <= tau for
// OrientLess) at about n thresholds taken at quantiles of the pooled scores, from FPR = 1 down to FPR = 0
// for OrientGreater. The counts come from one two-pointer sweep over the sorted sides: O(N + n).
func empiricalCurve(s *sample, n int, o Orientation) []CurvePoint {
	a0, a1 := s.s[0], s.s[1]
	n0, n1 := len(a0), len(a1)
	if n0 == 0 || n1 == 0 {
		return nil
	}
	z := merge(a0, a1)
	N := len(z)
	lv := curveLevels(n, N)
	taus := make([]float64, 0, len(lv)+2)
	taus = append(taus, math.Inf(-1))
	for _, p := range lv {
		k := int(math.Round(p * float64(N-1)))
		taus = append(taus, z[k])
	}
	taus = append(taus, math.Inf(1))
	taus = slices.Compact(taus)
	out := make([]CurvePoint, 0, len(taus))
	i, j := 0, 0 // #{a0 <= tau}, #{a1 <= tau}
	for _, tau := range taus {
		for i < n0 && a0[i] <= tau {
			i++
		}
		for j < n1 && a1[j] <= tau {
			j++
		}
		fp, fn := n0-i, j
		if o == OrientLess {
			fp, fn = i, n1-j
		}
		th := tau
		if math.IsInf(th, 0) { // JSON-safe: the extreme tests are "always" / "never" guess x'
			th = math.Copysign(math.MaxFloat64, th)
		}
		out = append(out, CurvePoint{Threshold: th, FPR: float64(fp) / float64(n0), FNR: float64(fn) / float64(n1)})
	}
	return out
}
