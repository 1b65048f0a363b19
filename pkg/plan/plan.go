// Package plan resolves a validated scenario into the concrete privacy design a run uses:
// the private model, the sensitivity under the chosen adjacency with its worst adjacent pair,
// the calibrated noise (Algorithm 1 or 2, or a named baseline), the rank condition (8), and
// factories for the noise streams the plant or agents inject at their edge.
//
// One plan serves every consumer - `dpsim calibrate`, the in-process engine, the plant and
// agent processes, and the auditor - so a calibration is computed in exactly one place.
//
// Noise kinds (MATH.md section 4), for a private model (A_m, C_m) over T steps:
//
//   - structured: Lambda_bar = O_T (Theorem 3); Gaussian noise gamma(t) = C_m A_m^t sqrt(Sigma) eta
//     with the optimal Sigma of the LMIs (12), Laplace gamma(t) = C_m A_m^t b eta (Algorithm 2);
//     eta is drawn once per run.
//   - iid-calibrated: Lambda = sigma I over the whole released trajectory, sigma from Theorem 1
//     with the output-space sensitivity (sound; r = T n_y).
//   - iid-naive: fresh per-step noise calibrated for one single release (unsound over T steps:
//     the auditor shows it).
//   - none: no noise; the rank condition (8) fails and no guarantee holds.
//
// Consensus (Section 6) uses the same machinery with the scalar agent model (A, C) = (1, 1):
// every agent adds gamma_i(t) = sigma_i eta_i with eta_i drawn once per run (eqs. (29)-(31)).
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

	// Cloud control.
	System    *dynamics.LTI
	K, L      *mat.Dense
	Reference dynamics.Reference

	// Consensus.
	Graph         *dynamics.Graph
	Alpha         float64  // convergence rate max(|1-lambda_2|, |1-lambda_n|)
	GraphWarnings []string // e.g. weight sums >= 1 (the paper's own graph)
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
	switch s.Kind {
	case scenario.CloudControl:
		if err := p.resolveControl(); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
	case scenario.Consensus:
		if err := p.resolveConsensus(); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
	default:
		return nil, fmt.Errorf("scenario %s: unknown kind %q", s.Name, s.Kind)
	}
	if err := p.design(opt.Budget); err != nil {
		return nil, fmt.Errorf("scenario %s: privacy: %w", s.Name, err)
	}
	return p, nil
}

func (p *Plan) resolveControl() error {
	s := p.Scenario
	sys, err := s.System()
	if err != nil {
		return fmt.Errorf("plant: %w", err)
	}
	p.System = sys
	if p.K, p.L, err = s.Gains(); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if p.Reference, err = s.Reference(); err != nil {
		return fmt.Errorf("controller.reference: %w", err)
	}
	if _, my := p.ModelC.Dims(); my > 0 {
		if mr, _ := p.ModelC.Dims(); mr != sys.Ny() {
			return fmt.Errorf("privacy.model.C: %d outputs, the plant has %d: the noise is added to the plant's output", mr, sys.Ny())
		}
	}
	return nil
}

func (p *Plan) resolveConsensus() error {
	g, err := p.Scenario.Graph()
	if err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	warnings, err := g.Validate()
	if err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	p.Graph, p.GraphWarnings = g, warnings
	if p.Alpha, err = g.Rate(); err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	return nil
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

// structuredRank checks (8) for Lambda = O_T S with F = I_T (x) C_m and D_perp of the model.
func (p *Plan) structuredRank() error {
	model, err := dynamics.NewLTI(p.ModelA, nil, p.ModelC)
	if err != nil {
		return err
	}
	var lambda mat.Dense
	lambda.Mul(model.Observability(p.Steps), p.NoiseMatrix)
	return privacy.CheckRank(&lambda, model.StackedF(p.Steps), model.DPerp(p.Steps))
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
