package audit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// ReportOptions configure Game.Analyze.
type ReportOptions struct {
	// Confidence is the joint level of every bound of the report, all scores together (default
	// 0.95): each of the k scores is analysed at 1 - (1 - Confidence)/k (Bonferroni), so that the
	// strongest of them, chosen after the fact, still holds at Confidence.
	Confidence float64
	// Selection of the thresholds (default SelectSplit; see Options).
	Selection Selection
	// CurvePoints of the empirical trade-off curve kept for the plot (0: 200; < 0: none).
	CurvePoints int
}

// ScoreResult is the analysis of one score.
type ScoreResult struct {
	Name   string  `json:"name"`
	Result *Result `json:"result"`
}

// GameReport is the audit of one scenario point: the claim, the game, the bounds of every score
// and the headline (the strongest score), JSON-ready (the keys dpsim audit --json prints).
type GameReport struct {
	Scenario string `json:"scenario"`
	Kind     string `json:"kind"`
	Engine   string `json:"engine"`
	Seed     uint64 `json:"seed"`
	// Trials per value of the secret bit (N on x and N on x'); Episodes = 2N.
	Trials   int `json:"trials"`
	Episodes int `json:"episodes"`
	Steps    int `json:"steps"`
	// EpisodesPerTrial is k: each trial played k episodes of the same secret, combined by the
	// eavesdropper (Game.EpisodesPerTrial); Episodes = 2N k. EpsilonClaimedRun is the claim
	// composed over k episodes (Game.ClaimRun; = EpsilonClaimed for k = 1), the claim the verdict
	// is judged against (Claimed); EpsilonClaimed stays the per-episode claim, and
	// VerdictEpisode (k > 1) says what the per-episode claim would say of the same bounds - a
	// violation of it is what composition predicts, not evidence against the run's guarantee.
	EpisodesPerTrial  int     `json:"episodes_per_trial"`
	EpsilonClaimedRun float64 `json:"epsilon_claimed_run"`
	VerdictEpisode    string  `json:"verdict_episode,omitempty"`

	EpsilonClaimed      float64 `json:"epsilon_claimed"`
	Delta               float64 `json:"delta"`
	Mechanism           string  `json:"mechanism"`
	Noise               string  `json:"noise"`
	Calibration         string  `json:"calibration,omitempty"`
	AdjacencyCalibrated string  `json:"adjacency_calibrated"`
	AdjacencyAudited    string  `json:"adjacency_audited"`
	Confidence          float64 `json:"confidence"`

	// The headline: the largest bounds over the scores (each a lower bound at the joint
	// Confidence), and the verdict: violation when any bound of any score exceeds the claim.
	EpsilonLBCP  float64 `json:"epsilon_lb_cp"`
	EpsilonLBGDP float64 `json:"epsilon_lb_gdp"`
	MuGDP        float64 `json:"mu_gdp"`
	EpsilonLBFDP float64 `json:"epsilon_lb_fdp"`
	MuFDP        float64 `json:"mu_fdp"`
	MuClaimed    float64 `json:"mu_claimed,omitempty"`
	Verdict      string  `json:"verdict"`
	// Score is the score with the strongest bound (max of its CP, GDP and f-DP bounds).
	Score string `json:"score"`
	// FDPScore is the score the f-DP statistic was computed for, chosen on the selection trials
	// (Gaussian mechanisms); the other scores have no f-DP statistic.
	FDPScore string `json:"fdp_score,omitempty"`

	// Sequential is what the sequential audit did (dpsim audit --sequential; nil: a fixed number
	// of trials). Its verdict is the report's.
	Sequential *SequentialReport `json:"sequential,omitempty"`

	Pair   Pair          `json:"pair,omitzero"` // none from a scores file (Pair.IsZero)
	Theory *Theory       `json:"theory,omitempty"`
	Scores []ScoreResult `json:"scores"`

	ElapsedSec     float64  `json:"elapsed_sec"`
	EpisodesPerSec float64  `json:"episodes_per_sec"`
	Notes          []string `json:"notes"`
	// Dispatch, when the trials were played by workers (dpsim audit --dispatch), is what the
	// dispatch did (internal/farm.Report: the workers, re-issued chunks, refused answers).
	Dispatch any `json:"dispatch,omitempty"`
	// Processes, Problems and Degraded are the wire engine's (roles.go): who played each role
	// (a user's program with --role), what a process did wrong, and what went wrong without
	// failing the game (steps that timed out, ...).
	Processes []RoleProcess `json:"processes,omitempty"`
	Problems  []RoleProblem `json:"problems,omitempty"`
	Degraded  []string      `json:"degraded,omitempty"`
}

// Best returns the analysis of the headline score.
func (r *GameReport) Best() *Result {
	for _, s := range r.Scores {
		if s.Name == r.Score {
			return s.Result
		}
	}
	return nil
}

// Analyze runs the statistics (Trials.Analyze: Clopper-Pearson bounds for every mechanism, the
// Gaussian-DP fit for Gaussian ones) on every score of an outcome and assembles the report.
func (g *Game) Analyze(out *Outcome, o ReportOptions) (*GameReport, error) {
	if out == nil || len(out.Trials) != len(g.names) {
		return nil, errors.New("audit: analyze: the outcome does not belong to this game")
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return nil, fmt.Errorf("audit: confidence %v must lie in (0, 1)", o.Confidence)
	}
	curve := o.CurvePoints
	if curve == 0 {
		curve = 200
	} else if curve < 0 {
		curve = 0
	}
	c := g.Claim()
	k := len(g.names)
	claimRun, err := g.ClaimRun()
	if err != nil {
		return nil, err
	}
	opts := Options{
		// each score is judged against the claim for a trial: the composed one (k = 1: eps)
		EpsilonClaimed: claimRun,
		Delta:          c.Delta,
		Mechanism:      c.Mechanism,
		Confidence:     o.Confidence, // the joint level of every score's bounds (analyzeSplits)
		Selection:      o.Selection,
		CurvePoints:    curve,
	}
	if c.Mechanism == privacy.Laplace {
		opts.Delta = 0
	}
	r := &GameReport{
		Engine: out.Engine, Seed: out.Seed,
		Trials: out.N, Episodes: out.Episodes * g.k, EpisodesPerTrial: g.k, EpsilonClaimedRun: claimRun,
		EpsilonClaimed: c.Epsilon, Delta: opts.Delta, Mechanism: string(c.Mechanism),
		AdjacencyCalibrated: string(g.Calibrated), AdjacencyAudited: string(g.Audited),
		Confidence: o.Confidence, Pair: g.Pair, Theory: g.Theory, Verdict: Consistent,
		ElapsedSec: out.Elapsed.Seconds(),
	}
	if p := g.Plan; p != nil {
		r.Scenario, r.Kind, r.Steps, r.Noise = p.Scenario.Name, string(p.Scenario.Kind), p.Steps, string(p.Noise)
		if p.Mechanism == privacy.Gaussian {
			r.Calibration = string(p.Scenario.Privacy.Calibration)
		}
	}
	if out.Elapsed > 0 {
		r.EpisodesPerSec = float64(r.Episodes) / out.Elapsed.Seconds()
	}
	an, err := g.analyzeScores(out, opts)
	if err != nil {
		return nil, err
	}
	if an.fdpScore >= 0 {
		r.FDPScore = g.names[an.fdpScore]
	}
	best := math.Inf(-1)
	for i, name := range g.names {
		res := an.results[i]
		r.Scores = append(r.Scores, ScoreResult{Name: name, Result: res})
		r.raiseHeadline(res)
		r.MuClaimed = res.MuClaimed
		// >=: on a tie the later score (the likelihood ratio, optimal where it exists) is named.
		if s := res.Strongest(); s >= best {
			best, r.Score = s, name
		}
	}
	// The headline bounds are the maxima over the scores, so this is "violation when any
	// score's bound exceeds the claim", decided by the same rule as each score's verdict.
	r.Verdict = r.verdict()
	if g.k > 1 {
		r.VerdictEpisode = verdictOf(r.EpisodeChecks())
	}
	r.Notes = append(r.Notes, g.Notes...)
	r.Notes = append(r.Notes, levelNote(r, an, k))
	if g.claim != nil {
		r.Notes = append(r.Notes, "scores read from a file: every trial's secret bit and scores as given (the bounds hold if the bits are fair coins independent of everything the scores saw but the secret), judged against the claim as given")
		return r, nil
	}
	r.Notes = append(r.Notes,
		fmt.Sprintf("challenger: balanced secret bits (trials 2k, 2k+1 opposite, coin from rng(seed, challenger, 2k)); episode e = trial e uses the noise stream of episode e"),
		"the adversary sees only the transcript (yhat and u, or every y_i); its score is a public function of its final least-squares estimate of the initial state and of the public pair"+g.precisionWords())
	return r, nil
}

// analyzeScores splits every score's trials and analyses them together (analyzeSplits).
func (g *Game) analyzeScores(out *Outcome, opts Options) (analysis, error) {
	o, err := opts.normalise()
	if err != nil {
		return analysis{}, err
	}
	sps := make([]*split, len(g.names))
	for i, name := range g.names {
		if sps[i], err = out.Trials[i].split(o); err != nil {
			return analysis{}, fmt.Errorf("audit: score %s: %w", name, err)
		}
	}
	return analyzeSplits(o, sps)
}

// levelNote says how the report's joint level is shared among the scores' bounds.
func levelNote(r *GameReport, an analysis, k int) string {
	st := an.results[0].singleThresholdLevel()
	if an.fdpScore < 0 {
		return fmt.Sprintf("%d scores, the bounds of each at confidence %.6g, so that all bounds hold jointly at %g (Bonferroni)", k, st, r.Confidence)
	}
	return fmt.Sprintf("%d scores: the single-threshold bounds (%s) of each at confidence %.6g, the f-DP statistic at %.6g, each of its two folds for the score its choosing half preferred (the larger bound: %s), so that all bounds hold jointly at %g (Bonferroni)",
		k, boundNames(func(b LowerBound) bool { return b.SingleThreshold }, ", "), st, an.results[an.fdpScore].FDPConfidence, r.FDPScore, r.Confidence)
}

// BoundCheck is one comparison the verdict is decided on: a lower bound on eps against the
// claimed eps. The claim is contradicted (violation) when Value > Claimed; Value <= Claimed is
// consistent with it. The decision (Violated) and every sentence about the comparison
// (Comparison, Sentence) come from the row of its bound in Bounds, so words and numbers
// cannot diverge.
type BoundCheck struct {
	// Bound is the bound's name as the reports print it: eps_lb_cp, eps_lb_gdp or eps_lb_fdp.
	Bound   string
	Value   float64
	Claimed float64
	// Level is the probability with which Value is a lower bound on the true eps (jointly with
	// the other bounds it is reported with), under the rule's assumption.
	Level    float64
	Violated bool
	// ClaimName is the claim's name in the sentences: "eps" when empty, "eps_run" for a claim
	// composed over several episodes.
	ClaimName string
}

// The verdict's operators: violation when bound > claimed eps, consistent when bound <= it.
const (
	opViolation  = ">"
	opConsistent = "<="
)

// exceeds is the verdict's comparison: a lower bound above the claimed eps contradicts it.
func exceeds(bound, claimed float64) bool { return bound > claimed }

// verdictOf is Violation when any comparison is violated, else Consistent.
func verdictOf(checks []BoundCheck) string {
	for _, c := range checks {
		if c.Violated {
			return Violation
		}
	}
	return Consistent
}

// Word is the check's own result: violation or consistent.
func (c BoundCheck) Word() string {
	if c.Violated {
		return Violation
	}
	return Consistent
}

// Comparison renders "eps_lb_cp = 0.5523 <= eps = 1: consistent", the numbers printed so that
// distinct values never look equal.
func (c BoundCheck) Comparison() string {
	op := opConsistent
	if c.Violated {
		op = opViolation
	}
	vs, ts := distinct(c.Value, c.Claimed)
	claim := c.ClaimName
	if claim == "" {
		claim = "eps"
	}
	return fmt.Sprintf("%s = %s %s %s = %s: %s", c.Bound, vs, op, claim, ts, c.Word())
}

// Sentence is the comparison with what the bound is, its level and its assumption.
func (c BoundCheck) Sentence() string {
	ru, _ := bound(c.Bound)
	return fmt.Sprintf("%s. %s is %s; it holds with probability >= %g %s.", c.Comparison(), c.Bound, ru.what, c.Level, ru.validity)
}

// distinct prints v and t with 4 significant digits, more when they differ but would print
// alike (1.0000004 > 1 must not read "1 > 1").
func distinct(v, t float64) (string, string) {
	for prec := 4; ; prec++ {
		vs, ts := strconv.FormatFloat(v, 'g', prec, 64), strconv.FormatFloat(t, 'g', prec, 64)
		if vs != ts || v == t || prec >= 17 {
			return vs, ts
		}
	}
}

// Checks returns the comparisons of a score's verdict, at the score's own level.
func (r *Result) Checks() []BoundCheck {
	return checksOf(func(b LowerBound) float64 { return b.Of(r) }, r.EpsilonClaimed, r.Confidence, r.Mechanism)
}

// Checks returns the comparisons of the report's verdict: the headline bounds (the maxima over
// the scores, all holding jointly at Confidence) against the claimed eps (Claimed).
func (r *GameReport) Checks() []BoundCheck {
	return r.named(checksOf(func(b LowerBound) float64 { return b.OfReport(r) }, r.Claimed(), r.Confidence, r.Mechanism))
}

// Claimed is the claim the verdict is judged against: the per-episode eps for one episode per
// trial, else the claim composed over the trial's k episodes (EpsilonClaimedRun).
func (r *GameReport) Claimed() float64 {
	if r.EpisodesPerTrial > 1 {
		return r.EpsilonClaimedRun
	}
	return r.EpsilonClaimed
}

// EpisodeChecks compares the same headline bounds with the per-episode claim (what it would say
// of a trial of k > 1 episodes; for k = 1 these are Checks).
func (r *GameReport) EpisodeChecks() []BoundCheck {
	return checksOf(func(b LowerBound) float64 { return b.OfReport(r) }, r.EpsilonClaimed, r.Confidence, r.Mechanism)
}

// named names the claim of checks against the composed claim "eps_run" in their sentences.
func (r *GameReport) named(c []BoundCheck) []BoundCheck {
	if r.EpisodesPerTrial > 1 {
		for i := range c {
			c[i].ClaimName = "eps_run"
		}
	}
	return c
}

// claimWords names the claim the verdict is judged against, for k > 1 ("" for one episode per
// trial, whose words are unchanged), and what the per-episode claim would say.
func (r *GameReport) claimWords() string {
	if r.EpisodesPerTrial <= 1 {
		return ""
	}
	return fmt.Sprintf("judged against the composed claim eps_run = %s for the %d episodes of a trial (the per-episode eps = %s composed at delta = %s, sqrt(k) mu); "+
		"against the per-episode claim eps = %s the same bounds say %s",
		fmtG(r.EpsilonClaimedRun), r.EpisodesPerTrial, fmtG(r.EpsilonClaimed), fmtG(r.Delta), fmtG(r.EpsilonClaimed), strings.ToUpper(verdictOf(r.EpisodeChecks())))
}

// verdict decides the report's verdict from its comparisons.
func (r *GameReport) verdict() string { return verdictOf(r.Checks()) }

// VerdictLine is the printed verdict: the word, then every comparison it rests on, with the
// joint level and, for a violation that rests on the Gaussian-DP bound alone, its assumption.
func (r *GameReport) VerdictLine() string {
	if r.Sequential != nil {
		return r.sequentialVerdict()
	}
	checks := r.Checks()
	parts := make([]string, len(checks))
	for i, c := range checks {
		parts[i] = c.Comparison()
	}
	s := fmt.Sprintf("%s: %s (lower bounds on eps, all holding at joint confidence %g; violation when a bound > the claimed eps)",
		strings.ToUpper(verdictOf(checks)), strings.Join(parts, "; "), r.Confidence)
	if gdpOnly(checks) {
		s += "; the violation rests on the Gaussian-DP bounds alone (" + gaussianViolated(checks) + "), valid " + validityGaussian
	}
	if w := r.claimWords(); w != "" {
		s += "; " + w
	}
	return s
}

// gdpOnly reports a violation decided by the bounds that assume a Gaussian trade-off curve
// (LowerBound.Gaussian: eps_lb_gdp, eps_lb_fdp) while the assumption-free ones (the
// Clopper-Pearson bound) stay within the claim.
func gdpOnly(checks []BoundCheck) bool {
	for _, c := range checks {
		if b, _ := bound(c.Bound); c.Violated && !b.Gaussian {
			return false
		}
	}
	return gaussianViolated(checks) != ""
}

// gaussianViolated names the violated bounds that assume a Gaussian trade-off curve, joined by
// " and ".
func gaussianViolated(checks []BoundCheck) string {
	var v []string
	for _, c := range checks {
		if b, _ := bound(c.Bound); c.Violated && b.Gaussian {
			v = append(v, c.Bound)
		}
	}
	return strings.Join(v, " and ")
}

// Markdown renders a short human report of r (report.md of dpsim audit --out). plot, when not
// empty, is the file name of the trade-off figure to link.
func (r *GameReport) Markdown(plot string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Privacy audit: %s\n\n", r.Scenario)
	r.mdVerdict(&b)
	r.mdRoles(&b)
	r.mdSetup(&b)
	r.mdScores(&b)
	r.mdPrecision(&b)
	if plot != "" {
		r.mdPlot(&b, plot)
	}
	b.WriteString("\nNotes:\n\n")
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	if best := r.Best(); best != nil {
		fmt.Fprintf(&b, "- the strongest score, %s, analysed alone at confidence %g:\n", r.Score, best.Confidence)
		for _, n := range best.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	return b.String()
}

// mdVerdict writes the verdict and every comparison it rests on (Checks).
func (r *GameReport) mdVerdict(b *strings.Builder) {
	if r.Sequential != nil {
		fmt.Fprintf(b, "**Verdict: %s**\n\n", r.sequentialVerdict())
		return
	}
	checks := r.Checks()
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = c.Bound + " " + opViolation + " eps"
	}
	fmt.Fprintf(b, "**Verdict: %s** at joint confidence %g (engine %s, seed %d, %d trials per value of the secret bit, T = %d). "+
		"The verdict is violation when %s (the claimed eps = %s); the bounds are the largest over the %d scores and hold jointly:\n\n",
		verdictOf(checks), r.Confidence, r.Engine, r.Seed, r.Trials, r.Steps, strings.Join(names, " or "), fmtG(r.Claimed()), len(r.Scores))
	for _, c := range checks {
		fmt.Fprintf(b, "- %s\n", c.Sentence())
	}
	if gdpOnly(checks) {
		fmt.Fprintf(b, "\nThe violation rests on the Gaussian-DP bounds alone (%s), lower bounds %s; the assumption-free %s does not exceed the claim.\n", gaussianViolated(checks), validityGaussian,
			boundNames(func(b LowerBound) bool { return !b.Gaussian }, " and "))
	}
	if w := r.claimWords(); w != "" {
		fmt.Fprintf(b, "\nEach trial played %d episodes of the same secret: the verdict is %s.\n", r.EpisodesPerTrial, w)
	}
	b.WriteString("\n")
}

// mdSetup writes the claim, the game and the theory, every mu named by whose it is: mu_claimed
// (what the claim allows), mu_gdp (fitted to the trials), mu_pair (the pair's, in theory).
func (r *GameReport) mdSetup(b *strings.Builder) {
	fmt.Fprintf(b, "| | |\n|---|---|\n")
	fmt.Fprintf(b, "| claim | (eps, delta) = (%s, %s), %s mechanism, %s noise", fmtG(r.EpsilonClaimed), fmtG(r.Delta), r.Mechanism, r.Noise)
	if r.Calibration != "" {
		fmt.Fprintf(b, ", %s calibration", r.Calibration)
	}
	if r.EpisodesPerTrial > 1 {
		fmt.Fprintf(b, " per episode; a trial plays %d episodes of the same secret, composed: eps_run = %s", r.EpisodesPerTrial, fmtG(r.EpsilonClaimedRun))
	}
	if r.MuClaimed > 0 {
		claim := "eps"
		if r.EpisodesPerTrial > 1 {
			claim = "eps_run"
		}
		fmt.Fprintf(b, "; as Gaussian DP: mu_claimed = %s (kappa(%s, mu_claimed) = delta)", fmtG(r.MuClaimed), claim)
	}
	fmt.Fprintf(b, " |\n| adjacency | calibrated for %s, audited under %s |\n", r.AdjacencyCalibrated, r.AdjacencyAudited)
	if r.Pair.Null {
		fmt.Fprintf(b, "| pair | %s: x0 = x0' = %s (null game: the system ignores the secret, so its true eps is 0; the scores test the direction %s -> %s)",
			r.Pair.Source, vec(r.Pair.X0), vec(r.Pair.X0), vec(r.Pair.X0Prime))
	} else {
		fmt.Fprintf(b, "| pair | %s: x0 = %s, x0' = %s", r.Pair.Source, vec(r.Pair.X0), vec(r.Pair.X0Prime))
	}
	b.WriteString(" |\n")
	for _, lb := range Bounds {
		if lb.ValidFor(r.Mechanism) {
			fmt.Fprintf(b, "| %s | %s (%s) |\n", lb.Name, fmtG(lb.OfReport(r)), lb.setup(r))
		}
	}
	if t := r.Theory; t != nil {
		switch {
		case t.Distinguishable:
			b.WriteString("| theory | the pair leaves the noise's range: perfectly distinguishable, no finite eps |\n")
		case t.MuPair > 0:
			fmt.Fprintf(b, "| theory | the calibrated mechanism on this pair is mu_pair = %s GDP, i.e. eps = %s at the claimed delta |\n", fmtG(t.MuPair), fmtG(t.EpsilonPair))
		default:
			fmt.Fprintf(b, "| theory | the calibrated mechanism on this pair is eps = %s DP |\n", fmtG(t.EpsilonPair))
		}
	}
	fmt.Fprintf(b, "| strongest score | %s |\n\n", r.Score)
}

// mdScores writes one row per score: its bounds and its own verdict, at the score's level.
func (r *GameReport) mdScores(b *strings.Builder) {
	head, rule := "| score |", "|---|"
	for _, lb := range Bounds {
		for _, c := range lb.columns {
			head, rule = head+" "+c.header+" |", rule+"---|"
		}
	}
	fmt.Fprintf(b, "%s verdict (this score alone, at the joint level of its own bounds) |\n%s---|\n", head, rule)
	for _, s := range r.Scores {
		row := "| " + s.Name + " |"
		for _, lb := range Bounds {
			for _, c := range lb.columns {
				cell := "n/a" // a pure-eps audit computes no Gaussian-DP bound: not a 0
				if lb.ValidFor(s.Result.Mechanism) {
					cell = c.cell(s.Result)
				}
				row += " " + cell + " |"
			}
		}
		fmt.Fprintf(b, "%s %s at %g |\n", row, verdictOf(s.Result.Checks()), s.Result.Confidence)
	}
}

// mdPlot links the trade-off figure and says what each of its marks is, in the words of its
// legend (TradeoffFigure), every mu named by whose it is.
func (r *GameReport) mdPlot(b *strings.Builder, plot string) {
	fmt.Fprintf(b, "\n![trade-off](%s)\n\nThe shaded region is what the claim forbids (below its (eps, delta) boundary). "+
		"The legend names the other marks: the empirical trade-off curve of the %s score; the test giving the CP bound, at its (FPR_up, FNR_up)", plot, r.Score)
	best := r.Best()
	if best != nil && best.GDP != nil {
		b.WriteString(", and the test giving the GDP bound")
	}
	if best != nil && best.MuClaimed > 0 {
		fmt.Fprintf(b, "; the mu-GDP curve of the claim, mu_claimed = %s", fmtG(best.MuClaimed))
		if best.GDP != nil && best.MuGDP > 0 {
			fmt.Fprintf(b, ", and the mu-GDP curve fitted to the trials, mu_gdp = %s (behind eps_lb_gdp)", fmtG(best.MuGDP))
		}
	}
	b.WriteString(".\n")
}

// fmtG prints a number with 4 significant digits.
func fmtG(v float64) string { return fmt.Sprintf("%.4g", v) }

func vec(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.6g", x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
