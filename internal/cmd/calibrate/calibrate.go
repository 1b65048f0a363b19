package calibrate

import (
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dpsim/dpsim/internal/cli"
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
		delta       = fs.Float64("delta", 0, "privacy budget delta in (0, 1) for gaussian; for laplace omit it (pure eps), except with --episodes K, where it is the whole run's delta (the composition of K pure-eps episodes is tighter with a small delta)")
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
		if perEp, perDelta, err = privacy.EpisodeBudget(mech, eps, runDelta, o.episodes); err != nil {
			return fmt.Errorf("--run-epsilon %v over --episodes %d: %w", eps, o.episodes, err)
		}
	}
	sn, err := privacy.CalibrateScalar(mech, cal, perEp, perDelta, o.mu, o.sensitivity)
	if err != nil {
		return err
	}
	g, err := sn.Run(o.episodes, runDelta, cal)
	if err != nil {
		return err
	}
	res := newScalarResult(sn)
	res.RunFields = g.Fields(forRun)
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
	WorstPair    *plan.WorstPair    `json:"worst_pair"`
	Alternatives map[string]float64 `json:"alternatives,omitempty"`
	// Sampler and Granularity: dpsim's secure sampler releases the value rounded exactly to
	// g = 2^(floor(log2 scale) - 20), at no cost in (eps, delta) (docs/math.md section 10).
	Sampler     noise.Sampler `json:"sampler"`
	Granularity float64       `json:"granularity"`
	privacy.RunFields
}

// newScalarResult is scalar mode's JSON of the noise sn; dpsim's secure sampler releases it rounded
// exactly to the granularity of its scale (docs/math.md section 10).
func newScalarResult(sn *privacy.ScalarNoise) *ScalarResult {
	r := &ScalarResult{Mode: "scalar", Mechanism: sn.Mechanism, Epsilon: sn.Epsilon, Delta: sn.Delta, Mu: sn.Mu,
		Sensitivity: sn.Sensitivity, Calibration: sn.Calibration, Variance: sn.Variance, RankOK: true,
		Alternatives: sn.Alternatives, Sampler: noise.SamplerSecure, Granularity: noise.Granularity(sn.Scale)}
	r.Sigma, r.B = privacy.ScaleKeys(sn.Mechanism, sn.Scale)
	if sn.Mechanism == privacy.Gaussian {
		kinv, k := sn.KappaInverse, sn.KappaAtScale
		r.KappaInverse, r.KappaAtSigma = &kinv, &k
	}
	return r
}

// ScenarioResult is the JSON of scenario mode (one per sweep point): the mode, then the point's
// calibration.
type ScenarioResult struct {
	Mode string `json:"mode"`
	plan.CalibrationResult
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
func printRun(w io.Writer, m privacy.Mechanism, eps, delta float64, f *privacy.RunFields) {
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
		c, err := plan.Calibrate(pt, plan.Options{Adjacency: adj, Budget: budget}, episodes)
		if err != nil {
			if strings.Contains(err.Error(), "budget") {
				return fmt.Errorf("%w (raise it with --budget FLOPS)", err)
			}
			return err
		}
		results = append(results, &ScenarioResult{Mode: "scenario", CalibrationResult: *c})
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

// printSweep prints one row per sweep point, then the warnings of the scenario and of the
// points' plans once.
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
	var warnings []string // the scenario's, then each point's plan's, once
	for _, r := range rs {
		for _, wmsg := range r.Warnings {
			if !slices.Contains(warnings, wmsg) {
				warnings = append(warnings, wmsg)
			}
		}
	}
	for _, wmsg := range warnings {
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
