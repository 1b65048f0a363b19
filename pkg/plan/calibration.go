package plan

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/internal/rowmajor"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// WorstPair is the worst adjacent pair as dpsim calibrate prints it (0-based coordinates).
type WorstPair struct {
	FreeSet          []int     `json:"free_set"`
	Coordinate       int       `json:"coordinate"`
	Time             *int      `json:"time,omitempty"`
	Component        *int      `json:"component,omitempty"`
	Diff             []float64 `json:"diff"`
	Param            []float64 `json:"param"`
	InitialStateDiff []float64 `json:"initial_state_diff,omitempty"`
}

// CalibrationResult is a scenario point's calibration as dpsim calibrate reports it (its JSON,
// after the command's "mode" key): the design of the plan (sensitivity, noise, rank condition (8),
// the optimal Sigma of Algorithm 1), how fragile the sensitivity is, the whole run's guarantee and
// what the other adjacency would cost.
type CalibrationResult struct {
	Scenario     string            `json:"scenario"`
	Kind         scenario.Kind     `json:"kind"`
	Steps        int               `json:"steps"`
	Mechanism    privacy.Mechanism `json:"mechanism"`
	Epsilon      float64           `json:"epsilon"`
	Delta        float64           `json:"delta"`
	Mu           float64           `json:"mu"`
	Adjacency    privacy.Adjacency `json:"adjacency"`
	Calibration  string            `json:"calibration"`
	Noise        noise.Kind        `json:"noise"`
	PrivateModel map[string]any    `json:"private_model"`
	Sensitivity  float64           `json:"sensitivity"`
	Sigma        *float64          `json:"sigma,omitempty"` // gaussian; see privacy.ScaleKeys
	B            *float64          `json:"b,omitempty"`     // laplace
	SigmaMatrix  [][]float64       `json:"sigma_matrix,omitempty"`
	KappaInverse float64           `json:"kappa_inverse,omitempty"`
	// Sampler and Granularity: how the noise becomes float64 values (docs/math.md section 10);
	// SamplerInfo states its cost (none for secure) and, for float, that the guarantee is void.
	Sampler       noise.Sampler `json:"sampler"`
	Granularity   float64       `json:"granularity"`
	SamplerInfo   SamplerInfo   `json:"sampler_info"`
	TraceScalar   float64       `json:"trace_scalar,omitempty"`
	TraceOptimal  float64       `json:"trace_optimal,omitempty"`
	TraceSavedPct float64       `json:"trace_saved_percent,omitempty"`
	LMIViolation  float64       `json:"max_lmi_violation"`
	RankOK        bool          `json:"rank_ok"`
	RankError     string        `json:"rank_error,omitempty"`
	WorstPair     *WorstPair    `json:"worst_pair"`
	Evaluated     int64         `json:"evaluated"`
	// How fragile the sensitivity is (privacy.Conditioning): the smallest |det D_dj| it kept, its
	// largest relative change (a fraction; null when not computed or unbounded, see
	// sensitivity_perturbation_note) under 1e-4 relative changes of the private model (A, C), the
	// perturbation that attains it and how many were evaluated; fragile with its reasons and what to change.
	SensitivityMinDet        float64           `json:"sensitivity_min_det"`
	SensitivityPerturbation  *float64          `json:"sensitivity_perturbation"`
	SensitivityPerturbedBy   string            `json:"sensitivity_perturbed_by,omitempty"`
	SensitivityPerturbations int               `json:"sensitivity_perturbations"`
	PerturbationNote         string            `json:"sensitivity_perturbation_note,omitempty"`
	Conditioning             string            `json:"conditioning"`
	Fragile                  bool              `json:"fragile"`
	FragileReason            string            `json:"fragile_reason,omitempty"`
	OtherAdjacency           *OtherAdjacency   `json:"other_adjacency,omitempty"`
	GraphAlpha               float64           `json:"graph_alpha,omitempty"`
	Point                    map[string]string `json:"sweep_point,omitempty"`
	Warnings                 []string          `json:"warnings,omitempty"`
	ComparisonNote           string            `json:"comparison_note,omitempty"`
	// Unsound: for iid-naive noise, what it is worth over all T releases.
	NaiveSensitivityT float64            `json:"naive_sensitivity_over_T,omitempty"`
	NaiveEpsilonT     float64            `json:"naive_epsilon_over_T,omitempty"`
	PerAgentSigma     map[string]float64 `json:"per_agent_sigma,omitempty"` // gaussian
	PerAgentB         map[string]float64 `json:"per_agent_b,omitempty"`     // laplace
	NoiseVariance0    float64            `json:"noise_variance_step0"`
	SeedFromFile      uint64             `json:"seed,omitempty"`
	ScalarIsOptimal   bool               `json:"scalar_is_optimal,omitempty"`
	// The whole run's guarantee (absent for noise none); EpisodesFrom says where k came from:
	// --episodes, privacy.episodes or episodes (the scenario's top-level key, once named runs).
	// RunEpsilonAsked is privacy.run_epsilon when the file calibrates for a whole run.
	privacy.RunFields
	EpisodesFrom    string  `json:"episodes_from,omitempty"`
	RunEpsilonAsked float64 `json:"run_epsilon_asked,omitempty"`
}

// OtherAdjacency reports what the other adjacency would require, for comparison.
type OtherAdjacency struct {
	Adjacency   privacy.Adjacency `json:"adjacency"`
	Sensitivity float64           `json:"sensitivity"`
	Sigma       *float64          `json:"sigma,omitempty"` // gaussian
	B           *float64          `json:"b,omitempty"`     // laplace
}

// comparisonBudget caps the flops spent on the other adjacency's sensitivity (about a second).
const comparisonBudget = 1e9

// Calibrate resolves one scenario point into its calibration result. The whole run's guarantee is
// for episodes (0: privacy.episodes when the file gives a whole-run budget, else its runs).
func Calibrate(s *scenario.Scenario, opt Options, episodes int) (*CalibrationResult, error) {
	p, err := New(s, opt)
	if err != nil {
		return nil, err
	}
	r := newCalibrationResult(s, p)
	k := r.episodes(s, episodes)
	if p.Noise == noise.None {
		return r, nil // no noise, no guarantee to compose or compare
	}
	if err := r.setRun(s, p, k); err != nil {
		return nil, err
	}
	r.compare(s, p, opt.Budget)
	return r, nil
}

// newCalibrationResult fills what the plan p of scenario point s designs, without the whole run
// and the comparison.
func newCalibrationResult(s *scenario.Scenario, p *Plan) *CalibrationResult {
	pr := s.Privacy
	r := &CalibrationResult{
		Scenario: s.Name, Kind: s.Kind, Steps: s.Steps, Mechanism: p.Mechanism,
		Epsilon: pr.Epsilon, Delta: pr.Delta, Mu: pr.Mu, Adjacency: p.Adjacency, Noise: p.Noise,
		Sensitivity: p.Sensitivity.Value, KappaInverse: p.KappaInv,
		RankOK: p.RankErr == nil, Evaluated: p.Sensitivity.Evaluated, NoiseVariance0: p.NoiseVariance(),
		SeedFromFile: s.Seed, GraphAlpha: p.Alpha, Warnings: p.warnings(s.Warnings),
	}
	r.Sigma, r.B = privacy.ScaleKeys(p.Mechanism, p.Scale)
	r.SamplerInfo = p.SamplerInfo()
	r.Sampler, r.Granularity = r.SamplerInfo.Sampler, r.SamplerInfo.Granularity
	r.setConditioning(p.Conditioning())
	r.Calibration = string(pr.Calibration)
	if p.Mechanism == privacy.Laplace {
		r.Calibration = "exact"
	}
	if p.RankErr != nil {
		r.RankError = p.RankErr.Error()
	}
	r.PrivateModel = map[string]any{"A": rowmajor.Rows(p.ModelA), "C": rowmajor.Rows(p.ModelC), "from": modelSource(s)}
	if g := p.Gaussian; g != nil {
		r.SigmaMatrix = symRows(g.Sigma)
		r.TraceScalar, r.TraceOptimal, r.TraceSavedPct = g.TraceScalar, g.TraceOptimal, g.TraceSavedPercent
		r.LMIViolation, r.ScalarIsOptimal = g.MaxLMIViolation, g.ScalarIsOptimal
	}
	if len(s.Point) > 0 {
		r.Point = map[string]string{}
		for _, sp := range s.Point {
			r.Point[string(sp.Param)] = sp.Value
		}
	}
	if s.Kind == scenario.Consensus && p.Noise != noise.None {
		if p.Mechanism == privacy.Laplace {
			r.PerAgentB = map[string]float64{"all": p.Scale}
		} else {
			r.PerAgentSigma = map[string]float64{"all": p.Scale}
		}
	}
	if p.Noise != noise.None {
		r.WorstPair = worstPair(p)
	}
	if p.Noise == noise.IIDNaive {
		if sensT, eps, err := p.NaiveOverT(); err == nil {
			r.NaiveSensitivityT, r.NaiveEpsilonT = sensT, eps
		}
	}
	return r
}

// episodes returns the episodes k of the whole run: episodes when given, else privacy.episodes (a
// whole-run budget), else the scenario's runs; EpisodesFrom says which.
func (r *CalibrationResult) episodes(s *scenario.Scenario, episodes int) int {
	r.EpisodesFrom = "--episodes"
	if episodes == 0 {
		episodes, r.EpisodesFrom = s.Runs, "episodes"
		if s.Privacy.Episodes > 0 {
			episodes, r.EpisodesFrom = s.Privacy.Episodes, "privacy.episodes"
		}
	}
	return episodes
}

// setRun fills the whole run's guarantee of k episodes (docs/math.md section 9).
func (r *CalibrationResult) setRun(s *scenario.Scenario, p *Plan, k int) error {
	pr := s.Privacy
	g, err := p.RunGuarantee(k)
	if err != nil {
		return err
	}
	r.RunFields = g.Fields(pr.Episodes > 0)
	if pr.Episodes > 0 {
		r.RunEpsilonAsked = pr.RunEpsilon
	}
	return nil
}

// compare computes what the other adjacency costs, so the choice is visible (docs/math.md section
// 1). Its cost is capped by comparisonBudget (and by budget when smaller): the comparison must not
// dominate the run.
func (r *CalibrationResult) compare(s *scenario.Scenario, p *Plan, budget int64) {
	other := privacy.Block
	if p.Adjacency == privacy.Block {
		other = privacy.Manifold
	}
	cmpBudget := int64(comparisonBudget)
	if budget > 0 && budget < cmpBudget {
		cmpBudget = budget
	}
	po, err := New(s, Options{Adjacency: other, Budget: cmpBudget})
	if err != nil {
		r.ComparisonNote = fmt.Sprintf("%s adjacency not computed: %v", other, err)
		return
	}
	r.OtherAdjacency = &OtherAdjacency{Adjacency: other, Sensitivity: po.Sensitivity.Value}
	r.OtherAdjacency.Sigma, r.OtherAdjacency.B = privacy.ScaleKeys(p.Mechanism, po.Scale)
}

// setConditioning fills the conditioning keys from privacy.Conditioning.
func (r *CalibrationResult) setConditioning(c privacy.Conditioning) {
	r.SensitivityMinDet, r.SensitivityPerturbations = c.MinDet, c.Directions
	if !math.IsNaN(c.Perturbation) && !math.IsInf(c.Perturbation, 0) {
		v := c.Perturbation
		r.SensitivityPerturbation = &v
		r.SensitivityPerturbedBy = c.PerturbedBy
	}
	r.PerturbationNote = c.Note
	if c.Err != "" {
		r.PerturbationNote = "a perturbed model is refused: " + c.Err
	}
	r.Conditioning = c.Summary()
	if c.Fragile {
		r.Fragile, r.FragileReason = true, c.Advice()
	}
}

// modelSource names where the private model (A, C) comes from.
func modelSource(s *scenario.Scenario) string {
	switch {
	case s.Kind == scenario.Consensus:
		return "consensus agent (1, 1)"
	case s.Privacy.Model != nil:
		return "privacy.model"
	}
	return "plant"
}

// worstPair is the plan's worst adjacent pair; for structured noise its parameter is the
// initial-state difference (Theorem 3).
func worstPair(p *Plan) *WorstPair {
	w := p.Sensitivity.Worst
	out := &WorstPair{FreeSet: w.FreeSet, Coordinate: w.Coordinate, Diff: w.Diff, Param: w.Param}
	if w.Time >= 0 {
		t, c := w.Time, w.Component
		out.Time, out.Component = &t, &c
	}
	if p.Noise == noise.Structured {
		out.InitialStateDiff = w.Param
	}
	return out
}

// symRows returns m as rows (nil for nil).
func symRows(m *mat.SymDense) [][]float64 {
	if m == nil {
		return nil
	}
	n := m.SymmetricDim()
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, n)
		for j := range out[i] {
			out[i][j] = m.At(i, j)
		}
	}
	return out
}
