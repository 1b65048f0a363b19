package bus

import (
	"fmt"
	"slices"
	"time"
)

// Mode is how a run advances time.
type Mode uint8

const (
	// Lockstep: each step proceeds as soon as its messages arrived, as fast as possible;
	// every wait is bounded by Timing.StepTimeout.
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
	return Lockstep, fmt.Errorf("bus: unknown time mode %q (want lockstep or realtime)", s)
}

// DefaultStepTimeout bounds a lockstep wait when Timing.StepTimeout is zero.
const DefaultStepTimeout = 10 * time.Second

// Timing configures a Clock.
type Timing struct {
	Mode        Mode
	Period      time.Duration // realtime sampling period Ts (> 0 in realtime mode)
	StepTimeout time.Duration // lockstep: longest wait for one step's messages (default DefaultStepTimeout)
}

// Validate checks the configuration.
func (t Timing) Validate() error {
	switch t.Mode {
	case Lockstep:
		if t.StepTimeout < 0 {
			return fmt.Errorf("bus: negative step timeout %v", t.StepTimeout)
		}
	case Realtime:
		if t.Period <= 0 {
			return fmt.Errorf("bus: realtime mode needs a period > 0, got %v", t.Period)
		}
	default:
		return fmt.Errorf("bus: unknown time mode %v", t.Mode)
	}
	return nil
}

// TimeSource is the clock a Clock reads (WallClock, or a fake in tests).
type TimeSource interface {
	Now() time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// WallClock is the real clock.
var WallClock TimeSource = wallClock{}

// Clock keeps the time statistics of a run's steps on the tick grid t_k = t0 + k*Ts: the
// driver (sim.Driver, through a process's pacer) releases step k's output at t_k and reports
// it (Observe): the jitter (actual start - t_k), an overrun when the step could only start
// after its tick (the previous one took longer than its period; the ticks stay on the grid,
// so overruns are never absorbed silently), and the steps that missed their deadline
// (MissN). A Clock is not safe for concurrent use.
type Clock struct {
	t       Timing
	ts      TimeSource
	t0      time.Time // current tick grid origin
	first   time.Time // first t0 since Reset: Elapsed is measured from here
	started bool
	steps   int
	over    int
	maxOver time.Duration
	missed  int
	jitter  []time.Duration // one sample per realtime step
	last    time.Time
}

// NewClock returns a clock for t reading ts (nil means WallClock).
func NewClock(t Timing, ts TimeSource) (*Clock, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if t.StepTimeout == 0 {
		t.StepTimeout = DefaultStepTimeout
	}
	if ts == nil {
		ts = WallClock
	}
	return &Clock{t: t, ts: ts}, nil
}

// Timing returns the configuration (with defaults filled in).
func (c *Clock) Timing() Timing { return c.t }

// Start sets t0 to now.
func (c *Clock) Start() { c.StartAt(c.ts.Now()) }

// StartAt sets t0, the origin of the tick grid (e.g. a start time broadcast by the
// launcher so all processes share the grid). Call it at the start of every episode (steps
// count from 0 again); the statistics accumulate over episodes until Reset.
func (c *Clock) StartAt(t0 time.Time) {
	c.t0 = t0
	if !c.started {
		c.first, c.last = t0, t0
		c.started = true
	}
}

// Reset clears the statistics; the next Start begins a new measurement.
func (c *Clock) Reset() {
	*c = Clock{t: c.t, ts: c.ts, jitter: c.jitter[:0]}
}

// Tick returns t0 + k*Period (realtime) or t0 (lockstep).
func (c *Clock) Tick(k int) time.Time {
	if c.t.Mode != Realtime {
		return c.t0
	}
	return c.t0.Add(time.Duration(k) * c.t.Period)
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

// Stats returns the timing statistics so far.
func (c *Clock) Stats() TimingStats {
	s := TimingStats{
		Mode:     c.t.Mode.String(),
		Steps:    c.steps,
		Elapsed:  c.last.Sub(c.first),
		Overruns: c.over, MaxOverrun: c.maxOver,
		Missed: c.missed,
	}
	if c.t.Mode == Realtime {
		s.Period = c.t.Period
		s.Jitter = SummarizeDurations(c.jitter)
	} else {
		s.StepTimeout = c.t.StepTimeout
	}
	if s.Elapsed > 0 && s.Steps > 1 {
		s.StepsPerSec = float64(s.Steps-1) / s.Elapsed.Seconds()
	}
	return s
}

// Observe records that step k started - released its output - at time at; late says it could
// only start after its tick (the previous step overran). In realtime at - t_k is the step's
// jitter and a late start an overrun; in lockstep only the step is counted.
func (c *Clock) Observe(k int, at time.Time, late bool) {
	if !c.started {
		c.StartAt(at)
	}
	c.steps++
	c.last = at
	if c.t.Mode != Realtime {
		return
	}
	tick := c.Tick(k)
	if late {
		c.over++
		if d := at.Sub(tick); d > c.maxOver {
			c.maxOver = d
		}
	}
	c.jitter = append(c.jitter, at.Sub(tick))
}

// MissN records n steps whose deadline passed before all their messages arrived.
func (c *Clock) MissN(n int) { c.missed += n }
