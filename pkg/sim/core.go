package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
)

// Msg is one delivery to a core: a message of step Step from From, delivered at logical step
// At (At > Step: delayed; see pkg/fault), or a Gap (From has nothing more for this core at
// step At). More says further deliveries from From for step At follow. Values belong to the
// caller; a core copies what it keeps.
type Msg struct {
	From    endpoint.Endpoint
	To      endpoint.Endpoint   // the subscriber it is addressed to, unless ToAll
	ToAll   bool                // for every subscriber of From ...
	Except  []endpoint.Endpoint // ... but these (they get deliveries of their own)
	Episode int
	Step    int
	At      int
	Gap     bool
	More    bool
	Values  []float64
	// clear marks the in-memory network's broadcast that every subscriber gets on time and
	// once: of a publisher none of whose links has a fault rule (fault.Outbox.Clear), or a
	// release no link lost on the lossy path (fault.Outbox.Drops). A receiver takes it in its
	// clear lane (base.stepClear). Nothing else sets it.
	clear bool
	// bits: the in-memory network's broadcast of a publisher of at most 64 subscribers, whose
	// Except is also skip, as bits of the subscribers' positions in the publisher's list; gaps
	// are those of them whose delivery is a gap (the message lost): the network files a
	// release's gaps with its broadcast rather than as messages of their own, and the driver
	// hands each its gap in the broadcast's place (Driver.gapFor). Nothing else sets them.
	bits       bool
	skip, gaps uint64
}

// Out is a message a core releases: its stream's value of step Step (the stream is the
// publisher's: yhat for the plant, u for the cloud, y for an agent).
type Out struct {
	From   endpoint.Endpoint
	Step   int
	Values []float64
}

// Ready is what a core produced since the last call to Ready: messages to release (in order)
// and its partial records (see trace.ControlRecord, trace.AgentRecord). Slices are views valid until the
// next call on the core.
type Ready struct {
	Out       []Out
	Control   []trace.ControlRecord   // plant, cloud, eavesdropper (cloud control)
	Consensus []trace.ConsensusRecord // eavesdropper (consensus)
	Agent     []trace.AgentRecord     // agents
	Blocks    []trace.BlockRecord     // agent hosts: one record per step for the whole block
	// Missing counts the inputs the core went without (step deadline passed: its
	// missing-input rule applied) since the last Ready.
	Missing int
	// Done reports the episode complete (as Core.Done).
	Done bool
	// Crash reports that the core reached its crash point (faults.crashes): it completed the
	// step before the crash and stopped there. The caller checkpoints or kills what it must,
	// then calls Restart (at once in memory; in the restarted process after Restore).
	Crash bool
}

// Core is a role as a deterministic, message-driven state machine (in the manner of etcd
// raft's Step/Ready; raft's Step is Deliver here, since a step is a time step): messages and
// deadlines in, messages and records out, no I/O, no clock, no goroutines. The order of a run's steps is not written in any loop: it follows from what
// each core needs before it can complete a step. One driver (Drive) runs cores over an
// in-memory network or over NATS.
//
// Per episode: Begin, then Deliver for every delivery addressed to the core and Tick(t) when
// the deadline of step t passed (a lockstep network needs no Tick: its gap notices complete
// every step); after each call, Ready. Cur is the step whose inputs the core waits for; Done
// reports the episode complete (the terminal record produced).
type Core interface {
	Endpoint() endpoint.Endpoint
	// Begin starts episode ep from the explicit initial state x0 (nil: the scenario's).
	Begin(ep int, x0 []float64) error
	// Deliver files one delivery. Deliveries of other episodes or from unexpected senders are
	// counted (Unexpected) and dropped.
	Deliver(m *Msg) error
	// Tick says the deadline of step t passed: if the core still waits on step t, it completes
	// it with its missing-input rule.
	Tick(t int) error
	Ready() *Ready
	Cur() int
	Done() bool
	// Senders lists the endpoints the core expects a delivery from at every step.
	Senders() []endpoint.Endpoint
	// LinkStats returns the receive-side counters per expected sender (a view), keyed
	// "<sender>-><this endpoint>".
	LinkStats() []fault.LinkStats
	// Unexpected counts deliveries dropped as not for this core's episode or senders.
	Unexpected() uint64
	// Stale counts deliveries for an episode the core had finished (the previous one, or the
	// current one after its end): never used, but compared with the copy that was (a
	// differing one is a conflict in LinkStats).
	Stale() uint64
	// SetRecords turns the partial records of Ready on (the default) or off: the auditor's
	// loop needs only the eavesdropper's final estimate, not a per-step estimate and trace.
	SetRecords(on bool)
	// Restart continues a core stopped at its crash point (Ready.Crash): it passes the down
	// steps (state frozen, nothing released, a down record each) and is back at the crash's
	// restart step. It is a no-op for a core that is not stopped.
	Restart() error
}

// arena hands out float64 slices that stay valid until reset, without moving earlier ones.
type arena struct{ buf []float64 }

func (a *arena) take(n int) []float64 {
	if len(a.buf)+n > cap(a.buf) {
		a.buf = make([]float64, 0, max(2*cap(a.buf), n, 64))
	}
	s := a.buf[len(a.buf) : len(a.buf)+n : len(a.buf)+n]
	a.buf = a.buf[:len(a.buf)+n]
	return s
}

func (a *arena) copy(v []float64) []float64 {
	if v == nil {
		return nil
	}
	s := a.take(len(v))
	copy(s, v)
	return s
}

func (a *arena) reset() { a.buf = a.buf[:0] }

// outbuf is a core's Ready under construction.
type outbuf struct {
	rd       Ready
	mem      arena
	consumed bool
}

func (o *outbuf) ready() *Ready {
	o.consumed = true
	return &o.rd
}

// clearIfConsumed starts a new Ready once the caller took the last one.
func (o *outbuf) clearIfConsumed() {
	if o.consumed {
		o.clear()
	}
}

// released empties a buffer whose one output the driver released without taking the Ready
// (Driver.flushBase: records off, nobody reads Missing): nothing is left to clear.
func (o *outbuf) released() {
	o.rd.Out = o.rd.Out[:0]
	o.rd.Missing = 0
	o.mem.reset()
}

// clear forgets the last Ready (its views are no longer used).
func (o *outbuf) clear() {
	o.rd.Out, o.rd.Control, o.rd.Consensus, o.rd.Agent = o.rd.Out[:0], o.rd.Control[:0], o.rd.Consensus[:0], o.rd.Agent[:0]
	o.rd.Blocks = o.rd.Blocks[:0]
	o.rd.Missing = 0
	o.mem.reset()
	o.consumed = false
}

// inputs is the receive side of a core: the deliveries of its expected senders filed by step,
// what arrived on time for the current step, the newest value heard from each sender (for the
// missing-input rules), duplicates, and the per-link receive counters. Deliveries for a later
// logical step wait (in arrival order) until the core gets there.
//
// Integrity: every second copy of a (sender, episode, step) whose values differ from the
// first one's is a conflict (forged or corrupted traffic), whenever it arrives - on time,
// late for any older step, after the core finished the episode, or after it began the next
// one. For that the digest of the first copy of every step is kept per sender for the current
// and the previous episode (O(senders x T) words). Copies for an episode the core finished are
// counted stale (never used), apart from the unexpected ones.
type inputs struct {
	self    endpoint.Endpoint
	senders []endpoint.Endpoint
	index   endpointIndex
	T       int
	ep      int
	prevEp  int // the episode before ep (-1: none): its digests are in sender.prev
	cur     int
	// copies: keep the digests (see above). Off only for the in-memory network, whose
	// injector delivers exact copies and nobody else can publish (KeepCopyDigests).
	copies bool

	from  []sender // per expected sender, in Senders order
	ndone int
	// nhave counts the senders whose step-cur message arrived (have): missing() is then 0
	// without a look at each sender, the usual case.
	nhave int
	ahead []Msg       // deliveries for a later logical step, in arrival order
	spare [][]float64 // value buffers of consumed ahead deliveries

	stats      []fault.LinkStats
	unexpected uint64
	// stale counts the deliveries for an episode the core had finished (late copies of the
	// previous episode, copies after the end): a timing effect, compared, never used.
	stale uint64
	// weight[k] is how many agents' inputs sender k's message carries (nil: one each): a host's
	// message counts as the outputs of its agents in missing(), as if each had sent its own.
	weight []int
	// dim[k], if set, is the length of sender k's messages: a delivery of another length (not a
	// gap) is dropped as unexpected - a block's message must carry every one of its agents.
	dim []int

	// crashes of the run (faults.crashes); this episode's down windows [lo, hi) of the core
	// itself and of each sender (hi = 0: none).
	crashes        []scenario.Crash
	selfLo, selfHi int
	sendDown       [][2]int
}

// downWindow returns the window [lo, hi) in which endpoint e is down in episode ep.
func downWindow(crashes []scenario.Crash, e string, ep int) (lo, hi int) {
	for _, c := range crashes {
		if c.Proc == e && c.In(ep) {
			return c.Step, c.Restart
		}
	}
	return 0, 0
}

// selfDown reports whether the core itself is down at step t.
func (in *inputs) selfDown(t int) bool { return t >= in.selfLo && t < in.selfHi }

// markDown completes, at the current step, the senders that are down (nothing will come:
// the step's gap) - or every sender when the core itself is down.
func (in *inputs) markDown() {
	if in.selfHi != 0 || len(in.crashes) > 0 { // small enough to inline: no call without crashes
		in.markDownNow()
	}
}

// markDownNow is markDown's work. Not inlined, so that markDown (run at every step) stays
// small enough to be: without crashes it is one comparison, not a call.
//
//go:noinline
func (in *inputs) markDownNow() {
	self := in.selfDown(in.cur)
	for k := range in.from {
		f := &in.from[k]
		if f.done {
			continue
		}
		w := in.sendDown[k]
		if self || (in.cur >= w[0] && in.cur < w[1]) {
			f.done = true
			in.ndone++
			if !self {
				in.stats[k].Gaps++
			}
		}
	}
}

// sender is what a core knows of one expected sender, together in memory.
type sender struct {
	have   bool      // its step-cur message arrived
	done   bool      // it finished step cur (its last delivery for At = cur)
	nstep  int       // newest step heard from it (-1: none)
	vals   []float64 // the step-cur values
	newest []float64 // the values of step nstep, unless fresh
	seen   []uint64  // bitset of the late steps received (their duplicates)
	// used[t] / prev[t]: the digest of the first copy of step t received in the current /
	// previous episode (0: none; digest is never 0); nil when copies are not kept.
	used, prev []uint64
	// fresh: step nstep's values are vals (the usual case, a message on time: the newest
	// values are not copied a second time); newest is then stale. See newestVals.
	fresh bool
}

// digest is a 64-bit hash of a message's values (bit patterns, so a copy matches only
// itself), never 0. Collisions need not be hard to find: a forger who sees the genuine values
// can only craft a copy that arrives after them, and the first copy is the one used.
func digest(v []float64) uint64 {
	h := uint64(len(v))*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	for _, x := range v {
		h ^= math.Float64bits(x)
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 29
	}
	return h | 1
}

// record notes the digest of the first copy of step t (nil table: copies not kept) and
// reports whether a copy already noted differs from v (a conflict).
func record(table []uint64, t int, v []float64) (conflict bool) {
	if table == nil {
		return false
	}
	d := digest(v)
	if table[t] == 0 {
		table[t] = d
		return false
	}
	return table[t] != d
}

// copyVals is copy(dst, src) for the short vectors of a step (u, yhat, xhat: no memmove call
// below 9 values, a memmove call above).
func copyVals(dst, src []float64) {
	if len(src) > 8 {
		copy(dst, src)
		return
	}
	src = src[:min(len(src), len(dst))]
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = x
	}
}

// setVals copies v into dst's storage (short vectors, the usual case: no memmove call; a
// block's message of thousands of agents: one).
func setVals(dst []float64, v []float64) []float64 {
	if len(v) > 8 || len(v) > cap(dst) {
		return append(dst[:0], v...)
	}
	dst = dst[:len(v)]
	for i, x := range v {
		dst[i] = x
	}
	return dst
}

func newInputs(self endpoint.Endpoint, senders []endpoint.Endpoint, T int) *inputs {
	n := len(senders)
	in := &inputs{self: self, senders: senders, index: newEndpointIndex(senders), T: T, ep: -1, prevEp: -1,
		from: make([]sender, n), stats: make([]fault.LinkStats, n), sendDown: make([][2]int, n)}
	words := (T + 63) / 64
	for k, s := range senders {
		in.from[k].seen = make([]uint64, words)
		in.stats[k].Link = s.String() + "->" + self.String()
	}
	in.keepCopies(true)
	return in
}

// keepCopies turns the digests of the copies received on or off (see inputs).
func (in *inputs) keepCopies(on bool) {
	in.copies = on
	for k := range in.from {
		f := &in.from[k]
		switch {
		case on && f.used == nil:
			f.used, f.prev = make([]uint64, in.T), make([]uint64, in.T)
		case !on:
			f.used, f.prev = nil, nil
		}
	}
}

// begin starts episode ep at step 0: everything from the previous episode is forgotten but
// the digests of its copies (deliveries still waiting are of a finished episode: stale).
func (in *inputs) begin(ep int) {
	in.prevEp, in.ep, in.cur, in.ndone, in.nhave = in.ep, ep, 0, 0, 0
	for k := range in.from {
		f := &in.from[k]
		f.keepNewest()
		f.have, f.done, f.nstep = false, false, -1
		clear(f.seen)
		f.used, f.prev = f.prev, f.used
		clear(f.used)
	}
	for i := range in.ahead {
		in.fileStale(&in.ahead[i])
		in.spare = append(in.spare, in.ahead[i].Values[:0])
	}
	in.ahead = in.ahead[:0]
	if len(in.crashes) > 0 {
		in.selfLo, in.selfHi = downWindow(in.crashes, in.self.String(), ep)
		for k, s := range in.senders {
			in.sendDown[k][0], in.sendDown[k][1] = downWindow(in.crashes, s.String(), ep)
		}
		in.markDown()
	}
}

// complete reports whether every sender finished the current step.
func (in *inputs) complete() bool { return in.ndone == len(in.from) }

// missing returns how many senders' step-cur messages are absent.
func (in *inputs) missing() int {
	if in.weight == nil || in.nhave == len(in.from) {
		return len(in.from) - in.nhave // nhave counts the senders whose message is there
	}
	n := 0
	for k := range in.from {
		if !in.from[k].have {
			if in.weight != nil {
				n += in.weight[k]
			} else {
				n++
			}
		}
	}
	return n
}

// wellFormed returns the position of m's sender if m is a delivery this core could take at
// all (expected sender, steps within the horizon, its sender's dimension).
func (in *inputs) wellFormed(m *Msg) (int, bool) {
	k, ok := in.index.of(m.From)
	if !ok || m.Step < 0 || m.Step >= in.T || m.At < m.Step || m.At >= in.T ||
		(in.dim != nil && !m.Gap && len(m.Values) != in.dim[k]) {
		return 0, false
	}
	return k, true
}

// file takes one delivery: wrong sender or later episode is dropped (counted unexpected), an
// earlier episode's is stale, a later logical step waits, anything else is applied now.
func (in *inputs) file(m *Msg) {
	if in.usual(m) {
		if k, ok := in.index.of(m.From); ok && in.fits(k, m) {
			in.apply(k, m)
			return
		}
	}
	if m.Episode < in.ep {
		in.fileStale(m)
		return
	}
	k, ok := in.wellFormed(m)
	if !ok || m.Episode != in.ep {
		in.unexpected++
		return
	}
	if m.At > in.cur {
		// Waiting deliveries are bounded: a sender has at most a few per step (its message,
		// a duplicate, late copies), so more than 4 per sender and remaining step is a flood.
		if len(in.ahead) >= 4*len(in.from)*(in.T-in.cur) {
			in.unexpected++
			return
		}
		var buf []float64
		if n := len(in.spare); n > 0 {
			buf, in.spare = in.spare[n-1], in.spare[:n-1]
		}
		c := *m
		c.Values = append(buf[:0], m.Values...)
		in.ahead = append(in.ahead, c)
		return
	}
	in.apply(k, m)
}

// usual reports whether m is for the current episode and step and on time (the usual
// delivery): the checks of wellFormed then hold by themselves but the sender's and the
// dimension (fits).
func (in *inputs) usual(m *Msg) bool {
	return m.Episode == in.ep && m.Step == in.cur && m.At == in.cur && in.cur < in.T
}

// fits reports whether m has the length of sender k's messages (or is a gap).
func (in *inputs) fits(k int, m *Msg) bool {
	return in.dim == nil || m.Gap || len(m.Values) == in.dim[k]
}

// fileStale takes a delivery for an episode the core finished (an earlier one, or the current
// one after its end): counted stale and compared with the first copy of its step (current and
// previous episode only: nothing older is kept), never used.
func (in *inputs) fileStale(m *Msg) {
	k, ok := in.wellFormed(m)
	if !ok || m.Episode > in.ep {
		in.unexpected++
		return
	}
	in.stale++
	if m.Gap {
		return
	}
	var table []uint64
	switch m.Episode {
	case in.ep:
		table = in.from[k].used
	case in.prevEp:
		table = in.from[k].prev
	}
	if record(table, m.Step, m.Values) {
		in.stats[k].Conflicts++
	}
}

// differs reports whether m, a second copy of a step of the current episode, differs from
// the first. Without digests (the in-memory network, whose copies are exact) only the values
// still held are compared: the current step's, or the newest step's.
func (in *inputs) differs(f *sender, m *Msg) bool {
	switch {
	case in.copies:
		return record(f.used, m.Step, m.Values)
	case m.Step == in.cur:
		return !slices.Equal(f.vals, m.Values)
	case m.Step == f.nstep:
		return !slices.Equal(f.newestVals(), m.Values)
	}
	return false
}

func (in *inputs) apply(k int, m *Msg) {
	f := &in.from[k]
	switch {
	case m.Gap:
		in.stats[k].Gaps++
	case m.Step == in.cur:
		// On time. A duplicate of an on-time message is on time too (the injector holds or
		// passes both copies alike), so have detects it without the bitset.
		in.stats[k].Delivered++
		if f.have {
			in.stats[k].DupReceived++
			if in.differs(f, m) {
				in.stats[k].Conflicts++ // not a copy: forged or corrupted
			}
			break
		}
		record(f.used, m.Step, m.Values)
		f.have = true
		in.nhave++
		f.vals = setVals(f.vals, m.Values)
		// Remember the step: a later copy of it - a forged early message used now, the genuine
		// one after - is then a duplicate (a conflict when the values differ), never "late".
		f.seen[uint(m.Step)/64] |= uint64(1) << (uint(m.Step) % 64) // Step >= 0 (wellFormed)
		// Always newer than nstep (nothing of a later step than cur is applied): vals now hold
		// the newest values.
		if m.Step > f.nstep {
			f.nstep, f.fresh = m.Step, true
		}
	default: // late (Step < cur): the bitset of late steps received detects its duplicates
		st := &in.stats[k]
		st.Delivered++
		w, bit := uint(m.Step)/64, uint64(1)<<(uint(m.Step)%64)
		if f.seen[w]&bit != 0 {
			st.DupReceived++
			if in.differs(f, m) {
				st.Conflicts++ // forged or corrupted
			}
			break
		}
		record(f.used, m.Step, m.Values)
		f.seen[w] |= bit
		st.Late++
		if m.Step > f.nstep {
			f.nstep, f.fresh = m.Step, false
			f.newest = setVals(f.newest, m.Values)
		}
	}
	if !m.More && m.At == in.cur && !f.done {
		f.done = true
		in.ndone++
	}
}

// advance moves to the next step and applies the deliveries that waited for it.
func (in *inputs) advance() {
	in.cur++
	in.ndone, in.nhave = 0, 0
	for k := range in.from {
		in.from[k].have, in.from[k].done = false, false
	}
	in.markDown()
	if len(in.ahead) == 0 {
		return
	}
	keep := in.ahead[:0]
	for i := range in.ahead {
		m := &in.ahead[i]
		if m.At == in.cur {
			k, _ := in.index.of(m.From)
			in.apply(k, m)
			in.spare = append(in.spare, m.Values[:0])
			continue
		}
		keep = append(keep, *m)
	}
	in.ahead = keep
}

// value returns sender k's step-cur values (nil if absent).
func (in *inputs) value(k int) []float64 {
	if !in.from[k].have {
		return nil
	}
	return in.from[k].vals
}

// latest returns the newest values heard from sender k (nil: none yet this episode).
func (in *inputs) latest(k int) []float64 {
	if in.from[k].nstep < 0 {
		return nil
	}
	return in.from[k].newestVals()
}

// newestVals returns the values of step nstep: vals while they are the newest (fresh), else
// newest. Only a message on time writes vals, and it is then the newest (its step is cur,
// and nothing of a later step is applied before cur moves on), so vals hold step nstep's
// values as long as no late message of a newer step replaced them in newest.
func (f *sender) newestVals() []float64 {
	if f.fresh {
		return f.vals
	}
	return f.newest
}

// keepNewest copies the newest values into newest (they are no longer fresh): before vals
// are reused for another episode, and for a checkpoint.
func (f *sender) keepNewest() {
	if f.fresh {
		f.newest = setVals(f.newest, f.vals)
		f.fresh = false
	}
}

// endpointIndex maps endpoints to their position in a list without hashing: per role, a
// slice indexed by the id when the ids are dense (a host's agents, the eavesdropper's every
// agent), else the (id, position) pairs sorted by id, searched by bisection (an agent's few
// neighbours among 10,000: a dense slice would cost O(N) memory per agent, O(N^2) in all).
type endpointIndex struct {
	byRole [endpoint.NumRoles][]int32 // dense: position+1 of (role, id); 0 = absent
	sparse [endpoint.NumRoles][]idPos // sparse: sorted by id
}

type idPos struct{ id, pos int32 }

func newEndpointIndex(list []endpoint.Endpoint) endpointIndex {
	var x endpointIndex
	var count, maxID [endpoint.NumRoles]int
	for _, e := range list {
		if int(e.Role) < len(x.byRole) && e.ID >= 0 {
			count[e.Role]++
			maxID[e.Role] = max(maxID[e.Role], e.ID)
		}
	}
	for r := range x.byRole {
		if count[r] > 0 && maxID[r] < 4*count[r]+64 {
			x.byRole[r] = make([]int32, maxID[r]+1)
		}
	}
	for k, e := range list {
		if int(e.Role) >= len(x.byRole) || e.ID < 0 {
			continue
		}
		if d := x.byRole[e.Role]; d != nil {
			d[e.ID] = int32(k + 1)
		} else {
			x.sparse[e.Role] = append(x.sparse[e.Role], idPos{int32(e.ID), int32(k)})
		}
	}
	for _, sp := range x.sparse {
		slices.SortFunc(sp, func(a, b idPos) int { return int(a.id) - int(b.id) })
	}
	return x
}

// of returns the position of e, and whether it is in the list.
func (x *endpointIndex) of(e endpoint.Endpoint) (int, bool) {
	if int(e.Role) >= len(x.byRole) || e.ID < 0 {
		return 0, false
	}
	if r := x.byRole[e.Role]; r != nil {
		if e.ID >= len(r) || r[e.ID] == 0 {
			return 0, false
		}
		return int(r[e.ID]) - 1, true
	}
	sp := x.sparse[e.Role]
	lo, hi := 0, len(sp)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(sp[m].id) < e.ID {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(sp) && int(sp[lo].id) == e.ID {
		return int(sp[lo].pos), true
	}
	return 0, false
}

// base holds what every core shares: its endpoint, inputs, Ready buffer and step bookkeeping.
type base struct {
	self  endpoint.Endpoint
	in    *inputs
	ob    outbuf
	T     int
	done  bool
	norec bool // SetRecords(false)
	// crashed: stopped at the crash point of this episode (faults.crashes) until Restart;
	// redraw: the crash's noise rule says draw afresh at the restart.
	crashed bool
	redraw  bool
	// work is the role's completion of the current step (the core's complete method, bound
	// once at construction): it does the step's work with whatever arrived and reports
	// whether the episode ended. Bound once, Deliver and Tick pass no method value per call.
	work func() bool
}

// setCrashes gives the core the run's crashes (its own, and its senders').
func (b *base) setCrashes(cs []scenario.Crash) { b.in.crashes = cs }

// SetCrashes replaces the run's crashes a core knows (its own, and its senders') between
// episodes: the next episode's down windows come from cs. It is how a process hears a crash
// added while the run goes (a live intervention); it reports false for a core of another
// package, which cannot be told.
func SetCrashes(c Core, cs []scenario.Crash) bool {
	s, ok := c.(interface{ setCrashes([]scenario.Crash) })
	if ok {
		s.setCrashes(cs)
	}
	return ok
}

// downNext reports whether the core is down at step t: it releases nothing then.
func (b *base) downAt(t int) bool { return b.in.selfDown(t) }

// checkCrash stops the core at its crash point: the current step is the first it is down.
func (b *base) checkCrash() {
	if in := b.in; in.selfHi > 0 && in.cur == in.selfLo && !b.done { // inlined: no call without a crash
		b.crashAt()
	}
}

// crashAt stops the core at its crash point (checkCrash found it there). Not inlined, so
// that checkCrash (run at every step) is.
//
//go:noinline
func (b *base) crashAt() {
	b.crashed = true
	b.ob.rd.Crash = true
	for _, c := range b.in.crashes {
		if c.Proc == b.self.String() && c.In(b.in.ep) {
			b.redraw = c.Noise == scenario.NoiseRedraw
		}
	}
}

// restart is Restart for every core.
func (b *base) restart() error {
	b.ob.clearIfConsumed()
	if !b.crashed {
		return nil
	}
	b.crashed = false
	b.run()
	return nil
}

func (b *base) SetRecords(on bool) { b.norec = !on }

// KeepCopyDigests turns on (the default) or off the digests of the copies received, by which
// a differing second copy of a step is a conflict whenever it arrives. Only a transport whose
// copies are the injector's exact ones - the in-memory network, where nobody else publishes -
// turns them off, saving 16 bytes per sender and step.
func (b *base) KeepCopyDigests(on bool) { b.in.keepCopies(on) }

func (b *base) Endpoint() endpoint.Endpoint  { return b.self }
func (b *base) Cur() int                     { return b.in.cur }
func (b *base) Done() bool                   { return b.done }
func (b *base) Senders() []endpoint.Endpoint { return b.in.senders }
func (b *base) LinkStats() []fault.LinkStats { return b.in.stats }
func (b *base) Unexpected() uint64           { return b.in.unexpected }
func (b *base) Stale() uint64                { return b.in.stale }
func (b *base) Ready() *Ready                { b.ob.rd.Done = b.done; return b.ob.ready() }

// coreBase returns the base of a core of this package: the Driver calls its Ready directly
// (no core overrides Ready).
func (b *base) coreBase() *base { return b }
func (b *base) beginBase(ep int) {
	b.ob.clear()
	b.in.begin(ep)
	b.done, b.crashed, b.redraw = false, false, false
}
func (b *base) errEpisode(ep int) error {
	if ep < 0 {
		return fmt.Errorf("sim: %s: episode %d is negative", b.self, ep)
	}
	return nil
}

// run completes steps while the inputs are complete: work does the role's work for the
// current step (with whatever arrived) and reports whether the episode ended.
func (b *base) run() {
	for !b.done && !b.crashed && b.in.complete() {
		b.finish()
	}
}

func (b *base) finish() {
	if !b.in.selfDown(b.in.cur) {
		b.ob.rd.Missing += b.in.missing()
	}
	if b.work() {
		b.done = true
		return
	}
	b.in.advance()
	b.checkCrash()
}

// step is Deliver for every core: file the delivery, then complete what can be completed.
func (b *base) step(m *Msg) error {
	b.ob.clearIfConsumed()
	if b.done {
		b.in.fileStale(m) // the episode is over: compared, never used
		return nil
	}
	b.in.file(m)
	b.run()
	return nil
}

// stepFrom is step for a delivery from sender k of the core (the driver's route knows the
// sender's position): the same filing without the lookup.
func (b *base) stepFrom(k int, m *Msg) {
	b.ob.clearIfConsumed()
	in := b.in
	switch {
	case b.done:
		in.fileStale(m)
		return
	case in.usual(m) && in.fits(k, m): // file's usual case, its sender known
		in.apply(k, m)
	default:
		in.file(m)
	}
	b.run()
}

// stepClear is stepFrom's clear lane, for a broadcast of the in-memory network whose
// publisher's links have no fault rule (Msg.clear): such a message is on time and sent once,
// so when it is the usual delivery (this episode, step cur) and the first of sender k's step,
// it is applied with the counts apply makes, without apply's cases of gaps, late steps,
// duplicates and partial steps, and the steps it completes are run - in one call. It reports
// false, doing nothing, in any other case (stepFrom then takes the message).
func (b *base) stepClear(k int, m *Msg) bool {
	in := b.in
	f := &in.from[k]
	if b.done || b.ob.consumed || f.have || f.done || !in.usual(m) || !in.fits(k, m) {
		return false
	}
	in.stats[k].Delivered++
	record(f.used, m.Step, m.Values)
	f.vals = setVals(f.vals, m.Values)
	f.seen[uint(m.Step)/64] |= uint64(1) << (uint(m.Step) % 64) // a later copy is a duplicate (as in apply)
	if m.Step > f.nstep {
		f.nstep, f.fresh = m.Step, true
	}
	f.have, f.done = true, true
	in.nhave++
	in.ndone++
	b.run()
	return true
}

// tick is Tick for every core.
func (b *base) tick(t int) error {
	b.ob.clearIfConsumed()
	if b.done || b.crashed || b.in.cur != t {
		return nil
	}
	b.finish()
	b.run()
	return nil
}
