package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dpsim/dpsim/pkg/endpoint"
)

// ErrIdle is returned by Transport.Recv when no delivery is pending and the deadline passed
// (or, with a zero deadline, at once): the driver then ticks the cores that still wait.
var ErrIdle = errors.New("sim: no delivery before the deadline")

// Transport moves a driver's messages: the in-memory Network, or a NATS adapter.
type Transport interface {
	// Send releases an output of a hosted core (the transport applies the link faults).
	Send(o *Out) error
	// Recv returns the next delivery for the hosted cores, waiting at most until deadline
	// (zero: do not wait); ErrIdle (wrapped or not) when none came. The *Msg is valid until
	// the next Recv.
	Recv(deadline time.Time) (*Msg, error)
}

// Crasher is implemented by a transport that must know of a hosted core's crash
// (faults.crashes): the copies its publisher's links still hold die with the process.
type Crasher interface {
	Crashed(e endpoint.Endpoint)
}

// Pacer gives a driver its clock. Nil (the in-memory lockstep network) means logical time:
// outputs go out at once and a step's deadline is when no delivery is pending.
type Pacer interface {
	// ReleaseAt returns when an output may be released (the zero time: at once).
	ReleaseAt(o *Out) time.Time
	// Deadline returns the deadline of step t of core c, which has waited on it since since.
	Deadline(c Core, t int, since time.Time) time.Time
	// Now reads the clock.
	Now() time.Time
	// Released records that o went out at time at; late says it was ready only after its
	// release time (the step started late: an overrun), not held until then.
	Released(o *Out, at time.Time, late bool)
}

// Driver is the one step loop of dpsim: it runs a set of hosted cores for an episode over a
// transport - every core of a run over the in-memory Network (fast engine, auditor, tests),
// or the cores of one process over NATS - delivering each message to the cores that expect
// its sender, feeding each core's Ready to the transport and to the record sink, and ticking a
// core whose step deadline passed. No other loop sequences the roles.
type Driver struct {
	cores []Core
	// bases[k] is core k's base when it is one of this package's cores (nil otherwise): flush
	// reads its Ready without an interface call.
	bases []*base
	net   *Network // tr, when it is the in-memory network: sent to without an interface call
	// pubs[k] is core k's publisher on net (nil: none, or not the in-memory network): its
	// outputs are released without looking it up per message.
	pubs []*netPub
	// lean: in memory, in logical time and without a sink (the auditor's player), so a core's
	// Ready has no reader but flush (see flushBase).
	lean   bool
	route  [endpoint.NumRoles][][]routeTo // [role][id]: the hosted cores that expect the sender
	eps    []endpoint.Endpoint            // the hosted cores' endpoints
	hosted endpointIndex                  // the hosted cores by endpoint (addressed deliveries)
	tr     Transport
	pace   Pacer
	sink   func(c Core, rd *Ready) error
	since  []time.Time
	held   []heldOut
	mem    arena
	// now is the clock read once per delivery (Pacer only); dl the cached earliest deadline
	// (zero: recompute). Deadlines only move later as cores progress, so a stale cache wakes
	// the loop early, never late: tickDue then checks each core's own deadline.
	now time.Time
	dl  time.Time
	// forced counts the steps a core completed by a deadline (Tick) rather than by its
	// deliveries: in lockstep over NATS a timeout, in realtime a missed deadline.
	forced int
	// sent counts the outputs handed to the transport (tickDue's check for new deliveries).
	sent int
	// done[k]: core k finished the episode (noted in flush); ndone of them.
	done  []bool
	ndone int
	gap   Msg // gapFor's
	// OnCrash, if set, is called when a core reaches its crash point (Ready.Crash), after its
	// transport heard of it: a process checkpoints and kills itself there (it does not
	// return). Unset - in memory - the core restarts at once, the same as a process restored
	// from that checkpoint.
	OnCrash func(c Core) error
}

// Forced returns how many steps cores completed by a deadline since the driver was made.
func (d *Driver) Forced() int { return d.forced }

// routeTo is a hosted core that expects a sender: its index k, and the sender's position
// among the core's senders (pos, -1 unless the core is one of this package's): a broadcast
// is filed at that position without looking the sender up again.
//
// link is the core's position among the sender's subscribers on the in-memory network, for
// the bits of Msg.skip and Msg.gaps (-1: not on one, or past 64).
type routeTo struct{ k, pos, link int32 }

type heldOut struct {
	at time.Time
	o  Out
}

// NewDriver returns a driver of cores over tr. pace may be nil (logical time); sink, if not
// nil, receives every core's Ready (records and missing-input counts) after each call.
func NewDriver(cores []Core, tr Transport, pace Pacer, sink func(c Core, rd *Ready) error) *Driver {
	d := &Driver{cores: cores, tr: tr, pace: pace, sink: sink, since: make([]time.Time, len(cores)), done: make([]bool, len(cores))}
	eps := make([]endpoint.Endpoint, len(cores))
	for k, c := range cores {
		eps[k] = c.Endpoint()
	}
	d.hosted, d.eps = newEndpointIndex(eps), eps
	d.bases = make([]*base, len(cores))
	for k, c := range cores {
		if b, ok := c.(interface{ coreBase() *base }); ok {
			d.bases[k] = b.coreBase()
		}
	}
	d.net, _ = tr.(*Network)
	d.lean = d.net != nil && pace == nil && sink == nil
	d.pubs = make([]*netPub, len(cores))
	if d.net != nil {
		for k := range cores {
			d.pubs[k] = d.net.pub(eps[k])
		}
	}
	for k, c := range cores {
		for _, s := range c.Senders() {
			if int(s.Role) >= len(d.route) || s.ID < 0 {
				continue
			}
			r := d.route[s.Role]
			for len(r) <= s.ID {
				r = append(r, nil)
			}
			to := routeTo{k: int32(k), pos: -1, link: -1}
			if d.net != nil {
				if np := d.net.pub(s); np != nil && len(np.subs) <= 64 { // more: no bits
					to.link = int32(slices.Index(np.subs, eps[k]))
				}
			}
			if b := d.bases[k]; b != nil {
				if i, ok := b.in.index.of(s); ok {
					to.pos = int32(i)
				}
			}
			r[s.ID] = append(r[s.ID], to)
			d.route[s.Role] = r
		}
	}
	return d
}

// Cores returns the hosted cores.
func (d *Driver) Cores() []Core { return d.cores }

// flush hands core k's Ready to the transport and the sink.
func (d *Driver) flush(k int) error {
	var rd *Ready
	if b := d.bases[k]; b != nil {
		rd = b.Ready()
	} else {
		rd = d.cores[k].Ready()
	}
	if rd.Done && !d.done[k] {
		d.done[k] = true
		d.ndone++
	}
	switch {
	case rd.Crash:
		return d.crash(k, rd)
	case d.sink != nil || d.pace != nil:
		return d.flushReady(k, rd)
	case len(rd.Out) == 1 && d.net != nil && rd.Out[0].From == d.eps[k]:
		// The usual output (one message of its own, in memory, in logical time): released
		// through the core's publisher at once.
		d.net.send(d.pubs[k], &rd.Out[0])
		d.sent++
		return nil
	case len(rd.Out) == 0:
		return nil // nothing to hand on (the eavesdropper, a core still waiting)
	}
	return d.flushReady(k, rd)
}

// flushBase is flush of core k, one of this package's (its base b), right after its step.
// When the driver is lean and the core's records are off, its Ready has nothing for anyone
// but its outputs: a core that produced none is left as it is, and one that produced just its
// own output hands it to its publisher and empties its buffer at once - without a Ready, so
// that its next step need not clear the buffer again. The end of its episode, a crash and
// anything else take flush.
func (d *Driver) flushBase(k int, b *base) error {
	rd := &b.ob.rd
	if !d.lean || !b.norec || b.done || rd.Crash {
		return d.flush(k)
	}
	switch {
	case len(rd.Out) == 0:
		return nil
	case len(rd.Out) == 1 && rd.Out[0].From == d.eps[k]:
		d.net.send(d.pubs[k], &rd.Out[0])
		d.sent++
		b.ob.released()
		return nil
	}
	return d.flush(k)
}

// flushReady hands a Ready of core k to the transport and the sink.
func (d *Driver) flushReady(k int, rd *Ready) error {
	if len(rd.Out) == 0 && d.sink == nil && d.pace == nil {
		return nil
	}
	for i := range rd.Out {
		o := &rd.Out[i]
		if d.pace != nil {
			at := d.pace.ReleaseAt(o)
			if at.After(d.now) {
				d.held = append(d.held, heldOut{at: at, o: Out{From: o.From, Step: o.Step, Values: d.mem.copy(o.Values)}})
				if d.dl.IsZero() || at.Before(d.dl) {
					d.dl = at
				}
				continue
			}
			d.pace.Released(o, d.now, !at.IsZero() && at.Before(d.now))
		}
		if d.net != nil {
			if o.From == d.eps[k] {
				d.net.send(d.pubs[k], o)
			} else {
				d.net.send(d.net.pub(o.From), o)
			}
			d.sent++
			continue
		}
		if err := d.tr.Send(o); err != nil {
			return fmt.Errorf("%s: send %s(%d): %w", d.eps[k], o.From.Role.Stream(), o.Step, err)
		}
		d.sent++
	}
	if d.sink != nil {
		if err := d.sink(d.cores[k], rd); err != nil {
			return err
		}
	}
	if d.pace != nil {
		d.since[k] = d.now
	}
	return nil
}

// crash handles core k stopped at its crash point: what it released before goes out, its
// records to the sink; the transport and OnCrash hear of the crash; then the core restarts.
func (d *Driver) crash(k int, rd *Ready) error {
	c := d.cores[k]
	rd.Crash = false
	if err := d.flushReady(k, rd); err != nil {
		return err
	}
	if cr, ok := d.tr.(Crasher); ok {
		cr.Crashed(c.Endpoint())
	}
	if d.OnCrash != nil {
		if err := d.OnCrash(c); err != nil {
			return err
		}
	}
	if err := c.Restart(); err != nil {
		return err
	}
	return d.flush(k)
}

// releaseDue sends the held outputs whose time came.
func (d *Driver) releaseDue() error {
	if len(d.held) == 0 {
		return nil
	}
	now := d.now
	keep := d.held[:0]
	for i := range d.held {
		h := &d.held[i]
		if h.at.After(now) {
			keep = append(keep, *h)
			continue
		}
		d.pace.Released(&h.o, now, false)
		if err := d.tr.Send(&h.o); err != nil {
			return fmt.Errorf("%s: send %s(%d): %w", h.o.From, h.o.From.Role.Stream(), h.o.Step, err)
		}
	}
	d.held = keep
	if len(d.held) == 0 {
		d.mem.reset()
	}
	return nil
}

// deadline is the earliest of the held releases and the waiting cores' step deadlines.
func (d *Driver) deadline() time.Time {
	if d.pace == nil {
		return time.Time{}
	}
	if !d.dl.IsZero() && d.dl.After(d.now) {
		return d.dl
	}
	var dl time.Time
	for k, c := range d.cores {
		if c.Done() {
			continue
		}
		if t := d.pace.Deadline(c, c.Cur(), d.since[k]); dl.IsZero() || t.Before(dl) {
			dl = t
		}
	}
	for _, h := range d.held {
		if dl.IsZero() || h.at.Before(dl) {
			dl = h.at
		}
	}
	d.dl = dl
	return dl
}

// Episode runs episode ep on every hosted core from the explicit initial state x0 (nil: the
// scenario's) until all are done. stop, if not nil, is polled every 256 deliveries: a non-nil
// error ends the episode early and is returned.
func (d *Driver) Episode(ep int, x0 []float64, stop func() error) error {
	if err := d.Begin(ep, x0); err != nil { // drive_steps.go
		return err
	}
	return d.loop(stop)
}

// Resume runs the rest of an episode whose cores were restored from their checkpoints (a
// process restarted after a crash): a core stopped at its crash point restarts, and the
// episode goes on as Episode.
func (d *Driver) Resume(stop func() error) error {
	d.reset()
	for k, c := range d.cores {
		if d.pace != nil {
			d.since[k] = d.now
		}
		if err := c.Restart(); err != nil {
			return err
		}
		if err := d.flush(k); err != nil {
			return err
		}
	}
	return d.loop(stop)
}

func (d *Driver) reset() {
	d.held, d.mem.buf = d.held[:0], d.mem.buf[:0]
	d.dl = time.Time{}
	clear(d.done)
	d.ndone = 0
	if d.pace != nil {
		d.now = d.pace.Now()
	}
}

// loop delivers and ticks until every hosted core is done.
func (d *Driver) loop(stop func() error) error {
	if d.lean {
		return d.leanLoop(stop)
	}
	polls := 0
	for {
		if d.pace != nil {
			if err := d.releaseDue(); err != nil {
				return err
			}
		}
		if d.ndone == len(d.cores) && len(d.held) == 0 {
			return nil
		}
		if polls++; stop != nil && polls&255 == 0 {
			if err := stop(); err != nil {
				return err
			}
		}
		m, err := d.recv()
		if d.pace != nil {
			d.now = d.pace.Now()
		}
		if err != nil {
			if !errors.Is(err, ErrIdle) {
				return err
			}
			if err := d.tickDue(); err != nil {
				return err
			}
			continue
		}
		if err := d.deliver(m); err != nil {
			return err
		}
	}
}

// leanLoop is loop for a lean driver (in memory, logical time, no sink): nothing is ever held
// and the clock is never read, so it only takes the network's queue in order - a clear
// broadcast straight to the cores that expect its sender - and ticks when the queue is empty.
func (d *Driver) leanLoop(stop func() error) error {
	for polls := 1; d.ndone < len(d.cores); polls++ {
		if stop != nil && polls&255 == 0 {
			if err := stop(); err != nil {
				return err
			}
		}
		m := d.net.q.pop()
		var err error
		switch {
		case m == nil:
			err = d.tickDue()
		case m.clear:
			err = d.deliverClear(m)
		default:
			err = d.deliver(m)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// deliverClear is deliver for a clear broadcast of the in-memory network (Msg.clear): it has
// no exceptions, so it goes to every hosted core that expects its sender.
func (d *Driver) deliverClear(m *Msg) error {
	if int(m.From.Role) >= len(d.route) || m.From.ID < 0 || m.From.ID >= len(d.route[m.From.Role]) {
		return nil // nobody here expects the sender
	}
	for _, to := range d.route[m.From.Role][m.From.ID] {
		k := int(to.k)
		if to.pos < 0 {
			if err := d.step(k, m); err != nil {
				return err
			}
			continue
		}
		b := d.bases[k]
		if !b.stepClear(int(to.pos), m) {
			b.stepFrom(int(to.pos), m)
		}
		if len(b.ob.rd.Out) == 0 && !b.done && !b.ob.rd.Crash && b.norec {
			continue // nothing to hand on (flushBase's first case, without the call)
		}
		if err := d.flushBase(k, b); err != nil {
			return err
		}
	}
	return nil
}

// recv is the transport's next delivery, waiting at most until the deadline (the in-memory
// network's queue without an interface call or a deadline: it never waits).
func (d *Driver) recv() (*Msg, error) {
	if d.net != nil && d.pace == nil {
		if m := d.net.q.pop(); m != nil {
			return m, nil
		}
		return nil, ErrIdle
	}
	return d.tr.Recv(d.deadline())
}

// deliver steps every hosted core the message is for.
func (d *Driver) deliver(m *Msg) error {
	if !m.ToAll { // addressed: one core, if it is hosted here
		k, ok := d.hosted.of(m.To)
		if !ok {
			return nil
		}
		return d.step(k, m)
	}
	var targets []routeTo
	if int(m.From.Role) < len(d.route) && m.From.ID >= 0 && m.From.ID < len(d.route[m.From.Role]) {
		targets = d.route[m.From.Role][m.From.ID]
	}
	if len(targets) == 0 {
		return nil // nobody here expects the sender (the transport counts such traffic)
	}
	for _, to := range targets {
		k, dm := int(to.k), m
		switch {
		case m.bits && to.link >= 0:
			if bit := uint64(1) << uint(to.link); m.skip&bit != 0 {
				if m.gaps&bit == 0 {
					continue // it has a delivery of its own
				}
				dm = d.gapFor(m, d.eps[k])
			}
		case len(m.Except) > 0:
			if j := slices.Index(m.Except, d.eps[k]); j >= 0 {
				if !m.bits || !m.gapAt(j) {
					continue // it has a delivery of its own
				}
				dm = d.gapFor(m, d.eps[k]) // a driver over a wrapped network: no route bits
			}
		}
		if to.pos >= 0 {
			b := d.bases[k]
			b.stepFrom(int(to.pos), dm)
			if err := d.flushBase(k, b); err != nil {
				return err
			}
			continue
		}
		if err := d.step(k, dm); err != nil {
			return err
		}
	}
	return nil
}

// gapFor returns the gap of broadcast m's sender to core e (one of Msg.gaps): the delivery
// the network filed with m rather than queued. It is valid until the next call.
func (d *Driver) gapFor(m *Msg, e endpoint.Endpoint) *Msg {
	g := &d.gap
	g.From, g.To, g.ToAll, g.Except, g.Episode, g.Step, g.At, g.Gap, g.More, g.Values = m.From, e, false, nil, m.Episode, m.Step, m.At, true, false, nil
	return g
}

// step hands m to core k and flushes what it produced. A core of this package is stepped
// through its base, without an interface call: the in-memory network delivers millions of
// messages per second, and the call would cost as much as the core's bookkeeping.
func (d *Driver) step(k int, m *Msg) error {
	if b := d.bases[k]; b != nil {
		_ = b.step(m) // a base's step files or drops: it has no error to return
	} else if err := d.cores[k].Deliver(m); err != nil {
		return err
	}
	return d.flush(k)
}

// tickDue ticks the cores whose step deadline passed. Logical time: nothing is pending, so the
// waiting cores of the earliest step waited in vain - they are ticked, until a tick releases
// something; a core at a later step may still hear from them, and what a tick released must be
// delivered before any other step is declared missing (a core without senders, a block holding
// every agent, completes its episode on its first tick).
func (d *Driver) tickDue() error {
	now := d.now
	d.dl = time.Time{} // recompute after the ticks
	sent, first := d.sent, -1
	if d.pace == nil {
		for _, c := range d.cores {
			if !c.Done() && (first < 0 || c.Cur() < first) {
				first = c.Cur()
			}
		}
	}
	for k, c := range d.cores {
		if d.pace == nil && d.sent != sent {
			return nil
		}
		if c.Done() || (d.pace == nil && c.Cur() != first) {
			continue
		}
		if d.pace != nil && d.pace.Deadline(c, c.Cur(), d.since[k]).After(now) {
			continue
		}
		if d.pace != nil {
			d.forced++
		}
		if err := c.Tick(c.Cur()); err != nil {
			return err
		}
		if err := d.flush(k); err != nil {
			return err
		}
	}
	return nil
}
