package roleproc

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// natsTransport is sim.Transport over NATS for the cores one process hosts: a thin adapter.
// Outputs go through each publisher's fault.Outbox (the injector on the publish side, the
// same as the in-memory network's) and out as bus messages whose wire.Route headers carry the
// delivery metadata; deliveries come in through the process's one bus.Inbox.
type natsTransport struct {
	run      string
	in       deliveries
	conn     routedPublisher // publishes the delayed copies
	stop     <-chan struct{} // closed when the process stops (a rejoin wait ends)
	pubs     map[endpoint.Endpoint]*pubStream
	hosted   map[endpoint.Endpoint]bool // the hosted cores
	senders  map[endpoint.Endpoint]bool // the senders they expect
	realtime bool
	ep       int
	msg      sim.Msg
	lines    *delayLines // wall-clock delay lines per subscriber (ms rules only), shared by siblings
	except   []string    // scratch of a broadcast's Except
	exceptEP []endpoint.Endpoint
	// crashes of subscribers (faults.crashes) and the rejoins heard: a delivery due to a
	// restarted subscriber from its restart step waits for its ctl.rejoin.
	crashes []scenario.Crash
	rejoins *rejoins
	// stale counts the deliveries addressed to another subscriber of a subject heard here for
	// an episode already finished (a delayed copy meant for the plant that the eavesdropper
	// hears after it began its next episode); the cores count their own stale deliveries.
	stale uint64
	// batch, when set, coalesces the plain broadcasts of the publishers whose links have no
	// rule with those of the other episodes in flight (inflight.go); nil: one message each.
	batch *coalescer
	// idle, when set, is called before the inbox blocks with nothing to deliver (next).
	idle func() error
	// split is the batched message being handed out one episode at a time (Recv).
	split batchSplit
	// made is what sibling needs to build the transport of another episode in flight.
	made transportMade
	// mid is the process's mid-episode change of the faults, put in force by onMid before
	// the next release (live.go; nil: none can come)
	mid   *midFaults
	onMid func(c *midChange) error
}

// transportMade is what a transport was built from.
type transportMade struct {
	tio  transportIO
	subj wire.Subjects
	topo sim.Topology
	inj  *fault.Injector
}

// delayLines are the wall-clock delay lines of a process's transports, one per subscriber.
type delayLines struct {
	lines map[string]*delayLine
	mu    sync.Mutex
	err   error
	wg    sync.WaitGroup
}

// pubStream is one hosted publisher: its bus publisher, outbox and subscribers' names.
type pubStream struct {
	pub                   streamSender
	subject, sender, kind string
	ob                    *fault.Outbox
	names                 []string
	// wall is set when a link has wall-clock (ms) delays: every delivery then goes through
	// the per-subscriber delay lines, which keep each subscriber's order.
	wall bool
	// coalesce: no link of the publisher has a rule (fault.Outbox.Clear), so every release is
	// one plain broadcast, which may travel with the other episodes' of the same step.
	coalesce bool
}

// newNATSTransport is the transport of proc's cores: its deliveries come from in, its
// outputs go out through proc's connection, and with crashes in the scenario it hears the
// ctl.rejoin of restarted peers.
func newNATSTransport(proc *process, in *bus.Inbox, cores []sim.Core, inj *fault.Injector) (*natsTransport, error) {
	tio := transportIO{run: proc.cfg.Run, realtime: proc.cfg.Mode == wire.Realtime, in: in, conn: proc.conn, stop: proc.stopCh,
		publisher: func(subject, sender, kind string) streamSender {
			return proc.conn.Publisher(subject, proc.cfg.Run, sender, kind)
		}}
	topo := sim.NewTopology(proc.plan, sim.NewBlocks(proc.plan, proc.cfg.Batch))
	t := newTransport(tio, proc.subj, topo, cores, inj, proc.scn.Faults.Crashes)
	if t.rejoins != nil {
		if err := t.subscribeRejoins(proc); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// subscribeRejoins hears the ctl.rejoin of restarted peers into t.rejoins.
func (t *natsTransport) subscribeRejoins(proc *process) error {
	o := bus.CtlOptions{Expect: wire.Expect{Run: proc.cfg.Run, Episode: wire.AnyEpisode, Kind: wire.CtlRejoin}, Counters: &proc.ctl, OnInvalid: proc.logInvalid}
	sub, err := proc.conn.SubscribeCtl(proc.subj.AllCtlWord(wire.CtlRejoin), o, func(_ string, m *wire.Message) {
		t.rejoins.note(m.Sender, m.Episode)
		proc.echoRejoin(m)
	})
	if err != nil {
		return err
	}
	proc.ctlSubs = append(proc.ctlSubs, sub)
	return nil
}

// newTransport returns the transport of cores over tio: a publisher stream per hosted
// publisher (its outbox built from inj towards its subscribers in topo), and, when the
// scenario crashes processes, the rejoins its deliveries wait for.
func newTransport(tio transportIO, subj wire.Subjects, topo sim.Topology, cores []sim.Core, inj *fault.Injector, crashes []scenario.Crash) *natsTransport {
	t := &natsTransport{run: tio.run, in: tio.in, conn: tio.conn, stop: tio.stop, pubs: map[endpoint.Endpoint]*pubStream{}, hosted: map[endpoint.Endpoint]bool{},
		senders: map[endpoint.Endpoint]bool{}, realtime: tio.realtime, lines: &delayLines{lines: map[string]*delayLine{}},
		made: transportMade{tio: tio, subj: subj, topo: topo, inj: inj}}
	for _, c := range cores {
		t.hosted[c.Endpoint()] = true
		for _, s := range c.Senders() {
			t.senders[s] = true
		}
		if c.Endpoint().Role == endpoint.Eavesdropper {
			continue // it only listens
		}
		from := c.Endpoint()
		subs := topo.Subscribers(from)
		ps := &pubStream{subject: subj.Data(from), sender: from.String(), kind: from.Role.Stream(),
			ob: sim.NewPublisherOutbox(inj, from, subs)}
		ps.pub = tio.publisher(ps.subject, ps.sender, ps.kind)
		for _, s := range subs {
			ps.names = append(ps.names, s.String())
		}
		for _, l := range ps.ob.Links() {
			if l.WallDelay() {
				ps.wall = true
			}
		}
		ps.coalesce = ps.ob.Clear() && !ps.wall && !tio.realtime && len(crashes) == 0
		t.pubs[from] = ps
	}
	if len(crashes) > 0 && len(t.pubs) > 0 {
		t.crashes, t.rejoins = crashes, newRejoins()
	}
	return t
}

// sibling returns the transport of another set of the same cores (an episode in flight): its
// own outboxes (link fates and counters per episode) and publishers, the same inbox, delay
// lines, rejoins and coalescer.
func (t *natsTransport) sibling(cores []sim.Core) *natsTransport {
	m := t.made
	s := newTransport(m.tio, m.subj, m.topo, cores, m.inj, t.crashes)
	s.lines, s.rejoins, s.batch = t.lines, t.rejoins, t.batch
	return s
}

// Crashed implements sim.Crasher: the copies a crashed publisher's links held die with it.
func (t *natsTransport) Crashed(e endpoint.Endpoint) {
	if ps := t.pubs[e]; ps != nil {
		ps.ob.End()
	}
}

// awaitRejoin holds a delivery of step at (to the subscribers named, or all of ps's but
// except) until every one of them that restarts at or before at in this episode rejoined.
func (t *natsTransport) awaitRejoin(ps *pubStream, at int, to string, except []string) error {
	for _, c := range t.crashes {
		if !c.In(t.ep) || at < c.Restart {
			continue
		}
		if to != "" && to != c.Proc {
			continue
		}
		if to == "" && (!slices.Contains(ps.names, c.Proc) || slices.Contains(except, c.Proc)) {
			continue
		}
		deadline := time.Now().Add(DefaultRejoinTimeout)
		if err := t.rejoins.await(c.Proc, t.ep, deadline, t.stop); err != nil {
			return err
		}
	}
	return nil
}

// begin starts episode ep: only its messages are valid; the outboxes begin the episode.
func (t *natsTransport) begin(ep int) {
	t.in.SetEpisode(ep)
	t.beginOutboxes(ep)
}

// beginOutboxes starts episode ep on the outboxes only (an episode in flight: the inbox takes
// the whole group's).
func (t *natsTransport) beginOutboxes(ep int) {
	t.ep = ep
	for _, ps := range t.pubs {
		ps.ob.Begin(ep)
	}
}

// end ends the episode (held copies expire) and waits for the delay lines to empty.
func (t *natsTransport) end() error {
	for _, ps := range t.pubs {
		ps.ob.End()
	}
	l := t.lines
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Send implements sim.Transport.
func (t *natsTransport) Send(o *sim.Out) error {
	ps := t.pubs[o.From]
	if ps == nil {
		return fmt.Errorf("no publisher for %s", o.From)
	}
	if t.mid != nil {
		if err := t.checkMid(o.Step); err != nil {
			return err
		}
	}
	var err error
	ps.ob.Release(o.Step, o.Values, func(d *fault.Delivery) {
		if err != nil || (d.Gap && t.realtime) { // realtime: a loss gives no notice
			return
		}
		r := wire.Route{More: d.More, Gap: d.Gap}
		if d.At != d.Step {
			r.At = d.At // > d.Step >= 0
		}
		if d.To != fault.Broadcast {
			r.To = ps.names[d.To]
		} else if len(d.Except) > 0 {
			r.Except = t.except[:0]
			for _, k := range d.Except {
				r.Except = append(r.Except, ps.names[k])
			}
			t.except = r.Except
		}
		if t.rejoins != nil {
			if err = t.awaitRejoin(ps, d.At, r.To, r.Except); err != nil {
				return
			}
		}
		if !ps.wall {
			if t.batch != nil && ps.coalesce && r.IsZero() {
				t.batch.add(ps, t.ep, d.Step, d.Values)
				return
			}
			err = ps.pub.SendRouted(t.ep, d.Step, d.Values, r)
			return
		}
		// Wall-clock delays: every subscriber's deliveries queue on its own line, in order.
		if d.To != fault.Broadcast {
			t.queue(ps, r, d)
			return
		}
		except := r.Except
		r.Except = nil
		for _, name := range ps.names {
			if slices.Contains(except, name) {
				continue
			}
			r.To = name
			t.queue(ps, r, d)
		}
	})
	return err
}

// Recv implements sim.Transport: the next delivery addressed to a hosted core. A batched
// message (wire.Route.Episodes) is handed out as one delivery per episode, in episode order.
func (t *natsTransport) Recv(deadline time.Time) (*sim.Msg, error) {
	if t.split.next < t.split.n {
		return t.split.part(&t.msg), nil
	}
	for {
		m, err := t.next(deadline)
		switch {
		case errors.Is(err, bus.ErrTimeout):
			return nil, sim.ErrIdle
		case errors.Is(err, bus.ErrStopped):
			return nil, errStopped
		case err != nil:
			return nil, err
		}
		var to endpoint.Endpoint
		if m.Route.To != "" {
			if to, err = endpoint.Parse(m.Route.To); err != nil || !t.hosted[to] {
				if m.Episode < t.ep {
					t.stale++
				}
				continue // addressed to another subscriber of the same subject
			}
		}
		from, err := endpoint.Parse(m.Sender)
		if err != nil || !t.senders[from] {
			continue // the inbox validated the sender; a core does not expect it here
		}
		t.msg = sim.Msg{From: from, To: to, ToAll: m.Route.To == "", Episode: m.Episode, Step: m.Step, At: m.Step,
			Gap: m.Route.Gap, More: m.Route.More, Values: m.Values}
		if m.Route.At > 0 {
			t.msg.At = m.Route.At
		}
		if len(m.Route.Except) > 0 {
			t.exceptEP = t.exceptEP[:0]
			for _, e := range m.Route.Except {
				if x, err := endpoint.Parse(e); err == nil { // what is no endpoint is no core
					t.exceptEP = append(t.exceptEP, x)
				}
			}
			t.msg.Except = t.exceptEP
		}
		if n := m.Route.Count(); n > 1 {
			t.split = batchSplit{vals: m.Values, ep: m.Episode, n: n, dim: len(m.Values) / n}
			return t.split.part(&t.msg), nil
		}
		return &t.msg, nil
	}
}

// next is the inbox's next message. Before the inbox waits, the coalesced outputs go out: a
// process sends what its cores released for every episode in flight once it has nothing left
// to deliver (it is what its peers wait for). Then, before it blocks, it does its idle work
// (idle: the group's held trace records), which its peers' turn hides.
func (t *natsTransport) next(deadline time.Time) (*wire.Message, error) {
	if t.batch != nil && t.batch.pending() {
		m, err := t.in.Next(time.Time{})
		if !errors.Is(err, bus.ErrTimeout) {
			return m, err
		}
		if err := t.batch.flush(); err != nil {
			return nil, err
		}
		// The connection's flusher goroutine writes what was published; a process runs on
		// one thread (--child-gomaxprocs 1), so let it write now, not after the idle work.
		runtime.Gosched()
	}
	if t.idle != nil && !deadline.IsZero() {
		m, err := t.in.Next(time.Time{})
		if !errors.Is(err, bus.ErrTimeout) {
			return m, err
		}
		if err := t.idle(); err != nil {
			return nil, err
		}
	}
	return t.in.Next(deadline)
}

// delayLine publishes one subscriber's delayed deliveries in order, each not before its time.
type delayLine struct {
	ch chan delayed
}

type delayed struct {
	due   time.Time
	ps    *pubStream
	ep    int
	step  int
	vals  []float64
	route wire.Route
}

func (t *natsTransport) queue(ps *pubStream, r wire.Route, d *fault.Delivery) {
	l := t.lines.lines[r.To]
	if l == nil {
		l = &delayLine{ch: make(chan delayed, 1<<12)}
		t.lines.lines[r.To] = l
		go t.runLine(l)
	}
	t.lines.wg.Add(1)
	l.ch <- delayed{due: time.Now().Add(d.Delay), ps: ps, ep: t.ep, step: d.Step, vals: append([]float64(nil), d.Values...), route: r}
}

func (t *natsTransport) runLine(l *delayLine) {
	for d := range l.ch {
		if w := time.Until(d.due); w > 0 {
			time.Sleep(w)
		}
		m := wire.Message{V: wire.Version, Run: t.run, Episode: d.ep, Step: d.step, Sender: d.ps.sender,
			SentUnixNano: time.Now().UnixNano(), Kind: d.ps.kind, Values: d.vals}
		if err := t.conn.PublishRouted(d.ps.subject, &m, d.route); err != nil {
			t.lines.mu.Lock()
			if t.lines.err == nil {
				t.lines.err = err
			}
			t.lines.mu.Unlock()
		}
		t.lines.wg.Done()
	}
}

// close stops the delay lines (those its siblings share too).
func (t *natsTransport) close() {
	for _, l := range t.lines.lines {
		close(l.ch)
	}
	t.lines.lines = map[string]*delayLine{}
}
