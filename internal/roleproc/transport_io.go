package roleproc

import (
	"time"

	"github.com/dpsim/dpsim/pkg/wire"
)

// What a natsTransport needs of its process, as the smallest interfaces pkg/bus implements
// (bus.Inbox, bus.Publisher, bus.Conn): the unit tests drive the transport through in-memory
// ones, without a NATS server.

// deliveries is where the transport takes the process's deliveries from: its one bus.Inbox.
type deliveries interface {
	// Next returns the next valid message of the current episode, bus.ErrTimeout at the
	// deadline, bus.ErrStopped once stopped.
	Next(deadline time.Time) (*wire.Message, error)
	// SetEpisode makes episode ep the current one.
	SetEpisode(ep int)
	// SetEpisodes makes the count episodes from first the current ones (episodes in flight).
	SetEpisodes(first, count int)
}

// streamSender publishes one hosted publisher's messages with their routes: a bus.Publisher.
type streamSender interface {
	SendRouted(episode, step int, values []float64, r wire.Route) error
}

// routedPublisher publishes a message with its route on a subject: the process's bus.Conn.
type routedPublisher interface {
	PublishRouted(subject string, m *wire.Message, r wire.Route) error
}

// transportIO is a transport's connection to the world.
type transportIO struct {
	run       string
	realtime  bool
	in        deliveries
	publisher func(subject, sender, kind string) streamSender // a hosted publisher's stream
	conn      routedPublisher                                 // the delayed copies (wall-clock delays)
	stop      <-chan struct{}                                 // closed when the process stops
}
