package report

import (
	"fmt"
	"strings"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
)

var linkHeader = []string{"link", "sent", "delivered", "dropped", "duplicated", "reordered", "late", "delayed", "expired", "lost", "gaps"}

func linkRow(l fault.LinkStats) []string {
	return []string{l.Link, fmt.Sprint(l.Sent), fmt.Sprint(l.Delivered), fmt.Sprint(l.Dropped), fmt.Sprint(l.Duplicated),
		fmt.Sprint(l.Reordered), fmt.Sprint(l.Late), fmt.Sprint(l.Delayed), fmt.Sprint(l.Expired), fmt.Sprint(l.Lost), fmt.Sprint(l.Gaps)}
}

// processFaults lists the scenario's crashes, partitions, server restarts and proxies.
func processFaults(b *strings.Builder, f *scenario.FaultsSpec) {
	b.WriteString("Process, server and network faults of the scenario:\n\n")
	var rows [][]string
	for _, c := range f.Crashes {
		what := "restarted from its checkpoint with the same noise draw"
		if c.Noise == scenario.NoiseRedraw {
			what = "restarted with a **fresh noise draw** (restart-redraw: a second independent release, outside the privacy claim)"
		}
		rows = append(rows, []string{"crash", c.Proc, fmt.Sprintf("episode %s, steps %d..%d", c.EpisodeName(), c.Step, c.Restart-1),
			"killed (SIGKILL) before releasing step " + fmt.Sprint(c.Step) + "; " + what + "; back at step " + fmt.Sprint(c.Restart) + " (its peers apply their missing-input rules meanwhile)"})
	}
	for _, p := range f.Partitions {
		rows = append(rows, []string{"partition " + p.Name, fmt.Sprintf("agents %v | the others", p.Side),
			fmt.Sprintf("steps %d..%d of every episode", p.Window.From, p.Window.To-1), "every message across the cut is dropped"})
	}
	for _, s := range f.ServerRestarts {
		rows = append(rows, []string{"server restart", "NATS server", fmt.Sprintf("episode %d, from step %d", s.Episode, s.Step),
			fmt.Sprintf("stopped for %v and started on the same port; what was in flight is lost", s.Down)})
	}
	for _, x := range f.Proxies {
		bw := "unlimited"
		if x.Bandwidth > 0 {
			bw = fmt.Sprintf("%d KB/s", x.Bandwidth)
		}
		rows = append(rows, []string{"proxy", x.Proc, "whole run", fmt.Sprintf("toxiproxy: latency %v +- %v, bandwidth %s, both directions", x.Latency, x.Jitter, bw)})
	}
	table(b, []string{"fault", "who", "when", "what"}, rows)
}

// timelineSection lists the faults as they happened (Input.Timeline).
func (r *analysis) timelineSection(b *strings.Builder) {
	tl := r.in.Timeline
	if len(tl) == 0 {
		return
	}
	b.WriteString("## Timeline of faults\n\n")
	b.WriteString("What happened when: seconds since the launcher started, and where in the run (episode and step; - where it does not apply or is not known). Connection events are the processes' own, as their NATS clients reported them.\n\n")
	const maxRows = 200
	var rows [][]string
	dash := func(v int) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprint(v)
	}
	for i, ev := range tl {
		if i == maxRows {
			fmt.Fprintf(b, "(%d more events in summary.json \"timeline\")\n\n", len(tl)-maxRows)
			break
		}
		row := []string{fmt.Sprintf("%.3f", ev.Sec)}
		if r.sweep {
			row = append(row, fmt.Sprint(ev.Point))
		}
		row = append(row, dash(ev.Episode), dash(ev.Step), ev.Proc, ev.Event, ev.Detail)
		rows = append(rows, row)
	}
	head := []string{"t (s)"}
	if r.sweep {
		head = append(head, "point")
	}
	table(b, append(head, "episode", "step", "process", "event", "detail"), rows)
}

// faultsSection writes the scenario's fault rules, the missing-input rules in force and the
// per-link message counts (a table per point; for a sweep a per-point summary in the body and
// the tables in an appendix at the end of the section).
func (r *analysis) faultsSection(b *strings.Builder) {
	any := false
	for _, p := range r.points {
		if len(p.res.Links) > 0 {
			any = true
		}
	}
	sc := r.sc
	if sc == nil && len(r.points) > 0 {
		sc = r.points[0].sc
	}
	hasRules := sc != nil && len(sc.Faults.Links) > 0
	hasProc := sc != nil && (len(sc.Faults.Crashes)+len(sc.Faults.Partitions)+len(sc.Faults.ServerRestarts)+len(sc.Faults.Proxies) > 0)
	if !any && !hasRules && !hasProc {
		return
	}
	b.WriteString("## Faults and links\n\n")
	if sc != nil {
		missingRules(b, sc)
	}
	if hasProc {
		processFaults(b, &sc.Faults)
	}
	if hasRules {
		linkRules(b, sc)
	}
	if !any {
		return
	}
	b.WriteString("Messages per link: sent (one per step), delivered (copies received, duplicates and late ones included), dropped, duplicated and reordered by the injector, late (received after their step), delayed (held back by the injector), expired (delayed past the episode's end), lost (due while the receiver's process was down: a crash), gaps (steps at which the receiver got nothing and applied its rule: a loss, or a sender that was down).\n\n")
	if !r.sweep {
		r.pointLinks(b)
		return
	}
	r.sweepLinks(b)
}

// missingRules states what a process does when an input it waits for is missing.
func missingRules(b *strings.Builder, sc *scenario.Scenario) {
	if sc.Kind == scenario.CloudControl {
		fmt.Fprintf(b, "Missing-input rules: the plant, missing u(t), applies **%s**; the cloud, missing yhat(t), predicts C xhat(t) (its observer runs open loop for the step); the eavesdropper estimates from what it received.\n\n", sc.Faults.Missing.Plant)
	} else {
		fmt.Fprintf(b, "Missing-input rule: an agent missing a neighbour's y_j(t) applies **%s**; the eavesdropper estimates from what it received.\n\n", sc.Faults.Missing.Agent)
	}
}

// linkRules writes the table of the scenario's link rules and which of their parameters a sweep
// sets.
func linkRules(b *strings.Builder, sc *scenario.Scenario) {
	b.WriteString("Link rules (every rule matching a link applies, drawn from the run seed; lockstep delays count steps):\n\n")
	var rows [][]string
	for _, l := range sc.Faults.Links {
		pub := l.From
		if l.Subject != "" {
			pub = "subject " + l.Subject
		}
		delay := num(l.Delay)
		if l.RandomDelay != nil {
			delay += " + " + string(l.RandomDelay.Dist)
		}
		if l.Jitter > 0 {
			delay += " +- " + num(l.Jitter)
		}
		window := "all steps"
		if l.Window != nil {
			window = fmt.Sprintf("%d..%d", l.Window.From, l.Window.To-1)
		}
		rows = append(rows, []string{l.Name, pub, l.To, delay + " " + string(l.Unit), num(l.Drop), num(l.Duplicate), num(l.Reorder), window})
	}
	table(b, []string{"rule", "from", "to", "delay", "drop", "duplicate", "reorder", "window"}, rows)
	if len(sc.Sweeps) > 0 {
		var swept []string
		for _, sw := range sc.Sweeps {
			if strings.HasPrefix(string(sw.Param), "faults.") {
				swept = append(swept, string(sw.Param))
			}
		}
		if len(swept) > 0 {
			fmt.Fprintf(b, "Swept: %s (a swept value is set on every rule above).\n\n", strings.Join(swept, ", "))
		}
	}
}

// pointLinks writes the message counts per link of a single point, or one line when every
// message arrived once and on time.
func (r *analysis) pointLinks(b *strings.Builder) {
	p := r.points[0]
	// "on time" is said only when the counters add up too: a receiver that took fewer
	// than were sent, without a fault to say why, is in the table (and the check fails)
	if bad, _ := linkAccounting(p.res.Links, r.outage()); !faulty(linkTotals(p.res.Links)) && len(bad) == 0 {
		t := linkTotals(p.res.Links)
		fmt.Fprintf(b, "No link faults: every one of the %d messages on the %d links was delivered once, on time.\n\n", t.Sent, len(p.res.Links))
		return
	}
	var rows [][]string
	for _, l := range p.res.Links {
		rows = append(rows, linkRow(l))
	}
	table(b, linkHeader, rows)
}

// sweepLinks writes a sweep's message counts: the totals per point, then an appendix with every
// point's links.
func (r *analysis) sweepLinks(b *strings.Builder) {
	var rows [][]string
	for _, p := range r.points {
		t := linkTotals(p.res.Links)
		t.Link = p.label
		rows = append(rows, linkRow(t))
	}
	b.WriteString("Totals over all links, per point:\n\n")
	hdr := append([]string{"point"}, linkHeader[1:]...)
	table(b, hdr, rows)
	b.WriteString("### Appendix: messages per link and point\n\n")
	for _, p := range r.points {
		if len(p.res.Links) == 0 {
			continue
		}
		fmt.Fprintf(b, "**%s**\n\n", p.label)
		var rows [][]string
		for _, l := range p.res.Links {
			rows = append(rows, linkRow(l))
		}
		table(b, linkHeader, rows)
	}
}
