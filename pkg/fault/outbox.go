package fault

import (
	"fmt"
	"time"

	"github.com/dpsim/dpsim/pkg/rng"
)

// Broadcast is the To of a delivery that goes to every subscriber alike: on time, once.
const Broadcast = -1

// Delivery is one copy of a released message to one subscriber (or to all: To = Broadcast).
type Delivery struct {
	To int // subscriber index (Outbox order), or Broadcast
	// Except lists the subscribers a Broadcast is not for (they get deliveries of their own
	// at this release); nil: every subscriber.
	Except []int
	Step   int           // the message's own step
	At     int           // the logical step at which it is delivered (>= Step)
	Gap    bool          // no message: this publisher has nothing more for To at step At (lockstep)
	More   bool          // more deliveries from this publisher to To for step At follow
	Delay  time.Duration // wall-clock hold before sending (unit ms rules)
	Values []float64     // the payload (nil for a gap); valid until the next Release
}

// LinkStats counts what happened on one link. The injector (Outbox) fills Sent, Dropped,
// Duplicated, Delayed, Reordered and Expired; the receiver fills Delivered, Late, Gaps and
// DupReceived. Merged per link, they must agree: Delivered = Sent - Dropped + Duplicated -
// Expired, DupReceived = Duplicated, Late = the delayed and reordered copies delivered.
type LinkStats struct {
	Link string `json:"link"` // "from->to"

	Sent       uint64 `json:"sent"`       // messages released on the link (one per step)
	Dropped    uint64 `json:"dropped"`    // lost by the injector
	Duplicated uint64 `json:"duplicated"` // delivered twice by the injector
	Delayed    uint64 `json:"delayed"`    // held back >= 1 step (or some ms) by the injector
	Reordered  uint64 `json:"reordered"`  // held behind the link's next message by the injector
	Expired    uint64 `json:"expired"`    // delayed past the end of the episode: never delivered

	Delivered   uint64 `json:"delivered"`    // message copies the receiver got (duplicates and late ones included)
	Late        uint64 `json:"late"`         // of those, copies of an earlier step than the receiver's
	DupReceived uint64 `json:"dup_received"` // of those, second copies of a step already received
	Gaps        uint64 `json:"gaps"`         // steps at which the receiver got no message (lockstep gap notices)
	// Lost counts the copies not delivered because the receiver was down (faults.crashes):
	// Delivered = Sent - Dropped + Duplicated - Expired - Lost.
	Lost uint64 `json:"lost,omitempty"`
	// Conflicts counts copies of a step already received from the sender with OTHER values:
	// a forged or corrupted publisher (the injector's duplicates are exact copies). The
	// first copy was used; the run is degraded (or fails with --strict).
	Conflicts uint64 `json:"conflicts,omitempty"`
}

// Add adds o's counters to s (Link is kept).
func (s *LinkStats) Add(o *LinkStats) {
	s.Sent += o.Sent
	s.Dropped += o.Dropped
	s.Duplicated += o.Duplicated
	s.Delayed += o.Delayed
	s.Reordered += o.Reordered
	s.Expired += o.Expired
	s.Delivered += o.Delivered
	s.Late += o.Late
	s.DupReceived += o.DupReceived
	s.Gaps += o.Gaps
	s.Lost += o.Lost
	s.Conflicts += o.Conflicts
}

// Event is what the injector did to one message on one link (a line of a process's
// <name>.faults.jsonl): every message whose fate was not "on time, once" has one.
type Event struct {
	Link       string `json:"link"`
	Episode    int    `json:"episode"`
	Step       int    `json:"step"`
	Drop       bool   `json:"drop,omitempty"`
	Duplicate  bool   `json:"duplicate,omitempty"`
	Reorder    bool   `json:"reorder,omitempty"`
	DelaySteps int    `json:"delay_steps,omitempty"`
	DelayNS    int64  `json:"delay_ns,omitempty"`
}

// held is a copy waiting for its delivery step.
type held struct {
	at, step  int
	reordered bool
	delay     time.Duration
	vals      []float64
}

// Outbox is the publish side of one publisher's stream: it applies each subscriber's link
// to every release and yields the deliveries in the order of the package doc. It is pure (no
// I/O, no clock) and shared by the in-memory network and the NATS publisher, so both deliver
// the same copies at the same logical steps. An Outbox is not safe for concurrent use.
type Outbox struct {
	links   []*Link
	clear   bool
	ep      int
	pending [][]held
	free    [][]float64
	fates   []Fate
	stats   []LinkStats
	// counted is how many clear releases (Count) stats does not show yet: one increment per
	// release rather than one per link, added to every link's Sent when the counters are read.
	counted uint64
	scratch []Delivery
	bcast   Delivery
	gap     Delivery
	plain   []bool // per link at this release: the step's message on time, once, nothing else due
	except  []int
	// Log, when set, hears of every message whose fate on a link was not clear.
	Log func(*Event)
	ev  Event
	// lossy lists the dropping links when every link is clear or drop-only (Link.dropOnly)
	// and no subscriber ever crashes: a release is then one draw per dropping link and
	// nothing is ever held (releaseLossy). nil: the general path. lossyEp is the episode
	// whose keys lossy holds (-1: none).
	lossy   []lossyLink
	lossyEp int
	// nheld counts the copies held on all links (the lossy path requires none: copies held
	// under the links' earlier rules, SetLinks, take the general path until delivered).
	nheld int
}

// lossyLink is a drop-only link of an outbox on its lossy path: its position and the key of
// its drop draws in the current episode (Link.dropKey).
type lossyLink struct {
	k    int
	key  uint64
	drop float64
	l    *Link
}

// NewOutbox returns the outbox of a publisher whose subscribers are reached through links
// (one per subscriber, in the order Delivery.To indexes).
func NewOutbox(links []*Link) *Outbox {
	o := &Outbox{links: links, clear: true, pending: make([][]held, len(links)),
		fates: make([]Fate, len(links)), stats: make([]LinkStats, len(links)), plain: make([]bool, len(links))}
	for k, l := range links {
		o.stats[k].Link = l.Name()
		if !l.Clear() {
			o.clear = false
		}
	}
	o.classify()
	return o
}

// classify sets up the lossy path when the links allow it (see Outbox.lossy).
func (o *Outbox) classify() {
	o.lossy, o.lossyEp = nil, -1
	if o.clear {
		return
	}
	var lossy []lossyLink
	for k, l := range o.links {
		switch {
		case l.Clear():
		case l.dropOnly && len(l.downs) == 0:
			lossy = append(lossy, lossyLink{k: k, drop: l.drop, l: l})
		default:
			return
		}
	}
	o.lossy = lossy
	if cap(o.except) < len(lossy) {
		o.except = make([]int, 0, len(o.links))
	}
}

// SetLinks replaces the outbox's links by links to the same subscribers in the same order
// whose rules changed (a live intervention in the middle of an episode, whose rules act from a
// later step): the copies held and the counters stay.
func (o *Outbox) SetLinks(links []*Link) error {
	if len(links) != len(o.links) {
		return fmt.Errorf("fault: outbox has %d links, the new ones %d", len(o.links), len(links))
	}
	clear := true
	for k, l := range links {
		if l.Name() != o.links[k].Name() {
			return fmt.Errorf("fault: link %s replaced by link %s", o.links[k].Name(), l.Name())
		}
		clear = clear && l.Clear()
	}
	o.links, o.clear = links, clear
	o.classify()
	return nil
}

// Clear reports whether no link of the outbox has a rule: every release is one broadcast.
func (o *Outbox) Clear() bool { return o.clear }

// Links returns the subscribers' links.
func (o *Outbox) Links() []*Link { return o.links }

// Begin starts episode ep: copies still held from the previous one expire.
func (o *Outbox) Begin(ep int) {
	o.End()
	o.ep = ep
}

// End ends the episode: copies still held (delayed past the last step) expire, counted.
func (o *Outbox) End() {
	for k := range o.pending {
		for _, h := range o.pending[k] {
			o.stats[k].Expired++
			o.free = append(o.free, h.vals)
		}
		o.pending[k] = o.pending[k][:0]
	}
	o.nheld = 0
}

// SetStats restores the counters (a checkpoint's Stats after a restart).
func (o *Outbox) SetStats(st []LinkStats) error {
	if len(st) != len(o.stats) {
		return fmt.Errorf("fault: outbox has %d links, the counters %d", len(o.stats), len(st))
	}
	for k := range st {
		if st[k].Link != o.stats[k].Link {
			return fmt.Errorf("fault: counters of link %s restored into link %s", st[k].Link, o.stats[k].Link)
		}
	}
	copy(o.stats, st)
	o.counted = 0
	return nil
}

// Stats returns the injector's counters per link (a view).
func (o *Outbox) Stats() []LinkStats {
	if o.counted != 0 {
		for k := range o.stats {
			o.stats[k].Sent += o.counted
		}
		o.counted = 0
	}
	return o.stats
}

// Count records a release that a caller delivered itself as one broadcast, which it may do
// only when Clear reports true (the in-memory network's fast path): the same counts as
// Release, shown by Stats.
func (o *Outbox) Count() { o.counted++ }

// Release files the message of step t (values vals) and calls emit for every delivery due at
// logical step t, per subscriber in the order of the package doc. A step at which nothing is
// due for a subscriber yields a Gap for it. The subscribers whose link delivers just this
// message, on time and once, share one Broadcast (Except naming the others). The *Delivery and its Values
// are valid during the call only. No allocation in the steady state.
func (o *Outbox) Release(t int, vals []float64, emit func(*Delivery)) {
	if o.clear {
		o.Count()
		o.broadcast(t, vals, emit)
		return
	}
	if o.lossy != nil && o.nheld == 0 {
		o.releaseLossy(t, vals, emit)
		return
	}
	nplain := 0
	o.except = o.except[:0]
	links, fates, plain, stats := o.links, o.fates[:len(o.links)], o.plain[:len(o.links)], o.stats[:len(o.links)]
	for k, l := range links {
		stats[k].Sent++
		f := &fates[k]
		if l.dropOnly {
			*f = Fate{Drop: l.dropAt(o.ep, t)}
		} else {
			*f = Fate{}
			l.decide(o.ep, t, f)
		}
		plain[k] = f.Clear() && (len(o.pending[k]) == 0 || !o.due(k, t)) && (len(l.downs) == 0 || !l.Down(o.ep, t))
		if plain[k] {
			nplain++
		} else {
			o.except = append(o.except, k)
		}
	}
	if nplain > 0 { // one broadcast for the plain links, deliveries of their own for the others
		o.bcast = Delivery{To: Broadcast, Step: t, At: t, Values: vals}
		if len(o.except) > 0 {
			o.bcast.Except = o.except
		}
		emit(&o.bcast)
		if len(o.except) == 0 {
			return
		}
	}
	for k := range o.links {
		if o.plain[k] {
			continue
		}
		if o.Log != nil && !o.fates[k].Clear() {
			f := o.fates[k]
			o.ev = Event{Link: o.stats[k].Link, Episode: o.ep, Step: t, Drop: f.Drop, Duplicate: f.Duplicate,
				Reorder: f.Reorder, DelaySteps: f.DelaySteps, DelayNS: int64(f.Delay)}
			o.Log(&o.ev)
		}
		o.release(k, t, vals, emit)
	}
}

// releaseLossy is Release when every link is clear or drop-only, no subscriber crashes and
// nothing is held (Outbox.lossy): the same deliveries, from the same draws, as the general
// path - one broadcast for the links that deliver, then a gap for each link that dropped, in
// link order - without its per-link fates and held copies.
func (o *Outbox) releaseLossy(t int, vals []float64, emit func(*Delivery)) {
	except := o.drops(t)
	if len(except) < len(o.links) {
		// field by field: a composite literal is built on the stack and copied, whose wide
		// loads of the narrow stores just made stall the store forwarding
		b := &o.bcast
		b.To, b.Except, b.Step, b.At, b.Gap, b.More, b.Delay, b.Values = Broadcast, nil, t, t, false, false, 0, vals
		if len(except) > 0 {
			b.Except = except
		}
		emit(b)
	}
	for _, k := range except {
		o.logDrop(k, t)
		g := &o.gap
		g.To, g.Except, g.Step, g.At, g.Gap, g.More, g.Delay, g.Values = k, nil, t, t, true, false, 0, nil
		emit(g)
	}
}

// Drops is Release for a caller that delivers the message itself, on an outbox on its lossy
// path (every link clear or drop-only, no crashing subscriber, nothing held): it decides the
// fates of the message of step t and returns the links that lose it, in link order (a view
// valid until the next call), and true. Every other subscriber gets the message on time,
// once; each link returned gets a gap. The counters and Log are Release's. It returns false,
// doing nothing, for an outbox off that path: the caller then calls Release.
func (o *Outbox) Drops(t int) ([]int, bool) {
	if o.lossy == nil || o.nheld != 0 {
		return nil, false
	}
	except := o.drops(t)
	if o.Log != nil {
		for _, k := range except {
			o.logDrop(k, t)
		}
	}
	return except, true
}

// drops draws the fates of the message of step t on the lossy path (Sent counted once per
// release, Count, rather than per link) and returns the links that lose it (Dropped counted).
func (o *Outbox) drops(t int) []int {
	if o.lossyEp != o.ep {
		for i := range o.lossy {
			o.lossy[i].key = o.lossy[i].l.dropKey(o.ep)
		}
		o.lossyEp = o.ep
	}
	o.counted++
	// Every link is written at the next free place and kept only if dropped: no branch on
	// the draw (a 10 % loss would mispredict one in ten).
	lossy, idx := o.lossy, uint64(t)<<3+drawDrop
	except := o.except[:len(lossy)] // capacity: classify's
	n := 0
	for i := range lossy {
		ll := &lossy[i]
		except[n] = ll.k
		if rng.At(ll.key, idx) < ll.drop { // Link.dropAt's draw
			n++
		}
	}
	except = except[:n]
	for _, k := range except {
		o.stats[k].Dropped++
	}
	o.except = except
	return except
}

// logDrop tells Log, if set, of the loss of the message of step t on link k.
func (o *Outbox) logDrop(k, t int) {
	if o.Log != nil {
		o.ev = Event{Link: o.stats[k].Link, Episode: o.ep, Step: t, Drop: true}
		o.Log(&o.ev)
	}
}

// due reports whether a held copy is due on link k at step t.
func (o *Outbox) due(k, t int) bool {
	for _, h := range o.pending[k] {
		if h.at == t {
			return true
		}
	}
	return false
}

func (o *Outbox) broadcast(t int, vals []float64, emit func(*Delivery)) {
	o.bcast = Delivery{To: Broadcast, Step: t, At: t, Values: vals}
	emit(&o.bcast)
}

func (o *Outbox) hold(k int, h held, vals []float64) {
	var buf []float64
	if n := len(o.free); n > 0 {
		buf, o.free = o.free[n-1][:0], o.free[:n-1]
	}
	h.vals = append(buf, vals...)
	o.pending[k] = append(o.pending[k], h)
	o.nheld++
}

func (o *Outbox) release(k, t int, vals []float64, emit func(*Delivery)) {
	f := o.fates[k]
	st := &o.stats[k]
	out := o.scratch[:0]
	// 1. late copies due now, in the order they were held
	for _, h := range o.pending[k] {
		if h.at == t && !h.reordered {
			out = append(out, Delivery{To: k, Step: h.step, At: t, Delay: h.delay, Values: h.vals})
		}
	}
	// 2. the message itself, unless dropped or held
	switch {
	case f.Drop:
		st.Dropped++
	case f.DelaySteps == 0 && !f.Reorder:
		out = append(out, Delivery{To: k, Step: t, At: t, Delay: f.Delay, Values: vals})
		if f.Duplicate {
			st.Duplicated++
			out = append(out, Delivery{To: k, Step: t, At: t, Delay: f.Delay, Values: vals})
		}
		if f.Delay > 0 {
			st.Delayed++
		}
	default:
		at := t + f.DelaySteps
		if f.Reorder {
			at++
			st.Reordered++
		}
		if f.DelaySteps > 0 || f.Delay > 0 {
			st.Delayed++
		}
		h := held{at: at, step: t, reordered: f.Reorder, delay: f.Delay}
		o.hold(k, h, vals)
		if f.Duplicate {
			st.Duplicated++
			o.hold(k, h, vals)
		}
	}
	// 3. copies reordered behind this step's message
	for _, h := range o.pending[k] {
		if h.at == t && h.reordered {
			out = append(out, Delivery{To: k, Step: h.step, At: t, Delay: h.delay, Values: h.vals})
		}
	}
	if o.links[k].Down(o.ep, t) {
		// The receiver is down (crashed): what is due now is lost, and it waits for nothing.
		st.Lost += uint64(len(out))
		out = out[:0]
	} else if len(out) == 0 {
		out = append(out, Delivery{To: k, Step: t, At: t, Gap: true})
	}
	for i := range out {
		out[i].More = i < len(out)-1
		emit(&out[i])
	}
	o.scratch = out[:0]
	// forget what was delivered
	keep := o.pending[k][:0]
	for _, h := range o.pending[k] {
		if h.at == t {
			o.free = append(o.free, h.vals)
			o.nheld--
			continue
		}
		keep = append(keep, h)
	}
	o.pending[k] = keep
}
