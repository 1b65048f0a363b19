package vecsumcmd

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/vecsum"
)

const topUsage = `Usage: dpsim vecsum <plan|run|figure> [flags]

Differentially private sums of vectors (Poulsen, docs/math.md section 7): the Gaussian mechanism, the
elliptical Gaussian mechanism, and Algorithm 3 for normally distributed data (centre, scale by
Lemma 4.1, clip, per-dimension noise).

Subcommands:
  plan    the plan of Algorithm 3 without data: scaling, clip radii with and without scaling,
          per-dimension noise, expected errors and their ratio (gain), expected clipping error
  run     the private sum of the rows of a CSV file with one of the three mechanisms
  figure  the thesis figure: gain against the Zipf skew alpha (CSV table, PNG and SVG plot)

Run 'dpsim vecsum <subcommand> -h' for the flags of each.
`

// Run is the entry point of 'dpsim vecsum'.
func Run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage)
		return cli.UsageError("vecsum: missing subcommand (plan, run or figure)")
	}
	switch args[0] {
	case "plan":
		return runPlan(args[1:], stdout, stderr)
	case "run":
		return runRun(args[1:], stdout, stderr)
	case "figure":
		return runFigure(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, topUsage)
		return flag.ErrHelp
	}
	fmt.Fprint(stderr, topUsage)
	return cli.UsageError("vecsum: unknown subcommand %q (allowed plan, run, figure)", args[0])
}

// optFloat is a float64 that encodes a non-finite value (NaN, +-Inf, which JSON cannot hold) as null.
// Every key that can be null this way is explained next to it: plan's bound_reason, run's non_finite.
type optFloat float64

// optFloats converts v to []optFloat.
func optFloats(v []float64) []optFloat {
	if v == nil {
		return nil
	}
	out := make([]optFloat, len(v))
	for i, x := range v {
		out[i] = optFloat(x)
	}
	return out
}

func (f optFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return []byte(strconv.FormatFloat(float64(f), 'g', -1, 64)), nil
}

type clipErrorJSON struct {
	Expected       float64 `json:"expected"`
	StdErr         float64 `json:"stderr"`
	ClipProb       float64 `json:"clip_prob_estimate"`
	ClipProbStdErr float64 `json:"clip_prob_stderr"`
	Samples        int     `json:"samples"`
}

type planJSON struct {
	Epsilon               float64   `json:"epsilon"`
	Delta                 float64   `json:"delta"`
	N                     int       `json:"n"`
	D                     int       `json:"d"`
	ClipProb              float64   `json:"clip_prob"`
	SigmaOpt              float64   `json:"sigma_opt"`
	Sigmas                []float64 `json:"sigmas"`
	Scaling               []float64 `json:"scaling"`
	ScaledSigmas          []float64 `json:"scaled_sigmas"`
	ClipRadiusScaled      float64   `json:"clip_radius_scaled"`
	ClipRadiusUnscaled    float64   `json:"clip_radius_unscaled"`
	NoiseSigmas           []float64 `json:"noise_sigmas"`
	NoiseSigmaUnscaled    float64   `json:"noise_sigma_unscaled"`
	ExpectedErrorScaled   float64   `json:"expected_error_scaled"`
	ExpectedErrorUnscaled float64   `json:"expected_error_unscaled"`
	Gain                  float64   `json:"gain"`
	// Theorem 4's bounds: null when its condition fails, and then bound_reason says why.
	BoundClipRadius optFloat `json:"bound_clip_radius_scaled"`
	BoundError      optFloat `json:"bound_expected_error_scaled"`
	BoundReason     string   `json:"bound_reason,omitempty"`
	// Monte Carlo estimates: present only with --clip-samples > 0.
	ClipErrorScaled    *clipErrorJSON `json:"clip_error_scaled,omitempty"`
	ClipErrorUnscaled  *clipErrorJSON `json:"clip_error_unscaled,omitempty"`
	TotalErrorScaled   *float64       `json:"total_error_scaled,omitempty"`
	TotalErrorUnscaled *float64       `json:"total_error_unscaled,omitempty"`
}

func toClipJSON(c vecsum.ClipError) *clipErrorJSON {
	return &clipErrorJSON{Expected: c.Expected, StdErr: c.StdErr, ClipProb: c.ClipProb, ClipProbStdErr: c.ClipProbStdErr, Samples: c.Samples}
}

func runPlan(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("dpsim vecsum plan",
		"dpsim vecsum plan --sigmas LIST|FILE --n N --epsilon E --delta D [--clip-prob P] [--json]",
		`Plans Algorithm 3 for n rows of normal data with the given per-dimension standard deviations, without
any data: the scaling b_j = 1/sqrt(sigma_j sum sigma) (Lemma 4.1), the clip radius C in the scaled space and
C_n without scaling (same clipping probability, generalized chi-square quantiles), the per-dimension noise
2 C sigma_opt / b_j, the expected noise errors with and without scaling, their ratio (gain), Theorem 4's
bound, and a Monte Carlo estimate of the extra error clipping itself causes (which the paper ignores).
Theorem 4 (Lemma 4.2) holds only when ln(1/p) <= sum sigma^2 / (18 sigma_max^2); otherwise the --json
keys bound_clip_radius_scaled and bound_expected_error_scaled are null and bound_reason gives the two
numbers. clip_error_* and total_error_* are present only with --clip-samples > 0.`, stderr)
	sigmas := fs.String("sigmas", "", "per-dimension standard deviations of the data: a comma-separated `LIST` or a FILE of numbers (required)")
	n := fs.Int("n", 0, "number of rows `N` (public; sets the default clipping probability 1/N) (required)")
	eps := fs.Float64("epsilon", 0, "privacy parameter `E` > 0 (required)")
	delta := fs.Float64("delta", 0, "privacy parameter `D` in (0, 1) (required)")
	clipProb := fs.Float64("clip-prob", 0, "probability `P` that one row is clipped (default 1/N)")
	samples := fs.Int("clip-samples", 20000, "importance samples `S` for the clipping-error estimate (0 skips it)")
	seed := fs.Uint64("seed", 1, "seed `S` of the clipping-error Monte Carlo (not a privacy parameter)")
	asJSON := fs.Bool("json", false, "print one JSON object to stdout instead of a table")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.UsageError("plan: unexpected arguments %q", fs.Args())
	}
	s, err := parseListOrFile("--sigmas", *sigmas)
	if err != nil {
		return err
	}
	if *n < 1 {
		return cli.UsageError("--n %d: the number of rows must be at least 1", *n)
	}
	if *samples < 0 {
		return cli.UsageError("--clip-samples %d: must be >= 0", *samples)
	}
	p, err := vecsum.PlanNormal(s, *n, *eps, *delta, *clipProb)
	if err != nil {
		return wrapInput(err)
	}
	out := planJSON{Epsilon: p.Epsilon, Delta: p.Delta, N: p.N, D: len(s), ClipProb: p.ClipProb, SigmaOpt: p.SigmaOpt,
		Sigmas: p.Sigmas, Scaling: p.Scaling, ScaledSigmas: p.ScaledSigmas, ClipRadiusScaled: p.ClipRadius,
		ClipRadiusUnscaled: p.ClipRadiusUnscaled, NoiseSigmas: p.NoiseSigmas, NoiseSigmaUnscaled: p.NoiseSigmaUnscaled,
		ExpectedErrorScaled: p.ExpectedError, ExpectedErrorUnscaled: p.ExpectedErrorUnscaled, Gain: p.Gain,
		BoundClipRadius: optFloat(p.BoundClipRadius), BoundError: optFloat(p.BoundError), BoundReason: p.BoundReason}
	if *samples > 0 {
		cs, err := vecsum.EstimateClipError(s, p.Scaling, p.ClipRadius, p.N, *samples, rng.New(*seed, rng.Label("vecsum-plan"), 1))
		if err != nil {
			return err
		}
		cu, err := vecsum.EstimateClipError(s, nil, p.ClipRadiusUnscaled, p.N, *samples, rng.New(*seed, rng.Label("vecsum-plan"), 2))
		if err != nil {
			return err
		}
		out.ClipErrorScaled, out.ClipErrorUnscaled = toClipJSON(cs), toClipJSON(cu)
		ts, tu := p.ExpectedError+cs.Expected, p.ExpectedErrorUnscaled+cu.Expected
		out.TotalErrorScaled, out.TotalErrorUnscaled = &ts, &tu
	}
	if *asJSON {
		return cli.WriteJSON(stdout, out)
	}
	fmt.Fprintf(stdout, "d %d, n %d, clip probability %.3g, epsilon %g, delta %g, sigma_opt %.6g\n\n",
		out.D, out.N, out.ClipProb, out.Epsilon, out.Delta, out.SigmaOpt)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\tscaled (Alg. 3)\tunscaled\n")
	fmt.Fprintf(tw, "clip radius\t%.6g\t%.6g\n", p.ClipRadius, p.ClipRadiusUnscaled)
	fmt.Fprintf(tw, "expected noise error\t%.6g\t%.6g\n", p.ExpectedError, p.ExpectedErrorUnscaled)
	if out.ClipErrorScaled != nil {
		fmt.Fprintf(tw, "expected clipping error\t%.4g (+-%.2g)\t%.4g (+-%.2g)\n", out.ClipErrorScaled.Expected,
			out.ClipErrorScaled.StdErr, out.ClipErrorUnscaled.Expected, out.ClipErrorUnscaled.StdErr)
	}
	fmt.Fprintf(tw, "gain (noise error ratio)\t%.6g\n", p.Gain)
	tw.Flush()
	if p.BoundReason == "" {
		fmt.Fprintf(stdout, "Theorem 4 bound (scaled): clip radius <= %.6g, expected noise error <= %.6g\n", p.BoundClipRadius, p.BoundError)
	} else {
		fmt.Fprintf(stdout, "Theorem 4 bound: not applicable. %s\n", p.BoundReason)
	}
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "dim\tsigma\tscaling b\tnoise sigma (scaled)\tnoise sigma (unscaled)")
	for j := range s {
		fmt.Fprintf(tw, "%d\t%.6g\t%.6g\t%.6g\t%.6g\n", j+1, s[j], p.Scaling[j], p.NoiseSigmas[j], p.NoiseSigmaUnscaled)
	}
	return tw.Flush()
}

type runJSON struct {
	Method        string     `json:"method"`
	Input         string     `json:"input"`
	N             int        `json:"n"`
	D             int        `json:"d"`
	Epsilon       float64    `json:"epsilon"`
	Delta         float64    `json:"delta"`
	Seed          uint64     `json:"seed"`
	SeedSource    string     `json:"seed_source"`
	Sum           []optFloat `json:"sum"`
	ExpectedError optFloat   `json:"expected_error"`
	NoiseSigmas   []optFloat `json:"noise_sigmas"`
	SigmaOpt      float64    `json:"sigma_opt"`
	// box mechanisms
	Lower   []float64  `json:"lower,omitempty"`
	Upper   []float64  `json:"upper,omitempty"`
	Scaling []optFloat `json:"scaling,omitempty"`
	// normal
	ClipRadius      optFloat   `json:"clip_radius,omitempty"`
	ClipProb        float64    `json:"clip_prob,omitempty"`
	Mean            []optFloat `json:"mean,omitempty"`
	MeanPrivate     bool       `json:"mean_private"`
	MeanEpsilon     float64    `json:"mean_epsilon,omitempty"`
	MeanDelta       float64    `json:"mean_delta,omitempty"`
	SumEpsilon      float64    `json:"sum_epsilon"`
	SumDelta        float64    `json:"sum_delta"`
	EffectiveSigmas []optFloat `json:"effective_sigmas,omitempty"`
	// non-private diagnostics
	ClippedRows    int      `json:"clipped_rows"`
	ClipError      optFloat `json:"clip_error"`
	DiagnosticNote string   `json:"diagnostics_note"`
	// NonFinite maps each key (with [j] for an element of a list) whose value is not a finite float64,
	// and is therefore written as null, to that value and the reason; absent when every value is finite.
	NonFinite map[string]string `json:"non_finite,omitempty"`
}

// noteNonFinite fills out.NonFinite. Values of this output are computed in float64; one that leaves
// its range (|x| > 1.8e308, for example the squared clipping error of an outlier near 1e160) is +-Inf,
// and arithmetic on an infinity can give NaN.
func noteNonFinite(out *runJSON) {
	note := func(key string, x optFloat) {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			if out.NonFinite == nil {
				out.NonFinite = map[string]string{}
			}
			out.NonFinite[key] = nonFiniteReason(f)
		}
	}
	for key, x := range map[string]optFloat{"expected_error": out.ExpectedError, "clip_radius": out.ClipRadius, "clip_error": out.ClipError} {
		note(key, x)
	}
	for key, list := range map[string][]optFloat{"sum": out.Sum, "noise_sigmas": out.NoiseSigmas, "scaling": out.Scaling,
		"mean": out.Mean, "effective_sigmas": out.EffectiveSigmas} {
		for j, x := range list {
			note(fmt.Sprintf("%s[%d]", key, j), x)
		}
	}
}

// nonFiniteReason says what a non-finite value is and why it arises.
func nonFiniteReason(f float64) string {
	if math.IsNaN(f) {
		return "NaN: undefined, from arithmetic on a value that overflowed float64: the input or the flags hold values too large for this quantity"
	}
	return fmt.Sprintf("%+v: overflows float64 (|x| above 1.8e308): the input or the flags hold values too large for this quantity", f)
}

const diagNote = "clipped_rows and clip_error describe the input data and are NOT differentially private"

// runSynopsis and runDescription are the help of `dpsim vecsum run`.
const (
	runSynopsis    = "dpsim vecsum run --input FILE.csv [--header] --epsilon E --delta D --method gaussian|elliptical|normal [--bounds LIST] [--sigmas LIST|FILE] [--mean LIST] [--seed S] [--json]"
	runDescription = `Releases the (epsilon, delta)-differentially private sum of the rows of a CSV file (one row per
individual; neighbouring files differ in one row, the number of rows is public).
  gaussian    Algorithm 1: rows clamped into the --bounds box, noise ||Delta||_2 sigma_opt per column
  elliptical  Algorithm 2: same box, noise sigma_opt Delta_j / b_j with b_j = sqrt(Delta_j / sum Delta)
  normal      Algorithm 3: normal data with known --sigmas, centred at --mean (or a private mean estimate
              that spends --mean-fraction of the budget), scaled by Lemma 4.1, clipped to radius C with
              clipping probability --clip-prob, noise 2 C sigma_opt / b_j per column
The first CSV row is a header (column names) with --header, or when every cell of it is non-numeric; a
first row mixing numbers and words is an error, as is any non-number in a data row (line and column are
named). '#' lines are comments. Besides the private sum the command prints its expected squared error
and, as non-private diagnostics, how many rows were clipped/clamped and the squared error that clipping
caused. With --json a value that is not a finite float64 (for example the squared clipping error of an
outlier near 1e160, which overflows) is written as null, and "non_finite" maps its key to the value
("+Inf", "-Inf" or "NaN") and the reason; a private sum that is not finite is no release and fails.
Exit status: 0 ok, 1 a data problem (unreadable or malformed file, too few rows for a private mean, a
sum that overflows), 2 a bad command line.`
)

// runRun executes `dpsim vecsum run`: it parses and checks the flags, reads the CSV file, releases
// the private sum with the chosen mechanism (boxRun or normalRun) and prints it.
func runRun(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("dpsim vecsum run", runSynopsis, runDescription, stderr)
	input := fs.String("input", "", "CSV `FILE` of numeric rows (required)")
	header := fs.Bool("header", false, "the first row of --input names the columns (without it, a first row is a header only when every cell is non-numeric)")
	eps := fs.Float64("epsilon", 0, "privacy parameter `E` > 0 (required)")
	delta := fs.Float64("delta", 0, "privacy parameter `D` in (0, 1) (required)")
	method := fs.String("method", "", "mechanism `M`: gaussian, elliptical or normal (required)")
	bounds := fs.String("bounds", "", "gaussian/elliptical: per-column bounds `LIST` of lo:hi (or B for -B:B); one item applies to all columns")
	sigmas := fs.String("sigmas", "", "normal: per-column standard deviations, a comma-separated `LIST` or a FILE of numbers")
	mean := fs.String("mean", "", "normal: centre `LIST` (public mean estimate); if absent a private mean estimate is used")
	meanFrac := fs.Float64("mean-fraction", 0.25, "normal without --mean: fraction `F` of epsilon and of delta spent on the private mean (basic composition)")
	clipProb := fs.Float64("clip-prob", 0, "normal: probability `P` that one row is clipped (default 1/n)")
	seed := fs.String("seed", "", "noise seed `S` (uint64); if absent a seed is drawn from crypto/rand and printed")
	asJSON := fs.Bool("json", false, "print one JSON object to stdout instead of a table")
	logLevel := fs.String("log-level", "warn", "log `LEVEL` on stderr: trace, debug, info, warn, error")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.UsageError("run: unexpected arguments %q", fs.Args())
	}
	log, err := cli.Logger(stderr, *logLevel)
	if err != nil {
		return err
	}
	if *input == "" {
		return cli.UsageError("--input is required")
	}
	m, err := vecsum.ParseMechanism(*method)
	if err != nil {
		return cli.UsageError("--method: %v", err)
	}
	flagSeed, seedSet, err := cli.ParseSeed(*seed)
	if err != nil {
		return err
	}
	sd, src := cli.ResolveSeed(flagSeed, seedSet, 0) // no scenario: --seed, else crypto/rand
	log.Info().Uint64("seed", sd).Str("source", src).Msg("noise seed")
	if err := checkRunFlags(m, *eps, *delta, *sigmas, *mean, *bounds, *meanFrac, *clipProb); err != nil {
		return err
	}
	ds, err := readCSV(*input, *header)
	if err != nil {
		return err
	}
	log.Info().Int("rows", ds.n).Int("columns", ds.d).Msg("read input")
	r := rng.New(sd, rng.Label("vecsum-run"))
	out := runJSON{Method: string(m), Input: *input, N: ds.n, D: ds.d, Epsilon: *eps, Delta: *delta, Seed: sd,
		SeedSource: src, DiagnosticNote: diagNote, SumEpsilon: *eps, SumDelta: *delta}
	switch m {
	case vecsum.MethodGaussian, vecsum.MethodElliptical:
		if err := boxRun(&out, m, ds, *bounds, r); err != nil {
			return err
		}
	case vecsum.MethodNormal:
		s, err := parseListOrFile("--sigmas", *sigmas)
		if err != nil {
			return err
		}
		if len(s) != ds.d {
			return cli.UsageError("--sigmas: %d values for %d data columns", len(s), ds.d)
		}
		if err := normalRun(&out, ds, s, *mean, *meanFrac, *clipProb, r, log); err != nil {
			return err
		}
	}
	noteNonFinite(&out)
	if err := checkReleasedSum(out); err != nil {
		return fmt.Errorf("%s: %w", *input, err)
	}
	if *asJSON {
		return cli.WriteJSON(stdout, out)
	}
	return printRun(stdout, out, ds)
}

// checkReleasedSum fails when the private sum itself is not finite: such a release is no answer.
// Non-finite diagnostics (clip_error) do not fail the run; they are null with a reason in non_finite.
func checkReleasedSum(out runJSON) error {
	for j, x := range out.Sum {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("no release: the private sum of column %d is %s", j+1, nonFiniteReason(f))
		}
	}
	return nil
}

// checkRunFlags refuses bad command lines (exit 2) before the data are read, so that every error
// after reading is a data problem (exit 1): the budget, the flags of the other methods, the private
// mean's share and the clipping probability.
func checkRunFlags(m vecsum.Mechanism, eps, delta float64, sigmas, mean, bounds string, frac, clipProb float64) error {
	if _, err := vecsum.SigmaOpt(eps, delta); err != nil {
		return wrapInput(err)
	}
	if m != vecsum.MethodNormal {
		if sigmas != "" || mean != "" {
			return cli.UsageError("--sigmas and --mean apply to the normal method only")
		}
		return nil
	}
	if bounds != "" {
		return cli.UsageError("--bounds applies to the gaussian and elliptical methods only")
	}
	if mean == "" && !(frac > 0 && frac < 1) {
		return cli.UsageError("--mean-fraction %v: must lie in (0, 1)", frac)
	}
	if !(clipProb >= 0 && clipProb < 1) {
		return cli.UsageError("--clip-prob %v: must lie in (0, 1) (0 or absent: 1/n)", clipProb)
	}
	return nil
}

// boxRun runs Algorithm 1 (gaussian) or 2 (elliptical) for method m: the rows clamped into the
// --bounds box, with out's epsilon and delta. A bad --bounds is a usage error; a sum that fails
// (overflow) names the input file.
func boxRun(out *runJSON, m vecsum.Mechanism, ds *dataSet, bounds string, r *rand.Rand) error {
	lo, hi, err := parseBounds(bounds, ds.d)
	if err != nil {
		return err
	}
	p, err := vecsum.PlanBox(m, lo, hi, out.Epsilon, out.Delta)
	if err != nil {
		return wrapInput(err)
	}
	res, err := p.Sum(ds.x, r, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", out.Input, err)
	}
	out.Sum, out.ExpectedError, out.NoiseSigmas, out.SigmaOpt = optFloats(res.Sum), optFloat(p.ExpectedError), optFloats(p.NoiseSigmas), p.SigmaOpt
	out.Lower, out.Upper, out.Scaling = lo, hi, optFloats(p.Scaling)
	out.ClippedRows, out.ClipError = res.ClampedRows, optFloat(res.ClampError)
	return nil
}

// normalRun runs Algorithm 3 for --method normal. Errors about --sigmas and --mean are usage errors;
// everything after them depends on the data (a private mean needs enough rows) and is a failure.
func normalRun(out *runJSON, ds *dataSet, s []float64, meanFlag string, frac, clipProb float64, rr *rand.Rand, log zerolog.Logger) error {
	if err := vecsum.CheckSigmas(s); err != nil {
		return wrapInput(fmt.Errorf("--sigmas: %w", err))
	}
	var mu []float64
	eff := s
	if meanFlag != "" {
		var err error
		if mu, err = parseList("--mean", meanFlag); err != nil {
			return err
		}
		if len(mu) != ds.d {
			return cli.UsageError("--mean: %d values for %d data columns", len(mu), ds.d)
		}
	} else {
		me, md := out.Epsilon*frac, out.Delta*frac
		est, err := vecsum.PrivateMean(ds.x, s, me, md, rr)
		if err != nil {
			return fmt.Errorf("%s: %w", out.Input, err)
		}
		mu = est.Mean
		eff = make([]float64, len(s))
		for j := range s {
			eff[j] = math.Sqrt(s[j]*s[j] + est.Variance[j])
		}
		out.MeanPrivate, out.MeanEpsilon, out.MeanDelta = true, me, md
		out.SumEpsilon, out.SumDelta = out.Epsilon-me, out.Delta-md
		out.EffectiveSigmas = optFloats(eff)
		log.Info().Floats64("mean", mu).Float64("epsilon", me).Float64("delta", md).Msg("private mean estimate")
	}
	p, err := vecsum.PlanNormal(eff, ds.n, out.SumEpsilon, out.SumDelta, clipProb)
	if err != nil {
		return fmt.Errorf("%s: %w", out.Input, err)
	}
	res, err := p.Sum(ds.x, mu, rr)
	if err != nil {
		return fmt.Errorf("%s: %w", out.Input, err)
	}
	out.Sum, out.ExpectedError, out.NoiseSigmas, out.SigmaOpt = optFloats(res.Sum), optFloat(p.ExpectedError), optFloats(p.NoiseSigmas), p.SigmaOpt
	out.Scaling, out.ClipRadius, out.ClipProb, out.Mean = optFloats(p.Scaling), optFloat(p.ClipRadius), p.ClipProb, optFloats(mu)
	out.ClippedRows, out.ClipError = res.ClippedRows, optFloat(res.ClipError)
	return nil
}

func printRun(w io.Writer, out runJSON, ds *dataSet) error {
	fmt.Fprintf(w, "method %s, %d rows, %d columns, epsilon %g, delta %g, seed %d (%s)\n", out.Method, out.N, out.D,
		out.Epsilon, out.Delta, out.Seed, out.SeedSource)
	if out.MeanPrivate {
		fmt.Fprintf(w, "private mean: epsilon %.4g, delta %.4g; sum: epsilon %.4g, delta %.4g\n", out.MeanEpsilon, out.MeanDelta, out.SumEpsilon, out.SumDelta)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if out.Method == string(vecsum.MethodNormal) {
		fmt.Fprintf(tw, "clip radius (scaled space)\t%.6g\n", out.ClipRadius)
		fmt.Fprintf(tw, "clip probability\t%.3g\n", out.ClipProb)
	}
	fmt.Fprintf(tw, "sigma_opt\t%.6g\n", out.SigmaOpt)
	fmt.Fprintf(tw, "expected squared error\t%.6g\n", out.ExpectedError)
	fmt.Fprintf(tw, "clipped rows*\t%d\n", out.ClippedRows)
	fmt.Fprintf(tw, "clipping error*\t%.6g\n", out.ClipError)
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "column\tprivate sum\tnoise sigma")
	for j := range out.Sum {
		fmt.Fprintf(tw, "%s\t%.6g\t%.6g\n", ds.columns[j], out.Sum[j], out.NoiseSigmas[j])
	}
	tw.Flush()
	_, err := fmt.Fprintf(w, "\n* %s\n", diagNote)
	return err
}

type figureJSON struct {
	CSV     string           `json:"csv"`
	CSVNote string           `json:"csv_note,omitempty"` // why the clipping-error columns are absent
	PNG     string           `json:"png"`
	SVG     string           `json:"svg"`
	Rows    int              `json:"rows"`
	Seconds float64          `json:"seconds"`
	Table   []vecsum.GainRow `json:"table"`
}

func runFigure(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("dpsim vecsum figure",
		"dpsim vecsum figure --out DIR [--alphas K] [--d LIST] [--n LIST] [--clip-samples S] [--json]",
		`Reproduces the thesis figure (Section 5, Figure 2): the gain E_n / E_t of Algorithm 3's scaling against
the Zipf skew alpha of the standard deviations sigma_i = i^-alpha / sum_j j^-alpha, for each d and n, with
clipping probability 1/n. Writes DIR/vecsum_gain.csv, DIR/vecsum_gain.png and DIR/vecsum_gain.svg.`, stderr)
	outDir := fs.String("out", "", "output `DIR` (created if missing) (required)")
	nAlpha := fs.Int("alphas", 41, "number `K` of alpha values on the log grid [1e-2, 1e2]")
	dList := fs.String("d", "10,100,1000", "dimensions `LIST`")
	nList := fs.String("n", "100,1000,1000000", "row counts `LIST` (clipping probability 1/n)")
	samples := fs.Int("clip-samples", 0, "importance samples `S` per point for the clipping-error columns (0: not estimated, and the two columns are left out of the CSV)")
	seed := fs.Uint64("seed", 1, "seed `S` of the clipping-error Monte Carlo")
	asJSON := fs.Bool("json", false, "print one JSON object (file names and the table) to stdout")
	logLevel := fs.String("log-level", "info", "log `LEVEL` on stderr: trace, debug, info, warn, error")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.UsageError("figure: unexpected arguments %q", fs.Args())
	}
	log, err := cli.Logger(stderr, *logLevel)
	if err != nil {
		return err
	}
	if *outDir == "" {
		return cli.UsageError("--out is required")
	}
	if *nAlpha < 2 {
		return cli.UsageError("--alphas %d: need at least 2 grid points", *nAlpha)
	}
	ds, err := intList("--d", *dList, 1)
	if err != nil {
		return err
	}
	ns, err := intList("--n", *nList, 2)
	if err != nil {
		return err
	}
	if *samples < 0 {
		return cli.UsageError("--clip-samples %d: must be >= 0", *samples)
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	start := time.Now()
	log.Info().Ints("d", ds).Ints("n", ns).Int("alphas", *nAlpha).Msg("computing gain table")
	rows, err := vecsum.GainTable(ds, ns, vecsum.LogGrid(1e-2, 1e2, *nAlpha), *samples, *seed)
	if err != nil {
		return err
	}
	res := figureJSON{CSV: filepath.Join(*outDir, "vecsum_gain.csv"), PNG: filepath.Join(*outDir, "vecsum_gain.png"),
		SVG: filepath.Join(*outDir, "vecsum_gain.svg"), Rows: len(rows), Table: rows}
	records, omitted := vecsum.GainCSV(rows)
	if omitted {
		res.CSVNote = vecsum.GainCSVOmitted
	}
	if err := writeFile(res.CSV, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.WriteAll(records); err != nil {
			return err
		}
		return cw.Error()
	}); err != nil {
		return err
	}
	for _, f := range []struct{ path, format string }{{res.PNG, "png"}, {res.SVG, "svg"}} {
		if err := writeFile(f.path, func(w io.Writer) error { return vecsum.WriteGainPlot(w, rows, f.format) }); err != nil {
			return err
		}
	}
	res.Seconds = time.Since(start).Seconds()
	log.Info().Str("csv", res.CSV).Str("png", res.PNG).Str("svg", res.SVG).Float64("seconds", res.Seconds).Msg("figure written")
	if *asJSON {
		return cli.WriteJSON(stdout, res)
	}
	// summary: gain at the smallest, middle and largest alpha per (d, n)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	alphas := vecsum.LogGrid(1e-2, 1e2, *nAlpha)
	mid := alphas[len(alphas)/2]
	fmt.Fprintf(tw, "d\tn\tgain(alpha=%.3g)\tgain(alpha=%.3g)\tgain(alpha=%.3g)\t\n", alphas[0], mid, alphas[len(alphas)-1])
	for _, r := range rows {
		if r.Alpha != alphas[0] {
			continue
		}
		g := map[float64]float64{}
		for _, q := range rows {
			if q.D == r.D && q.N == r.N {
				g[q.Alpha] = q.Gain
			}
		}
		fmt.Fprintf(tw, "%d\t%d\t%.4f\t%.4f\t%.4f\t\n", r.D, r.N, g[alphas[0]], g[mid], g[alphas[len(alphas)-1]])
	}
	tw.Flush()
	_, err = fmt.Fprintf(stdout, "\nwrote %s, %s, %s (%d rows, %.1fs)\n", res.CSV, res.PNG, res.SVG, res.Rows, res.Seconds)
	if err == nil && res.CSVNote != "" {
		_, err = fmt.Fprintf(stdout, "%s: %s\n", res.CSV, res.CSVNote)
	}
	return err
}

func intList(flagName, s string, minV int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < minV {
			return nil, cli.UsageError("%s: %q is not an integer >= %d", flagName, f, minV)
		}
		out = append(out, v)
	}
	return out, nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// wrapInput turns the library's invalid-input errors into usage errors (exit code 2).
func wrapInput(err error) error {
	if errors.Is(err, vecsum.ErrInput) {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	return err
}
