package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// JournalAPI is what a client publishes on to use JetStream (its API): a user that writes a
// journal needs it among its Publish subjects, with the journal's subjects.
const JournalAPI = "$JS.API.>"

// JournalOptions configure a journal: a JetStream stream (file storage) whose subjects are
// keys, each holding its last record only (MaxMsgsPerSubject 1), with limits - records and
// bytes - that refuse a record beyond them (DiscardNew) rather than drop an older one.
type JournalOptions struct {
	Stream     string // the stream's name
	Subjects   string // the subjects it keeps, e.g. "dpsim.journal.>"
	MaxMsgs    int64  // records (keys) at most
	MaxBytes   int64  // bytes at most
	MaxMsgSize int32  // one record's bytes at most
}

// Journal is a durable key-value log on the server's JetStream (the embedded server with
// EmbeddedOptions.JetStream, its store in StoreDir): Append returns once the server stored the
// record, and Last reads a key's record back after a restart of the process and the server.
// A farm's coordinator journals the chunk results it accepted so that a restarted coordinator
// plays only the rest.
type Journal struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	opts   JournalOptions
}

// Journal opens (creating or resizing) the journal of opts on c's server.
func (c *Conn) Journal(ctx context.Context, opts JournalOptions) (*Journal, error) {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, fmt.Errorf("bus: journal %s: %w", opts.Stream, err)
	}
	j := &Journal{js: js, opts: opts}
	if err := j.Resize(ctx, opts.MaxMsgs, opts.MaxBytes); err != nil {
		return nil, err
	}
	return j, nil
}

// Resize sets the journal's limits (records, bytes): a job sizes it to what it may write.
func (j *Journal) Resize(ctx context.Context, maxMsgs, maxBytes int64) error {
	j.opts.MaxMsgs, j.opts.MaxBytes = maxMsgs, maxBytes
	s, err := j.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              j.opts.Stream,
		Subjects:          []string{j.opts.Subjects},
		Storage:           jetstream.FileStorage,
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardNew,
		MaxMsgsPerSubject: 1,
		MaxMsgs:           maxMsgs,
		MaxBytes:          maxBytes,
		MaxMsgSize:        j.opts.MaxMsgSize,
		Replicas:          1,
	})
	if err != nil {
		return fmt.Errorf("bus: journal %s (limits %d records, %d bytes): %w", j.opts.Stream, maxMsgs, maxBytes, err)
	}
	j.stream = s
	return nil
}

// Append stores data as subject's record (replacing the one before) and returns once the server
// acknowledged it stored.
func (j *Journal) Append(ctx context.Context, subject string, data []byte) error {
	if _, err := j.js.Publish(ctx, subject, data); err != nil {
		return fmt.Errorf("bus: journal %s: append %s (%d bytes): %w", j.opts.Stream, subject, len(data), err)
	}
	return nil
}

// Last returns subject's record (false: none).
func (j *Journal) Last(ctx context.Context, subject string) ([]byte, bool, error) {
	m, err := j.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("bus: journal %s: read %s: %w", j.opts.Stream, subject, err)
	}
	return m.Data, true, nil
}

// Records is how many keys hold a record.
func (j *Journal) Records(ctx context.Context) (uint64, error) {
	info, err := j.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("bus: journal %s: %w", j.opts.Stream, err)
	}
	return info.State.Msgs, nil
}
