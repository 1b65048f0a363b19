package wire

import (
	"fmt"
	"slices"
	"time"
)

// Mode is how a run advances time.
type Mode uint8

const (
	// Lockstep: each step proceeds as soon as its messages arrived, as fast as possible;
	// every wait is bounded by a step timeout (a role process's --timeout).
	Lockstep Mode = iota
	// Realtime: step k starts at t0 + k*Period on the wall clock; a step's messages must
	// arrive before the next tick. Overruns, misses, late messages and jitter are reported.
	Realtime
)

func (m Mode) String() string {
	switch m {
	case Lockstep:
		return "lockstep"
	case Realtime:
		return "realtime"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses "lockstep" or "realtime".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "lockstep", "":
		return Lockstep, nil
	case "realtime":
		return Realtime, nil
	}
	return Lockstep, fmt.Errorf("wire: unknown time mode %q (want lockstep or realtime)", s)
}

// DurationStats summarises a set of durations.
type DurationStats struct {
	N    int           `json:"n"`
	Mean time.Duration `json:"mean_ns"`
	Max  time.Duration `json:"max_ns"`
	P99  time.Duration `json:"p99_ns"` // nearest-rank 99th percentile
}

// SummarizeDurations computes N, mean, max and the nearest-rank p99 of xs (xs is not
// modified).
func SummarizeDurations(xs []time.Duration) DurationStats {
	if len(xs) == 0 {
		return DurationStats{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += float64(x)
	}
	rank := (99*len(s) + 99) / 100 // ceil(0.99 n)
	return DurationStats{
		N:    len(s),
		Mean: time.Duration(sum / float64(len(s))),
		Max:  s[len(s)-1],
		P99:  s[rank-1],
	}
}

// TimingStats reports how the run kept time. Nothing is hidden: in realtime mode every
// overrun and missed deadline is counted (late messages are in Counters, ReasonLate).
type TimingStats struct {
	Mode        string        `json:"mode"`
	Period      time.Duration `json:"period_ns,omitempty"`
	Steps       int           `json:"steps"`
	Elapsed     time.Duration `json:"elapsed_ns"` // from the first Start to the start of the last step
	StepsPerSec float64       `json:"steps_per_sec"`
	Overruns    int           `json:"overruns"`                  // realtime: steps that began after their tick
	MaxOverrun  time.Duration `json:"max_overrun_ns"`            // realtime: worst lateness of a step start
	Missed      int           `json:"missed"`                    // steps whose messages missed the deadline
	Jitter      DurationStats `json:"jitter"`                    // realtime: actual start - tick
	StepTimeout time.Duration `json:"step_timeout_ns,omitempty"` // lockstep
}
