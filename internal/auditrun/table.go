package auditrun

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dpsim/dpsim/pkg/audit"
)

// PrintTable prints the reports as dpsim audit's table (a sweep's verdict after them; out, the
// --out folder, last).
func PrintTable(w io.Writer, reports []*audit.GameReport, out string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		if !printFileHeader(tw, r, g) {
			printGameHeader(tw, r, g)
		}
		for _, s := range r.Scores {
			line := s.Result.ScoreLine(g)
			mark := ""
			if s.Name == r.Score {
				mark = "  <- strongest"
			}
			fmt.Fprintf(tw, "score %s\t%s%s\n", s.Name, line, mark)
		}
		if t := r.Theory; t != nil && !t.Distinguishable {
			th := fmt.Sprintf("eps of the calibrated mechanism on this pair %s", g(t.EpsilonPair))
			if t.MuPair > 0 {
				th += fmt.Sprintf(" (mu_pair %s; the claim allows mu_claimed %s)", g(t.MuPair), g(r.MuClaimed))
			}
			fmt.Fprintf(tw, "theory\t%s\n", th)
		}
		fmt.Fprintf(tw, "verdict\t%s\n", r.VerdictLine())
		printRoles(tw, r)
	}
	if len(reports) > 1 {
		fmt.Fprintf(tw, "\nsweep\t%s\n", SweepVerdictLine(reports))
	}
	for _, r := range reports {
		if r.EpisodesPerTrial > 1 {
			PrintComposition(tw, reports)
			break
		}
	}
	if out != "" {
		fmt.Fprintf(tw, "\nout\t%s\n", out)
	}
	_ = tw.Flush()
}

// printGameHeader prints the head of a game's report: the scenario, the claim, the pair and the game.
func printGameHeader(tw io.Writer, r *audit.GameReport, g func(float64) string) {
	fmt.Fprintf(tw, "scenario\t%s (%s, T = %d)\n", r.Scenario, r.Kind, r.Steps)
	claim := fmt.Sprintf("eps = %s, delta = %s, %s, %s noise", g(r.EpsilonClaimed), g(r.Delta), r.Mechanism, r.Noise)
	if r.Calibration != "" {
		claim += ", " + r.Calibration
	}
	if r.EpisodesPerTrial > 1 {
		claim += fmt.Sprintf(" per episode; %d episodes per trial: composed eps_run = %s (the verdict's)", r.EpisodesPerTrial, g(r.EpsilonClaimedRun))
	}
	fmt.Fprintf(tw, "claim\t%s\n", claim)
	fmt.Fprintf(tw, "adjacency\tcalibrated %s, audited %s\n", r.AdjacencyCalibrated, r.AdjacencyAudited)
	if r.Pair.Null {
		// As the scenario gives it: both bits run x0; the scores look along a direction.
		fmt.Fprintf(tw, "pair\t%s: x0 = x0' = %s (null game: the system ignores the secret; the scores test the direction %s -> %s)\n",
			r.Pair.Source, vec(r.Pair.X0), vec(r.Pair.X0), vec(r.Pair.X0Prime))
	} else {
		fmt.Fprintf(tw, "pair\t%s: x0 %s, x0' %s\n", r.Pair.Source, vec(r.Pair.X0), vec(r.Pair.X0Prime))
	}
	fmt.Fprintf(tw, "game\t%s engine, seed %d, %d + %d trials, %.3g s (%.0f episodes/s)\n", r.Engine, r.Seed, r.Trials, r.Trials, r.ElapsedSec, r.EpisodesPerSec)
}

// printRoles prints who played the roles of a wire game when a user's program played one
// (--role), whose program the verdict is about, and what went wrong in the game: each problem,
// attributed, and each degradation.
func printRoles(tw io.Writer, r *audit.GameReport) {
	for _, p := range r.Programs() {
		fmt.Fprintf(tw, "role %s\tplayed by your program %q (process %s, pid %d: %d steps, %d missed, %d invalid received)\n",
			p.Sender, p.Program, p.Process, p.PID, p.Steps, p.Missed, p.Invalid)
	}
	if line := r.ProgramsLine(); line != "" {
		fmt.Fprintf(tw, "programs\t%s\n", line)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(tw, "problem\t%s\n", p)
	}
	for _, d := range r.Degraded {
		fmt.Fprintf(tw, "degraded\t%s (the bounds are those of the game as played)\n", d)
	}
}

func vec(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		if math.Abs(x) < 1e-300 {
			x = 0
		}
		parts[i] = strconv.FormatFloat(x, 'g', 6, 64)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// PrintComposition prints one line per report with its episodes per trial, its bounds, the
// composed claim and both verdicts: the composition at a glance.
func PrintComposition(tw io.Writer, reports []*audit.GameReport) {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	fmt.Fprintln(tw)
	for _, r := range reports {
		k := max(1, r.EpisodesPerTrial)
		ep := r.VerdictEpisode
		if ep == "" {
			ep = r.Verdict
		}
		var bs []string // the bounds of the composition figure (LowerBound.Composition)
		for _, b := range audit.Bounds {
			if b.Composition != "" {
				bs = append(bs, b.Name+" "+g(b.OfReport(r)))
			}
		}
		fmt.Fprintf(tw, "composition k = %d\t%s; against eps_run = %s: %s; against the per-episode eps = %s: %s\n",
			k, strings.Join(bs, ", "), g(r.Claimed()), r.Verdict, g(r.EpsilonClaimed), ep)
	}
}

// printFileHeader prints the head of a scores file's report (Engine audit.EngineFile): the file,
// the claim and the trials, and reports whether r is one.
func printFileHeader(tw io.Writer, r *audit.GameReport, g func(float64) string) bool {
	if r.Engine != audit.EngineFile {
		return false
	}
	n := r.Scores[0].Result.Trials
	fmt.Fprintf(tw, "scores\t%s (%d trials with bit 0, %d with bit 1)\n", r.Scenario, n.X, n.XPrime)
	claim := fmt.Sprintf("eps = %s, delta = %s, %s", g(r.EpsilonClaimed), g(r.Delta), r.Mechanism)
	if r.EpisodesPerTrial > 1 {
		claim += fmt.Sprintf(" per episode; %d episodes per trial: composed eps_run = %s (the verdict's)", r.EpisodesPerTrial, g(r.EpsilonClaimedRun))
	}
	fmt.Fprintf(tw, "claim\t%s\n", claim)
	return true
}
