package report

import (
	"fmt"
	"strings"

	"github.com/dpsim/dpsim/pkg/fault"
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
	return l.Dropped+l.Duplicated+l.Delayed+l.Reordered+l.Expired+l.Gaps+l.Late+l.DupReceived+l.Lost > 0
}

// linkAccounting checks that a point's counters add up, link by link (fault.Accounting).
func linkAccounting(links []fault.LinkStats, outage bool) (bad []string, lost uint64) {
	return fault.Accounting(links, outage)
}

// outage reports whether the run names an outage: a server restart, a killed process or a
// lost connection on its timeline.
func (r *analysis) outage() bool {
	for _, ev := range r.in.Timeline {
		switch ev.Event {
		case "nats-server-stopped", "killed", "disconnected", "exited":
			return true
		}
	}
	return false
}

// faultChecks adds the link-accounting check of every point that reports links.
func (r *analysis) faultChecks() {
	for _, p := range r.points {
		if len(p.res.Links) == 0 {
			continue
		}
		bad, lost := linkAccounting(p.res.Links, r.outage())
		detail := fmt.Sprintf("%d links", len(p.res.Links))
		if lost > 0 {
			detail += fmt.Sprintf("; %d message(s) lost in transport during the outages of the timeline count as lost (their receivers applied the missing-input rules)", lost)
		}
		if len(bad) > 0 {
			detail += "; not adding up: " + strings.Join(bad, "; ")
		}
		r.addRule(p, "link-accounting", measured{value: float64(len(bad)), threshold: 0, detail: detail})
	}
}

// faultsInjected lists what the scenario injects that the theory does not model (nil: none):
// link faults, crashes, partitions and server restarts.
func (r *analysis) faultsInjected() []string {
	sc := r.sc
	if sc == nil && len(r.points) > 0 {
		sc = r.points[0].sc
	}
	if sc == nil {
		return nil
	}
	f := &sc.Faults
	var out []string
	add := func(n int, what string) {
		if n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(len(f.Links), "link-fault rule(s)")
	add(len(f.Crashes), "process crash(es)")
	add(len(f.Partitions), "partition(s)")
	add(len(f.ServerRestarts), "NATS server restart(s)")
	return out
}
