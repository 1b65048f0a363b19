package report

import (
	"fmt"
	"strings"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// linkTotals adds up a point's per-link counters.
func linkTotals(links []fault.LinkStats) fault.LinkStats {
	var t fault.LinkStats
	for i := range links {
		t.Add(&links[i])
	}
	return t
}

// faulty reports whether any link counter says something other than "delivered once, on time".
func faulty(l fault.LinkStats) bool {
	return l.Dropped+l.Duplicated+l.Delayed+l.Reordered+l.Expired+l.Gaps+l.Late+l.DupReceived > 0
}

// linkAccounting checks that a point's counters add up, link by link: every message released
// was delivered, lost or expired (delivered = sent - dropped + duplicated - expired), and no
// more duplicates were received than made. It returns the failing links ("" when none).
func linkAccounting(links []fault.LinkStats) string {
	var bad []string
	for _, l := range links {
		if l.Delivered != l.Sent-l.Dropped+l.Duplicated-l.Expired || l.DupReceived > l.Duplicated {
			bad = append(bad, fmt.Sprintf("%s (sent %d, dropped %d, duplicated %d, expired %d, delivered %d, duplicates received %d)",
				l.Link, l.Sent, l.Dropped, l.Duplicated, l.Expired, l.Delivered, l.DupReceived))
		}
	}
	return strings.Join(bad, "; ")
}

// faultChecks adds the link-accounting check of every point that reports links.
func (r *run) faultChecks() {
	for _, p := range r.points {
		if len(p.res.Links) == 0 {
			continue
		}
		bad := linkAccounting(p.res.Links)
		text := fmt.Sprintf("every link's messages add up: delivered = sent - dropped + duplicated - expired on all %d links", len(p.res.Links))
		if bad != "" {
			text = "link counters do not add up: " + bad
		}
		r.addCheck(p, "link accounting", bad == "", text)
	}
}

var linkHeader = []string{"link", "sent", "delivered", "dropped", "duplicated", "reordered", "late", "delayed", "expired", "gaps"}

func linkRow(l fault.LinkStats) []string {
	return []string{l.Link, fmt.Sprint(l.Sent), fmt.Sprint(l.Delivered), fmt.Sprint(l.Dropped), fmt.Sprint(l.Duplicated),
		fmt.Sprint(l.Reordered), fmt.Sprint(l.Late), fmt.Sprint(l.Delayed), fmt.Sprint(l.Expired), fmt.Sprint(l.Gaps)}
}

// faultsSection writes the scenario's fault rules, the missing-input rules in force and the
// per-link message counts (a table per point; for a sweep a per-point summary in the body and
// the tables in an appendix at the end of the section).
func (r *run) faultsSection(b *strings.Builder) {
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
	if !any && !hasRules {
		return
	}
	b.WriteString("## Faults and links\n\n")
	if sc != nil {
		if sc.Kind == scenario.CloudControl {
			fmt.Fprintf(b, "Missing-input rules: the plant, missing u(t), applies **%s**; the cloud, missing yhat(t), predicts C xhat(t) (its observer runs open loop for the step); the eavesdropper estimates from what it received.\n\n", sc.Faults.Missing.Plant)
		} else {
			fmt.Fprintf(b, "Missing-input rule: an agent missing a neighbour's y_j(t) applies **%s**; the eavesdropper estimates from what it received.\n\n", sc.Faults.Missing.Agent)
		}
	}
	if hasRules {
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
	if !any {
		return
	}
	b.WriteString("Messages per link: sent (one per step), delivered (copies received, duplicates and late ones included), dropped, duplicated and reordered by the injector, late (received after their step), delayed (held back by the injector), expired (delayed past the episode's end), gaps (steps at which the receiver got nothing and applied its rule).\n\n")
	if !r.sweep {
		p := r.points[0]
		if !faulty(linkTotals(p.res.Links)) {
			t := linkTotals(p.res.Links)
			fmt.Fprintf(b, "No link faults: every one of the %d messages on the %d links was delivered once, on time.\n\n", t.Sent, len(p.res.Links))
			return
		}
		var rows [][]string
		for _, l := range p.res.Links {
			rows = append(rows, linkRow(l))
		}
		table(b, linkHeader, rows)
		return
	}
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
