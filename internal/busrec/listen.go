package busrec

import (
	"fmt"
	"time"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/wire"
)

// DrainTimeout bounds the wait for the messages already delivered to a listener when it stops.
const DrainTimeout = 5 * time.Second

// Listener is the subscription of one run id (a point of a run) feeding a Recorder.
type Listener struct {
	conn *bus.Conn
}

// Listen connects to url as name (opts: the account and TLS of the run's launcher, which may
// subscribe dpsim.<run>.>) and records every message of run with its NATS headers: the
// subscription is in place at the server when Listen returns, so it hears everything published
// afterwards.
func (r *Recorder) Listen(url, name, run string, opts ...bus.Option) (*Listener, error) {
	subj, err := wire.NewSubjects(run)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	conn, err := bus.Connect(url, name, opts...)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	// dpsim.<run>.>, as the eavesdropper: never the challenger's private line (wire.ChallengerPrefix)
	if _, err := conn.SubscribeDocumentsHeaders(subj.All(), nil, func(subject string, header map[string][]string, data []byte) {
		r.RecordHeaders(subject, header, data, time.Now())
	}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("recording: %w", err)
	}
	if err := conn.Flush(DrainTimeout); err != nil {
		conn.Close()
		return nil, fmt.Errorf("recording: subscribing %s: %w", subj.All(), err)
	}
	return &Listener{conn: conn}, nil
}

// Stop waits for the messages the server already routed to the listener (a round trip), hands
// them to the recorder and closes the connection.
func (l *Listener) Stop() error {
	if l == nil || l.conn.IsClosed() {
		return nil
	}
	_ = l.conn.Flush(DrainTimeout) // what was published before is delivered before the answer
	if err := l.conn.Drain(DrainTimeout); err != nil {
		l.conn.Close()
		return fmt.Errorf("recording: %w", err)
	}
	return nil
}
