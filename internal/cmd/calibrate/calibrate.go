package calibrate

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/rowmajor"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Command is the table entry for `dpsim calibrate`.
var Command = cli.Command{Name: "calibrate", Summary: "noise needed for a privacy budget (scalar or a scenario's system)", Run: Run}

const synopsis = `dpsim calibrate --mechanism gaussian|laplace --epsilon E [--delta D] [--mu M] [--sensitivity S] [--calibration tight|paper-bound|classic] [--episodes K] [--json]
       dpsim calibrate --mechanism gaussian|laplace --run-epsilon E --episodes K [--delta D] [...] [--json]
       dpsim calibrate --scenario FILE [--adjacency manifold|block] [--budget FLOPS] [--episodes K] [--json]`

const description = `Prints the noise scale that gives (epsilon, delta)-differential privacy.

Scalar mode: sigma for a Gaussian mechanism (Theorem 1: kappa(eps, mu*Delta/sigma) <= delta) or the
Laplace scale b = mu*Delta/eps (Theorem 2; variance 2 b^2) for a given sensitivity Delta.
Calibrations: tight (default) inverts kappa exactly (eq. 7) - the least noise that is sufficient;
paper-bound is the closed form the papers print (sigma = 2.5244 for eps = 1, delta = 1e-2);
classic is sqrt(2 ln(1.25/delta))/eps, valid only for eps < 1.

Whole run (docs/math.md section 9): a run releases the same secret in each of its K episodes with
fresh noise, and an eavesdropper who combines them sees the composed mechanism. --episodes K
(default 1) also prints the guarantee of K episodes together: Gaussian exactly, K releases of a
mu-GDP mechanism being sqrt(K) mu-GDP (epsilon_run solves kappa(eps, sqrt(K) mu) = delta, with mu
= mu*Delta/sigma the exact per-episode parameter whatever the calibration); Laplace by the optimal
composition of K pure eps-DP mechanisms (Kairouz, Oh & Viswanath 2015, Theorem 3.3) at --delta,
which for laplace is then the whole run's delta (default 0: K eps). --run-epsilon E (instead of
--epsilon) calibrates FOR the whole run: the noise of each episode is set so that K episodes
together are (E, delta)-DP (Gaussian: mu_episode = mu_run/sqrt(K); Laplace: the largest per-episode
eps whose optimal K-fold composition is E).

Scenario mode: for the scenario's private model and horizon T it computes the sensitivity under
the adjacency (manifold = Definition 4 over all index sets, block = Theorem 3's T block sets),
checks the rank condition (8), designs the noise of the scenario's kind (structured: Algorithm 1
scalar sigma and optimal Sigma; iid-calibrated, iid-naive: per-step sigma) and prints the worst
adjacent pair. It also prints how fragile the sensitivity is: the smallest |det D_dj| of the free
sets it kept and how much it moves under 1e-4 relative changes of the private model (A, C), and
flags FRAGILE (below 1e-6, or above 10%) with what to change: privacy.model, privacy.adjacency,
steps. A scenario with a sweep prints one result per point.`

// Run executes `dpsim calibrate` with args (without the command name).
func Run(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("calibrate", synopsis, description, stderr)
	var (
		mechanism   = fs.String("mechanism", "gaussian", "noise law: gaussian or laplace (scalar mode)")
		epsilon     = fs.Float64("epsilon", 0, "privacy budget epsilon > 0 (scalar mode, required)")
		delta       = fs.Float64("delta", 0, "privacy budget delta in (0, 1) for gaussian; omit or 0 for laplace (scalar mode)")
		mu          = fs.Float64("mu", 1, "adjacency level mu > 0: adjacent inputs differ by at most mu (scalar mode)")
		sensitivity = fs.Float64("sensitivity", 1, "sensitivity Delta > 0 of the query per unit of mu: 2-norm for gaussian, 1-norm for laplace (scalar mode)")
		calibration = fs.String("calibration", string(privacy.Tight), "gaussian calibration: tight, paper-bound or classic (scalar mode)")
		scenarioF   = fs.String("scenario", "", "scenario YAML file: calibrate for its system and privacy settings")
		adjacency   = fs.String("adjacency", "", "scenario mode: override the scenario's adjacency (manifold or block)")
		budget      = fs.Int64("budget", 0, "scenario mode: flop budget of the exact sensitivity enumeration (0 = default); larger problems are refused")
		episodes    = fs.Int("episodes", 1, "episodes K of one secret in a whole run: also print their composed guarantee (scenario mode: default privacy.episodes, else the scenario's runs)")
		runEpsilon  = fs.Float64("run-epsilon", 0, "scalar mode, instead of --epsilon: the whole run's epsilon for --episodes K episodes; each episode is calibrated for its share")
		asJSON      = fs.Bool("json", false, "print one JSON object on stdout instead of a table; the noise scale is \"sigma\" (standard deviation) for gaussian and \"b\" (Laplace scale) for laplace, also in per_agent_* and other_adjacency")
	)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.UsageError("unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *budget < 0 {
		return cli.UsageError("--budget %d must be >= 0 (0 = the default budget)", *budget)
	}
	if *scenarioF != "" {
		for _, n := range []string{"mechanism", "epsilon", "delta", "mu", "sensitivity", "calibration", "run-epsilon"} {
			if set[n] {
				return cli.UsageError("--%s is a scalar-mode flag; with --scenario the scenario's privacy section is used", n)
			}
		}
		var adj privacy.Adjacency
		if *adjacency != "" {
			a, err := privacy.ParseAdjacency(*adjacency)
			if err != nil {
				return cli.UsageError("--adjacency: %v", err)
			}
			adj = a
		}
		if set["episodes"] {
			if err := checkEpisodes(*episodes); err != nil {
				return err
			}
		} else {
			*episodes = 0 // the scenario's privacy.episodes, else its runs
		}
		return runScenario(*scenarioF, adj, *budget, *episodes, *asJSON, stdout, stderr)
	}
	if set["adjacency"] || set["budget"] {
		return cli.UsageError("--adjacency and --budget need --scenario")
	}
	return runScalar(scalarFlags{mechanism: *mechanism, calibration: *calibration, epsilon: *epsilon, runEpsilon: *runEpsilon,
		delta: *delta, mu: *mu, sensitivity: *sensitivity, episodes: *episodes, asJSON: *asJSON}, set, stdout)
}

// scalarFlags are the flags of scalar mode.
type scalarFlags struct {
	mechanism, calibration                      string
	epsilon, runEpsilon, delta, mu, sensitivity float64
	episodes                                    int
	asJSON                                      bool
}

// runScalar is scalar mode: the noise for a scalar sensitivity, and the whole run of --episodes.
func runScalar(o scalarFlags, set map[string]bool, stdout io.Writer) error {
	mech, err := privacy.ParseMechanism(o.mechanism)
	if err != nil {
		return cli.UsageError("--mechanism: %v", err)
	}
	cal, err := privacy.ParseCalibration(o.calibration)
	if err != nil {
		return cli.UsageError("--calibration: %v", err)
	}
	if err := checkEpisodes(o.episodes); err != nil {
		return err
	}
	forRun := set["run-epsilon"]
	switch {
	case forRun && set["epsilon"]:
		return cli.UsageError("give --epsilon (per episode) or --run-epsilon (the whole run of --episodes K), not both")
	case forRun && !set["episodes"]:
		return cli.UsageError("--run-epsilon needs --episodes K: the number of episodes the whole run's budget covers")
	case !forRun && !set["epsilon"]:
		return cli.UsageError("--epsilon is required (or give --run-epsilon with --episodes, or --scenario)")
	}
	eps, epsFlag := o.epsilon, "--epsilon"
	if forRun {
		eps, epsFlag = o.runEpsilon, "--run-epsilon"
	}
	d := o.delta
	if mech == privacy.Gaussian && !set["delta"] {
		return cli.UsageError("--delta is required for the gaussian mechanism")
	}
	if err := checkFlags(epsFlag, eps, d, o.mu, o.sensitivity, mech); err != nil {
		return err
	}
	runDelta := d
	if mech == privacy.Laplace {
		if set["delta"] && d != 0 && !set["episodes"] {
			return cli.UsageError("--delta %v: the laplace mechanism gives pure (eps, 0)-DP; omit --delta (with --episodes K it is the whole run's delta)", d)
		}
		if set["delta"] && (math.IsNaN(d) || d < 0 || d >= 1) {
			return cli.UsageError("--delta %v: the whole run's delta must lie in [0, 1)", d)
		}
		if set["calibration"] {
			return cli.UsageError("--calibration applies to the gaussian mechanism only")
		}
		d = 0
	}
	perEp, perDelta := eps, d
	if forRun {
		var err error
		if perEp, perDelta, err = episodeBudget(mech, eps, runDelta, o.episodes); err != nil {
			return fmt.Errorf("--run-epsilon %v over --episodes %d: %w", eps, o.episodes, err)
		}
	}
	res, err := scalar(mech, cal, perEp, perDelta, o.mu, o.sensitivity)
	if err != nil {
		return err
	}
	if err := res.addRun(o.episodes, runDelta, cal, forRun); err != nil {
		return err
	}
	if o.asJSON {
		return cli.WriteJSON(stdout, res)
	}
	return printScalar(stdout, res)
}

// checkEpisodes refuses an episode count outside [1, privacy.MaxEpisodes].
func checkEpisodes(k int) error {
	if k < 1 || k > privacy.MaxEpisodes {
		return cli.UsageError("--episodes %d must be an integer in [1, %d]", k, privacy.MaxEpisodes)
	}
	return nil
}

// episodeBudget splits a whole run's budget (eps, runDelta) over k episodes (docs/math.md section 9):
// the per-episode (eps, delta) to calibrate each episode for.
func episodeBudget(mech privacy.Mechanism, eps, runDelta float64, k int) (float64, float64, error) {
	if mech == privacy.Laplace {
		e, err := privacy.LaplaceEpisodeEpsilon(eps, runDelta, k)
		return e, 0, err
	}
	e, d, _, err := privacy.GaussianEpisodeBudget(eps, runDelta, k)
	return e, d, err
}

// checkFlags refuses values outside the documented ranges, naming the flag.
func checkFlags(epsFlag string, eps, delta, mu, sens float64, mech privacy.Mechanism) error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !finite(eps) || eps <= 0:
		return cli.UsageError("%s %v must be a finite number > 0", epsFlag, eps)
	case mech == privacy.Gaussian && (!finite(delta) || delta <= 0 || delta >= 1):
		return cli.UsageError("--delta %v must lie in (0, 1) for the gaussian mechanism", delta)
	case !finite(mu) || mu <= 0:
		return cli.UsageError("--mu %v must be a finite number > 0", mu)
	case !finite(sens) || sens <= 0:
		return cli.UsageError("--sensitivity %v must be a finite number > 0", sens)
	}
	return nil
}

// ScalarResult is the JSON of scalar mode. The noise scale is "sigma" (the standard deviation) for the
// Gaussian mechanism and "b" (the Laplace scale, standard deviation sqrt(2) b) for the Laplace
// mechanism: exactly one of the two keys is present, named for what it is.
type ScalarResult struct {
	Mode         string             `json:"mode"`
	Mechanism    privacy.Mechanism  `json:"mechanism"`
	Epsilon      float64            `json:"epsilon"`
	Delta        float64            `json:"delta"`
	Mu           float64            `json:"mu"`
	Sensitivity  float64            `json:"sensitivity"`
	Calibration  string             `json:"calibration"`
	Sigma        *float64           `json:"sigma,omitempty"` // gaussian
	B            *float64           `json:"b,omitempty"`     // laplace
	Variance     float64            `json:"variance"`
	KappaInverse *float64           `json:"kappa_inverse,omitempty"`
	KappaAtSigma *float64           `json:"kappa_at_sigma,omitempty"`
	Adjacency    *string            `json:"adjacency"`
	RankOK       bool               `json:"rank_ok"`
	WorstPair    *WorstPairJSON     `json:"worst_pair"`
	Alternatives map[string]float64 `json:"alternatives,omitempty"`
	// Sampler and Granularity: dpsim's secure sampler releases the value rounded exactly to
	// g = 2^(floor(log2 scale) - 20), at no cost in (eps, delta) (docs/math.md section 10).
	Sampler     noise.Sampler `json:"sampler"`
	Granularity float64       `json:"granularity"`
	RunFields
}

// RunFields is the whole run's guarantee for k episodes of one secret (docs/math.md section 9), in
// both modes. Epsilon and Delta of the result stay the per-episode budget the noise is calibrated for.
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
}

// setRun fills RunFields from a composed guarantee.
func (f *RunFields) setRun(g privacy.RunGuarantee, forRun bool) {
	f.Episodes, f.EpsilonRun, f.DeltaRun = g.Episodes, g.EpsilonRun, g.DeltaRun
	f.Composition, f.CompositionNote = string(g.Composition), g.Note
	f.CalibratedFor = "episode"
	if forRun {
		f.CalibratedFor = "run"
	}
	if g.Mechanism == privacy.Gaussian {
		mu, mr := g.MuEpisode, g.MuRun
		f.MuEpisode, f.MuRun = &mu, &mr
		return
	}
	if g.DeltaRun > 0 {
		f.RunAlternatives = map[string]float64{
			"basic":    float64(g.Episodes) * g.EpsilonEpisode,
			"advanced": privacy.AdvancedComposition(g.EpsilonEpisode, g.Episodes, g.DeltaRun),
		}
	}
}

// addRun composes the scalar result over k episodes at runDelta.
func (r *ScalarResult) addRun(k int, runDelta float64, cal privacy.Calibration, forRun bool) error {
	var g privacy.RunGuarantee
	var err error
	if r.Mechanism == privacy.Laplace {
		// The exact per-episode eps of the noise: mu*Delta_L/b (equal to the budget up to rounding).
		g, err = privacy.ComposeLaplace(k, r.Mu*r.Sensitivity / *r.B, runDelta)
	} else {
		g, err = privacy.ComposeGaussian(k, r.Epsilon, r.Delta, r.Mu*r.Sensitivity / *r.Sigma, runDelta, cal)
	}
	if err != nil {
		return err
	}
	r.RunFields.setRun(g, forRun)
	return nil
}

func scalar(mech privacy.Mechanism, cal privacy.Calibration, eps, delta, mu, sens float64) (*ScalarResult, error) {
	r := &ScalarResult{Mode: "scalar", Mechanism: mech, Epsilon: eps, Delta: delta, Mu: mu, Sensitivity: sens, RankOK: true}
	if mech == privacy.Laplace {
		b, err := privacy.LaplaceScale(eps, mu, sens)
		if err != nil {
			return nil, err
		}
		r.Calibration, r.Variance = "exact", 2*b*b
		r.Sigma, r.B = scaleKeys(mech, b)
		r.Sampler, r.Granularity = noise.SamplerSecure, noise.Granularity(b)
		return r, nil
	}
	sigma, err := privacy.GaussianSigma(cal, eps, delta, mu, sens)
	if err != nil {
		return nil, err
	}
	kinv, err := privacy.KappaInverse(eps, delta)
	if err != nil {
		return nil, err
	}
	k := privacy.Kappa(eps, mu*sens/sigma)
	r.Calibration, r.Variance, r.KappaInverse, r.KappaAtSigma = string(cal), sigma*sigma, &kinv, &k
	r.Sigma, r.B = scaleKeys(mech, sigma)
	r.Sampler, r.Granularity = noise.SamplerSecure, noise.Granularity(sigma)
	r.Alternatives = map[string]float64{}
	for _, c := range privacy.Calibrations {
		if s, err := privacy.GaussianSigma(c, eps, delta, mu, sens); err == nil {
			r.Alternatives[string(c)] = s
		}
	}
	return r, nil
}

func printScalar(w io.Writer, r *ScalarResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "mechanism\t%s\n", r.Mechanism)
	fmt.Fprintf(tw, "budget\teps = %g, delta = %g, mu = %g\n", r.Epsilon, r.Delta, r.Mu)
	fmt.Fprintf(tw, "sensitivity\t%g\n", r.Sensitivity)
	fmt.Fprintf(tw, "calibration\t%s\n", r.Calibration)
	fmt.Fprintf(tw, "sampler\tsecure: exact samples, released rounded exactly to g = %g (no cost in eps, delta)\n", r.Granularity)
	if r.Mechanism == privacy.Laplace {
		fmt.Fprintf(tw, "scale b\t%.6g\t(variance 2 b^2 = %.6g)\n", *r.B, r.Variance)
		printRun(tw, r.Mechanism, r.Epsilon, r.Delta, &r.RunFields)
		return tw.Flush()
	}
	fmt.Fprintf(tw, "sigma\t%.6g\n", *r.Sigma)
	fmt.Fprintf(tw, "check\tkappa(eps, mu*Delta/sigma) = %.4g <= delta = %g\n", *r.KappaAtSigma, r.Delta)
	for _, c := range privacy.Calibrations {
		if s, ok := r.Alternatives[string(c)]; ok && string(c) != r.Calibration {
			fmt.Fprintf(tw, "  %s would give\t%.6g\t(%+.1f%%)\n", c, s, 100*(s / *r.Sigma - 1))
		}
	}
	printRun(tw, r.Mechanism, r.Epsilon, r.Delta, &r.RunFields)
	return tw.Flush()
}

// printRun prints the per-episode and the whole run's guarantee (docs/math.md section 9).
func printRun(w io.Writer, m privacy.Mechanism, eps, delta float64, f *RunFields) {
	if f.Episodes == 0 {
		return
	}
	budget := "the budget is per episode"
	if f.CalibratedFor == "run" {
		budget = fmt.Sprintf("calibrated for the whole run: each episode gets its share of eps_run = %g", f.EpsilonRun)
	}
	fmt.Fprintf(w, "per episode\teps = %.6g, delta = %.6g\t(%s)\n", eps, delta, budget)
	if m == privacy.Gaussian {
		fmt.Fprintf(w, "whole run, %d episodes\teps_run = %.6g at delta = %g\t(%s: mu_episode = %.6g, mu_run = sqrt(%d) mu_episode = %.6g)\n",
			f.Episodes, f.EpsilonRun, f.DeltaRun, f.Composition, *f.MuEpisode, f.Episodes, *f.MuRun)
	} else {
		fmt.Fprintf(w, "whole run, %d episodes\teps_run = %.6g at delta = %g\t(%s)\n", f.Episodes, f.EpsilonRun, f.DeltaRun, f.Composition)
		if a := f.RunAlternatives; a != nil {
			fmt.Fprintf(w, "  for comparison\tbasic k eps = %.6g, advanced composition = %.6g\n", a["basic"], a["advanced"])
		}
	}
}

// WorstPairJSON is the worst adjacent pair as printed (0-based coordinates).
type WorstPairJSON struct {
	FreeSet          []int     `json:"free_set"`
	Coordinate       int       `json:"coordinate"`
	Time             *int      `json:"time,omitempty"`
	Component        *int      `json:"component,omitempty"`
	Diff             []float64 `json:"diff"`
	Param            []float64 `json:"param"`
	InitialStateDiff []float64 `json:"initial_state_diff,omitempty"`
}

// ScenarioResult is the JSON of scenario mode (one per sweep point).
type ScenarioResult struct {
	Mode         string            `json:"mode"`
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
	Sigma        *float64          `json:"sigma,omitempty"` // gaussian; see scaleKeys
	B            *float64          `json:"b,omitempty"`     // laplace
	SigmaMatrix  [][]float64       `json:"sigma_matrix,omitempty"`
	KappaInverse float64           `json:"kappa_inverse,omitempty"`
	// Sampler and Granularity: how the noise becomes float64 values (docs/math.md section 10);
	// SamplerInfo states its cost (none for secure) and, for float, that the guarantee is void.
	Sampler       noise.Sampler    `json:"sampler"`
	Granularity   float64          `json:"granularity"`
	SamplerInfo   plan.SamplerInfo `json:"sampler_info"`
	TraceScalar   float64          `json:"trace_scalar,omitempty"`
	TraceOptimal  float64          `json:"trace_optimal,omitempty"`
	TraceSavedPct float64          `json:"trace_saved_percent,omitempty"`
	LMIViolation  float64          `json:"max_lmi_violation"`
	RankOK        bool             `json:"rank_ok"`
	RankError     string           `json:"rank_error,omitempty"`
	WorstPair     *WorstPairJSON   `json:"worst_pair"`
	Evaluated     int64            `json:"evaluated"`
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
	RunFields
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

// scaleKeys puts the noise scale v under the key that names it: "sigma", the standard deviation, for
// the Gaussian mechanism, or "b", the Laplace scale (standard deviation sqrt(2) b), for the Laplace
// mechanism. Exactly one of the two is non-nil.
func scaleKeys(m privacy.Mechanism, v float64) (sigma, b *float64) {
	if m == privacy.Laplace {
		return nil, &v
	}
	return &v, nil
}

// scaleOf returns whichever of sigma and b is set.
func scaleOf(sigma, b *float64) float64 {
	if b != nil {
		return *b
	}
	return *sigma
}

// SweepResult is the JSON of scenario mode for a scenario with a sweep.
type SweepResult struct {
	Mode     string            `json:"mode"`
	Scenario string            `json:"scenario"`
	Points   []*ScenarioResult `json:"points"`
}

func runScenario(path string, adj privacy.Adjacency, budget int64, episodes int, asJSON bool, stdout, stderr io.Writer) error {
	if err := cli.CheckScenarioFile(path); err != nil {
		return err
	}
	s, err := scenario.Load(path)
	if err != nil {
		return err
	}
	if adj != "" {
		for _, sw := range s.Sweeps {
			if sw.Param == scenario.SweepAdjacency {
				return cli.UsageError("--adjacency %s: scenario %s sweeps the adjacency itself; drop the flag or the sweep", adj, s.Name)
			}
		}
	}
	points := s.Expand()
	results := make([]*ScenarioResult, 0, len(points))
	for _, pt := range points {
		r, err := calibrateScenario(pt, plan.Options{Adjacency: adj, Budget: budget}, episodes)
		if err != nil {
			if strings.Contains(err.Error(), "budget") {
				return fmt.Errorf("%w (raise it with --budget FLOPS)", err)
			}
			return err
		}
		results = append(results, r)
	}
	if asJSON {
		if len(s.Sweeps) == 0 {
			return cli.WriteJSON(stdout, results[0])
		}
		return cli.WriteJSON(stdout, SweepResult{Mode: "scenario-sweep", Scenario: s.Name, Points: results})
	}
	if len(results) > 1 {
		return printSweep(stdout, s, results)
	}
	return printScenario(stdout, results[0])
}

// CalibrateScenario resolves one scenario point into its printed result. The whole run's guarantee is
// for episodes (--episodes; 0: privacy.episodes when the file gives a whole-run budget, else its runs).
func calibrateScenario(s *scenario.Scenario, opt plan.Options, episodes int) (*ScenarioResult, error) {
	p, err := plan.New(s, opt)
	if err != nil {
		return nil, err
	}
	pr := s.Privacy
	r := &ScenarioResult{
		Mode: "scenario", Scenario: s.Name, Kind: s.Kind, Steps: s.Steps, Mechanism: p.Mechanism,
		Epsilon: pr.Epsilon, Delta: pr.Delta, Mu: pr.Mu, Adjacency: p.Adjacency, Noise: p.Noise,
		Sensitivity: p.Sensitivity.Value, KappaInverse: p.KappaInv,
		RankOK: p.RankErr == nil, Evaluated: p.Sensitivity.Evaluated, NoiseVariance0: p.NoiseVariance(),
		SeedFromFile: s.Seed, GraphAlpha: p.Alpha, Warnings: s.Warnings,
	}
	r.Sigma, r.B = scaleKeys(p.Mechanism, p.Scale)
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
	r.EpisodesFrom = "--episodes"
	if episodes == 0 {
		episodes, r.EpisodesFrom = s.Runs, "episodes"
		if pr.Episodes > 0 {
			episodes, r.EpisodesFrom = pr.Episodes, "privacy.episodes"
		}
	}
	if p.Noise != noise.None {
		g, err := p.RunGuarantee(episodes)
		if err != nil {
			return nil, err
		}
		r.RunFields.setRun(g, pr.Episodes > 0)
		if pr.Episodes > 0 {
			r.RunEpsilonAsked = pr.RunEpsilon
		}
	}
	// What the other adjacency costs, so the choice is visible (docs/math.md section 1).
	other := privacy.Block
	if p.Adjacency == privacy.Block {
		other = privacy.Manifold
	}
	// Its cost is capped: the comparison must not dominate the run.
	if p.Noise != noise.None {
		cmpBudget := int64(comparisonBudget)
		if opt.Budget > 0 && opt.Budget < cmpBudget {
			cmpBudget = opt.Budget
		}
		po, err := plan.New(s, plan.Options{Adjacency: other, Budget: cmpBudget})
		if err != nil {
			r.ComparisonNote = fmt.Sprintf("%s adjacency not computed: %v", other, err)
		} else {
			r.OtherAdjacency = &OtherAdjacency{Adjacency: other, Sensitivity: po.Sensitivity.Value}
			r.OtherAdjacency.Sigma, r.OtherAdjacency.B = scaleKeys(p.Mechanism, po.Scale)
		}
	}
	return r, nil
}

// setConditioning fills the conditioning keys.
func (r *ScenarioResult) setConditioning(c privacy.Conditioning) {
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

// comparisonBudget caps the flops spent on the other adjacency's sensitivity (about a second).
const comparisonBudget = 1e9

func modelSource(s *scenario.Scenario) string {
	switch {
	case s.Kind == scenario.Consensus:
		return "consensus agent (1, 1)"
	case s.Privacy.Model != nil:
		return "privacy.model"
	}
	return "plant"
}

func worstPair(p *plan.Plan) *WorstPairJSON {
	w := p.Sensitivity.Worst
	out := &WorstPairJSON{FreeSet: w.FreeSet, Coordinate: w.Coordinate, Diff: w.Diff, Param: w.Param}
	if w.Time >= 0 {
		t, c := w.Time, w.Component
		out.Time, out.Component = &t, &c
	}
	if p.Noise == noise.Structured {
		out.InitialStateDiff = w.Param
	}
	return out
}

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

func printScenario(w io.Writer, r *ScenarioResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	title := r.Scenario
	fmt.Fprintf(tw, "scenario\t%s (%s, T = %d)\n", title, r.Kind, r.Steps)
	fmt.Fprintf(tw, "privacy\t%s, eps = %g, delta = %g, mu = %g\n", r.Mechanism, r.Epsilon, r.Delta, r.Mu)
	fmt.Fprintf(tw, "private model\tA = %v, C = %v (%v)\n", r.PrivateModel["A"], r.PrivateModel["C"], r.PrivateModel["from"])
	fmt.Fprintf(tw, "adjacency\t%s\n", r.Adjacency)
	fmt.Fprintf(tw, "noise\t%s\n", r.Noise)
	fmt.Fprintf(tw, "sensitivity\t%.6g\t(%s examined)\n", r.Sensitivity, plural(r.Evaluated, "index set"))
	fmt.Fprintf(tw, "conditioning\t%s\n", r.Conditioning)
	if r.Fragile {
		fmt.Fprintf(tw, "FRAGILE\t%s\n", r.FragileReason)
	}
	if r.RankOK {
		fmt.Fprintf(tw, "rank condition (8)\tholds\n")
	} else {
		fmt.Fprintf(tw, "rank condition (8)\tFAILS: %s\n", strings.TrimPrefix(r.RankError, "rank condition (8) fails: "))
	}
	if r.Noise != noise.None {
		fmt.Fprintf(tw, "%s\t%.6g\t(calibration %s)\n", scaleName(r.Mechanism), scaleOf(r.Sigma, r.B), r.Calibration)
	}
	fmt.Fprintf(tw, "sampler\t%s\n", r.SamplerInfo.Note)
	if r.SigmaMatrix != nil && len(r.SigmaMatrix) > 1 {
		fmt.Fprintf(tw, "optimal Sigma\t%s\n", formatMatrix(r.SigmaMatrix))
		fmt.Fprintf(tw, "trace(O_T Sigma O_T')\t%.6g optimal vs %.6g scalar (%.1f%% saved); max LMI violation %.2g\n",
			r.TraceOptimal, r.TraceScalar, r.TraceSavedPct, r.LMIViolation)
	}
	if r.WorstPair != nil {
		wp := r.WorstPair
		where := fmt.Sprintf("coordinate %d", wp.Coordinate)
		if wp.Time != nil {
			where = fmt.Sprintf("x_%d(t = %d)", *wp.Component+1, *wp.Time)
		}
		fmt.Fprintf(tw, "worst adjacent pair\t%s changes by mu; free set %s\n", where, formatInts(wp.FreeSet, 8))
		if wp.InitialStateDiff != nil {
			fmt.Fprintf(tw, "  initial-state difference\t%s\n", privacy.FormatVector(wp.InitialStateDiff))
		}
	}
	if r.Episodes > 0 {
		printRun(tw, r.Mechanism, r.Epsilon, r.Delta, &r.RunFields)
		fmt.Fprintf(tw, "  episodes from\t%s\n", r.EpisodesFrom)
	}
	if r.NaiveEpsilonT > 0 {
		fmt.Fprintf(tw, "UNSOUND over T\tiid-naive is calibrated for one release; over all %d releases the sensitivity is %.6g, so this noise gives only eps = %.4g\n",
			r.Steps, r.NaiveSensitivityT, r.NaiveEpsilonT)
	}
	if o := r.OtherAdjacency; o != nil {
		fmt.Fprintf(tw, "for comparison\t%s adjacency: sensitivity %.6g, %s %.6g\n", o.Adjacency, o.Sensitivity, scaleName(r.Mechanism), scaleOf(o.Sigma, o.B))
	}
	if r.ComparisonNote != "" {
		fmt.Fprintf(tw, "for comparison\t%s\n", r.ComparisonNote)
	}
	if r.GraphAlpha > 0 {
		fmt.Fprintf(tw, "graph rate alpha\t%.6g\n", r.GraphAlpha)
	}
	for _, wmsg := range r.Warnings {
		fmt.Fprintf(tw, "warning\t%s\n", wmsg)
	}
	return tw.Flush()
}

// printSweep prints one row per sweep point, then the scenario's warnings once.
func printSweep(w io.Writer, s *scenario.Scenario, rs []*ScenarioResult) error {
	fmt.Fprintf(w, "scenario %s (%s, T = %d): %d sweep points; --json gives every field of every point\n\n", s.Name, s.Kind, s.Steps, len(rs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "point\tmechanism\teps\tdelta\tadjacency\tnoise\tsensitivity\tsigma / b\trank (8)\tnote")
	for _, r := range rs {
		rank := "holds"
		if !r.RankOK {
			rank = "FAILS"
		}
		note := ""
		if r.Fragile {
			note = "FRAGILE sensitivity (see --json fragile_reason); "
		}
		if r.NaiveEpsilonT > 0 {
			note += fmt.Sprintf("unsound: eps = %.4g over T", r.NaiveEpsilonT)
		} else if r.TraceSavedPct > 0 {
			note += fmt.Sprintf("optimal Sigma saves %.1f%% trace", r.TraceSavedPct)
		}
		note = strings.TrimSuffix(note, "; ")
		fmt.Fprintf(tw, "%s\t%s\t%g\t%g\t%s\t%s\t%.6g\t%.6g\t%s\t%s\n",
			pointLabel(r), r.Mechanism, r.Epsilon, r.Delta, r.Adjacency, r.Noise, r.Sensitivity, scaleOf(r.Sigma, r.B), rank, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, wmsg := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wmsg)
	}
	return nil
}

func pointLabel(r *ScenarioResult) string {
	if i := strings.Index(r.Scenario, "@"); i >= 0 {
		return r.Scenario[i+1:]
	}
	return r.Scenario
}

func scaleName(m privacy.Mechanism) string {
	if m == privacy.Laplace {
		return "scale b"
	}
	return "sigma"
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func formatMatrix(m [][]float64) string {
	parts := make([]string, len(m))
	for i, row := range m {
		cells := make([]string, len(row))
		for j, v := range row {
			cells[j] = fmt.Sprintf("%.6g", v)
		}
		parts[i] = strings.Join(cells, " ")
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func formatInts(v []int, max int) string {
	if len(v) <= max {
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%v ... (%d in all)", v[:max], len(v))
}
