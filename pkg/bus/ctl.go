package bus

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// The coordination (ctl) protocol: the words (Message.Kind on ctl subjects) beyond those of
// subject.go, the launcher's sender name, the constructors of every ctl message, and typed,
// validated subscriptions. The launcher (dpsim run) and every role process use these and
// nothing else: the protocol is written once.
const (
	// CtlEpisodeX0 starts an episode whose explicit x(0) travels on the private challenger
	// subject (Subjects.ChallengerX0), not on the sniffable ctl.episode.
	CtlEpisodeX0 = "episode-x0"
	// CtlX0 is the private challenger message carrying an episode's x(0).
	CtlX0 = "x0"
	// LauncherSender is the "from" of every coordination message the launcher sends.
	LauncherSender = "launcher.0"
)

func ctlMessage(run, sender, kind string, ep int, vals []float64) *Message {
	return &Message{V: Version, Run: run, Episode: ep, Sender: sender, SentUnixNano: time.Now().UnixNano(), Kind: kind, Values: vals}
}

// ReadyMessage is a process's ctl.ready: [pid, plan], plan the digest of the plan file the
// process runs (plan.FileDigest, below 2^53 so exact in a float64; 0: it resolved the
// scenario itself).
func ReadyMessage(run, sender string, pid int, plan uint64) *Message {
	return ctlMessage(run, sender, CtlReady, 0, []float64{float64(pid), float64(plan)})
}

// CtlPlan returns the plan digest of a ctl.ready (0 when it carries none).
func CtlPlan(m *Message) uint64 {
	if m.Kind != CtlReady || len(m.Values) < 2 {
		return 0
	}
	v := m.Values[1]
	if !(v > 0) || v >= 1<<53 || v != float64(int64(v)) {
		return 0
	}
	return uint64(v)
}

// RejoinMessage is a restarted process's ctl.rejoin for episode ep: [restart step, pid].
func RejoinMessage(run, sender string, ep, step, pid int) *Message {
	return ctlMessage(run, sender, CtlRejoin, ep, []float64{float64(step), float64(pid)})
}

// DoneMessage is a process's ctl.done for episode ep: [steps, missed steps, pid].
func DoneMessage(run, sender string, ep, steps, missed, pid int) *Message {
	return ctlMessage(run, sender, CtlDone, ep, []float64{float64(steps), float64(missed), float64(pid)})
}

// EpisodeMessage is the launcher's ctl.episode starting episode ep with the scenario's x(0),
// or, with private set, an episode whose explicit x(0) is sent on the private challenger
// subject by X0Message: the public message then carries no values, so nothing on
// dpsim.<run>.> reveals the secret.
func EpisodeMessage(run string, ep int, private bool) *Message {
	kind := CtlEpisode
	if private {
		kind = CtlEpisodeX0
	}
	return ctlMessage(run, LauncherSender, kind, ep, nil)
}

// X0Message is the private challenger message with episode ep's explicit initial state.
func X0Message(run string, ep int, x0 []float64) *Message {
	return ctlMessage(run, LauncherSender, CtlX0, ep, x0)
}

// StopMessage is the launcher's ctl.stop: finish (abandoning a running episode), flush, exit.
func StopMessage(run string) *Message {
	return ctlMessage(run, LauncherSender, CtlStop, 0, nil)
}

// Subscription is a subscription made through this package.
type Subscription struct{ s *nats.Subscription }

// Unsubscribe ends it (a closed connection is not an error).
func (s *Subscription) Unsubscribe() error {
	if err := s.s.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
		return fmt.Errorf("bus: unsubscribe %s: %w", s.s.Subject, err)
	}
	return nil
}

// CtlOptions configures a ctl subscription: what every message must carry (Run, Kind; Episode
// AnyEpisode unless set), where dropped messages are counted and who hears of them.
type CtlOptions struct {
	Expect    Expect
	Counters  *Counters
	OnInvalid func(subject string, err error)
	// Verify, if set, drops (ReasonSignature) a message whose Dpsim-Sig header is not its
	// sender's signature (dpsim run --sign: the launcher signs ctl.episode and ctl.stop too).
	Verify *Verifier
}

func (o CtlOptions) drop(subject string, err error) {
	if o.Counters != nil {
		o.Counters.DropErr(err)
	}
	if o.OnInvalid != nil {
		o.OnInvalid(subject, err)
	}
}

// SubscribeCtl subscribes subject (wildcards allowed) and hands fn every message that decodes
// and validates against o.Expect, with the subject it came on; the others are counted and
// reported, never handed on. fn runs on the client's goroutine: it must not block.
func (c *Conn) SubscribeCtl(subject string, o CtlOptions, fn func(subject string, m *Message)) (*Subscription, error) {
	sub, err := c.nc.Subscribe(subject, func(nm *nats.Msg) {
		if o.Counters != nil {
			o.Counters.Receive()
		}
		var m Message
		if err := Decode(nm.Data, &m); err != nil {
			o.drop(nm.Subject, err)
			return
		}
		if err := Validate(&m, o.Expect); err != nil {
			o.drop(nm.Subject, err)
			return
		}
		if o.Verify != nil {
			if err := o.Verify.Verify(m.Sender, nm.Data, nm.Header.Get(HeaderSig)); err != nil {
				o.drop(nm.Subject, err)
				return
			}
		}
		fn(nm.Subject, &m)
	})
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe %q to %s: %w", c.name, subject, err)
	}
	return &Subscription{sub}, nil
}

// SubscribeDocuments subscribes subject and hands fn the raw payload of every message (ctl
// documents such as a process's result JSON, which its receiver decodes and checks).
func (c *Conn) SubscribeDocuments(subject string, counters *Counters, fn func(subject string, data []byte)) (*Subscription, error) {
	sub, err := c.nc.Subscribe(subject, func(nm *nats.Msg) {
		if counters != nil {
			counters.Receive()
		}
		fn(nm.Subject, nm.Data)
	})
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe %q to %s: %w", c.name, subject, err)
	}
	return &Subscription{sub}, nil
}

// IsClosed reports whether the connection is closed for good.
func (c *Conn) IsClosed() bool { return c.nc.IsClosed() }

// CtlPID reads the pid a ready ([pid]), done ([steps, missed, pid]) or rejoin ([step, pid]) carries: a positive
// integer, else an error.
func CtlPID(m *Message) (int, error) {
	at := 0
	switch m.Kind {
	case CtlDone:
		at = 2
	case CtlRejoin:
		at = 1
	}
	if len(m.Values) <= at {
		return 0, &InvalidError{Reason: ReasonDim, Detail: "no pid in ctl." + m.Kind}
	}
	v := m.Values[at]
	if v < 1 || v > 1<<31-1 || v != float64(int64(v)) {
		return 0, &InvalidError{Reason: ReasonDim, Detail: "pid " + strconv.FormatFloat(v, 'g', -1, 64) + " is not a process id"}
	}
	return int(v), nil
}
