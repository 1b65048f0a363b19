package contract

import "time"

// The step timeout both sides share: a process's --timeout, which dpsim run passes on from its
// own --timeout.
const (
	// DefaultTimeout is the default --timeout: the longest wait for one step's messages
	// (lockstep) and for each NATS flush.
	DefaultTimeout = 10 * time.Second
	// MinTimeout is the smallest --timeout accepted: it also bounds every NATS flush, which
	// takes a round trip to the server.
	MinTimeout = time.Millisecond
)
