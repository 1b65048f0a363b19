package auditrun

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/audit"
)

// Output is the --json object of a scenario with a sweep: one report per point. A scenario without
// a sweep prints its single GameReport directly.
type Output struct {
	Scenario string `json:"scenario"`
	Verdict  string `json:"verdict"` // violation if any point shows one
	Engine   string `json:"engine"`
	Trials   int    `json:"trials"`
	// Confidence is the joint level of the verdict over all points; each point is analysed at
	// ConfidencePerPoint = 1 - (1 - Confidence)/K (Bonferroni).
	Confidence         float64 `json:"confidence"`
	ConfidencePerPoint float64 `json:"confidence_per_point"`
	// The point whose strongest bound is largest relative to its claim, and its figures.
	WorstPoint     string              `json:"worst_point"`
	EpsilonClaimed float64             `json:"epsilon_claimed"`
	Delta          float64             `json:"delta"`
	EpsilonLBCP    float64             `json:"epsilon_lb_cp"`
	EpsilonLBGDP   float64             `json:"epsilon_lb_gdp"`
	MuGDP          float64             `json:"mu_gdp"`
	EpsilonLBFDP   float64             `json:"epsilon_lb_fdp"`
	MuFDP          float64             `json:"mu_fdp"`
	Points         []*audit.GameReport `json:"points"`
}

// SweepOutput summarises a sweep: the verdict, and the figures of the point whose strongest
// bound is largest relative to its claimed epsilon, so the required keys exist at the top level.
func SweepOutput(name, verdict string, conf float64, reports []*audit.GameReport) *Output {
	o := &Output{Scenario: name, Verdict: verdict, Engine: reports[0].Engine, Trials: reports[0].Trials,
		Confidence: conf, ConfidencePerPoint: reports[0].Confidence, Points: reports}
	best := -1.0
	for _, r := range reports {
		ratio := r.Strongest() / r.Claimed()
		if ratio > best {
			best = ratio
			o.WorstPoint, o.EpsilonClaimed, o.Delta = r.Scenario, r.EpsilonClaimed, r.Delta
			o.EpsilonLBCP, o.EpsilonLBGDP, o.MuGDP = r.EpsilonLBCP, r.EpsilonLBGDP, r.MuGDP
			o.EpsilonLBFDP, o.MuFDP = r.EpsilonLBFDP, r.MuFDP
		}
	}
	return o
}

// Summary is what --json prints of the audit's reports: the single report of a scenario without
// a sweep, else the sweep's Output (violation when any point shows one).
func (a *Audit) Summary(reports []*audit.GameReport, violations []string) any {
	if len(reports) == 1 {
		return reports[0]
	}
	verdict := audit.Consistent
	if len(violations) > 0 {
		verdict = audit.Violation
	}
	return SweepOutput(a.Name, verdict, a.Conf, reports)
}

// SweepVerdictLine is the verdict over the points printed: violation when any point's is, at the
// joint level of those points (each at its own level, Bonferroni: 1 - sum of 1 - level).
func SweepVerdictLine(reports []*audit.GameReport) string {
	var bad []string
	miss := 0.0
	for _, r := range reports {
		miss += 1 - r.Confidence
		if r.Verdict == audit.Violation {
			bad = append(bad, r.Scenario)
		}
	}
	if len(bad) == 0 {
		return fmt.Sprintf("CONSISTENT at every one of %d points (joint confidence %.6g over the points)", len(reports), 1-miss)
	}
	return fmt.Sprintf("VIOLATION at %d of %d points: %s (joint confidence %.6g over the points)", len(bad), len(reports), strings.Join(bad, ", "), 1-miss)
}

// WriteReport writes the report of point k to --out (nothing without it): the loop's Done
// observer of the command.
func (a *Audit) WriteReport(k int, rep *audit.GameReport) error {
	if a.Opts.Out == "" {
		return nil
	}
	return WriteFiles(a.Opts.Out, Suffix(len(a.Points), k), rep, a.Opts.ShareOutputs)
}

// WriteFiles writes DIR/audit<sfx>.json, DIR/report<sfx>.md and DIR/tradeoff<sfx>.png/.svg.
// audit.json and report.md hold the seed and the audited pair: 0600 unless share (--share-outputs).
func WriteFiles(dir, sfx string, r *audit.GameReport, share bool) error {
	if err := atomicfile.Write(filepath.Join(dir, "audit"+sfx+".json"), launch.OutputMode("audit"+sfx+".json", share), func(w io.Writer) error { return cli.WriteJSON(w, r) }); err != nil {
		return err
	}
	plotName := ""
	if best := r.Best(); best != nil {
		if _, err := audit.PlotTradeoff(filepath.Join(dir, "tradeoff"+sfx), best); err != nil {
			return err
		}
		plotName = "tradeoff" + sfx + ".png"
	}
	return atomicfile.WriteFile(filepath.Join(dir, "report"+sfx+".md"), []byte(r.Markdown(plotName)), launch.OutputMode("report"+sfx+".md", share))
}

// CompositionFigure is the base name of --episodes-per-trial-sweep's figure in --out.
const CompositionFigure = "composition"

// Finish ends a played audit as dpsim audit and dpsim merge end it: the composition figure of
// --episodes-per-trial-sweep in --out, the reports printed (--json: Summary, else the table) and,
// with --fail-on-violation, a ViolationError when a point shows a violation.
func (a *Audit) Finish(stdout io.Writer, reports []*audit.GameReport, violations []string) error {
	o := a.Opts
	if len(o.EpisodesSweep) > 0 && o.Out != "" {
		if _, err := audit.PlotComposition(o.Out, CompositionFigure, a.Name, reports); err != nil {
			return err
		}
	}
	if o.JSON {
		if err := cli.WriteJSON(stdout, a.Summary(reports, violations)); err != nil {
			return err
		}
	} else {
		PrintTable(stdout, reports, o.Out)
	}
	if o.FailOnViolation && len(violations) > 0 {
		return &ViolationError{Points: violations}
	}
	return nil
}
