package bus

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrTimeout is returned (wrapped) when a wait reaches its deadline.
var ErrTimeout = errors.New("bus: timeout")

// ErrClosed is returned (wrapped) when the connection can deliver no more messages.
var ErrClosed = errors.New("bus: source closed")

// ErrStopped is returned by Inbox.Next when the inbox's stop channel closed.
var ErrStopped = errors.New("bus: stopped")

// DefaultInboxBuffer is the capacity of an inbox's channel. When it is full, what arrives
// waits in the NATS client's pending list of its subscription (a receiver that falls behind
// its senders - the eavesdropper of 128 episodes in flight on a busy machine - is slower, never
// drops a message), up to MaxInboxPending bytes.
const DefaultInboxBuffer = 1 << 14

// MaxInboxPending bounds the bytes waiting for one subscription of an inbox (its pending list)
// by default. Only beyond it does the client drop messages as a slow consumer (counted in
// ConnStats and Inbox.Dropped). A lockstep receiver waits behind at most one group of episodes
// (the launcher starts the next group when every process finished this one), so a run whose
// group fits stays below it; a flood does not grow a process without bound.
const MaxInboxPending = 1 << 30

// InboxOptions configures an Inbox.
type InboxOptions struct {
	// Counters counts received and dropped messages (nil: the inbox's own).
	Counters *Counters
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
	// Buffer is the channel capacity (default DefaultInboxBuffer); MaxPending the bytes that
	// may wait behind it per subscription (default MaxInboxPending).
	Buffer     int
	MaxPending int
	// Any, if set, is the expectation of every subject without its own (wildcard
	// subscriptions); with MatchSubject its Sender is the subject's <role>.<id>.
	Any          *Expect
	MatchSubject bool
}

// Inbox is the one receive path of a dpsim process: one channel fed by any number of
// subscriptions (exact subjects or wildcards). Each message is decoded, its Route read from
// the headers, and validated against the Expect of its subject (whose Sender is the
// subject's <role>.<id>, so a process cannot speak for another; a gap carries no values);
// invalid ones are counted, reported and dropped. It decodes into one reused Message: no
// allocation in the steady state for a fault-free run. Not safe for concurrent Next calls.
type Inbox struct {
	c      *Conn
	ch     chan *nats.Msg
	subs   []*nats.Subscription
	exp    map[string]*Expect
	opts   InboxOptions
	count  *Counters
	msg    Message
	timer  *time.Timer
	anyExp Expect        // scratch: opts.Any for the message at hand
	done   chan struct{} // closed by Close: a delivery waiting for room gives up
	once   sync.Once
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
		opts.Counters = new(Counters)
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Inbox{c: c, ch: make(chan *nats.Msg, opts.Buffer), exp: map[string]*Expect{}, opts: opts, count: opts.Counters, timer: t,
		done: make(chan struct{})}
}

// Expect registers what messages on subject (an exact subject) must carry.
func (in *Inbox) Expect(subject string, e Expect) { in.exp[subject] = &e }

// Subscribe subscribes to every subject registered with Expect.
func (in *Inbox) Subscribe() error {
	for s := range in.exp {
		if err := in.SubscribeTo(s); err != nil {
			return err
		}
	}
	return nil
}

// SubscribeTo subscribes subject (may be a wildcard) into the inbox. The subscription's
// handler waits for room in the channel: what arrives meanwhile queues in the client's pending
// list (no limit on messages, MaxPending on bytes), in order. A channel subscription would
// drop every message that finds the channel full - a lockstep receiver would then wait
// forever for it.
func (in *Inbox) SubscribeTo(subject string) error {
	sub, err := in.c.nc.Subscribe(subject, in.deliver)
	if err != nil {
		return err
	}
	if err := sub.SetPendingLimits(-1, in.opts.MaxPending); err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("bus: pending limits of %s: %w", subject, err)
	}
	in.subs = append(in.subs, sub)
	return nil
}

// deliver hands a message to Next, waiting for room (the NATS client calls it for one
// subscription at a time, in order).
func (in *Inbox) deliver(m *nats.Msg) {
	select {
	case in.ch <- m:
	case <-in.done:
	case <-in.opts.Stop:
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
func (in *Inbox) Counters() *Counters { return in.count }

// Dropped returns how many messages the client dropped because Next did not keep up.
func (in *Inbox) Dropped() int {
	n := 0
	for _, s := range in.subs {
		if d, err := s.Dropped(); err == nil {
			n += d
		}
	}
	return n
}

// DrainTap hands every message still queued to the Tap (at the end of a run).
func (in *Inbox) DrainTap() {
	for {
		select {
		case nm := <-in.ch:
			if in.opts.Tap != nil {
				in.opts.Tap(nm.Subject, nm.Data)
			}
		default:
			return
		}
	}
}

// Next returns the next valid message (its Route filled in), waiting until deadline (zero:
// do not wait). It returns ErrTimeout at the deadline, ErrStopped when stopped and ErrClosed
// when the connection closed. The message is reused by the next call.
func (in *Inbox) Next(deadline time.Time) (*Message, error) {
	for {
		var nm *nats.Msg
		select {
		case nm = <-in.ch:
		default:
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
			select {
			case nm = <-in.ch:
				in.timer.Stop()
			case <-in.timer.C:
				return nil, ErrTimeout
			case <-in.opts.Stop:
				in.timer.Stop()
				return nil, ErrStopped
			case <-in.c.closed:
				in.timer.Stop()
				return nil, ErrClosed
			}
		}
		if in.opts.Tap != nil {
			in.opts.Tap(nm.Subject, nm.Data)
		}
		e := in.exp[nm.Subject]
		if e == nil && in.opts.Any != nil {
			in.anyExp = *in.opts.Any
			if in.opts.MatchSubject {
				in.anyExp.Sender = senderOfSubject(nm.Subject)
			}
			e = &in.anyExp
		}
		if e == nil {
			if in.opts.Unknown != nil && in.opts.Unknown(nm.Subject) {
				continue
			}
			in.count.Receive()
			in.invalid(nm.Subject, &InvalidError{Reason: ReasonSender, Detail: "no sender of this run publishes on this subject"})
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

func (in *Inbox) accept(nm *nats.Msg, e *Expect) error {
	if err := Decode(nm.Data, &in.msg); err != nil {
		return err
	}
	if in.opts.Verify != nil {
		if err := in.opts.Verify.Verify(in.msg.Sender, nm.Data, nm.Header.Get(HeaderSig)); err != nil {
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
			return &InvalidError{Reason: ReasonDim, Detail: "a gap carries no values"}
		}
		exp.Dim = 0
	}
	if r.At > 0 && r.At < in.msg.Step {
		return &InvalidError{Reason: ReasonStep, Detail: "delivered before its own step"}
	}
	return Validate(&in.msg, exp)
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
