package johncmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/rs/zerolog"
	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/john"
)

// Command is the table entry for `dpsim john`.
var Command = cli.Command{Name: "john", Summary: "John ellipsoid of a symmetric polytope (exact, fast sketched, or with DP noise)", Run: Run}

const synopsis = `dpsim john --input A.csv [--header] [--method exact|fast|dp] [--xi X] [--max-iter N]
       [--epsilon E --delta D --eps0 R] [--noise-scale S] [--seed S] [--json] [--plot-out DIR]
       [--require-converged]`

const description = `Computes the John ellipsoid E = {x : x^T Q x <= 1}, Q = A^T diag(v) A, of the polytope
P = {x : |a_i^T x| <= 1 for every row a_i of A}: weights v >= 0 with sum v = d and
max_i h_i(v) <= 1 + xi, h_i(v) = a_i^T Q^{-1} a_i. Then E/sqrt(1+xi) lies inside P and P inside
sqrt(d) E. The output always reports max_leverage = max_i h_i(v), computed exactly, so the
approximation is verified rather than assumed.

Input: a CSV file with n >= d rows of d numbers (the rows a_i); lines starting with # are
comments. The first line is a header of column names (skipped) with --header, or when every cell
of it is non-numeric; a first line mixing numbers and words is an error naming line and column,
never a dropped row. A must have rank d.

Methods:
  exact  the John ellipsoid itself: Wolfe-Atwood (Frank-Wolfe with away steps) on the dual
         D-optimal design problem, rank-one updates, O(n d) per iteration, until max_i h_i
         <= 1 + xi (default 1e-9: log det Q within d ln(1 + xi) of the optimum, a certificate);
         rows that are the same constraint share their weight equally. n = 200, d = 6: about
         1 ms. --plot-out draws these iterations. It draws no random numbers, so it has no
         seed (the table says "none"; the JSON has no "seed" key).
  fast   Algorithm 1 of Gu et al. without noise: leverage-score sampling and an s x d
         Gaussian sketch (s = ceil(1/xi)), O(n d s) per iteration, many more iterations.
  dp     Algorithm 1 with truncated Gaussian noise w_i = wbar_i (1 + z_i), z in [-0.5, 0.5].
         The noise scale is --noise-scale, or derived from --epsilon/--delta/--eps0 by an
         idealised Gaussian-DP calibration on the local sensitivity. NO (epsilon, delta)
         guarantee is claimed: the result says guarantee "none (noise scale only)" and why
         (no global Lipschitz bound exists for eps0-close polytopes; see pkg/john doc).

Convergence: when the output misses max_i h_i(v) <= 1 + xi (too few iterations), the result is
still printed, a warning line goes to stderr and the exit status is 0; with --require-converged
the exit status is 1 instead. Invalid flags exit with status 2, failures (unreadable or
rank-deficient input, overflow) with 1.

Plots: --plot-out draws a figure and never changes the result: the result is the same, key for
key, with and without it (plot_seed, plot_seed_source, plot_warnings and plots are added).`

// Run executes `dpsim john` with args (without the command name).
func Run(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("john", synopsis, description, stderr)
	f := defineFlags(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.UsageError("unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	log, err := cli.Logger(stderr, *f.logLevel)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	m, plotXi, err := f.validate(set)
	if err != nil {
		return err
	}
	seed, plotOut := f.seed, f.plotOut
	seedSource := "" // exact without a plot: nothing random runs, no seed to draw
	if m != john.Exact || *plotOut != "" {
		*seed, seedSource = cli.ResolveSeed(*seed, set["seed"], 0) // no scenario: --seed, else crypto/rand
		if seedSource == cli.SeedFromCrypto {
			log.Info().Uint64("seed", *seed).Msg(cli.SeedDrawnNote)
		}
	}

	return f.execute(set, m, plotXi, seedSource, log, stdout, stderr)
}

// johnFlags holds the values of `dpsim john`'s flags.
type johnFlags struct {
	input, method, plotOut, logLevel        *string
	header, requireCnv, asJSON              *bool
	xi, epsilon, delta, eps0, noiseScale    *float64
	maxIter, sketch, sample, check, workers *int
	seed                                    *uint64
}

// defineFlags defines the flags of `dpsim john` on fs, with their help text.
func defineFlags(fs *flag.FlagSet) *johnFlags {
	return &johnFlags{
		input:      fs.String("input", "", "CSV file of the n x d matrix A, one row a_i per line (required)"),
		header:     fs.Bool("header", false, "the first line of --input names the columns (without it, a first line is a header only when every cell is non-numeric)"),
		method:     fs.String("method", string(john.Exact), "exact, fast or dp (see above)"),
		xi:         fs.Float64("xi", 0, fmt.Sprintf("accuracy target: stop/aim at max_i h_i(v) <= 1 + xi (default: %g for exact - the John ellipsoid to machine accuracy -, %g for fast and dp); xi in [%g, %g] for exact, [%g, %g] for fast and dp. The fast and dp curves of --plot-out aim at --xi (default %g), which must then lie in [%g, %g]", john.DefaultXiExact, john.DefaultXi, john.MinXiExact, john.MaxXi, john.MinXiSketched, john.MaxXi, john.DefaultXi, john.MinXiSketched, john.MaxXi)),
		maxIter:    fs.Int("max-iter", 0, "iterations T (0 = the method's default: exact's proven bound; for fast/dp ceil(8 ln(n) V/(2 xi^2)), V = 2/s (+1/12 for dp))"),
		sketch:     fs.Int("sketch-size", 0, fmt.Sprintf("fast/dp: rows s of the Gaussian sketch (0 = ceil(1/xi); at most %d)", john.MaxSketchSize)),
		sample:     fs.Int("sample-size", 0, "fast/dp: expected rows kept by leverage-score sampling (0 = ceil(4 d ln(d+1)/xi); >= n keeps all)"),
		check:      fs.Int("check-every", 0, "fast/dp: verify the averaged iterate exactly every K iterations and stop once it meets 1 + xi (0 = run all T iterations)"),
		epsilon:    fs.Float64("epsilon", 0, "dp: epsilon > 0 used to derive the noise scale when --noise-scale is absent (heuristic, no guarantee)"),
		delta:      fs.Float64("delta", 0, "dp: delta in (0, 1) used with --epsilon"),
		eps0:       fs.Float64("eps0", 0, "dp: neighbour radius: neighbouring polytopes differ in one row by at most eps0 in 2-norm; reports the local sensitivity bound"),
		noiseScale: fs.Float64("noise-scale", 0, "dp: sigma of the truncated Gaussian z ~ N(0, sigma^2) on [-0.5, 0.5] (overrides --epsilon/--delta)"),
		seed:       fs.Uint64("seed", 0, "random seed (sampling, sketch, noise); absent: drawn from crypto/rand and printed"),
		workers:    fs.Int("workers", 0, fmt.Sprintf("goroutines (0 = GOMAXPROCS; at most %d)", john.MaxWorkers)),
		requireCnv: fs.Bool("require-converged", false, "exit with status 1 (after printing the result) when max_i h_i(v) > 1 + xi; without it a non-converged result only warns on stderr and exits 0"),
		asJSON:     fs.Bool("json", false, "print one JSON object on stdout (weights, q, sum_weights, max_leverage, logdet_q, iterations, ...) instead of a table"),
		plotOut:    fs.String("plot-out", "", "directory: also write john_accuracy.png/.svg, max_i h_i - 1 against iterations (both log scale) for exact (Wolfe-Atwood to 1e-9, its own O(nd) iterations), fast and dp at epsilon 0.5, 1, 2 and --epsilon if given (delta and eps0 from the flags, default 1e-6 and 1e-3; T = --max-iter or the fast default iterations of fast and of each dp curve; seeded by --seed). The printed result does not depend on it"),
		logLevel:   fs.String("log-level", "warn", "stderr log level: trace, debug, info, warn, error"),
	}
}

// validate checks each flag on its own and the flags against each other (set holds the flags
// given on the command line), without reading the input. It returns the parsed method and the
// xi of the plot's fast and dp curves (see resolveXi).
func (f *johnFlags) validate(set map[string]bool) (john.Method, float64, error) {
	if *f.input == "" {
		return "", 0, cli.UsageError("--input is required")
	}
	m, err := john.ParseMethod(*f.method)
	if err != nil {
		return "", 0, cli.UsageError("--method: %v", err)
	}
	plotXi, err := resolveXi(m, f.xi, set["xi"], *f.plotOut != "")
	if err != nil {
		return "", 0, err
	}
	if err := f.checkRanges(set); err != nil {
		return "", 0, err
	}
	if err := f.checkDP(m, set); err != nil {
		return "", 0, err
	}
	return m, plotXi, nil
}

// checkRanges checks the range of each numeric flag on its own: counts >= 0 and below their
// caps, noise parameters finite and >= 0, --delta (when given) in (0, 1).
func (f *johnFlags) checkRanges(set map[string]bool) error {
	for _, p := range []struct {
		name string
		v    int
	}{{"max-iter", *f.maxIter}, {"sketch-size", *f.sketch}, {"sample-size", *f.sample}, {"check-every", *f.check}, {"workers", *f.workers}} {
		if p.v < 0 {
			return cli.UsageError("--%s must be >= 0, got %d", p.name, p.v)
		}
	}
	if *f.sketch > john.MaxSketchSize {
		return cli.UsageError("--sketch-size %d: at most %d", *f.sketch, john.MaxSketchSize)
	}
	if *f.workers > john.MaxWorkers {
		return cli.UsageError("--workers %d: at most %d", *f.workers, john.MaxWorkers)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"epsilon", *f.epsilon}, {"delta", *f.delta}, {"eps0", *f.eps0}, {"noise-scale", *f.noiseScale}} {
		if p.v < 0 || math.IsNaN(p.v) || math.IsInf(p.v, 0) {
			return cli.UsageError("--%s must be finite and >= 0, got %g", p.name, p.v)
		}
	}
	if set["delta"] && !(*f.delta > 0 && *f.delta < 1) {
		return cli.UsageError("--delta must be in (0, 1), got %g", *f.delta)
	}
	return nil
}

// checkDP checks the noise flags against --method and --plot-out: they apply to dp (or to the
// plot's dp curves), and dp needs a positive --noise-scale or positive --epsilon and --eps0
// (with --delta) to derive it.
func (f *johnFlags) checkDP(m john.Method, set map[string]bool) error {
	if m != john.DP {
		for _, n := range []string{"epsilon", "delta", "eps0", "noise-scale"} {
			if set[n] && *f.plotOut == "" {
				return cli.UsageError("--%s applies to --method dp (or to the dp curves of --plot-out)", n)
			}
		}
	} else if !set["noise-scale"] && !(set["epsilon"] && set["delta"] && set["eps0"]) {
		return cli.UsageError("--method dp needs --noise-scale, or --epsilon, --delta and --eps0 to derive it")
	}
	if m == john.DP && set["noise-scale"] && *f.noiseScale == 0 {
		return cli.UsageError("--noise-scale 0: must be > 0 (omit it to derive the scale from --epsilon, --delta and --eps0)")
	}
	if m == john.DP && !set["noise-scale"] {
		for _, p := range []struct {
			name string
			v    float64
		}{{"epsilon", *f.epsilon}, {"eps0", *f.eps0}} {
			if !(p.v > 0) {
				return cli.UsageError("--%s %g: must be > 0 to derive the noise scale", p.name, p.v)
			}
		}
	}
	if *f.plotOut != "" && set["eps0"] && !(*f.eps0 > 0) {
		return cli.UsageError("--eps0 %g: must be > 0 for the dp curves of --plot-out", *f.eps0)
	}
	return nil
}

// execute runs everything after the flags are valid and the seed is resolved: it reads the input
// and solves, logs the library's warnings, adds the --plot-out figure, prints the result (table or
// JSON) and handles a non-converged result (warning, or failure with --require-converged).
func (f *johnFlags) execute(set map[string]bool, m john.Method, plotXi float64, seedSource string, log zerolog.Logger, stdout, stderr io.Writer) error {
	a, res, err := f.solve(m, log)
	if err != nil {
		return err
	}
	n, d := a.Dims()
	notConverged := res.ConvergenceWarning()
	for _, w := range res.Warnings {
		if w != notConverged {
			log.Warn().Msg(w)
		}
	}
	resultSeedSource := seedSource
	if m == john.Exact {
		resultSeedSource = "" // the result drew nothing; a drawn seed belongs to the plot only
	}
	out := newOutput(res, *f.input, n, d, resultSeedSource)
	if m == john.DP {
		out.Epsilon, out.Delta, out.Eps0 = optional(*f.epsilon), optional(*f.delta), optional(*f.eps0)
	}
	if *f.plotOut != "" {
		if err := f.addPlot(out, a, set, plotXi, seedSource, log); err != nil {
			return err
		}
	}
	if *f.asJSON {
		err = cli.WriteJSON(stdout, out)
	} else {
		err = writeTable(stdout, out, log)
	}
	if err != nil || notConverged == "" {
		return err
	}
	return f.notConverged(m, notConverged, stderr)
}

// solve reads the matrix A of --input and computes its John ellipsoid with the method's
// configuration from the flags (the noise flags for dp only).
func (f *johnFlags) solve(m john.Method, log zerolog.Logger) (*mat.Dense, *john.Result, error) {
	a, err := ReadMatrix(*f.input, *f.header)
	if err != nil {
		return nil, nil, err
	}
	n, d := a.Dims()
	cfg := john.Config{
		Method: m, Xi: *f.xi, MaxIter: *f.maxIter, SketchSize: *f.sketch, SampleSize: *f.sample,
		CheckEvery: *f.check, Seed: *f.seed, Workers: *f.workers,
	}
	if m == john.DP {
		cfg.NoiseScale, cfg.Epsilon, cfg.Delta, cfg.Eps0 = *f.noiseScale, *f.epsilon, *f.delta, *f.eps0
	}
	log.Debug().Str("input", *f.input).Int("n", n).Int("d", d).Str("method", string(m)).Msg("solving")
	res, err := john.Solve(a, cfg)
	if err != nil {
		return nil, nil, inputError(*f.input, err)
	}
	return a, res, nil
}

// addPlot draws the --plot-out accuracy figure (exact, fast and dp at epsilon 0.5, 1, 2 and
// --epsilon; delta and eps0 from the flags, default 1e-6 and 1e-3), logs its notes and records
// its files, notes and seed in out. It never changes the result's other keys.
func (f *johnFlags) addPlot(out *output, a *mat.Dense, set map[string]bool, plotXi float64, seedSource string, log zerolog.Logger) error {
	pd, pe := 1e-6, 1e-3
	if set["delta"] {
		pd = *f.delta
	}
	if set["eps0"] {
		pe = *f.eps0
	}
	eps := []float64{0.5, 1, 2}
	if set["epsilon"] && !slices.Contains(eps, *f.epsilon) {
		eps = append(eps, *f.epsilon)
		slices.Sort(eps)
	}
	files, notes, err := john.Plot(a, john.PlotConfig{
		Dir: *f.plotOut, Xi: plotXi, MaxIter: *f.maxIter, Seed: *f.seed, Workers: *f.workers,
		Delta: pd, Eps0: pe, Epsilons: eps,
	})
	if err != nil {
		return inputError(*f.input, fmt.Errorf("plot: %w", err))
	}
	for _, n := range notes {
		log.Warn().Msg(n)
	}
	ps := *f.seed
	out.Plots, out.PlotWarnings, out.PlotSeed, out.PlotSeedSource = files, notes, &ps, seedSource
	return nil
}

// notConverged reports a result that missed max_i h_i(v) <= 1 + xi (warning is the library's
// convergence warning): an error with --require-converged (exit status 1), otherwise a warning
// line on stderr and nil (exit status 0).
func (f *johnFlags) notConverged(m john.Method, warning string, stderr io.Writer) error {
	hint := "raise --max-iter"
	if m != john.Exact {
		hint += ", or use --check-every to stop once verified"
	}
	msg := fmt.Sprintf("%s: %s (%s)", *f.input, strings.Replace(warning, "not converged", "NOT converged", 1), hint)
	if *f.requireCnv {
		return errors.New(msg + "; --require-converged is set")
	}
	fmt.Fprintf(stderr, "dpsim john: warning: %s\n", msg)
	return nil
}

// resolveXi validates --xi and sets the result's default (DefaultXiExact for exact, DefaultXi for fast
// and dp), the same with and without --plot-out: plotting never changes the answer. It returns the xi
// of the plot's fast and dp curves: --xi, or DefaultXi when --xi is absent; with a plot it must lie in
// the sketched methods' range.
func resolveXi(m john.Method, xi *float64, given, plot bool) (plotXi float64, err error) {
	if !given {
		*xi = john.DefaultXi
		if m == john.Exact {
			*xi = john.DefaultXiExact
		}
	}
	if lo := john.MinXiFor(m); !(*xi >= lo && *xi <= john.MaxXi) {
		return 0, cli.UsageError("--xi %g: must lie in [%g, %g] for --method %s", *xi, lo, john.MaxXi, m)
	}
	plotXi = john.DefaultXi
	if given {
		plotXi = *xi
	}
	if plot && !(plotXi >= john.MinXiSketched && plotXi <= john.MaxXi) {
		return 0, cli.UsageError("--xi %g with --plot-out: the plot's fast and dp curves aim at --xi, which must then lie in [%g, %g]; omit --xi (the result keeps its default %g, the curves aim at %g) or drop --plot-out", *xi, john.MinXiSketched, john.MaxXi, john.DefaultXiExact, john.DefaultXi)
	}
	return plotXi, nil
}

// libError names the input file and drops pkg/john's "john: " prefix (dpsim prints "dpsim john: "
// already), keeping the original error for errors.Is/As.
type libError struct {
	msg string
	err error
}

func (e *libError) Error() string { return e.msg }
func (e *libError) Unwrap() error { return e.err }

func inputError(input string, err error) error {
	return &libError{msg: input + ": " + stripJohn(err.Error()), err: err}
}

// stripJohn removes every "john: " that pkg/john put after a ": " separator or at the start.
func stripJohn(s string) string {
	s = strings.TrimPrefix(s, "john: ")
	return strings.ReplaceAll(s, ": john: ", ": ")
}

func optional(x float64) *float64 {
	if x == 0 {
		return nil
	}
	return &x
}

// output is the JSON object (and the source of the table).
type output struct {
	Method      string       `json:"method"`
	Input       string       `json:"input"`
	N           int          `json:"n"`
	D           int          `json:"d"`
	Seed        *uint64      `json:"seed,omitempty"` // fast and dp only: exact draws nothing
	SeedSource  string       `json:"seed_source,omitempty"`
	Xi          float64      `json:"xi"`
	Iterations  int          `json:"iterations"`
	Converged   bool         `json:"converged"`
	MaxLeverage float64      `json:"max_leverage"`
	SumWeights  float64      `json:"sum_weights"`
	LogDetQ     float64      `json:"logdet_q"`
	TimeMS      float64      `json:"time_ms"`
	Output      string       `json:"output"`
	Weights     []float64    `json:"weights"`
	Q           [][]float64  `json:"q"`
	SketchSize  int          `json:"sketch_size,omitempty"`
	SampleSize  int          `json:"sample_size,omitempty"`
	MeanSampled float64      `json:"mean_sampled_rows,omitempty"`
	Refreshes   *int         `json:"leverage_refreshes,omitempty"`
	NoiseScale  *float64     `json:"noise_scale,omitempty"`
	NoiseSource string       `json:"noise_source,omitempty"`
	Guarantee   string       `json:"guarantee,omitempty"`
	Note        string       `json:"guarantee_note,omitempty"`
	Epsilon     *float64     `json:"epsilon,omitempty"`
	Delta       *float64     `json:"delta,omitempty"`
	Eps0        *float64     `json:"eps0,omitempty"`
	Sensitivity *sensitivity `json:"local_sensitivity,omitempty"`
	Warnings    []string     `json:"warnings,omitempty"`
	// --plot-out only: none of these is part of the result.
	Plots          []string `json:"plots,omitempty"`
	PlotSeed       *uint64  `json:"plot_seed,omitempty"` // seeds the plot's fast and dp curves
	PlotSeedSource string   `json:"plot_seed_source,omitempty"`
	PlotWarnings   []string `json:"plot_warnings,omitempty"`
}

type sensitivity struct {
	Finite     bool     `json:"finite"`
	Reason     string   `json:"reason,omitempty"`
	L2         *float64 `json:"l2,omitempty"`
	MaxAbs     *float64 `json:"max_abs,omitempty"`
	ZShift     *float64 `json:"z_shift,omitempty"`
	Row        int      `json:"row"`
	LambdaMinQ float64  `json:"lambda_min_q"`
	Note       string   `json:"note"`
}

func newOutput(res *john.Result, input string, n, d int, seedSource string) *output {
	o := &output{
		Method: string(res.Method), Input: input, N: n, D: d, SeedSource: seedSource,
		Xi: res.Xi, Iterations: res.Iterations, Converged: res.Converged,
		MaxLeverage: res.MaxLeverage, SumWeights: res.SumWeights, LogDetQ: res.LogDetQ,
		TimeMS: float64(res.Elapsed.Microseconds()) / 1000, Output: res.Output, Weights: res.Weights,
		Warnings: res.Warnings,
	}
	o.Q = make([][]float64, d)
	for i := range o.Q {
		o.Q[i] = make([]float64, d)
		for j := range o.Q[i] {
			o.Q[i][j] = res.Q.At(i, j)
		}
	}
	if res.Method != john.Exact {
		o.SketchSize, o.SampleSize, o.MeanSampled = res.SketchSize, res.SampleSize, res.MeanSampled
		r := res.Refreshes
		o.Refreshes = &r
	}
	if res.Method == john.DP {
		s := res.NoiseScale
		o.NoiseScale, o.NoiseSource, o.Guarantee, o.Note = &s, res.NoiseSource, res.Guarantee, res.GuaranteeNote
		if ls := res.Sensitivity; ls != nil {
			o.Sensitivity = &sensitivity{
				Finite: ls.Finite, Reason: ls.Reason, Row: ls.Row + 1, LambdaMinQ: ls.LambdaMinQ,
				Note: "local bound at w_1 = d/n for this A (computed from the data, not private): sup over eps0-neighbours of the relative change of the exact update w_i h_i; row is 1-based",
			}
			if ls.Finite {
				l2, ma, zs := ls.L2, ls.MaxAbs, ls.ZShift
				o.Sensitivity.L2, o.Sensitivity.MaxAbs, o.Sensitivity.ZShift = &l2, &ma, &zs
			}
		}
	}
	if seedSource != "" {
		sd := res.Seed
		o.Seed = &sd
	}
	return o
}

func writeTable(w io.Writer, o *output, log zerolog.Logger) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("method", "%s", o.Method)
	row("input", "%s (n = %d, d = %d)", o.Input, o.N, o.D)
	if o.Seed != nil {
		row("seed", "%d (%s)", *o.Seed, o.SeedSource)
	} else {
		row("seed", "none (the %s method draws no random numbers)", o.Method)
	}
	if o.PlotSeed != nil {
		row("plot_seed", "%d (%s; the fast and dp curves of the plot)", *o.PlotSeed, o.PlotSeedSource)
	}
	status := "converged"
	if !o.Converged {
		status = "NOT converged"
	}
	row("max_leverage", "%.6f (target 1 + xi = %g, %s)", o.MaxLeverage, 1+o.Xi, status)
	row("sum_weights", "%.10g", o.SumWeights)
	row("logdet_q", "%.6f", o.LogDetQ)
	row("iterations", "%d", o.Iterations)
	row("time_ms", "%.1f", o.TimeMS)
	row("output", "%s", o.Output)
	if o.SketchSize > 0 {
		row("sketch/sample", "s = %d, N = %d (mean rows kept %.0f)", o.SketchSize, o.SampleSize, o.MeanSampled)
	}
	if o.NoiseScale != nil {
		row("noise_scale", "%.4g (%s)", *o.NoiseScale, o.NoiseSource)
		if s := o.Sensitivity; s != nil {
			if s.Finite {
				row("local_sensitivity", "||r||_2 <= %.3g, z shift <= %.3g (row %d; local, not private)", *s.L2, *s.ZShift, s.Row)
			} else {
				row("local_sensitivity", "unbounded: %s", s.Reason)
			}
		}
		row("guarantee", "%s", o.Guarantee)
	}
	support, top := summarize(o.Weights, o.D, o.N)
	row("support", "%d rows with v_i > 0.01 d/n", support)
	row("largest weights", "%s", top)
	for _, p := range o.Plots {
		row("plot", "%s", p)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if o.Note != "" {
		fmt.Fprintf(w, "\nguarantee note: %s\n", o.Note)
	}
	if len(o.Weights) > 0 {
		fmt.Fprintln(w, "\n(all weights and Q: --json)")
	}
	return nil
}

// summarize counts the rows with v_i > 0.01 d/n (the averaged output gives every row at
// least its share w_1/T = d/(nT) of the start, so an absolute threshold would count all) and
// lists the five largest weights (1-based rows).
func summarize(v []float64, d, n int) (int, string) {
	idx := make([]int, 0, len(v))
	thr := 0.01 * float64(d) / float64(n)
	for i, x := range v {
		if x > thr {
			idx = append(idx, i)
		}
	}
	support := len(idx)
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] > v[idx[b]] })
	var parts []string
	for _, i := range idx[:min(5, len(idx))] {
		parts = append(parts, fmt.Sprintf("row %d: %.4g", i+1, v[i]))
	}
	return support, strings.Join(parts, ", ")
}
