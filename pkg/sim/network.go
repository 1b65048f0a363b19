package sim

import (
	"slices"
	"time"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
)

// Network is the in-memory transport of a whole run: every core's output goes through its
// publisher's fault.Outbox (the same injector the NATS publishers use) into one FIFO queue of
// deliveries. Run by a Driver without a Pacer it is lockstep in logical time: deterministic,
// allocation-free in the steady state, and - the faults being pure functions of the seed -
// bit-identical to a lockstep NATS run of the same scenario and seed.
type Network struct {
	pubs [endpoint.NumRoles][]*netPub // [role][id]: each publisher's outbox and subscribers
	all  []*netPub
	ep   int
	q    ring
	mem  arena
	cur  Msg
	// the release in progress (emit's context; a method value made once, so Send does not
	// allocate)
	from endpoint.Endpoint
	to   []endpoint.Endpoint
	emit func(*fault.Delivery)
	// bc is the queue position (ring.at) of the release's broadcast, -1 while there is none
	// (or its publisher has more than 64 subscribers): the release's gaps are filed with it
	// (Msg.gaps).
	bc int
	// publish hears every message the publishers put on the bus (SetPublish; nil: none), rel
	// is the step of the release in progress and pubd its Publication.
	publish func(*Publication)
	rel     int
	pubd    Publication
	emitPub func(*fault.Delivery)
}

// netPub is one publisher of the network: its outbox and subscribers (in outbox order).
type netPub struct {
	ob   *fault.Outbox
	subs []endpoint.Endpoint
}

// DataSubject is a publisher's data subject below dpsim.<run>. ("plant.0.yhat"): what
// subject rules of faults.links match.
func DataSubject(from endpoint.Endpoint) string { return from.String() + "." + from.Role.Stream() }

// NewNetwork connects the cores of a run of topology t: every publisher reaches its
// subscribers (t.Subscribers, the same lists as the NATS publishers'), through the links of
// inj (nil: no faults).
func NewNetwork(t Topology, cores []Core, inj *fault.Injector) *Network {
	n := &Network{}
	n.emit = n.deliver
	n.emitPub = n.deliverPublished
	for _, c := range cores {
		// Only the injector's exact copies travel here: no digests to keep (KeepCopyDigests).
		if kc, ok := c.(interface{ KeepCopyDigests(bool) }); ok {
			kc.KeepCopyDigests(false)
		}
		from := c.Endpoint()
		subs := t.Subscribers(from)
		if len(subs) == 0 || int(from.Role) >= len(n.pubs) || from.ID < 0 {
			continue // the eavesdropper only listens
		}
		np := &netPub{ob: NewPublisherOutbox(inj, from, subs), subs: subs}
		r := n.pubs[from.Role]
		for len(r) <= from.ID {
			r = append(r, nil)
		}
		r[from.ID] = np
		n.pubs[from.Role] = r
		n.all = append(n.all, np)
	}
	return n
}

// NewPublisherOutbox returns the outbox of publisher from towards subscribers subs (in that
// order): the one construction of a publisher's links, for the in-memory network and the
// NATS publishers alike.
func NewPublisherOutbox(inj *fault.Injector, from endpoint.Endpoint, subs []endpoint.Endpoint) *fault.Outbox {
	links := make([]*fault.Link, len(subs))
	for i, s := range subs {
		links[i] = inj.Link(from.String(), s.String(), DataSubject(from))
	}
	return fault.NewOutbox(links)
}

// Begin starts episode ep: the queue is emptied and the outboxes begin the episode.
func (n *Network) Begin(ep int) {
	n.ep = ep
	n.q.reset()
	for _, np := range n.all {
		np.ob.Begin(ep)
	}
}

// SetFaultLog makes every outbox report the messages whose fate was not clear to fn (nil:
// stop reporting).
func (n *Network) SetFaultLog(fn func(*fault.Event)) {
	for _, np := range n.all {
		np.ob.Log = fn
	}
}

// Crashed implements Crasher: what the crashed publisher's links still held dies with it
// (expired, counted), as in a killed process.
func (n *Network) Crashed(e endpoint.Endpoint) {
	if int(e.Role) < len(n.pubs) && e.ID >= 0 && e.ID < len(n.pubs[e.Role]) {
		if np := n.pubs[e.Role][e.ID]; np != nil {
			np.ob.End()
		}
	}
}

// End ends the episode: copies still held by the links expire (counted).
func (n *Network) End() {
	for _, np := range n.all {
		np.ob.End()
	}
}

// Send implements Transport.
func (n *Network) Send(o *Out) error {
	n.send(n.pub(o.From), o)
	return nil
}

// pub returns the publisher of endpoint e (nil: nobody subscribes to it).
func (n *Network) pub(e endpoint.Endpoint) *netPub {
	if int(e.Role) < len(n.pubs) && e.ID >= 0 && e.ID < len(n.pubs[e.Role]) {
		return n.pubs[e.Role][e.ID]
	}
	return nil
}

// send releases o through its publisher np (n.pub(o.From), which a Driver looks up once
// per core rather than once per message).
func (n *Network) send(np *netPub, o *Out) {
	if np == nil {
		return // nobody subscribes (a lone agent in a graph without edges)
	}
	if n.publish != nil { // every delivery the outbox emits is a bus message: no shortcut
		n.from, n.to, n.bc, n.rel = o.From, np.subs, -1, o.Step
		np.ob.Release(o.Step, o.Values, n.emitPub)
		return
	}
	if np.ob.Clear() { // no rule on any link: one broadcast, on time (the outbox counts it)
		np.ob.Count()
		m := n.q.push()
		m.From, m.To, m.ToAll, m.Episode, m.Step, m.At, m.Gap, m.More, m.clear = o.From, endpoint.Endpoint{}, true, n.ep, o.Step, o.Step, false, false, true
		m.Values, m.Except, m.bits = setVals(m.Values, o.Values), m.Except[:0], false // short: no memmove call
		return
	}
	if len(np.subs) <= 64 { // the subscribers as bits of Msg.skip and Msg.gaps
		if lost, ok := np.ob.Drops(o.Step); ok {
			n.sendLossy(np, o, lost)
			return
		}
	}
	n.from, n.to, n.bc = o.From, np.subs, -1
	np.ob.Release(o.Step, o.Values, n.emit)
}

// sendLossy queues the release of o by a publisher of at most 64 subscribers whose outbox
// decided it on its lossy path (fault.Outbox.Drops): the subscribers of the links in lost
// get a gap, the others the message - one queued message, the broadcast with those gaps
// filed with it (Msg.gaps), as deliver files a Release's. Without a loss it is a clear
// broadcast.
func (n *Network) sendLossy(np *netPub, o *Out, lost []int) {
	m := n.q.push()
	m.From, m.To, m.ToAll, m.Episode, m.Step, m.At, m.Gap, m.More, m.clear = o.From, endpoint.Endpoint{}, true, n.ep, o.Step, o.Step, false, false, len(lost) == 0
	m.Values, m.Except = setVals(m.Values, o.Values), m.Except[:0]
	var bits uint64
	for _, k := range lost {
		m.Except = append(m.Except, np.subs[k])
		bits |= 1 << uint(k)
	}
	m.bits, m.skip, m.gaps = true, bits, bits
}

// deliver queues one delivery of the release in progress. A gap (the message lost: nothing
// else comes from the publisher to that subscriber for the step) is filed with the release's
// broadcast, if there is one and the publisher has at most 64 subscribers, rather than queued
// on its own: it is then delivered in the broadcast's place, ahead of the release's other
// deliveries to other subscribers - an order among subscribers, which lockstep cores do not
// depend on.
func (n *Network) deliver(d *fault.Delivery) {
	if d.Gap && d.To != fault.Broadcast && n.bc >= 0 {
		n.q.at(n.bc).gaps |= 1 << uint(d.To)
		return
	}
	m := n.q.push()
	m.From, m.To, m.ToAll, m.Episode, m.Step, m.At, m.Gap, m.More, m.clear = n.from, endpoint.Endpoint{}, false, n.ep, d.Step, d.At, d.Gap, d.More, false
	m.Except, m.bits, m.skip, m.gaps = m.Except[:0], false, 0, 0
	if d.To == fault.Broadcast {
		m.ToAll = true
		for _, k := range d.Except {
			m.Except = append(m.Except, n.to[k])
			m.skip |= 1 << uint(k&63)
		}
		if len(n.to) <= 64 {
			m.bits, n.bc = true, n.q.tail-1-n.q.head
		}
	} else {
		m.To = n.to[d.To]
	}
	m.Values = append(m.Values[:0], d.Values...) // a gap: none
}

// Publication is one message a publisher of the network puts on the bus as a NATS process
// publishes it (internal/roleproc's transport): every delivery its outbox emits at a release
// (fault.Outbox.Release) - the broadcast, a copy of its own to one subscriber (delayed,
// duplicated, reordered), a lockstep gap notice - is one message on the publisher's data
// subject, carrying the message's own step and values (a gap: none). Where it goes - its
// route, which a NATS run carries in headers (wire.Route) - is To or every subscriber but
// Except, at step At, More.
type Publication struct {
	From    endpoint.Endpoint
	Episode int
	// Release is the step of the release that put it out: the lockstep clock (a copy delayed
	// from step Step goes out at a later release).
	Release int
	Step    int
	Gap     bool
	Values  []float64 // valid during the call only; nil for a gap
	// ToOne: the message is for To alone; else for every subscriber but Except (valid during
	// the call only; nil: every one), in the publisher's subscriber order.
	ToOne  bool
	To     endpoint.Endpoint
	Except []endpoint.Endpoint
	At     int  // the step it is delivered at (> Step: delayed)
	More   bool // more deliveries from From to To for step At follow
}

// SetPublish makes fn (nil: none) hear every message the publishers put on the bus, in the
// order they put them out, before it is queued for delivery. With fn set every release takes
// the outbox's general path (fault.Outbox.Release, the one the NATS publishers take) instead
// of the network's shortcuts for clear and lossy publishers: the same draws and deliveries,
// so the same numbers.
func (n *Network) SetPublish(fn func(*Publication)) { n.publish = fn }

// deliverPublished tells the publish hook of one delivery of the release in progress, then
// queues it.
func (n *Network) deliverPublished(d *fault.Delivery) {
	p := &n.pubd
	p.From, p.Episode, p.Release, p.Step, p.Gap, p.Values = n.from, n.ep, n.rel, d.Step, d.Gap, d.Values
	p.ToOne, p.To, p.Except, p.At, p.More = d.To != fault.Broadcast, endpoint.Endpoint{}, p.Except[:0], d.At, d.More
	if p.ToOne {
		p.To = n.to[d.To]
	}
	for _, k := range d.Except {
		p.Except = append(p.Except, n.to[k])
	}
	n.publish(p)
	n.deliver(d)
}

// gapAt reports whether the j-th of a broadcast's Except is one of its gaps (bits only):
// Except lists the excepted subscribers in the publisher's order, so the j-th set bit of skip
// is its position.
func (m *Msg) gapAt(j int) bool {
	s := m.skip
	for ; j > 0; j-- {
		s &= s - 1
	}
	return m.gaps&(s&-s) != 0
}

// Recv implements Transport: the oldest queued delivery, or ErrIdle (logical time: the queue is
// empty, so every step a core still waits on has reached its deadline).
func (n *Network) Recv(time.Time) (*Msg, error) {
	m := n.q.pop()
	if m == nil {
		return nil, ErrIdle
	}
	return m, nil
}

// ring is the network's FIFO of deliveries: a ring of reused slots (each keeps its value
// buffer), so a run's queue stays a few cache lines and allocates nothing in the steady state.
// A popped slot is not reused before the ring wraps around, so the *Msg Recv returns stays
// valid while the driver hands it to every core it is for.
type ring struct {
	buf        []Msg
	head, tail int // pop at head, push at tail; count = tail - head
}

func (r *ring) reset() { r.head, r.tail = 0, 0 }

func (r *ring) push() *Msg {
	// Grow one slot early: the slot popped last (the message being delivered) is not reused.
	if r.tail-r.head >= len(r.buf)-1 {
		r.grow()
	}
	m := &r.buf[r.tail&(len(r.buf)-1)]
	r.tail++
	return m
}

// at returns the slot i places behind the head (pushed, not popped).
func (r *ring) at(i int) *Msg { return &r.buf[(r.head+i)&(len(r.buf)-1)] }

func (r *ring) pop() *Msg {
	if r.head == r.tail {
		return nil
	}
	m := &r.buf[r.head&(len(r.buf)-1)]
	r.head++
	return m
}

// grow doubles the ring, keeping the order. The old array stays alive while a popped *Msg
// still points into it.
func (r *ring) grow() {
	n := max(64, 2*len(r.buf))
	nb := make([]Msg, n)
	k := 0
	for i := r.head; i < r.tail; i++ {
		nb[k] = r.buf[i&(len(r.buf)-1)]
		nb[k].Values = append([]float64(nil), nb[k].Values...) // the old slot may still be read
		nb[k].Except = append([]endpoint.Endpoint(nil), nb[k].Except...)
		k++
	}
	r.buf, r.head, r.tail = nb, 0, k
}

// LinkStats returns the injector's counters of every link (sorted by link name), merged with
// the receive-side counters of cores.
func (n *Network) LinkStats(cores []Core) []fault.LinkStats {
	return MergeLinkStats(n.injectorStats(), coreStats(cores))
}

func (n *Network) injectorStats() []fault.LinkStats {
	var out []fault.LinkStats
	for _, np := range n.all {
		out = append(out, np.ob.Stats()...)
	}
	return out
}

func coreStats(cores []Core) []fault.LinkStats {
	var out []fault.LinkStats
	for _, c := range cores {
		out = append(out, c.LinkStats()...)
	}
	return out
}

// MergeLinkStats adds up counters of the same link from any number of lists (the injector's
// side and the receivers' side, several processes), sorted by link name.
func MergeLinkStats(lists ...[]fault.LinkStats) []fault.LinkStats {
	byName := map[string]*fault.LinkStats{}
	for _, l := range lists {
		for i := range l {
			s := byName[l[i].Link]
			if s == nil {
				s = &fault.LinkStats{Link: l[i].Link}
				byName[l[i].Link] = s
			}
			s.Add(&l[i])
		}
	}
	out := make([]fault.LinkStats, 0, len(byName))
	for _, s := range byName {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b fault.LinkStats) int {
		switch {
		case a.Link < b.Link:
			return -1
		case a.Link > b.Link:
			return 1
		}
		return 0
	})
	return out
}
