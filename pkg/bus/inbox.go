package bus

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dpsim/dpsim/pkg/wire"
)

// ErrTimeout is returned (wrapped) when a wait reaches its deadline.
var ErrTimeout = errors.New("bus: timeout")

// ErrClosed is returned (wrapped) when the connection can deliver no more messages.
var ErrClosed = errors.New("bus: source closed")

// ErrStopped is returned by Inbox.Next when the inbox's stop channel closed.
var ErrStopped = errors.New("bus: stopped")

// DefaultInboxBuffer is the capacity of the channel the NATS client delivers an inbox's
// messages into, in the server's order. While Next is busy elsewhere a guard moves what
// accumulates there into the inbox's queue, which has no fixed length: a receiver that falls
// behind its senders (the eavesdropper of 128 episodes in flight on a busy machine) is slower
// and never drops a message, up to MaxInboxPending bytes.
const DefaultInboxBuffer = 1 << 18

// MaxInboxPending bounds the bytes an inbox's queue holds by default. Only beyond it are
// messages dropped (a slow consumer: counted in Inbox.Dropped). A lockstep receiver waits
// behind at most one group of episodes (the launcher starts the next group when every process
// finished this one), so a run whose group fits stays below it; a flood does not grow a process
// without bound.
const MaxInboxPending = 1 << 30

// InboxOptions configures an Inbox.
type InboxOptions struct {
	// Counters counts received and dropped messages (nil: the inbox's own).
	Counters *wire.Counters
	// OnInvalid, if set, is called for each dropped message (from the goroutine calling
	// Next), e.g. to log it. The inbox has counted the drop already: OnInvalid must not count
	// it again.
	OnInvalid func(subject string, err error)
	// PassStale hands on a message of an episode before SetEpisode's that is otherwise valid,
	// instead of dropping it (ReasonEpisode): a late copy of a finished episode is no wrong
	// message, and its receiver compares it with the copy it used (dpsim's cores count it
	// stale).
	PassStale bool
	// Tap, if set, sees every message first, valid or not (the eavesdropper's transcript).
	Tap func(subject string, data []byte)
	// Verify, if set, drops (ReasonSignature) every data message whose Dpsim-Sig header is
	// not its sender's signature of the payload (dpsim run --sign).
	Verify *Verifier
	// Unknown, if set, is asked about a message on a subject with no Expect: true means it is
	// legitimate traffic handled elsewhere (skipped, not counted as invalid).
	Unknown func(subject string) bool
	// Stop, when closed, makes Next return ErrStopped.
	Stop <-chan struct{}
	// Buffer is the delivery channel's capacity (default DefaultInboxBuffer); MaxPending the
	// bytes the queue behind it may hold (default MaxInboxPending).
	Buffer     int
	MaxPending int
	// Any, if set, is the expectation of every subject without its own (wildcard
	// subscriptions); with MatchSubject its Sender is the subject's <role>.<id>.
	Any          *wire.Expect
	MatchSubject bool
}

// Inbox is the one receive path of a dpsim process: one channel fed by any number of
// subscriptions (exact subjects or wildcards). Each message is decoded, its Route read from
// the headers, and validated against the Expect of its subject (whose Sender is the
// subject's <role>.<id>, so a process cannot speak for another; a gap carries no values);
// invalid ones are counted, reported and dropped. It decodes into one reused Message: no
// allocation in the steady state for a fault-free run. Not safe for concurrent Next calls.
type Inbox struct {
	c   *Conn
	raw chan *nats.Msg // the NATS client delivers here, in the server's order
	// The queue: what the guard moved out of raw while Next was busy, in order; Next takes
	// from it first. mu guards it and waiting (Next is blocked on raw: the guard keeps off).
	mu      sync.Mutex
	q       []*nats.Msg
	qHead   int
	qBytes  int
	waiting bool
	over    atomic.Int64 // messages dropped beyond MaxPending
	subs    []*nats.Subscription
	exp     map[string]*wire.Expect
	opts    InboxOptions
	count   *wire.Counters
	msg     wire.Message
	timer   *time.Timer
	anyExp  wire.Expect   // scratch: opts.Any for the message at hand
	done    chan struct{} // closed by Close: a delivery waiting for room gives up
	once    sync.Once
}

// NewInbox returns an empty inbox on c.
func (c *Conn) NewInbox(opts InboxOptions) *Inbox {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultInboxBuffer
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = MaxInboxPending
	}
	if opts.Counters == nil {
		opts.Counters = new(wire.Counters)
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	in := &Inbox{c: c, raw: make(chan *nats.Msg, opts.Buffer), exp: map[string]*wire.Expect{}, opts: opts,
		count: opts.Counters, timer: t, done: make(chan struct{})}
	go in.guard()
	return in
}

// Expect registers what messages on subject (an exact subject) must carry.
func (in *Inbox) Expect(subject string, e wire.Expect) { in.exp[subject] = &e }

// Subscribe subscribes to every subject registered with Expect.
func (in *Inbox) Subscribe() error {
	for s := range in.exp {
		if err := in.SubscribeTo(s); err != nil {
			return err
		}
	}
	return nil
}

// SubscribeTo subscribes subject (may be a wildcard) into the inbox. Every subscription
// delivers into one channel from the client's one reader, so the messages of all of them keep
// the server's order (a process's results depend on it); the guard empties that channel into
// the queue while Next is busy, so it does not fill - a channel that filled dropped every
// message that found it full, and a lockstep receiver then waited forever for it.
func (in *Inbox) SubscribeTo(subject string) error {
	sub, err := in.c.nc.ChanSubscribe(subject, in.raw)
	if err != nil {
		return err
	}
	in.subs = append(in.subs, sub)
	return nil
}

// guardEvery is how often the guard looks at the delivery channel. The channel fills in no
// less than DefaultInboxBuffer / (messages per second) seconds: 262,144 messages, against the
// tens of thousands the client's reader can parse in the 10 ms the Go scheduler gives it before
// the guard runs (a busy machine deschedules both alike).
const guardEvery = 2 * time.Millisecond

// guard moves what accumulates in the delivery channel into the queue while Next is not
// waiting on it (Next takes from the queue first, so the order stays the server's). It ends
// when the inbox closes.
func (in *Inbox) guard() {
	tick := time.NewTicker(guardEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if len(in.raw) < cap(in.raw)/16 {
				continue // Next keeps up
			}
			in.mu.Lock()
			if !in.waiting {
				in.moveRaw()
			}
			in.mu.Unlock()
		case <-in.done:
			return
		}
	}
}

// moveRaw moves what is in the delivery channel to the queue's tail, dropping (counted) what
// would take the queue beyond MaxPending bytes. Called with mu held.
func (in *Inbox) moveRaw() {
	for {
		select {
		case m := <-in.raw:
			n := len(m.Data) + len(m.Subject)
			if in.qBytes+n > in.opts.MaxPending {
				in.over.Add(1)
				continue
			}
			if in.qHead == len(in.q) {
				in.q, in.qHead = in.q[:0], 0
			}
			in.q = append(in.q, m)
			in.qBytes += n
		default:
			return
		}
	}
}

// pop takes the queue's head, or the next delivery when the queue is empty (nil: none yet).
// Called with mu held.
func (in *Inbox) pop() *nats.Msg {
	if in.qHead < len(in.q) {
		m := in.q[in.qHead]
		in.q[in.qHead] = nil
		in.qHead++
		in.qBytes -= len(m.Data) + len(m.Subject)
		return m
	}
	select {
	case m := <-in.raw:
		return m
	default:
		return nil
	}
}

// receive returns the next message in the server's order, waiting until deadline (zero: do
// not wait).
func (in *Inbox) receive(deadline time.Time) (*nats.Msg, error) {
	in.mu.Lock()
	m := in.pop()
	if m != nil {
		in.mu.Unlock()
		return m, nil
	}
	// Nothing queued and nothing delivered: wait on the channel. The guard keeps off it
	// meanwhile, so what arrives first is the next in order.
	in.waiting = true
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		in.waiting = false
		in.mu.Unlock()
	}()
	select {
	case <-in.opts.Stop:
		return nil, ErrStopped
	default:
	}
	d := time.Until(deadline)
	if deadline.IsZero() || d <= 0 {
		return nil, ErrTimeout
	}
	in.timer.Reset(d)
	defer in.timer.Stop()
	select {
	case m = <-in.raw:
		return m, nil
	case <-in.timer.C:
		return nil, ErrTimeout
	case <-in.opts.Stop:
		return nil, ErrStopped
	case <-in.c.closed:
		return nil, ErrClosed
	}
}

// SetEpisode makes only messages of episode ep valid on every expected subject.
func (in *Inbox) SetEpisode(ep int) { in.SetEpisodes(ep, 1) }

// SetEpisodes makes only messages of the count episodes from first valid on every expected
// subject (episodes in flight): a batched message (Route.Episodes) must lie within them.
func (in *Inbox) SetEpisodes(first, count int) {
	for _, e := range in.exp {
		e.Episode, e.Episodes = first, count
	}
}

// Counters returns the inbox's counters.
func (in *Inbox) Counters() *wire.Counters { return in.count }

// Dropped returns how many messages were dropped because Next did not keep up: by the client
// (its delivery channel full) or by the guard (beyond MaxPending bytes).
func (in *Inbox) Dropped() int {
	n := int(in.over.Load())
	for _, s := range in.subs {
		if d, err := s.Dropped(); err == nil {
			n += d
		}
	}
	return n
}

// DrainTap hands every message still queued or delivered to the Tap (at the end of a run).
func (in *Inbox) DrainTap() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for m := in.pop(); m != nil; m = in.pop() {
		if in.opts.Tap != nil {
			in.opts.Tap(m.Subject, m.Data)
		}
	}
}

// Next returns the next valid message (its Route filled in), waiting until deadline (zero:
// do not wait). It returns ErrTimeout at the deadline, ErrStopped when stopped and ErrClosed
// when the connection closed. The message is reused by the next call.
func (in *Inbox) Next(deadline time.Time) (*wire.Message, error) {
	for {
		nm, err := in.receive(deadline)
		if err != nil {
			return nil, err
		}
		if in.opts.Tap != nil {
			in.opts.Tap(nm.Subject, nm.Data)
		}
		e := in.exp[nm.Subject]
		if e == nil && in.opts.Any != nil {
			in.anyExp = *in.opts.Any
			if in.opts.MatchSubject {
				in.anyExp.Sender = wire.SenderOfSubject(nm.Subject)
			}
			e = &in.anyExp
		}
		if e == nil {
			if in.opts.Unknown != nil && in.opts.Unknown(nm.Subject) {
				continue
			}
			in.count.Receive()
			in.invalid(nm.Subject, &wire.InvalidError{Reason: wire.ReasonSender, Detail: "no sender of this run publishes on this subject"})
			continue
		}
		in.count.Receive()
		if err := in.accept(nm, e); err != nil {
			in.invalid(nm.Subject, err)
			continue
		}
		return &in.msg, nil
	}
}

func (in *Inbox) accept(nm *nats.Msg, e *wire.Expect) error {
	if err := wire.Decode(nm.Data, &in.msg); err != nil {
		return err
	}
	if in.opts.Verify != nil {
		if err := in.opts.Verify.Verify(in.msg.Sender, nm.Data, nm.Header.Get(wire.HeaderSig)); err != nil {
			return err
		}
	}
	r, err := routeOf(nm.Header)
	if err != nil {
		return err
	}
	in.msg.Route = r
	exp := *e
	if in.opts.PassStale && exp.Episode > 0 && in.msg.Episode >= 0 && in.msg.Episode < exp.Episode {
		exp.Episode, exp.Episodes = in.msg.Episode, r.Count() // stale: the receiver's to judge
	}
	if r.Gap {
		if len(in.msg.Values) != 0 {
			return &wire.InvalidError{Reason: wire.ReasonDim, Detail: "a gap carries no values"}
		}
		exp.Dim = 0
	}
	if r.At > 0 && r.At < in.msg.Step {
		return &wire.InvalidError{Reason: wire.ReasonStep, Detail: "delivered before its own step"}
	}
	return wire.Validate(&in.msg, exp)
}

func (in *Inbox) invalid(subject string, err error) {
	in.count.DropFrom(subject, err)
	if in.opts.OnInvalid != nil {
		in.opts.OnInvalid(subject, err)
	}
}

// Close unsubscribes everything (a closed connection is not an error).
func (in *Inbox) Close() error {
	in.once.Do(func() { close(in.done) })
	var first error
	for _, s := range in.subs {
		if err := s.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) && first == nil {
			first = fmt.Errorf("bus: unsubscribe %s: %w", s.Subject, err)
		}
	}
	return first
}
