package plan

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Options adjust how a scenario is resolved.
type Options struct {
	// Adjacency overrides the scenario's privacy.adjacency when non-empty.
	Adjacency privacy.Adjacency
	// Budget bounds the exact sensitivity enumeration (flops); <= 0 means privacy.DefaultBudget.
	Budget int64
}

// Plan is a scenario resolved into everything a run needs. It is immutable after New.
type Plan struct {
	Scenario  *scenario.Scenario
	Steps     int
	Adjacency privacy.Adjacency
	Mechanism privacy.Mechanism
	Noise     noise.Kind

	// Private model (A_m, C_m) whose trajectory the noise protects.
	ModelA, ModelC *mat.Dense

	// Sensitivity is the one the noise is calibrated with (structured: Lambda_bar = O_T, so its
	// Worst.Param is the initial-state difference; iid-calibrated: output space; iid-naive: one
	// release). For kind none it is the structured sensitivity, reported for reference.
	Sensitivity privacy.Sensitivity
	// Gaussian is Algorithm 1's design (structured Gaussian noise only).
	Gaussian *privacy.GaussianDesign
	// Laplace is Algorithm 2's design (structured Laplace noise only).
	Laplace *privacy.LaplaceDesign
	// KappaInv is kappa_eps^{-1}(delta) (Gaussian only, else 0).
	KappaInv float64
	// Scale is the scalar noise scale: the scalar sigma (Gaussian) or b (Laplace) of the design;
	// for consensus sigma_i; 0 for none.
	Scale float64
	// NoiseMatrix is S with z(0) = S eta for structured noise: sqrt(Sigma) (Gaussian) or b I (Laplace).
	NoiseMatrix *mat.Dense
	// RankErr is nil when the rank condition (8) holds for the noise actually injected.
	RankErr error

	// Sampler is how the noise becomes float64 values (secure or float, docs/math.md section 10).
	Sampler noise.Sampler
	// Granularity is the secure sampler's grid g (a power of two; 0: float, or no noise).
	Granularity float64
	// Embedding is the plant's state coordinates holding the private model's state (cloud
	// control with the secure sampler; see embedding).
	Embedding []int

	// Cloud control.
	System    *dynamics.LTI
	K, L      *mat.Dense
	Reference dynamics.Reference

	// Consensus.
	Graph         *dynamics.Graph
	Alpha         float64  // convergence rate max(|1-lambda_2|, |1-lambda_n|)
	GraphWarnings []string // e.g. weight sums >= 1 (the paper's own graph)

	// Warnings are what the dynamics make suspicious, worded as the scenario's warnings (field
	// path first): an unstable closed loop (controller.K, controller.L), graph nodes whose
	// weights sum to 1 or more, with the rate alpha (graph). Commands show them with the
	// scenario's (report.MergePlanWarnings).
	Warnings []string
}

// New resolves s. s must be a single point (no sweep left): call Expand first.
func New(s *scenario.Scenario, opt Options) (*Plan, error) {
	if len(s.Sweeps) > 0 && len(s.Point) == 0 {
		return nil, fmt.Errorf("scenario %s: has a sweep; resolve each point of Expand()", s.Name)
	}
	p := &Plan{
		Scenario:  s,
		Steps:     s.Steps,
		Adjacency: s.Privacy.Adjacency,
		Mechanism: s.Privacy.Mechanism,
		Noise:     s.Privacy.Noise,
	}
	if opt.Adjacency != "" {
		p.Adjacency = opt.Adjacency
	}
	p.ModelA, p.ModelC = s.PrivateModel()
	if p.ModelA == nil {
		return nil, fmt.Errorf("scenario %s: no private model", s.Name)
	}
	if err := p.resolveDynamics(); err != nil {
		return nil, err
	}
	if err := p.design(opt.Budget); err != nil {
		return nil, fmt.Errorf("scenario %s: privacy: %w", s.Name, err)
	}
	if err := p.resolveSampler(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return p, nil
}

// norm returns the sensitivity norm of the mechanism: 2 (Delta_N, Gaussian) or 1 (Delta_L, Laplace).
func (p *Plan) norm() int {
	if p.Mechanism == privacy.Laplace {
		return 1
	}
	return 2
}

func (p *Plan) design(budget int64) error {
	pr := p.Scenario.Privacy
	T, norm := p.Steps, p.norm()
	structured, err := privacy.DynamicsSensitivity(p.ModelA, p.ModelC, T, p.Adjacency, norm, budget)
	if err != nil {
		return fmt.Errorf("sensitivity (%s adjacency): %w", p.Adjacency, err)
	}
	switch p.Noise {
	case noise.Structured:
		p.Sensitivity = structured
		if p.Mechanism == privacy.Laplace {
			d, err := privacy.DesignLaplace(structured, pr.Epsilon, pr.Mu)
			if err != nil {
				return err
			}
			p.Laplace, p.Scale = &d, d.Scale
			r, _ := p.ModelA.Dims()
			p.NoiseMatrix = scaledIdentity(r, d.Scale)
		} else {
			model, err := dynamics.NewLTI(p.ModelA, nil, p.ModelC)
			if err != nil {
				return err
			}
			// Algorithm 1 minimises trace(Lambda_bar Sigma Lambda_bar^T) with Lambda_bar = O_T:
			// the total noise power on the released trajectory.
			d, err := privacy.DesignGaussian(structured, pr.Epsilon, pr.Delta, pr.Mu, pr.Calibration, model.Observability(T))
			if err != nil {
				return err
			}
			p.Gaussian, p.Scale, p.KappaInv = &d, d.ScalarSigma, d.KappaInv
			p.NoiseMatrix = d.SqrtSigma
		}
		p.RankErr = p.structuredRank()
	case noise.IIDCalibrated, noise.IIDNaive:
		var s privacy.Sensitivity
		if p.Noise == noise.IIDCalibrated {
			s, err = privacy.IIDSensitivity(p.ModelA, p.ModelC, T, p.Adjacency, norm, budget)
		} else {
			s, err = privacy.SingleReleaseSensitivity(p.ModelA, p.ModelC, p.Adjacency, norm)
		}
		if err != nil {
			return fmt.Errorf("%s sensitivity: %w", p.Noise, err)
		}
		p.Sensitivity = s
		if p.Scale, err = p.scalarScale(s.Value); err != nil {
			return err
		}
		// Lambda = sigma I spans the whole output space, so F ker D is covered: (8) holds.
	case noise.None:
		p.Sensitivity = structured
		p.RankErr = errors.New("rank condition (8) fails: noise none adds no noise, so F ker D is published exactly and no (eps, delta) holds")
	default:
		return fmt.Errorf("unknown noise kind %q", p.Noise)
	}
	if p.Mechanism == privacy.Gaussian && p.KappaInv == 0 {
		if p.KappaInv, err = privacy.KappaInverse(pr.Epsilon, pr.Delta); err != nil {
			return err
		}
	}
	return nil
}

// scalarScale calibrates a scalar sigma (Gaussian, with the scenario's calibration) or b (Laplace).
func (p *Plan) scalarScale(sens float64) (float64, error) {
	pr := p.Scenario.Privacy
	if p.Mechanism == privacy.Laplace {
		return privacy.LaplaceScale(pr.Epsilon, pr.Mu, sens)
	}
	return privacy.GaussianSigma(pr.Calibration, pr.Epsilon, pr.Delta, pr.Mu, sens)
}

// rankCheckEntries bounds the size of O_T (entries) for which the rank condition is checked
// numerically; beyond it the equivalent algebraic form is used (see structuredRank).
const rankCheckEntries = 4_000_000

// structuredRank checks (8) for Lambda = O_T S, with F D_perp = O_T of the private model.
//
// When O_T is too large to factor (long horizons), it uses the equivalent algebraic form: given
// Assumption 1 (O_T has full column rank n_x, already verified by the sensitivity computation),
// span(O_T S) = span(O_T) with rank n_x exactly when S is nonsingular.
func (p *Plan) structuredRank() error {
	model, err := dynamics.NewLTI(p.ModelA, nil, p.ModelC)
	if err != nil {
		return err
	}
	r, _ := p.NoiseMatrix.Dims()
	if p.Steps*model.Ny()*model.Nx() > rankCheckEntries {
		var svd mat.SVD
		if !svd.Factorize(p.NoiseMatrix, mat.SVDNone) {
			return errors.New("rank condition (8): SVD of the noise matrix did not converge")
		}
		sv := svd.Values(nil)
		if sv[len(sv)-1] <= 1e-10*sv[0] {
			return fmt.Errorf("rank condition (8) fails: the noise matrix S (%dx%d) is singular (smallest singular value %.3g), so O_T S misses a direction of O_T", r, r, sv[len(sv)-1])
		}
		return nil
	}
	O := model.Observability(p.Steps)
	var lambda mat.Dense
	lambda.Mul(O, p.NoiseMatrix)
	return privacy.CheckRankImage(&lambda, O)
}

// AchievedEpsilon is the epsilon the plan's noise actually gives, at the plan's delta and mu,
// against the pairs of sensitivity s (in the same units as the plan's noise design). It shows what
// a design is worth outside what it was calibrated for: iid-naive noise over T releases, or
// block-calibrated noise under manifold adjacency.
//
// Gaussian: by Theorem 1 the privacy loss is set by Delta_N = max_N ||Sigma^{-1/2} N|| over the
// constraint directions N of s (eq. (13)) when the plan has a full Sigma, else Delta/sigma; the
// eps is the one with kappa(eps, mu Delta_N) = delta (eq. 7). Laplace: mu Delta_L / b (eq. 10).
func (p *Plan) AchievedEpsilon(s privacy.Sensitivity) (float64, error) {
	if !(p.Scale > 0) {
		return math.Inf(1), nil
	}
	pr := p.Scenario.Privacy
	ratio := pr.Mu * s.Value / p.Scale
	if p.Mechanism == privacy.Laplace {
		return ratio, nil
	}
	if p.Gaussian != nil && p.Gaussian.Sigma != nil && len(s.Constraints) > 0 {
		m, err := whitenedMax(s.Constraints, p.Gaussian.Sigma)
		if err != nil {
			return 0, err
		}
		ratio = pr.Mu * m
	}
	return privacy.EpsilonForGDP(ratio, pr.Delta)
}

// whitenedMax returns max over the directions N of sqrt(N^T Sigma^{-1} N).
func whitenedMax(cons [][]float64, sigma *mat.SymDense) (float64, error) {
	n := sigma.SymmetricDim()
	var ch mat.Cholesky
	if !ch.Factorize(sigma) {
		return 0, errors.New("achieved epsilon: Sigma is not positive definite")
	}
	best := 0.0
	x := mat.NewVecDense(n, nil)
	for _, c := range cons {
		if len(c) != n {
			return 0, fmt.Errorf("achieved epsilon: constraint of length %d, Sigma is %dx%d", len(c), n, n)
		}
		v := mat.NewVecDense(n, append([]float64(nil), c...))
		if err := ch.SolveVecTo(x, v); err != nil {
			return 0, fmt.Errorf("achieved epsilon: %w", err)
		}
		best = math.Max(best, mat.Dot(v, x))
	}
	return math.Sqrt(best), nil
}

// NaiveOverT returns, for iid-naive noise, the sensitivity of all T releases together (the
// iid-calibrated one) and the epsilon the naive sigma actually achieves over them.
func (p *Plan) NaiveOverT() (sensT, eps float64, err error) {
	if p.Noise != noise.IIDNaive {
		return 0, 0, fmt.Errorf("noise %s is not iid-naive", p.Noise)
	}
	full, err := privacy.IIDSensitivity(p.ModelA, p.ModelC, p.Steps, p.Adjacency, p.norm(), 0)
	if err != nil {
		return 0, 0, err
	}
	eps, err = p.AchievedEpsilon(full)
	return full.Value, eps, err
}

func scaledIdentity(n int, s float64) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, s)
	}
	return m
}

// OutputDim is the dimension of the noise added to one release: n_y of the plant, 1 for an agent.
func (p *Plan) OutputDim() int {
	r, _ := p.ModelC.Dims()
	return r
}

// NewNoise returns a fresh noise stream of the plan's kind for one emitter (the plant, or one
// consensus agent: every agent has the same sigma_i here). Streams are independent values; seed
// each with its own rng path on Reset.
func (p *Plan) NewNoise() (noise.Stream, error) {
	m := p.OutputDim()
	switch p.Noise {
	case noise.Structured:
		return noise.NewStructured(p.ModelA, p.ModelC, p.NoiseMatrix, p.Mechanism)
	case noise.IIDCalibrated, noise.IIDNaive:
		return noise.NewIID(m, p.Scale, p.Mechanism)
	case noise.None:
		return noise.NewNone(m)
	}
	return nil, fmt.Errorf("unknown noise kind %q", p.Noise)
}

// Secure reports whether the plan's emitters publish through the secure sampler (it has noise
// to draw and privacy.sampler is secure).
func (p *Plan) Secure() bool { return p.Sampler == noise.SamplerSecure && p.Granularity > 0 }

// NewSecureNoise returns a fresh secure stream of the plan's kind for one emitter (Secure plans
// only): structured w = round_g(x_p(0) + S eta) released as C_m A_m^t w, or i.i.d.
// round_g(C_m A_m^t x_p(0) + scale xi(t)) (docs/math.md section 10).
func (p *Plan) NewSecureNoise() (*noise.SecureStream, error) {
	switch p.Noise {
	case noise.Structured:
		return noise.NewSecureStructured(p.ModelA, p.ModelC, p.NoiseMatrix, p.Mechanism, p.Granularity)
	case noise.IIDCalibrated, noise.IIDNaive:
		return noise.NewSecureIID(p.ModelA, p.ModelC, p.Scale, p.Mechanism, p.Granularity)
	}
	return nil, fmt.Errorf("noise %s: nothing to draw", p.Noise)
}

// NoiseVariance is the per-component variance of the injected noise at step 0 (for bounds):
// sigma^2 for Gaussian, 2 b^2 for Laplace, 0 for none. For structured noise with a full Sigma it is
// the largest diagonal entry of C_m Sigma C_m^T.
func (p *Plan) NoiseVariance() float64 {
	if p.Noise == noise.None {
		return 0
	}
	v := noise.Variance(p.Mechanism)
	if p.Noise == noise.Structured && p.NoiseMatrix != nil {
		var cs, cov mat.Dense
		cs.Mul(p.ModelC, p.NoiseMatrix)
		cov.Mul(&cs, cs.T())
		mx := 0.0
		r, _ := cov.Dims()
		for i := 0; i < r; i++ {
			mx = math.Max(mx, cov.At(i, i))
		}
		return v * mx
	}
	return v * p.Scale * p.Scale
}

// RunGuarantee is the guarantee of k episodes of this plan that release the same secret with fresh noise
// (docs/math.md section 9): the per-episode budget (the scenario's Epsilon and Delta) and the whole run's
// epsilon at the run's delta (privacy.delta as written: the scenario's Delta, or RunDelta when the file
// gives a whole-run budget). It composes the exact per-episode quantity of the noise actually injected:
// Gaussian mu_episode = mu * max ||Sigma^{-1/2} N|| over the adjacent directions (mu Delta / sigma for a
// scalar sigma), composed to sqrt(k) mu_episode-GDP; Laplace eps_episode = mu Delta_L / b, composed
// optimally (privacy.ComposeKOV). For iid-naive noise the per-episode quantity is taken over all T
// releases, where its one-release calibration does not hold. Noise none has no guarantee (an error).
func (p *Plan) RunGuarantee(k int) (privacy.RunGuarantee, error) {
	pr := p.Scenario.Privacy
	if p.Noise == noise.None || !(p.Scale > 0) {
		return privacy.RunGuarantee{}, fmt.Errorf("noise %s: no noise, no guarantee for one episode or for %d", p.Noise, k)
	}
	s := p.Sensitivity
	if p.Noise == noise.IIDNaive {
		full, err := privacy.IIDSensitivity(p.ModelA, p.ModelC, p.Steps, p.Adjacency, p.norm(), 0)
		if err != nil {
			return privacy.RunGuarantee{}, err
		}
		s = full
	}
	deltaRun := pr.Delta
	if pr.Episodes > 0 {
		deltaRun = pr.RunDelta
	}
	var g privacy.RunGuarantee
	var err error
	if p.Mechanism == privacy.Laplace {
		g, err = privacy.ComposeLaplace(k, pr.Mu*s.Value/p.Scale, deltaRun)
	} else {
		mu := pr.Mu * s.Value / p.Scale
		if p.Gaussian != nil && p.Gaussian.Sigma != nil && len(s.Constraints) > 0 {
			m, err := whitenedMax(s.Constraints, p.Gaussian.Sigma)
			if err != nil {
				return privacy.RunGuarantee{}, err
			}
			mu = pr.Mu * m
		}
		g, err = privacy.ComposeGaussian(k, pr.Epsilon, pr.Delta, mu, deltaRun, pr.Calibration)
	}
	if err != nil {
		return privacy.RunGuarantee{}, err
	}
	g.EpsilonEpisode, g.DeltaEpisode = pr.Epsilon, pr.Delta
	if p.Noise == noise.IIDNaive {
		g.Note += fmt.Sprintf("; iid-naive noise is calibrated for one release, so the per-episode budget does not hold over the %d releases: the run is composed from what the noise gives over all of them", p.Steps)
	}
	return g, nil
}
