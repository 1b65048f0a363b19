package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Work queues on JetStream (a durable farm hands its chunks out this way, and takes its workers'
// answers back the same way): a stream with WorkQueuePolicy retention keeps a message until one
// consumer acknowledges it, so what was queued outlives the processes - and, with file storage,
// the server - that queued or took it. A consumer is pulled (a worker asks for one message when
// it is free), a message taken and not acknowledged within AckWait is delivered again (the taker
// keeps it with InProgress, a heartbeat, while it works), and after MaxDeliver deliveries the
// server gives up on it and says so in an advisory (MaxDeliveries).

// WorkQueueOptions configure a work queue: its stream (file storage, bounded: a message beyond
// MaxMsgs or MaxBytes is refused, DiscardNew, rather than an older one dropped) and its one pull
// consumer.
type WorkQueueOptions struct {
	Stream     string
	Subjects   []string
	MaxMsgs    int64
	MaxBytes   int64
	MaxMsgSize int32
	Consumer   string        // the durable pull consumer's name
	AckWait    time.Duration // a delivery not acknowledged (or kept InProgress) for this long is delivered again
	MaxDeliver int           // deliveries of a message at most (-1: no limit)
	// MaxAckPending bounds the messages delivered and not acknowledged yet (0: the server's
	// default).
	MaxAckPending int
	// Fresh deletes the consumer before it is created again: every message still in the stream
	// is delivered anew (its earlier deliveries forgotten).
	Fresh bool
}

// WorkQueue is the owner's side of a work queue: it creates the stream and the consumer, puts
// messages, deletes them and reads the stream back.
type WorkQueue struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	cons   jetstream.Consumer
	opts   WorkQueueOptions
}

// WorkQueue opens (creating or updating) the work queue of opts on c's server; the account
// needs JetStream's API (JournalAPI).
func (c *Conn) WorkQueue(ctx context.Context, opts WorkQueueOptions) (*WorkQueue, error) {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, fmt.Errorf("bus: work queue %s: %w", opts.Stream, err)
	}
	q := &WorkQueue{js: js, opts: opts}
	q.stream, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: opts.Stream, Subjects: opts.Subjects, Storage: jetstream.FileStorage,
		Retention: jetstream.WorkQueuePolicy, Discard: jetstream.DiscardNew,
		MaxMsgs: opts.MaxMsgs, MaxBytes: opts.MaxBytes, MaxMsgSize: opts.MaxMsgSize, Replicas: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: work queue %s (limits %d messages, %d bytes): %w", opts.Stream, opts.MaxMsgs, opts.MaxBytes, err)
	}
	if opts.Fresh {
		if err := js.DeleteConsumer(ctx, opts.Stream, opts.Consumer); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("bus: work queue %s: consumer %s: %w", opts.Stream, opts.Consumer, err)
		}
	}
	q.cons, err = js.CreateOrUpdateConsumer(ctx, opts.Stream, jetstream.ConsumerConfig{
		Durable: opts.Consumer, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		AckWait: opts.AckWait, MaxDeliver: opts.MaxDeliver, MaxAckPending: opts.MaxAckPending,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: work queue %s: consumer %s: %w", opts.Stream, opts.Consumer, err)
	}
	return q, nil
}

// Put queues data on subject and returns the message's sequence once the server stored it (an
// error when the queue is full).
func (q *WorkQueue) Put(ctx context.Context, subject string, data []byte) (uint64, error) {
	ack, err := q.js.Publish(ctx, subject, data)
	if err != nil {
		return 0, fmt.Errorf("bus: work queue %s: put %s (%d bytes): %w", q.opts.Stream, subject, len(data), err)
	}
	return ack.Sequence, nil
}

// Delete removes message seq from the queue (no error when it is gone already: acknowledged).
func (q *WorkQueue) Delete(ctx context.Context, seq uint64) error {
	err := q.stream.DeleteMsg(ctx, seq)
	var api *jetstream.APIError
	if errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeMessageNotFound || api.ErrorCode == seqNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bus: work queue %s: delete %d: %w", q.opts.Stream, seq, err)
	}
	return nil
}

// seqNotFound is the server's error code for a sequence the stream does not hold (any more).
const seqNotFound jetstream.ErrorCode = 10043

// Queued is a message in a work queue's stream.
type Queued struct {
	Seq     uint64
	Subject string
	Data    []byte
}

// Messages reads back every message the queue holds (at most MaxMsgs), oldest first.
func (q *WorkQueue) Messages(ctx context.Context) ([]Queued, error) {
	info, err := q.stream.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: work queue %s: %w", q.opts.Stream, err)
	}
	var out []Queued
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := q.stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bus: work queue %s: read %d: %w", q.opts.Stream, seq, err)
		}
		out = append(out, Queued{Seq: m.Sequence, Subject: m.Subject, Data: m.Data})
	}
	return out, nil
}

// Depth is how many messages the queue holds.
func (q *WorkQueue) Depth(ctx context.Context) (uint64, error) {
	info, err := q.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("bus: work queue %s: %w", q.opts.Stream, err)
	}
	return info.State.Msgs, nil
}

// Consume hands fn each message of the queue's consumer as it comes (on the client's
// goroutine) until stop.
func (q *WorkQueue) Consume(fn func(*Delivery)) (stop func(), err error) {
	cc, err := q.cons.Consume(func(m jetstream.Msg) { fn(delivery(m)) })
	if err != nil {
		return nil, fmt.Errorf("bus: work queue %s: consume: %w", q.opts.Stream, err)
	}
	return cc.Stop, nil
}

// MaxDeliveries is the subject of the server's advisories of the messages of consumer (of
// stream) that were delivered MaxDeliver times without an acknowledgement: the server delivers
// them no more (they stay in a work queue's stream until deleted). Its payload: MaxDelivered.
func MaxDeliveries(stream, consumer string) string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + stream + "." + consumer
}

// MaxDelivered decodes an advisory of MaxDeliveries: the message's sequence and its deliveries.
func MaxDelivered(data []byte) (seq, deliveries uint64, err error) {
	var a struct {
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries uint64 `json:"deliveries"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return 0, 0, fmt.Errorf("bus: max deliveries advisory: %w", err)
	}
	return a.StreamSeq, a.Deliveries, nil
}

// PullAPI is what a taker of consumer (of stream) publishes on, besides nothing else of
// JetStream: the consumer's info (to bind to it), its pull requests and its acknowledgements.
// It cannot put, delete or purge a message, nor touch another stream or consumer.
func PullAPI(stream, consumer string) []string {
	return []string{
		"$JS.API.CONSUMER.INFO." + stream + "." + consumer,
		"$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer,
		"$JS.ACK." + stream + "." + consumer + ".>",
	}
}

// Puller is a taker's side of a work queue: it pulls one message at a time.
type Puller struct {
	cons   jetstream.Consumer
	stream string
}

// Puller binds to consumer of stream (created by the queue's owner).
func (c *Conn) Puller(ctx context.Context, stream, consumer string) (*Puller, error) {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, fmt.Errorf("bus: work queue %s: %w", stream, err)
	}
	cons, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		return nil, fmt.Errorf("bus: work queue %s: consumer %s: %w", stream, consumer, err)
	}
	return &Puller{cons: cons, stream: stream}, nil
}

// Next pulls one message, waiting at most wait for one (nil, nil: none came).
func (p *Puller) Next(wait time.Duration) (*Delivery, error) {
	b, err := p.cons.Fetch(1, jetstream.FetchMaxWait(wait))
	if err != nil {
		return nil, fmt.Errorf("bus: work queue %s: pull: %w", p.stream, err)
	}
	for m := range b.Messages() {
		return delivery(m), nil
	}
	if err := b.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		return nil, fmt.Errorf("bus: work queue %s: pull: %w", p.stream, err)
	}
	return nil, nil
}

// Delivery is one delivery of a work queue's message: its content, its sequence in the stream
// and how many times it was delivered (1 the first time).
type Delivery struct {
	Subject   string
	Data      []byte
	Seq       uint64
	Delivered uint64
	msg       jetstream.Msg
}

func delivery(m jetstream.Msg) *Delivery {
	d := &Delivery{Subject: m.Subject(), Data: m.Data(), msg: m}
	if md, err := m.Metadata(); err == nil {
		d.Seq, d.Delivered = md.Sequence.Stream, md.NumDelivered
	}
	return d
}

// Ack removes the message from the queue: done with it.
func (d *Delivery) Ack() error { return d.wrap("ack", d.msg.Ack()) }

// InProgress tells the server the taker still works on the message: its AckWait starts again.
func (d *Delivery) InProgress() error { return d.wrap("in progress", d.msg.InProgress()) }

// Nak hands the message back to be delivered again, after delay (to another taker, or this one).
func (d *Delivery) Nak(delay time.Duration) error {
	return d.wrap("nak", d.msg.NakWithDelay(delay))
}

// Term removes the message without it being done: it is not delivered again.
func (d *Delivery) Term(reason string) error { return d.wrap("term", d.msg.TermWithReason(reason)) }

func (d *Delivery) wrap(what string, err error) error {
	if err != nil {
		return fmt.Errorf("bus: work queue message %d: %s: %w", d.Seq, what, err)
	}
	return nil
}

// Store publishes data on subject to a stream that keeps it (a work queue's) and returns once
// the server stored it: a publish the server refuses (no stream, the stream full) is an error.
func (c *Conn) Store(ctx context.Context, subject string, data []byte) error {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return fmt.Errorf("bus: store on %s: %w", subject, err)
	}
	if _, err := js.Publish(ctx, subject, data); err != nil {
		return fmt.Errorf("bus: store on %s (%d bytes): %w", subject, len(data), err)
	}
	return nil
}
