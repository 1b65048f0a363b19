package bus

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/dpsim/dpsim/pkg/wire"
)

// EventKind classifies connection events.
type EventKind uint8

// Connection events reported to the handler of WithEvents.
const (
	EventDisconnected EventKind = iota // lost the server (Err may say why)
	EventReconnected                   // connected again (URL is the server)
	EventClosed                        // closed for good (drained, closed, or reconnects exhausted)
	EventError                         // asynchronous error, e.g. slow consumer
)

func (k EventKind) String() string {
	switch k {
	case EventDisconnected:
		return "disconnected"
	case EventReconnected:
		return "reconnected"
	case EventClosed:
		return "closed"
	case EventError:
		return "error"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is a connection event. Handlers run on the NATS client's goroutines: they must not
// block (log and return).
type Event struct {
	Kind EventKind
	Name string // connection name
	URL  string // server URL, when known
	Err  error
}

type connConfig struct {
	maxReconnects  int
	reconnectWait  time.Duration
	connectTimeout time.Duration
	drainTimeout   time.Duration
	encoding       wire.Encoding
	onEvent        func(Event)
	natsOpts       []nats.Option
	signSeed       string // sign data messages (WithSigner)
}

// Option configures Connect.
type Option func(*connConfig)

// WithReconnect sets how often (max < 0: forever) and how fast the client reconnects
// after losing the server. Default 120 attempts, 250 ms apart (about 30 s).
func WithReconnect(max int, wait time.Duration) Option {
	return func(c *connConfig) { c.maxReconnects, c.reconnectWait = max, wait }
}

// WithConnectTimeout bounds the initial connection (default 2 s).
func WithConnectTimeout(d time.Duration) Option {
	return func(c *connConfig) { c.connectTimeout = d }
}

// WithDrainTimeout bounds Drain inside the client (default 5 s).
func WithDrainTimeout(d time.Duration) Option {
	return func(c *connConfig) { c.drainTimeout = d }
}

// WithEncoding selects the encoding Publish writes (default JSON). Receivers detect it.
func WithEncoding(e wire.Encoding) Option {
	return func(c *connConfig) { c.encoding = e }
}

// WithEvents installs a handler for connection events (disconnect, reconnect, close,
// asynchronous errors), e.g. to log them. Events are also counted in ConnStats.
func WithEvents(h func(Event)) Option {
	return func(c *connConfig) { c.onEvent = h }
}

// Conn is a NATS connection of one dpsim process.
type Conn struct {
	nc     *nats.Conn
	name   string
	enc    wire.Encoding
	cfg    connConfig
	closed chan struct{}

	disconnects   atomic.Uint64
	reconnects    atomic.Uint64
	asyncErrors   atomic.Uint64
	slowConsumers atomic.Uint64

	mu     sync.Mutex // guards buf
	buf    []byte
	signer nkeys.KeyPair // nil: messages are not signed
}

// Connect connects to the server at url (or to the first reachable of a comma-separated
// list, in order) as the named client (the name shows in the
// server's monitoring, e.g. "dpsim-plant-0"). The client reconnects automatically (see
// WithReconnect); subscriptions survive a reconnect, and messages published while
// disconnected are buffered by the client (up to 8 MB).
func Connect(url, name string, opts ...Option) (*Conn, error) {
	if url == "" {
		return nil, errors.New("bus: no NATS URL (start an embedded server, or pass --nats-url / $NATS_URL)")
	}
	cfg := connConfig{
		maxReconnects:  120,
		reconnectWait:  250 * time.Millisecond,
		connectTimeout: 2 * time.Second,
		drainTimeout:   5 * time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.encoding != wire.JSON && cfg.encoding != wire.Binary {
		return nil, fmt.Errorf("bus: unknown encoding %v", cfg.encoding)
	}
	c := &Conn{name: name, enc: cfg.encoding, cfg: cfg, closed: make(chan struct{}), buf: make([]byte, 0, 512)}
	if cfg.signSeed != "" {
		kp, err := newSigner(cfg.signSeed)
		if err != nil {
			return nil, err
		}
		c.signer = kp
	}
	var closeOnce sync.Once
	emit := func(k EventKind, nc *nats.Conn, err error) {
		if cfg.onEvent == nil {
			return
		}
		ev := Event{Kind: k, Name: name, Err: err}
		if nc != nil {
			ev.URL = nc.ConnectedUrl()
		}
		cfg.onEvent(ev)
	}
	nopts := append([]nats.Option{}, cfg.natsOpts...)
	nopts = append(nopts,
		nats.Name(name),
		// A list of servers is tried in the order given (the launcher rotates it per
		// process to spread processes over a cluster), not shuffled.
		nats.DontRandomize(),
		nats.MaxReconnects(cfg.maxReconnects),
		nats.ReconnectWait(cfg.reconnectWait),
		nats.ReconnectJitter(cfg.reconnectWait/10, cfg.reconnectWait/10),
		nats.Timeout(cfg.connectTimeout),
		nats.DrainTimeout(cfg.drainTimeout),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			c.disconnects.Add(1)
			emit(EventDisconnected, nil, err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			c.reconnects.Add(1)
			emit(EventReconnected, nc, nil)
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			closeOnce.Do(func() { close(c.closed) })
			emit(EventClosed, nil, nc.LastError())
		}),
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			c.asyncErrors.Add(1)
			if errors.Is(err, nats.ErrSlowConsumer) {
				c.slowConsumers.Add(1)
			}
			if sub != nil {
				err = fmt.Errorf("subscription %q: %w", sub.Subject, err)
			}
			emit(EventError, nil, err)
		}),
	)
	nc, err := nats.Connect(url, nopts...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect %q to %s: %w", name, url, err)
	}
	c.nc = nc
	return c, nil
}

// Name returns the connection name.
func (c *Conn) Name() string { return c.name }

// Encoding returns the encoding Publish uses.
func (c *Conn) Encoding() wire.Encoding { return c.enc }

// Closed is closed when the connection is closed for good.
func (c *Conn) Closed() <-chan struct{} { return c.closed }

// Publish encodes m (with the connection's encoding) and publishes it on subject. Safe for
// concurrent use; it does not allocate (the client copies the bytes into its write buffer).
func (c *Conn) Publish(subject string, m *wire.Message) error {
	return c.PublishRouted(subject, m, wire.Route{})
}

// PublishRaw publishes data unchanged (fault injection, coordination payloads).
func (c *Conn) PublishRaw(subject string, data []byte) error {
	if err := c.nc.Publish(subject, data); err != nil {
		return fmt.Errorf("bus: publish on %s: %w", subject, err)
	}
	return nil
}

// PublishRawHeaders publishes data unchanged with the NATS headers header (nil or empty: a
// plain publish): a recorded message published again as it travelled (dpsim replay).
func (c *Conn) PublishRawHeaders(subject string, header map[string][]string, data []byte) error {
	if len(header) == 0 {
		return c.PublishRaw(subject, data)
	}
	if err := c.nc.PublishMsg(&nats.Msg{Subject: subject, Data: data, Header: nats.Header(header)}); err != nil {
		return fmt.Errorf("bus: publish on %s: %w", subject, err)
	}
	return nil
}

// Flush waits until the server processed everything published so far.
func (c *Conn) Flush(timeout time.Duration) error {
	if err := c.nc.FlushTimeout(timeout); err != nil {
		return fmt.Errorf("bus: flush %q: %w", c.name, err)
	}
	return nil
}

// Stats returns the connection statistics.
func (c *Conn) Stats() wire.ConnStats {
	s := c.nc.Stats()
	return wire.ConnStats{
		Name:          c.name,
		URL:           c.nc.ConnectedUrl(),
		Disconnects:   c.disconnects.Load(),
		Reconnects:    c.reconnects.Load(),
		AsyncErrors:   c.asyncErrors.Load(),
		SlowConsumers: c.slowConsumers.Load(),
		InMsgs:        s.InMsgs,
		OutMsgs:       s.OutMsgs,
		InBytes:       s.InBytes,
		OutBytes:      s.OutBytes,
	}
}

// Drain flushes what was published, stops the subscriptions and closes the connection,
// waiting at most timeout. If draining does not finish in time the connection is closed
// anyway and an error is returned. Draining a closed connection is a no-op.
func (c *Conn) Drain(timeout time.Duration) error {
	if c.nc.IsClosed() {
		return nil
	}
	if err := c.nc.Drain(); err != nil {
		if errors.Is(err, nats.ErrConnectionClosed) {
			return nil
		}
		c.nc.Close()
		return fmt.Errorf("bus: drain %q: %w (closed without draining)", c.name, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.closed:
		return nil
	case <-t.C:
		c.nc.Close()
		return fmt.Errorf("bus: drain %q did not finish within %v: %w", c.name, timeout, ErrTimeout)
	}
}

// Close closes the connection at once, without draining.
func (c *Conn) Close() { c.nc.Close() }

// Publisher publishes one stream (one subject, one sender) with a reused Message.
type Publisher struct {
	c       *Conn
	subject string
	msg     wire.Message
}

// Publisher returns a publisher of messages {run, from: sender, kind} on subject.
func (c *Conn) Publisher(subject, run, sender, kind string) *Publisher {
	return &Publisher{c: c, subject: subject, msg: wire.Message{V: wire.Version, Run: run, Sender: sender, Kind: kind}}
}

// Subject returns the subject published on.
func (p *Publisher) Subject() string { return p.subject }

// Send publishes values for (episode, step), stamped with the current wall time. It does
// not allocate.
func (p *Publisher) Send(episode, step int, values []float64) error {
	return p.SendRouted(episode, step, values, wire.Route{})
}

// ReceiverOptions configures a Receiver.
type ReceiverOptions struct {
	Expect wire.Expect
	// Counters counts received and dropped messages; nil gives the receiver its own.
	// Several receivers may share one.
	Counters *wire.Counters
	// OnInvalid, if set, is called for each dropped message (from the goroutine calling
	// Next), e.g. to log it. It must not retain m.
	OnInvalid func(subject string, err error)
	// MatchSubject requires "from" to equal the <role>.<id> of the data subject the
	// message arrived on (so a process cannot speak for another); mismatches are dropped
	// with ReasonSender.
	MatchSubject bool
	// Buffer is the capacity of the delivery channel (default 4096). When it is full the
	// client drops messages and reports a slow consumer (ConnStats.SlowConsumers).
	Buffer int
}

// Receiver delivers the valid messages of one subscription (subject may contain
// wildcards): an Inbox with one expectation for every subject it matches. It implements
// Source.
type Receiver struct {
	in      *Inbox
	subject string
}

// Receive subscribes to subject.
func (c *Conn) Receive(subject string, opts ReceiverOptions) (*Receiver, error) {
	if opts.Buffer <= 0 {
		opts.Buffer = 4096
	}
	e := opts.Expect
	in := c.NewInbox(InboxOptions{Counters: opts.Counters, OnInvalid: opts.OnInvalid, Buffer: opts.Buffer,
		Any: &e, MatchSubject: opts.MatchSubject})
	if err := in.SubscribeTo(subject); err != nil {
		return nil, fmt.Errorf("bus: subscribe %q to %s: %w", c.name, subject, err)
	}
	return &Receiver{in: in, subject: subject}, nil
}

// Subject returns the subscribed subject (filter).
func (r *Receiver) Subject() string { return r.subject }

// Counters returns the receiver's counters.
func (r *Receiver) Counters() *wire.Counters { return r.in.Counters() }

// SetExpect replaces the expectation (e.g. at the start of an episode). Not safe to call
// concurrently with Next.
func (r *Receiver) SetExpect(e wire.Expect) { *r.in.opts.Any = e }

// Next returns the next valid message, waiting until deadline. The message is reused by
// the next call. It returns an error wrapping ErrTimeout at the deadline and ErrClosed
// when the connection is closed.
func (r *Receiver) Next(deadline time.Time) (*wire.Message, error) { return r.in.Next(deadline) }

// SlowConsumerDropped returns how many messages the client dropped for this subscription
// because Next did not keep up.
func (r *Receiver) SlowConsumerDropped() int { return r.in.Dropped() }

// Close unsubscribes.
func (r *Receiver) Close() error { return r.in.Close() }
