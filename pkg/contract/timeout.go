package contract

import "time"

// The step timeout both sides share: a process's --timeout, which dpsim run passes on from its
// own --timeout.
const (
	// DefaultTimeout is the default --timeout: the longest wait for one step's messages
	// (lockstep).
	DefaultTimeout = 10 * time.Second
	// MinTimeout is the smallest --timeout accepted.
	MinTimeout = time.Millisecond
	// MinFlushWait is the least a process waits for a NATS flush (the server's confirmation of
	// what it published) and for an episode's private x(0): FlushWait.
	MinFlushWait = 10 * time.Second
)

// FlushWait is how long a process waits for a NATS flush and for an episode's private x(0):
// --timeout, but never less than MinFlushWait. These waits end early only when the server or
// the launcher is gone, while a step timeout of milliseconds (a latency experiment's) is a
// deliberate setting: a busy machine's slow round trip must not turn it into a failed run.
func FlushWait(timeout time.Duration) time.Duration { return max(timeout, MinFlushWait) }
