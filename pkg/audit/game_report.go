package audit

import (
	"errors"
	"fmt"
	"math"
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
	MuClaimed    float64 `json:"mu_claimed,omitempty"`
	Verdict      string  `json:"verdict"`
	// Score is the score with the strongest bound (max of its CP and GDP bounds).
	Score string `json:"score"`

	Pair   Pair          `json:"pair"`
	Theory *Theory       `json:"theory,omitempty"`
	Scores []ScoreResult `json:"scores"`

	ElapsedSec     float64  `json:"elapsed_sec"`
	EpisodesPerSec float64  `json:"episodes_per_sec"`
	Notes          []string `json:"notes"`
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
	p := g.Plan
	pr := p.Scenario.Privacy
	k := len(g.names)
	opts := Options{
		EpsilonClaimed: pr.Epsilon,
		Delta:          pr.Delta,
		Mechanism:      p.Mechanism,
		Confidence:     1 - (1-o.Confidence)/float64(k),
		Selection:      o.Selection,
		CurvePoints:    curve,
	}
	if p.Mechanism == privacy.Laplace {
		opts.Delta = 0
	}
	r := &GameReport{
		Scenario: p.Scenario.Name, Kind: string(p.Scenario.Kind), Engine: out.Engine, Seed: out.Seed,
		Trials: out.N, Episodes: out.Episodes, Steps: p.Steps,
		EpsilonClaimed: pr.Epsilon, Delta: opts.Delta, Mechanism: string(p.Mechanism), Noise: string(p.Noise),
		AdjacencyCalibrated: string(g.Calibrated), AdjacencyAudited: string(g.Audited),
		Confidence: o.Confidence, Pair: g.Pair, Theory: g.Theory, Verdict: Consistent,
		ElapsedSec: out.Elapsed.Seconds(),
	}
	if p.Mechanism == privacy.Gaussian {
		r.Calibration = string(pr.Calibration)
	}
	if out.Elapsed > 0 {
		r.EpisodesPerSec = float64(out.Episodes) / out.Elapsed.Seconds()
	}
	best := math.Inf(-1)
	for i, name := range g.names {
		res, err := out.Trials[i].Analyze(opts)
		if err != nil {
			return nil, fmt.Errorf("audit: score %s: %w", name, err)
		}
		r.Scores = append(r.Scores, ScoreResult{Name: name, Result: res})
		r.EpsilonLBCP = math.Max(r.EpsilonLBCP, res.EpsilonLBCP)
		r.EpsilonLBGDP = math.Max(r.EpsilonLBGDP, res.EpsilonLBGDP)
		r.MuGDP = math.Max(r.MuGDP, res.MuGDP)
		r.MuClaimed = res.MuClaimed
		if res.Verdict == Violation {
			r.Verdict = Violation
		}
		// >=: on a tie the later score (the likelihood ratio, optimal where it exists) is named.
		if s := math.Max(res.EpsilonLBCP, res.EpsilonLBGDP); s >= best {
			best, r.Score = s, name
		}
	}
	r.Notes = append(r.Notes, g.Notes...)
	r.Notes = append(r.Notes,
		fmt.Sprintf("%d scores, each analysed at confidence %.6g so that all bounds hold jointly at %g (Bonferroni)", k, opts.Confidence, o.Confidence),
		fmt.Sprintf("challenger: balanced secret bits (trials 2k, 2k+1 opposite, coin from rng(seed, challenger, 2k)); episode e = trial e uses the noise stream of episode e"),
		"the adversary sees only the transcript (yhat and u, or every y_i); its score is a public function of its final least-squares estimate of the initial state and of the public pair")
	if p.Mechanism == privacy.Laplace {
		r.Notes = append(r.Notes, "Laplace (pure eps-DP): audited with the Clopper-Pearson bound")
	}
	return r, nil
}

// Markdown renders a short human report of r (report.md of dpsim audit --out). plot, when not
// empty, is the file name of the trade-off figure to link.
func (r *GameReport) Markdown(plot string) string {
	var b strings.Builder
	g := func(v float64) string { return fmt.Sprintf("%.4g", v) }
	fmt.Fprintf(&b, "# Privacy audit: %s\n\n", r.Scenario)
	fmt.Fprintf(&b, "**Verdict: %s** at joint confidence %g (engine %s, seed %d, %d trials per value of the secret bit, T = %d).\n\n",
		r.Verdict, r.Confidence, r.Engine, r.Seed, r.Trials, r.Steps)
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| claim | (eps, delta) = (%s, %s), %s mechanism, %s noise", g(r.EpsilonClaimed), g(r.Delta), r.Mechanism, r.Noise)
	if r.Calibration != "" {
		fmt.Fprintf(&b, ", %s calibration", r.Calibration)
	}
	fmt.Fprintf(&b, " |\n| adjacency | calibrated for %s, audited under %s |\n", r.AdjacencyCalibrated, r.AdjacencyAudited)
	if r.Pair.Null {
		fmt.Fprintf(&b, "| pair | %s: x0 = x0' = %s (null game: the system ignores the secret; the scores test the direction %s -> %s)",
			r.Pair.Source, vec(r.Pair.X0), vec(r.Pair.X0), vec(r.Pair.X0Prime))
	} else {
		fmt.Fprintf(&b, "| pair | %s: x0 = %s, x0' = %s", r.Pair.Source, vec(r.Pair.X0), vec(r.Pair.X0Prime))
	}
	b.WriteString(" |\n")
	fmt.Fprintf(&b, "| eps_lb (Clopper-Pearson) | %s |\n", g(r.EpsilonLBCP))
	if r.Mechanism == string(privacy.Gaussian) {
		fmt.Fprintf(&b, "| eps_lb (Gaussian-DP fit) | %s (mu_gdp = %s; the claim allows mu = %s) |\n", g(r.EpsilonLBGDP), g(r.MuGDP), g(r.MuClaimed))
	}
	if t := r.Theory; t != nil {
		switch {
		case t.Distinguishable:
			b.WriteString("| theory | the pair leaves the noise's range: perfectly distinguishable, no finite eps |\n")
		case t.MuPair > 0:
			fmt.Fprintf(&b, "| theory | this pair's mechanism is mu = %s GDP, i.e. eps = %s at the claimed delta |\n", g(t.MuPair), g(t.EpsilonPair))
		default:
			fmt.Fprintf(&b, "| theory | this pair's mechanism is eps = %s |\n", g(t.EpsilonPair))
		}
	}
	fmt.Fprintf(&b, "| strongest score | %s |\n\n", r.Score)
	b.WriteString("| score | eps_lb_cp | eps_lb_gdp | mu_gdp | verdict |\n|---|---|---|---|---|\n")
	for _, s := range r.Scores {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", s.Name, g(s.Result.EpsilonLBCP), g(s.Result.EpsilonLBGDP), g(s.Result.MuGDP), s.Result.Verdict)
	}
	if plot != "" {
		fmt.Fprintf(&b, "\n![trade-off](%s)\n\nThe shaded region is what the claim forbids; the blue curve is the empirical trade-off of the %s score, the crosses the bounded tests.\n", plot, r.Score)
	}
	b.WriteString("\nNotes:\n\n")
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	for _, s := range r.Scores {
		if s.Name == r.Score {
			for _, n := range s.Result.Notes {
				fmt.Fprintf(&b, "- %s\n", n)
			}
		}
	}
	return b.String()
}

func vec(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.6g", x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
