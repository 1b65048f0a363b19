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

// linkAccounting checks that a point's counters add up, link by link: every message released
// was delivered, lost or expired (delivered = sent - dropped + duplicated - expired), and no
// more duplicates were received than made. It returns the failing links, described.
// Messages lost in transport (a broker outage, a crashed receiver) are allowed when outage
// is set - the run names its outages - and returned as lost.
func linkAccounting(links []fault.LinkStats, outage bool) (bad []string, lost uint64) {
	var out []string
	for _, l := range links {
		want := l.Sent - l.Dropped + l.Duplicated - l.Expired - l.Lost
		if outage && l.Delivered < want && l.DupReceived <= l.Duplicated {
			lost += want - l.Delivered
			continue
		}
		if l.Delivered != want || l.DupReceived > l.Duplicated {
			out = append(out, fmt.Sprintf("%s (sent %d, dropped %d, duplicated %d, expired %d, lost to a crash %d, delivered %d, duplicates received %d)",
				l.Link, l.Sent, l.Dropped, l.Duplicated, l.Expired, l.Lost, l.Delivered, l.DupReceived))
		}
	}
	return out, lost
}

// LostInTransport counts the messages of links that were neither delivered nor dropped or
// expired by the injector: lost by the transport itself (a broker outage, a receiver that
// was down).
func LostInTransport(links []fault.LinkStats) uint64 {
	_, lost := linkAccounting(links, true)
	return lost
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
