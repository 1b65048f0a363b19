package privacy

// ScalarNoise is the noise a scalar query of sensitivity Sensitivity needs for (Epsilon, Delta) at
// adjacency level Mu: sigma of the Gaussian mechanism (Theorem 1, eq. (9)) or the Laplace scale b
// (Theorem 2, eq. (10)).
type ScalarNoise struct {
	Mechanism                       Mechanism
	Epsilon, Delta, Mu, Sensitivity float64
	// Calibration is the Gaussian calibration used, or "exact" for the Laplace mechanism (b = mu
	// Delta_L / eps is exact).
	Calibration string
	// Scale is sigma (Gaussian) or b (Laplace); Variance is sigma^2 or 2 b^2.
	Scale, Variance float64
	// Gaussian only: kappa_eps^{-1}(delta) and kappa(eps, mu Delta/sigma) (eq. (7)), which is at
	// most delta; Alternatives is the sigma each calibration in Calibrations gives.
	KappaInverse, KappaAtScale float64
	Alternatives               map[string]float64
}

// CalibrateScalar returns the noise a scalar query needs: for Laplace b = mu Delta_L / eps
// ([LaplaceScale], eq. (14)); for Gaussian sigma by the calibration cal ([GaussianSigma]), with the
// check kappa(eps, mu Delta/sigma) <= delta of eq. (9) and the sigma of every other calibration.
func CalibrateScalar(mech Mechanism, cal Calibration, eps, delta, mu, sens float64) (*ScalarNoise, error) {
	r := &ScalarNoise{Mechanism: mech, Epsilon: eps, Delta: delta, Mu: mu, Sensitivity: sens}
	if mech == Laplace {
		b, err := LaplaceScale(eps, mu, sens)
		if err != nil {
			return nil, err
		}
		r.Calibration, r.Scale, r.Variance = "exact", b, 2*b*b
		return r, nil
	}
	sigma, err := GaussianSigma(cal, eps, delta, mu, sens)
	if err != nil {
		return nil, err
	}
	kinv, err := KappaInverse(eps, delta)
	if err != nil {
		return nil, err
	}
	r.Calibration, r.Scale, r.Variance = string(cal), sigma, sigma*sigma
	r.KappaInverse, r.KappaAtScale = kinv, Kappa(eps, mu*sens/sigma)
	r.Alternatives = map[string]float64{}
	for _, c := range Calibrations {
		if s, err := GaussianSigma(c, eps, delta, mu, sens); err == nil {
			r.Alternatives[string(c)] = s
		}
	}
	return r, nil
}

// Run composes the scalar noise over k episodes of one secret at the whole run's delta runDelta
// (docs/math.md section 9), from the exact per-episode parameter of the noise: mu Delta/sigma
// (Gaussian, [ComposeGaussian]; cal is the calibration it was made with) or mu Delta_L/b (Laplace,
// [ComposeLaplace]; equal to the budget up to rounding).
func (s *ScalarNoise) Run(k int, runDelta float64, cal Calibration) (RunGuarantee, error) {
	if s.Mechanism == Laplace {
		return ComposeLaplace(k, s.Mu*s.Sensitivity/s.Scale, runDelta)
	}
	return ComposeGaussian(k, s.Epsilon, s.Delta, s.Mu*s.Sensitivity/s.Scale, runDelta, cal)
}

// EpisodeBudget splits a whole run's budget (eps, runDelta) over k episodes (docs/math.md section
// 9): the per-episode (eps, delta) to calibrate each episode for. Laplace: the largest per-episode
// eps whose optimal k-fold composition is eps ([LaplaceEpisodeEpsilon]), delta 0; Gaussian: mu_run/
// sqrt(k) per episode ([GaussianEpisodeBudget]).
func EpisodeBudget(mech Mechanism, eps, runDelta float64, k int) (float64, float64, error) {
	if mech == Laplace {
		e, err := LaplaceEpisodeEpsilon(eps, runDelta, k)
		return e, 0, err
	}
	e, d, _, err := GaussianEpisodeBudget(eps, runDelta, k)
	return e, d, err
}

// ScaleKeys puts the noise scale v under the key that names it: "sigma", the standard deviation,
// for the Gaussian mechanism, or "b", the Laplace scale (standard deviation sqrt(2) b), for the
// Laplace mechanism. Exactly one of the two is non-nil.
func ScaleKeys(m Mechanism, v float64) (sigma, b *float64) {
	if m == Laplace {
		return nil, &v
	}
	return &v, nil
}

// RunFields is the whole run's guarantee for k episodes of one secret (docs/math.md section 9) as
// dpsim calibrate prints it, in both modes. The result's own Epsilon and Delta stay the
// per-episode budget the noise is calibrated for.
type RunFields struct {
	Episodes int `json:"episodes"`
	// CalibratedFor is "episode" (the budget is per episode) or "run" (--run-epsilon or
	// privacy.run_epsilon: the budget is the whole run's, split over the episodes).
	CalibratedFor string `json:"calibrated_for"`
	// EpsilonRun is the whole run's epsilon at DeltaRun, composed by the rule Composition.
	EpsilonRun  float64 `json:"epsilon_run"`
	DeltaRun    float64 `json:"delta_run"`
	Composition string  `json:"composition"`
	// MuEpisode and MuRun (Gaussian): the exact per-episode GDP parameter mu*Delta/sigma and sqrt(k) times it.
	MuEpisode *float64 `json:"mu_episode,omitempty"`
	MuRun     *float64 `json:"mu_run,omitempty"`
	// RunAlternatives (Laplace, delta > 0): the bounds the optimal composition improves on, for comparison.
	RunAlternatives map[string]float64 `json:"run_alternatives,omitempty"`
	CompositionNote string             `json:"composition_note,omitempty"`
	// DpEvent and DpEventCurve: the run as accountants' events and its eps(delta) at a few deltas
	// (NewDpEvent; docs/math.md section 9.1); DpEventError says why they are absent.
	DpEvent      *DpEventRecord `json:"dp_event,omitempty"`
	DpEventCurve []EpsDelta     `json:"dp_event_curve,omitempty"`
	DpEventError string         `json:"dp_event_error,omitempty"`
}

// Fields returns the run guarantee as RunFields; forRun says the budget was the whole run's. For
// Laplace with delta > 0 it adds the bounds the optimal composition (Kairouz, Oh & Viswanath 2015,
// Theorem 3.3) improves on: basic k eps and [AdvancedComposition].
func (g RunGuarantee) Fields(forRun bool) RunFields {
	f := RunFields{Episodes: g.Episodes, EpsilonRun: g.EpsilonRun, DeltaRun: g.DeltaRun,
		Composition: string(g.Composition), CompositionNote: g.Note, CalibratedFor: "episode",
		DpEvent: g.DpEvent, DpEventCurve: g.DpEventCurve, DpEventError: g.DpEventError}
	if forRun {
		f.CalibratedFor = "run"
	}
	if g.Mechanism == Gaussian {
		mu, mr := g.MuEpisode, g.MuRun
		f.MuEpisode, f.MuRun = &mu, &mr
		return f
	}
	if g.DeltaRun > 0 {
		f.RunAlternatives = map[string]float64{
			"basic":    float64(g.Episodes) * g.EpsilonEpisode,
			"advanced": AdvancedComposition(g.EpsilonEpisode, g.Episodes, g.DeltaRun),
		}
	}
	return f
}
