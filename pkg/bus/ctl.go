package bus

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/dpsim/dpsim/pkg/wire"
)

// The coordination (ctl) protocol's transport: typed, validated subscriptions. Its words and
// the launcher's sender name are pkg/wire's (wire.CtlEpisode, wire.LauncherSender, ...), the
// payloads of the ctl messages and their constructors pkg/contract's.

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
	Expect    wire.Expect
	Counters  *wire.Counters
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
func (c *Conn) SubscribeCtl(subject string, o CtlOptions, fn func(subject string, m *wire.Message)) (*Subscription, error) {
	sub, err := c.nc.Subscribe(subject, func(nm *nats.Msg) {
		if o.Counters != nil {
			o.Counters.Receive()
		}
		var m wire.Message
		if err := wire.Decode(nm.Data, &m); err != nil {
			o.drop(nm.Subject, err)
			return
		}
		if err := wire.Validate(&m, o.Expect); err != nil {
			o.drop(nm.Subject, err)
			return
		}
		if o.Verify != nil {
			if err := o.Verify.Verify(m.Sender, nm.Data, nm.Header.Get(wire.HeaderSig)); err != nil {
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
func (c *Conn) SubscribeDocuments(subject string, counters *wire.Counters, fn func(subject string, data []byte)) (*Subscription, error) {
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

// SubscribeDocumentsHeaders is SubscribeDocuments handing fn each message's NATS headers too
// (nil: none; the route headers of wire.Route and the signature of wire.HeaderSig): what a
// recording of the bus keeps beside the payload. fn must not keep header or data.
func (c *Conn) SubscribeDocumentsHeaders(subject string, counters *wire.Counters, fn func(subject string, header map[string][]string, data []byte)) (*Subscription, error) {
	sub, err := c.nc.Subscribe(subject, func(nm *nats.Msg) {
		if counters != nil {
			counters.Receive()
		}
		fn(nm.Subject, nm.Header, nm.Data)
	})
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe %q to %s: %w", c.name, subject, err)
	}
	return &Subscription{sub}, nil
}

// IsClosed reports whether the connection is closed for good.
func (c *Conn) IsClosed() bool { return c.nc.IsClosed() }
