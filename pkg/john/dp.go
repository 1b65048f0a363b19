package john

import (
	"fmt"
	"math"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// Noise sources reported in Result.NoiseSource.
const (
	NoiseUser       = "user"
	NoiseCalibrated = "calibrated-heuristic"
)

// GuaranteeNote explains GuaranteeNone; doc.go has the full argument.
const GuaranteeNote = "No (epsilon, delta) is claimed. (1) No global Lipschitz constant exists: an " +
	"eps0-neighbour may turn a zero (or tiny) row of A into a row of norm eps0; under A that row's " +
	"update w_i h_i is 0 (or tiny) and stays so under the multiplicative noise w = wbar (1 + z), " +
	"z in [-0.5, 0.5], while under the neighbour it is positive, so the output laws have disjoint " +
	"supports (delta = 1 for every sigma). (2) The sensitivity reported is local: computed from " +
	"the private A at w_1 only, so noise calibrated from it is data-dependent and not private. " +
	"(3) Algorithm 1's data-dependent leverage sampling D_k and rank-s sketch S_k are not " +
	"Lipschitz in A. (4) Q, max_leverage and logdet_q are computed from A itself, outside any " +
	"noise. The noise scale is exposed so the utility cost can be studied."

// CalibrateNoise returns the sigma an idealised mechanism would need: T rounds of a
// Gaussian mechanism whose noise variables shift by at most sens.ZShift (Lemma 6.6's
// beta) compose to mu-GDP with mu = sqrt(T) ZShift / sigma (Dong, Roth, Su 2019), and
// mu-GDP is (eps, delta)-DP iff kappa_eps(mu) <= delta (privacy.KappaInverse). This is the
// paper's sigma >= c2 L eps0 sqrt(T log(1/delta)) / ((1 - 2 L eps0) eps) (Theorem 6.7) with
// the constant fixed by GDP composition and L eps0 replaced by the local ZShift. It is a
// heuristic calibration: see GuaranteeNote for why no guarantee follows.
func CalibrateNoise(sens *Sensitivity, T int, eps, delta float64) (float64, error) {
	if sens == nil || !sens.Finite || math.IsInf(sens.ZShift, 0) {
		reason := "no sensitivity"
		if sens != nil {
			reason = sens.Reason
		}
		return 0, fmt.Errorf("cannot derive a noise scale: the local sensitivity is unbounded (%s); give the noise scale explicitly", reason)
	}
	if T < 1 {
		return 0, fmt.Errorf("cannot derive a noise scale for T = %d iterations", T)
	}
	mu, err := privacy.KappaInverse(eps, delta)
	if err != nil {
		return 0, fmt.Errorf("cannot derive a noise scale: %w", err)
	}
	return math.Sqrt(float64(T)) * sens.ZShift / mu, nil
}

func (s *Solver) setupNoise() error {
	c := s.cfg
	if c.Eps0 > 0 {
		sens, err := s.localSensitivity(s.w, c.Eps0)
		if err != nil {
			return err
		}
		s.sens = sens
		if !sens.Finite {
			s.warnings = append(s.warnings, "local sensitivity unbounded at w_1: "+sens.Reason)
		}
	}
	s.sigma, s.noiseSrc = c.NoiseScale, NoiseUser
	if c.NoiseScale == 0 {
		sigma, err := CalibrateNoise(s.sens, c.MaxIter, c.Epsilon, c.Delta)
		if err != nil {
			return err
		}
		s.sigma, s.noiseSrc = sigma, NoiseCalibrated
	}
	if s.sigma > TruncHalfWidth {
		s.warnings = append(s.warnings, fmt.Sprintf("noise scale %.3g exceeds the truncation half-width %.1f: z is then close to uniform on [-0.5, 0.5] (variance %.3g, at most 1/12) and a larger sigma adds almost nothing", s.sigma, TruncHalfWidth, TruncatedVariance(s.sigma)))
	}
	return nil
}
