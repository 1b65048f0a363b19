package farm

import (
	"context"
	"time"

	"github.com/dpsim/dpsim/pkg/bus"
)

// The protocol's messages and the coordinator's internals, for the tests of package farm_test
// (an external test package: they play the kinds of internal/farm/kinds, which import farm).
type (
	Answer     = answer
	Lease      = lease
	Assignment = assignment
	Hello      = hello
	Beat       = beat
	Reply      = reply
)

// The protocol's verbs.
const (
	VerbNext   = verbNext
	VerbJob    = verbJob
	VerbBeat   = verbBeat
	VerbAnswer = verbAnswer
)

// Session is the coordinator's session: its jobs are Session()-1, Session()-2, ...
func (c *Coordinator) Session() string { return c.session }

// HasJob reports whether job id is being served.
func (c *Coordinator) HasJob(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.jobs[id] != nil
}

// ServerURL is the URL of the coordinator's server.
func (c *Coordinator) ServerURL() string { return c.srv.URL }

// Embedded is the coordinator's embedded server (nil: an external one).
func (c *Coordinator) Embedded() *bus.Embedded { return c.srv.Embedded }

// SetDrawn has f hear each draw of whether a chunk's first answer is checked.
func (c *Coordinator) SetDrawn(f func(job string, chunk int, checked bool)) { c.drawn = f }

// JournalSpent is the time the scheduler waited for the durable journal and the records it
// wrote (no job may be running).
func (c *Coordinator) JournalSpent() (time.Duration, int) {
	if c.dur == nil {
		return 0, 0
	}
	return c.dur.spent, c.dur.writes
}

// QueueDepth is how many chunks wait in the durable farm's work queue (0 without one).
func (c *Coordinator) QueueDepth() uint64 {
	if c.wq == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), journalTimeout)
	defer cancel()
	n, err := c.wq.chunks.Depth(ctx)
	if err != nil {
		return 0
	}
	return n
}

// The durable farm's work queues and their subjects.
const (
	QueueStream   = queueStream
	QueueSubject  = queueSubject
	QueueConsumer = queueConsumer
	AnswerStream  = answerStream
)

// QueueSpent is the time the scheduler waited for the work queue to store an issue and the
// issues it put (no job may be running).
func (c *Coordinator) QueueSpent() (time.Duration, int) {
	if c.wq == nil {
		return 0, 0
	}
	return c.wq.spent, c.wq.puts
}
