package roleproc

import (
	"testing"
	"time"

	"github.com/dpsim/dpsim/pkg/wire"
)

// fakeTime is a deterministic TimeSource: Now advances only by work().
type fakeTime struct{ now time.Time }

func (f *fakeTime) Now() time.Time       { return f.now }
func (f *fakeTime) work(d time.Duration) { f.now = f.now.Add(d) }

// pace plays a driver that releases step k at its tick, or at once when the previous step's
// work ran past it (then the step is late), and reports it to the clock.
func pace(c *Clock, ft *fakeTime, k int) {
	tick := c.Tick(k)
	late := ft.now.After(tick)
	if !late {
		ft.now = tick
	}
	c.Observe(k, ft.now, late)
}

func TestRealtimeClock(t *testing.T) {
	ft := &fakeTime{now: time.Unix(1000, 0)}
	const ts = 10 * time.Millisecond
	c, err := NewClock(Timing{Mode: wire.Realtime, Period: ts}, ft)
	if err != nil {
		t.Fatal(err)
	}
	t0 := ft.now
	c.Start()
	// Work per step: 3 ms, except step 2 takes 25 ms (overrun into steps 3 and 4) and
	// steps 3, 4 take 1 ms each.
	work := []time.Duration{3, 3, 25, 1, 1, 3, 3, 3, 3, 3}
	var starts []time.Duration
	for k, w := range work {
		pace(c, ft, k)
		if want := t0.Add(time.Duration(k+1) * ts); !c.Tick(k + 1).Equal(want) {
			t.Fatalf("step %d deadline %v, want t0+(k+1)Ts = %v", k, c.Tick(k+1).Sub(t0), want.Sub(t0))
		}
		starts = append(starts, ft.now.Sub(t0))
		ft.work(w * time.Millisecond)
	}
	// Ticks at 0,10,20,...; step 3 starts at 45 ms (tick 30: 15 ms late), step 4 at 46 ms
	// (tick 40: 6 ms late), step 5 waits for its tick at 50 ms again.
	wantStarts := []time.Duration{0, 10, 20, 45, 46, 50, 60, 70, 80, 90}
	for k := range wantStarts {
		if starts[k] != wantStarts[k]*time.Millisecond {
			t.Errorf("step %d started at %v, want %v", k, starts[k], wantStarts[k]*time.Millisecond)
		}
	}
	c.MissN(1)
	s := c.Stats()
	if s.Overruns != 2 || s.MaxOverrun != 15*time.Millisecond || s.Missed != 1 || s.Steps != 10 {
		t.Errorf("stats %+v: want 2 overruns, max 15 ms, 1 miss, 10 steps", s)
	}
	// Jitter samples: 0 x8, 15 ms, 6 ms: mean 2.1 ms, max 15 ms, p99 (rank 10 of 10) 15 ms.
	want := wire.DurationStats{N: 10, Mean: 2100 * time.Microsecond, Max: 15 * time.Millisecond, P99: 15 * time.Millisecond}
	if s.Jitter != want {
		t.Errorf("jitter %+v, want %+v", s.Jitter, want)
	}
	if s.Period != ts || s.Mode != "realtime" || s.Elapsed != 90*time.Millisecond {
		t.Errorf("stats %+v", s)
	}
}

func TestLockstepClock(t *testing.T) {
	ft := &fakeTime{now: time.Unix(0, 0)}
	c, err := NewClock(Timing{Mode: wire.Lockstep}, ft)
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	if c.Timing().StepTimeout != DefaultStepTimeout {
		t.Fatalf("lockstep step timeout %v, want the default %v", c.Timing().StepTimeout, DefaultStepTimeout)
	}
	for k := range 5 {
		c.Observe(k, ft.now, false)
		ft.work(2 * time.Millisecond)
	}
	s := c.Stats()
	if s.Steps != 5 || s.Overruns != 0 || s.Jitter.N != 0 || s.StepsPerSec != 500 {
		t.Errorf("lockstep stats %+v, want 5 steps at 500 steps/s", s)
	}
}

func TestTimingValidate(t *testing.T) {
	bad := []Timing{{Mode: wire.Realtime}, {Mode: wire.Realtime, Period: -1}, {Mode: wire.Lockstep, StepTimeout: -1}, {Mode: wire.Mode(7)}}
	for _, tm := range bad {
		if _, err := NewClock(tm, nil); err == nil {
			t.Errorf("NewClock(%+v) succeeded", tm)
		}
	}
}

// Statistics accumulate over episodes (one StartAt per episode) until Reset.
func TestClockEpisodesAccumulate(t *testing.T) {
	ft := &fakeTime{now: time.Unix(0, 0)}
	c, _ := NewClock(Timing{Mode: wire.Realtime, Period: time.Millisecond}, ft)
	for ep := range 3 {
		c.StartAt(ft.now.Add(time.Millisecond)) // launcher: episode starts in 1 ms
		for k := range 4 {
			pace(c, ft, k)
			if k == 0 && c.Tick(1).Sub(ft.now) != time.Millisecond {
				t.Fatalf("episode %d: step 0 deadline %v after its start", ep, c.Tick(1).Sub(ft.now))
			}
			if ep == 1 && k == 1 {
				ft.work(1500 * time.Microsecond) // one overrun of 0.5 ms into step 2
			}
		}
		ft.work(3 * time.Millisecond) // pause between episodes
	}
	s := c.Stats()
	if s.Steps != 12 || s.Overruns != 1 || s.MaxOverrun != 500*time.Microsecond || s.Jitter.N != 12 {
		t.Errorf("stats over 3 episodes %+v", s)
	}
	c.Reset()
	if s := c.Stats(); s.Steps != 0 || s.Overruns != 0 || s.Jitter.N != 0 {
		t.Errorf("after Reset %+v", s)
	}
}
