package run

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/runner"
	"github.com/dpsim/dpsim/pkg/record"
)

// printTable prints the run's short table: what ran, its results per point, where the outputs
// are and its status.
func printTable(w io.Writer, out *runner.Outcome) {
	s := out.Summary
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\t%s (%s)\n", s.Scenario, s.Kind)
	// the seed decides the noise: its value is in summary.json only (reproducibility)
	fmt.Fprintf(tw, "engine\t%s, %s, seed in summary.json (%s)\n", s.Engine, s.Mode, s.SeedSource)
	if s.Engine == "nats" {
		fmt.Fprintf(tw, "nats\t%s, run %s, %d processes\n", s.NATSURL, s.RunID, len(s.Processes))
		if sec := s.Security; sec != nil {
			fmt.Fprintf(tw, "security\t%s server, permissions %t, signed %t, authenticated %t, tls %s, strict %t\n",
				sec.Server, sec.Permissions, sec.Signed, sec.Authenticated, sec.TLS, sec.Strict)
		}
	}
	fmt.Fprintf(tw, "runs\t%d x %d steps per point, %d point(s), %.2f s, %.0f steps/s\n", s.Runs, s.Steps, len(s.Points), s.ElapsedSec, s.Timing.StepsPerSec)
	if s.Inflight != nil {
		fmt.Fprintf(tw, "in flight\t%s\n", s.Inflight)
	}
	if s.Timing.Mode == "realtime" {
		fmt.Fprintf(tw, "timing\tlate %d, overruns %d, missed %d, jitter p99 %v\n", s.Timing.LateMessages, s.Timing.Overruns, s.Timing.Missed, s.Timing.JitterP99MaxNS)
	}
	if s.Engine == "nats" {
		fmt.Fprintf(tw, "invalid\t%s\n", invalidLine(s))
		var stale uint64
		for _, n := range s.Stale {
			stale += n
		}
		if stale > 0 {
			fmt.Fprintf(tw, "stale\t%d message(s) for an episode the receiver had finished (late, not wrong; compared, never used)\n", stale)
		}
	}
	for _, p := range s.Points {
		r := p.Metrics
		if r == nil {
			fmt.Fprintf(tw, "%s\tno results\n", p.Name)
			continue
		}
		if r.Runs == 0 {
			fmt.Fprintf(tw, "%s\tno complete episode (of %d requested): no metrics\n", p.Name, p.Requested)
			continue
		}
		partial := ""
		if p.Requested > 0 && r.Runs < p.Requested {
			partial = fmt.Sprintf(" (partial: of %d requested)", p.Requested)
		}
		switch {
		case r.Control != nil && len(r.Control.FinalSqError) > 0:
			fmt.Fprintf(tw, "%s\t%d runs%s: final mean-square error", p.Name, r.Runs, partial)
			for i, st := range r.Control.FinalSqError {
				fmt.Fprintf(tw, " x%d %.4g", i, st.Mean)
			}
			if n := r.Control.EveSqError.Len(); n > 0 {
				fmt.Fprintf(tw, "; eavesdropper ||x0_hat - x0||^2 at T-1 %.4g", r.Control.EveSqError.Mean[n-1])
			}
			fmt.Fprintln(tw)
		case r.Consensus != nil:
			c := r.Consensus
			fmt.Fprintf(tw, "%s\t%d runs%s: E||x(T) - 1x*||^2 %.4g (Prop. 1 bound %.4g), sum rel. dev. %.2g\n", p.Name, r.Runs, partial,
				c.FinalSqDeviation.Mean, c.Prop1Bound, c.SumRelDevMax)
		}
	}
	fmt.Fprintf(tw, "out\t%s\n", out.Out)
	ivs := out.Interventions
	switch {
	case s.Status == record.StatusIntervened:
		fmt.Fprintf(tw, "status\tintervened: %d live intervention(s) through the live view changed the faults (summary.json interventions; not the scenario's results)\n", len(ivs))
		if len(s.Degraded) > 0 {
			fmt.Fprintf(tw, "degraded\t%s\n", strings.Join(s.Degraded, "; "))
		}
	case s.Status == "degraded":
		fmt.Fprintf(tw, "status\tdegraded: %s\n", strings.Join(s.Degraded, "; "))
	case s.Status != "" && s.Status != "ok":
		fmt.Fprintf(tw, "status\t%s (partial results)\n", s.Status)
	}
	for _, iv := range ivs {
		fmt.Fprintf(tw, "intervention\t%s\n", iv)
	}
	if s.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", s.Error)
	}
	for _, w := range out.ReportWarnings {
		fmt.Fprintf(tw, "warning\t%s\n", cli.OneLine(w))
	}
	_ = tw.Flush()
}

// invalidLine counts the invalid messages of the run once each: every receiver drops its own
// copy of a wrong message (the plant and the eavesdropper both drop a bad u), so the copies
// dropped are summed per receiver and the messages are, per sender, the most any receiver
// dropped of its; a run without attribution (an older process) counts copies.
func invalidLine(s *record.Summary) string {
	var copies, messages uint64
	from := map[string]map[string]uint64{} // point/sender -> receiver -> dropped
	for key, c := range s.Invalid {
		copies += c.Dropped
		point := ""
		if i := strings.IndexByte(key, '/'); i >= 0 {
			point = key[:i+1]
		}
		var attributed uint64
		for sender, reasons := range c.BySender {
			if from[point+sender] == nil {
				from[point+sender] = map[string]uint64{}
			}
			for _, n := range reasons {
				from[point+sender][key] += n
				attributed += n
			}
		}
		messages += c.Dropped - min(attributed, c.Dropped) // unattributed: counted as copies
	}
	for _, receivers := range from {
		var most uint64
		for _, n := range receivers {
			most = max(most, n)
		}
		messages += most
	}
	if copies == messages {
		return fmt.Sprintf("%d message(s) dropped", messages)
	}
	return fmt.Sprintf("%d message(s) dropped (%d copies across their receivers)", messages, copies)
}
