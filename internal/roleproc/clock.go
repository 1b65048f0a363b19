package roleproc

import (
	"fmt"
	"time"

	"github.com/dpsim/dpsim/pkg/wire"
)

// DefaultStepTimeout bounds a lockstep wait when Timing.StepTimeout is zero.
const DefaultStepTimeout = 10 * time.Second

// Timing configures a Clock.
type Timing struct {
	Mode        wire.Mode
	Period      time.Duration // realtime sampling period Ts (> 0 in realtime mode)
	StepTimeout time.Duration // lockstep: longest wait for one step's messages (default DefaultStepTimeout)
}

// Validate checks the configuration.
func (t Timing) Validate() error {
	switch t.Mode {
	case wire.Lockstep:
		if t.StepTimeout < 0 {
			return fmt.Errorf("roleproc: negative step timeout %v", t.StepTimeout)
		}
	case wire.Realtime:
		if t.Period <= 0 {
			return fmt.Errorf("roleproc: realtime mode needs a period > 0, got %v", t.Period)
		}
	default:
		return fmt.Errorf("roleproc: unknown time mode %v", t.Mode)
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
	if c.t.Mode != wire.Realtime {
		return c.t0
	}
	return c.t0.Add(time.Duration(k) * c.t.Period)
}

// Stats returns the timing statistics so far.
func (c *Clock) Stats() wire.TimingStats {
	s := wire.TimingStats{
		Mode:     c.t.Mode.String(),
		Steps:    c.steps,
		Elapsed:  c.last.Sub(c.first),
		Overruns: c.over, MaxOverrun: c.maxOver,
		Missed: c.missed,
	}
	if c.t.Mode == wire.Realtime {
		s.Period = c.t.Period
		s.Jitter = wire.SummarizeDurations(c.jitter)
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
	if c.t.Mode != wire.Realtime {
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
