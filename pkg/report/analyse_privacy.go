package report

import (
	"fmt"
	"math"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// calibrationCheck adds the point's calibration check (Theorem 1 / Theorem 2 inequality) and
// returns an information sentence for baselines that carry no guarantee.
func (r *analysis) calibrationCheck(p *pointInfo) string {
	pl := p.plan
	if pl == nil {
		return ""
	}
	pr := pl.Scenario.Privacy
	eps, delta, mu := pr.Epsilon, pr.Delta, pr.Mu
	switch pl.Noise {
	case noise.None:
		return "noise `none`: nothing is added, the rank condition (8) fails and no (eps, delta) guarantee holds"
	case noise.IIDNaive:
		return r.naiveGuarantee(p)
	}
	sens := pl.Sensitivity.Value
	if pl.Mechanism == privacy.Laplace {
		ratio := mu * sens / pl.Scale
		r.addRule(p, "calibration-laplace", measured{value: ratio, threshold: eps * (1 + LaplaceTol),
			detail: fmt.Sprintf("mu = %s, Delta_L = %s, b = %s, eps = %s", numP(mu, 4), numP(sens, 4), numP(pl.Scale, 4), numP(eps, 4))})
		return ""
	}
	sigma := pl.Scale
	y := mu * sens / sigma
	// privacy.GaussianSatisfies decides exactly kappa_eps(y) <= delta (y = 0 passes: no
	// sensitivity, nothing to hide); the rule states that comparison.
	k := 0.0
	if y > 0 {
		k = privacy.Kappa(eps, y)
	}
	r.addRule(p, "calibration", measured{value: k, threshold: delta,
		detail: fmt.Sprintf("eps = %s, mu Delta / sigma = %s", numP(eps, 4), numP(y, 4))})
	if g := pl.Gaussian; g != nil && g.Sigma != nil && g.Sigma.SymmetricDim() > 1 && !g.ScalarIsOptimal {
		mx := 0.0
		for i := 0; i < g.Sigma.SymmetricDim(); i++ {
			mx = math.Max(mx, math.Abs(g.Sigma.At(i, i)))
		}
		r.addRule(p, "calibration-lmi", measured{value: g.MaxLMIViolation, threshold: LMITol * mx,
			detail: fmt.Sprintf("largest diagonal entry of Sigma %s", num(mx))})
	}
	return ""
}

// naiveGuarantee computes what iid-naive noise really gives over the T releases.
func (r *analysis) naiveGuarantee(p *pointInfo) string {
	pl := p.plan
	pr := pl.Scenario.Privacy
	if pl.Scale <= 0 {
		return ""
	}
	fullValue, effEps, err := pl.NaiveOverT()
	if err != nil {
		return fmt.Sprintf("noise `iid-naive` is calibrated for one release only; its guarantee over the %d releases could not be computed: %v", pl.Steps, err)
	}
	p.naiveEps = effEps
	verdict := "the claimed eps does not hold (unsound baseline, as intended)"
	if effEps <= pr.Epsilon*(1+1e-9) {
		verdict = "within the claimed eps"
	}
	return fmt.Sprintf("noise `iid-naive`: sigma = %s is calibrated for one release (Delta = %s); over the T = %d releases the sensitivity is %s, "+
		"so the mechanism is only (eps' = %s, delta = %s)-DP against eps = %s: %s",
		numP(pl.Scale, 4), numP(pl.Sensitivity.Value, 4), pl.Steps, numP(fullValue, 4), numP(effEps, 3), numP(pr.Delta, 3), numP(pr.Epsilon, 4), verdict)
}
