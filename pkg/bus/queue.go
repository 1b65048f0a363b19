package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Request-reply and queue groups for services on the bus (internal/farm: a coordinator hands
// chunks of episodes to workers on other hosts). The payloads are the service's own documents,
// not Messages: this file moves bytes and says who may answer.

// ErrNoResponders is returned by Request when nobody subscribes the subject (the service is not
// up yet, or gone).
var ErrNoResponders = errors.New("bus: no responders")

// Request is one request a service received: its payload and where the answer goes.
type Request struct {
	Subject string
	Data    []byte
	reply   string
	conn    *Conn
}

// Respond answers r (once; later calls publish again). A request without a reply subject (a
// plain publish) is not answered.
func (r *Request) Respond(data []byte) error {
	if r.reply == "" {
		return nil
	}
	if err := r.conn.nc.Publish(r.reply, data); err != nil {
		return fmt.Errorf("bus: respond on %s: %w", r.Subject, err)
	}
	return nil
}

// Serve subscribes subject for requests (queue != "": as a member of that queue group, so each
// request reaches one member only) and hands fn each one. fn runs on the client's goroutine: it
// must not block (answer later with Respond from elsewhere if it must wait).
func (c *Conn) Serve(subject, queue string, fn func(*Request)) (*Subscription, error) {
	h := func(m *nats.Msg) { fn(&Request{Subject: m.Subject, Data: m.Data, reply: m.Reply, conn: c}) }
	var sub *nats.Subscription
	var err error
	if queue != "" {
		sub, err = c.nc.QueueSubscribe(subject, queue, h)
	} else {
		sub, err = c.nc.Subscribe(subject, h)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: serve %q on %s: %w", c.name, subject, err)
	}
	// A service's requests may be large (a chunk's answer): do not drop them under load before
	// the server's own slow-consumer limit.
	_ = sub.SetPendingLimits(-1, 256<<20)
	return &Subscription{sub}, nil
}

// Request sends data on subject and waits for one answer until timeout or the end of ctx. With
// nobody subscribed it returns ErrNoResponders at once.
func (c *Conn) Request(ctx context.Context, subject string, data []byte, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := c.nc.RequestWithContext(ctx, subject, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("%w on %s", ErrNoResponders, subject)
	case err != nil:
		return nil, fmt.Errorf("bus: request on %s: %w", subject, err)
	}
	return m.Data, nil
}

// MaxPayload is the largest message the server accepts, in bytes.
func (c *Conn) MaxPayload() int64 { return c.nc.MaxPayload() }
