package launch

import (
	"fmt"
	"strings"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
)

// Degradation counts what went wrong in the processes of a run without failing it: steps
// completed without all their messages at the deadline (realtime: missed ticks; lockstep:
// timeouts), conflicting copies, messages a NATS client dropped because its process fell
// behind, disconnects and server restarts. It is the one wording of summary.json's "degraded"
// (dpsim run, over every point) and of the audit's (dpsim audit --engine wire, per point).
// Faults a scenario injects on purpose (faults.links) are the experiment, not a degradation.
type Degradation struct {
	Realtime  bool // the deadline of a step is its tick (else --timeout)
	CoreSteps int  // the steps of every core (an agent host's count once per agent)
	Missed    int  // of those, completed without all their messages at the deadline
	Conflicts uint64
	// SlowDropped are the messages the processes' NATS clients dropped (slow consumers),
	// SlowProcs who dropped them ("plant-0 12").
	SlowDropped             uint64
	SlowProcs               []string
	Disconnects, Reconnects uint64
	ServerRestarts          int
	ServerDown              []string // each outage: "episode E step S (detail)"
	LostInTransport         uint64   // data messages lost while a connection was down
}

// MissedFraction is Missed over CoreSteps.
func (d *Degradation) MissedFraction() float64 {
	return float64(d.Missed) / float64(max(d.CoreSteps, 1))
}

// MissedReason is the sentence on the missed steps ("": none).
func (d *Degradation) MissedReason() string {
	if d.Missed == 0 {
		return ""
	}
	what := "missed their realtime deadline"
	if !d.Realtime {
		what = "timed out (--timeout)"
	}
	return fmt.Sprintf("%d of %d process steps (%.3g%%) %s and went on without all their messages (the missing-input rules applied)",
		d.Missed, d.CoreSteps, 100*d.MissedFraction(), what)
}

// ConflictReason is the sentence on the conflicting copies ("": none).
func (d *Degradation) ConflictReason() string {
	if d.Conflicts == 0 {
		return ""
	}
	return fmt.Sprintf("%d conflicting message(s): a receiver got two different messages for the same sender, episode and step (forged or corrupted traffic; the first was used; metrics.links[].conflicts)", d.Conflicts)
}

// Reasons are the sentences of everything d counts, in summary.json's order: slow consumers,
// conflicts, connections, missed steps (none: nothing went wrong).
func (d *Degradation) Reasons() []string {
	var rs []string
	if d.SlowDropped > 0 {
		rs = append(rs, fmt.Sprintf("%d message(s) dropped by NATS clients that fell behind (slow consumers: %s)", d.SlowDropped, strings.Join(d.SlowProcs, ", ")))
	}
	if r := d.ConflictReason(); r != "" {
		rs = append(rs, r)
	}
	if d.Disconnects > 0 || d.ServerRestarts > 0 {
		msg := fmt.Sprintf("%d NATS disconnect(s) and %d reconnect(s) across the processes", d.Disconnects, d.Reconnects)
		if d.ServerRestarts > 0 {
			msg = fmt.Sprintf("the NATS server was restarted %d time(s) (faults.server_restarts): %s", d.ServerRestarts, msg)
		}
		for _, down := range d.ServerDown {
			msg += "; server down from " + down
		}
		msg += fmt.Sprintf("; %d data message(s) lost in transport", d.LostInTransport)
		rs = append(rs, msg)
	}
	if r := d.MissedReason(); r != "" {
		rs = append(rs, r)
	}
	return rs
}

// Degradation counts what went wrong in the processes of the point without failing it (the
// point's own counts: a launcher that sums several points fills a Degradation itself).
func (out *PointOutcome) Degradation(realtime bool) Degradation {
	d := Degradation{Realtime: realtime, ServerRestarts: out.ServerRestarts, Disconnects: out.Disconnects, Reconnects: out.Reconnects}
	for _, pr := range out.Procs {
		r := pr.Result
		if r == nil {
			continue
		}
		cores := 1
		if pr.Role == endpoint.Agent {
			cores = pr.LastAgent - pr.ID + 1
		}
		d.CoreSteps += cores * r.Steps
		d.Missed += r.Timing.Missed
		if r.SlowConsumerDropped > 0 {
			d.SlowDropped += uint64(r.SlowConsumerDropped)
			d.SlowProcs = append(d.SlowProcs, fmt.Sprintf("%s %d", pr.Name, r.SlowConsumerDropped))
		}
	}
	if out.Results != nil {
		for _, lk := range out.Results.Links {
			d.Conflicts += lk.Conflicts
		}
		d.LostInTransport = fault.LostInTransport(out.Results.Links)
	}
	return d
}
