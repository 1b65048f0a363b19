package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/finitejson"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/report"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// writeReport writes report.md and the figures (pkg/report) from the points that have
// Results (all of them after a successful run; those recorded after a failure or Ctrl-C, with
// the status banner saying so).
func (l *launcher) writeReport() error { return l.renderReport(true) }

// renderReport builds the report's input from the summary and hands it to write (report.Write:
// figures and report.md; report.WriteMarkdown: report.md alone, for a status learnt after the
// figures were written).
func (l *launcher) renderReport(figures bool) error {
	in := report.Input{Scenario: l.scn, Seed: l.sum.Seed, SeedDrawn: l.sum.SeedSource == "crypto",
		Engine: l.sum.Engine, Mode: l.sum.Mode, NATSURL: l.sum.NATSURL, Timing: l.reportTiming(),
		Elapsed: time.Since(l.started), Status: l.sum.Status, Error: l.sum.Error, Degraded: l.sum.Degraded, PlannedPoints: len(l.points),
		Missed: l.sum.Timing.Missed, LateMessages: l.sum.Timing.LateMessages, Timeline: l.sum.Timeline, Interventions: l.interventionLines(), Notes: l.reportNotes(),
		Secret: launch.IsSecretOutput, ShareOutputs: l.o.ShareOutputs, Problems: l.problemLines()}
	if l.sum.Engine == "fast" {
		in.Mode = "lockstep" // the fast engine runs the lockstep step order, unpaced
	}
	for _, ps := range l.sum.Points {
		if ps.Metrics == nil {
			continue
		}
		in.Points = append(in.Points, report.Point{Scenario: l.points[ps.Index], Plan: l.plans[ps.Index], Results: ps.Metrics,
			Requested: ps.Requested, Missing: ps.Missing, MissingFirst: ps.MissingHead, Error: ps.Error})
	}
	if len(in.Points) == 0 {
		if l.sum.Status == "ok" || l.sum.Status == "" {
			return nil
		}
		// Nothing completed (the server was unreachable, a process failed at once): the
		// report still says what happened.
		if err := os.MkdirAll(l.o.Out, 0o755); err != nil {
			return err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "# %s\n\n> **Status: %s** - no episode completed, so there are no results to report.\n>\n> - cause: %s\n",
			l.scn.Name, l.sum.Status, l.sum.Error)
		for _, pb := range l.problemLines() {
			fmt.Fprintf(&b, "> - problem: %s\n", pb)
		}
		for _, iv := range l.interventionLines() {
			fmt.Fprintf(&b, "> - intervention: %s\n", iv)
		}
		b.WriteString("\n")
		fmt.Fprintf(&b, "Scenario %s, engine %s, NATS %s. summary.json has the details.\n", l.o.ScenarioPath, l.sum.Engine, l.sum.NATSURL)
		return atomicfile.WriteFile(filepath.Join(l.o.Out, report.FileName), []byte(b.String()), l.outMode(report.FileName))
	}
	if len(in.Points) < len(l.points) {
		in.Scenario = nil // a partial sweep: report the points that finished
	}
	for _, p := range l.sum.Processes {
		label := ""
		if len(l.points) > 1 {
			label = pointLabel(l.points[p.Point])
		}
		in.Processes = append(in.Processes, report.Process{Role: p.Role, ID: p.ID, PID: p.PID, PeakRSSBytes: p.MaxRSSBytes, Point: label})
	}
	if l.sum.Engine == "nats" {
		in.Invalid = map[string]any{}
		for k, v := range l.sum.Invalid {
			in.Invalid[k] = v.Dropped
		}
		in.Stale, in.Security = l.sum.Stale, l.sum.Security
	}
	rep, err := report.WriteReport(l.o.Out, in, figures)
	if err != nil {
		return err
	}
	l.reportWarnings = rep.Warnings
	l.sum.Files.Report = report.FileName
	return nil
}

// reportTiming is the report's timing table: the summary's, with one line on the episodes in
// flight of a NATS run.
func (l *launcher) reportTiming() any {
	if l.sum.Inflight == nil {
		return l.sum.Timing
	}
	return struct {
		record.TimingSummary
		EpisodesInFlight string `json:"episodes_in_flight"`
	}{l.sum.Timing, l.sum.Inflight.String()}
}

// pointLabel names a sweep point as report.md does: "epsilon=1, noise=structured".
func pointLabel(pt *scenario.Scenario) string {
	parts := make([]string, 0, len(pt.Point))
	for _, v := range pt.Point {
		parts = append(parts, string(v.Param)+"="+v.Value)
	}
	if len(parts) == 0 {
		return pt.Name
	}
	return strings.Join(parts, ", ")
}

// writeSummary writes summary.json: metrics that overflowed float64 are null there, and
// non_finite says which (a run is never lost to "json: unsupported value: +Inf").
func (l *launcher) writeSummary() error {
	l.sum.NonFinite = nil
	data, nf, err := finitejson.MarshalIndent(l.sum, "", "  ")
	if err == nil && nf != nil {
		l.sum.NonFinite = nf
		data, _, err = finitejson.MarshalIndent(l.sum, "", "  ")
	}
	if err != nil {
		return fmt.Errorf("summary.json: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(l.o.Out, "summary.json"), append(data, '\n'), l.outMode("summary.json")); err != nil {
		return fmt.Errorf("summary.json: %w", err)
	}
	return nil
}

// reportNotes are the banner's lines on what happened around the results without changing
// them: the processes the stop had to kill.
func (l *launcher) reportNotes() []string {
	var notes []string
	if t := record.LeftoverText(l.sum.LeftoverProcesses); t != "" {
		notes = append(notes, t)
	}
	if t := l.recordingNote(); t != "" {
		notes = append(notes, t)
	}
	return notes
}

// problemLines are the problems attributed to the role processes (summary.json problems), one
// sentence each, for report.md's banner: the fatal ones and the others (those change the
// status only through their effects, and would otherwise be in summary.json alone).
func (l *launcher) problemLines() []string {
	var lines []string
	for _, pb := range l.sum.Problems {
		line := pb.Problem.String()
		if len(l.points) > 1 {
			line = pointLabel(l.points[pb.Point]) + ": " + line
		}
		if !pb.Fatal {
			line += " (not fatal)"
		}
		lines = append(lines, line)
	}
	return lines
}
