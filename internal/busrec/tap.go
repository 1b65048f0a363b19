package busrec

import (
	"fmt"
	"time"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// StepClock is one step of a fast-engine recording's simulated clock (Tap).
const StepClock = time.Millisecond

// Tap records the bus traffic of a run of the fast engine (dpsim run --engine fast --record)
// as the NATS processes of a lockstep run with one episode in flight put it on the bus: each
// point's messages under its run id, on the subjects and in the wire envelope (pkg/wire, JSON)
// of the NATS run, with the same values bit for bit.
//
//   - Data: every message a publisher of the in-memory network puts out (sim.Publication,
//     engine.Options.Bus) on its data subject dpsim.<run>.<role>.<id>.<stream>, sender
//     <role>.<id>, kind its stream, its own step and values (a lockstep gap notice: none), in
//     the order the network released them - per subject the order of its one publisher, the
//     order of the NATS run - and its route under link faults (to one subscriber, all but
//     some, delivered at a later step, more to follow, a gap notice) in the NATS headers the
//     NATS transport sends it with (wire.Route.Header; the recorder's companion channel
//     "<subject>#headers"). No signature: a fast run signs nothing.
//   - ctl.episode (the launcher's, sender launcher.0, kind episode, no values) before each
//     episode's data, and ctl.stop after the point's last episode.
//   - Not recorded: what only a process has - ctl.ready ([pid, plan file digest]), ctl.done
//     ([steps, missed, pid, trace offset]), ctl.rejoin ([step, pid]) and ctl.result (the
//     process's result document: its rss, wall times, connection counters). A fast run has no
//     process, no pid, no plan or trace file of a process, so a value there would be made up.
//
// The order of the whole file is the lockstep order: point after point, episode after
// episode, and within an episode ctl.episode then the data in the order the network released
// it (step by step: what a core released when it completed its step, a delayed copy at the
// release that put it out). The NATS run has the same order on each subject; across
// subjects it interleaves as its processes happened to publish, and it holds the process ctl
// messages above as well.
//
// Time is simulated: point k begins at the end of point k-1 (the first at start), episode e of
// a point of horizon T at its begin + e*(T+3)*StepClock; its ctl.episode is at that time, a
// message released at step r at + (1+r)*StepClock; ctl.stop at the begin of the episode after
// the last. That time is the message's "sent" (the publish time); the log time is the same,
// moved on by a nanosecond where needed so that the log times strictly increase in the file's
// order (an MCAP reader ordering by log time reads that order).
//
// A Tap is used by one goroutine at a time.
type Tap struct {
	rec   *Recorder
	next  int64 // Unix ns: the begin of the next point
	begin int64 // of the point in progress
	last  int64 // the last log time written
	span  int64 // an episode's time slots: T+3
	ended int   // one past the last episode written of the point
	run   string
	subj  wire.Subjects
	data  map[endpoint.Endpoint]string
	m     wire.Message
	buf   []byte
}

// NewTap returns the tap writing to rec, its clock beginning at start.
func NewTap(rec *Recorder, start time.Time) *Tap {
	return &Tap{rec: rec, next: start.UnixNano()}
}

// Point begins a point of run id run and horizon steps.
func (t *Tap) Point(run string, steps int) error {
	subj, err := wire.NewSubjects(run)
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	t.run, t.subj, t.data = run, subj, map[endpoint.Endpoint]string{}
	t.begin, t.span, t.ended = t.next, int64(steps)+3, 0
	return nil
}

// at is the simulated time of slot of episode ep.
func (t *Tap) at(ep int, slot int64) int64 {
	return t.begin + (int64(ep)*t.span+slot)*int64(StepClock)
}

// Episode records episode ep of the point: the launcher's ctl.episode, then pubs in order.
func (t *Tap) Episode(ep int, pubs []sim.Publication) {
	t.write(t.subj.CtlEpisode(), contract.EpisodeMessage(t.run, ep, false), t.at(ep, 0))
	for i := range pubs {
		p := &pubs[i]
		subject, ok := t.data[p.From]
		if !ok {
			subject = t.subj.Data(p.From)
			t.data[p.From] = subject
		}
		t.m = wire.Message{V: wire.Version, Run: t.run, Episode: p.Episode, Step: p.Step, Sender: p.From.String(),
			Kind: p.From.Role.Stream(), Values: p.Values}
		t.writeRouted(subject, &t.m, route(p), t.at(ep, 1+min(int64(p.Release), t.span-2)))
	}
	t.ended = max(t.ended, ep+1)
}

// Stop records the point's ctl.stop and moves the clock past the point.
func (t *Tap) Stop() {
	at := t.at(t.ended, 0)
	t.write(t.subj.CtlStop(), contract.StopMessage(t.run), at)
	t.next = max(at, t.last) + int64(StepClock)
}

// route is the route of p as the NATS transport (internal/roleproc) sends it in headers.
func route(p *sim.Publication) wire.Route {
	r := wire.Route{More: p.More, Gap: p.Gap}
	if p.At != p.Step {
		r.At = p.At
	}
	if p.ToOne {
		r.To = p.To.String()
	}
	for _, e := range p.Except {
		r.Except = append(r.Except, e.String())
	}
	return r
}

// write records m published at (Unix ns), without headers.
func (t *Tap) write(subject string, m *wire.Message, at int64) {
	t.writeRouted(subject, m, wire.Route{}, at)
}

// writeRouted records m published at (Unix ns) with the NATS headers of route r (none for the
// zero route). A message JSON cannot carry (a non-finite value) goes as the binary encoding a NATS run would have carried it in, which the recorder counts
// as undecodable, as it does such a message of a NATS run.
func (t *Tap) writeRouted(subject string, m *wire.Message, r wire.Route, at int64) {
	m.SentUnixNano = at
	data, err := wire.EncodeJSON(t.buf[:0], m)
	if err != nil {
		data, _ = wire.EncodeBinary(t.buf[:0], m)
	}
	t.buf = data
	log := max(at, t.last+1)
	t.last = log
	if h := r.Header(); h != nil {
		t.rec.RecordHeaders(subject, h, data, time.Unix(0, log))
		return
	}
	t.rec.Record(subject, data, time.Unix(0, log))
}
