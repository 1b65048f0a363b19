package role

import (
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dpsim/dpsim/pkg/bus"
)

// inboxBuffer is the capacity of a process's data channel. When it is full the NATS client
// drops messages and reports a slow consumer (counted in the connection stats).
const inboxBuffer = 1 << 14

// inbox is a bus.Source over one or more exact subjects sharing one channel. Each message is
// decoded and validated against the Expect of its subject (whose Sender is the subject's
// <role>.<id>, so a process cannot speak for another); invalid ones are counted in the node's
// data counters, logged (rate-limited) and dropped. Next returns errStopped as soon as the
// node is stopped. It decodes into one reused Message: no allocation in the steady state.
type inbox struct {
	n       *node
	ch      chan *nats.Msg
	subs    []*nats.Subscription
	exp     map[string]*bus.Expect
	unknown func(nm *nats.Msg) bool // subjects without an Expect: true = handled, not counted
	tap     func(nm *nats.Msg)      // sees every message first (the eavesdropper's transcript)
	msg     bus.Message
	timer   *time.Timer
}

func newInbox(n *node) *inbox {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &inbox{n: n, ch: make(chan *nats.Msg, inboxBuffer), exp: map[string]*bus.Expect{}, timer: t}
}

// expect registers what a subject must carry; subscribe subscribes to every registered subject.
func (in *inbox) expect(subject string, e bus.Expect) { in.exp[subject] = &e }

func (in *inbox) subscribe() error {
	for s := range in.exp {
		if err := in.subscribeTo(s); err != nil {
			return err
		}
	}
	return nil
}

// subscribeTo subscribes subject (may be a wildcard) into the inbox channel.
func (in *inbox) subscribeTo(subject string) error {
	sub, err := in.n.conn.NATS().ChanSubscribe(subject, in.ch)
	if err != nil {
		return err
	}
	// The client's pending limits apply per subscription; keep them above the channel.
	_ = sub.SetPendingLimits(4*inboxBuffer, 256<<20)
	in.subs = append(in.subs, sub)
	return nil
}

// setEpisode makes only messages of episode ep valid: a process only ever reads the data of
// the episode it runs (the launcher starts episode e+1 after every process finished e).
func (in *inbox) setEpisode(ep int) {
	for _, e := range in.exp {
		e.Episode = ep
	}
}

func (in *inbox) dropped() int {
	n := 0
	for _, s := range in.subs {
		if d, err := s.Dropped(); err == nil {
			n += d
		}
	}
	return n
}

// Next implements bus.Source.
func (in *inbox) Next(deadline time.Time) (*bus.Message, error) {
	for {
		var nm *nats.Msg
		select {
		case nm = <-in.ch:
		default:
			select {
			case <-in.n.stopCh:
				return nil, errStopped
			default:
			}
			d := time.Until(deadline)
			if d <= 0 {
				return nil, bus.ErrTimeout
			}
			in.timer.Reset(d)
			select {
			case nm = <-in.ch:
				in.timer.Stop()
			case <-in.timer.C:
				return nil, bus.ErrTimeout
			case <-in.n.stopCh:
				in.timer.Stop()
				return nil, errStopped
			case <-in.n.conn.Closed():
				in.timer.Stop()
				return nil, bus.ErrClosed
			}
		}
		if in.tap != nil {
			in.tap(nm)
		}
		e := in.exp[nm.Subject]
		if e == nil {
			if in.unknown != nil && in.unknown(nm) {
				continue
			}
			in.n.data.Receive()
			in.n.invalid(&in.n.data, nm.Subject, &bus.InvalidError{Reason: bus.ReasonSender, Detail: "no sender of this run publishes on this subject"})
			continue
		}
		in.n.data.Receive()
		if err := bus.Decode(nm.Data, &in.msg); err != nil {
			in.n.invalid(&in.n.data, nm.Subject, err)
			continue
		}
		if err := bus.Validate(&in.msg, *e); err != nil {
			in.n.invalid(&in.n.data, nm.Subject, err)
			continue
		}
		return &in.msg, nil
	}
}
