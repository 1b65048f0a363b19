package bus

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func msg(sender string, ep, step int, vals ...float64) *Message {
	return &Message{V: 1, Run: "r", Episode: ep, Step: step, Sender: sender, Values: vals}
}

func TestStepCollectorOffer(t *testing.T) {
	var cnt Counters
	c, err := NewStepCollector([]string{"agent.1", "agent.2"}, CollectorOptions{Window: 2, Counters: &cnt})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		m      *Message
		reason Reason // numReasons: kept
	}{
		{msg("agent.1", 0, 0, 1), numReasons},
		{msg("agent.9", 0, 0, 1), ReasonSender},
		{msg("agent.1", 0, 0, 1), ReasonDuplicate},
		{msg("agent.2", 0, 1, 21), numReasons},  // one step ahead: buffered
		{msg("agent.1", 0, 2, 12), ReasonAhead}, // window 2: no slot for step 2
		{msg("agent.2", 0, 0, 2), numReasons},
	}
	for i, s := range steps {
		err := c.Offer(s.m)
		if s.reason == numReasons {
			if err != nil {
				t.Fatalf("offer %d: %v", i, err)
			}
			continue
		}
		if r := ReasonOf(err); err == nil || r != s.reason {
			t.Fatalf("offer %d: err %v, want reason %v", i, err, s.reason)
		}
	}
	if !c.Ready() {
		t.Fatalf("step 0 not ready; missing %v", c.Missing())
	}
	if v := c.Values(0); !reflect.DeepEqual(v, []float64{1}) {
		t.Errorf("Values(0) = %v", v)
	}
	if v := c.Values(1); !reflect.DeepEqual(v, []float64{2}) {
		t.Errorf("Values(1) = %v", v)
	}
	if err := c.Advance(0, 1); err != nil {
		t.Fatal(err)
	}
	if c.Ready() || !reflect.DeepEqual(c.Missing(), []string{"agent.1"}) {
		t.Fatalf("step 1: ready=%v missing=%v, want agent.1 missing", c.Ready(), c.Missing())
	}
	if v := c.Values(1); !reflect.DeepEqual(v, []float64{21}) {
		t.Errorf("buffered Values(1) = %v, want [21]", v)
	}
	if c.Values(0) != nil || c.Values(7) != nil {
		t.Error("Values of a missing or unknown sender is not nil")
	}
	if err := c.Offer(msg("agent.1", 0, 0, 9)); ReasonOf(err) != ReasonLate {
		t.Errorf("step-0 message at step 1: %v, want late", err)
	}
	// The next episode's step 0 is ahead of (0, 1): buffered.
	if err := c.Offer(msg("agent.1", 1, 0, 100)); err != nil {
		t.Errorf("next-episode message: %v", err)
	}
	if err := c.Advance(0, 0); err == nil {
		t.Error("Advance backwards succeeded")
	}
	if err := c.Advance(1, 0); err != nil {
		t.Fatal(err)
	}
	if v := c.Values(0); !reflect.DeepEqual(v, []float64{100}) {
		t.Errorf("episode 1 Values(0) = %v", v)
	}
	want := map[string]uint64{"sender": 1, "duplicate": 1, "ahead": 1, "late": 1}
	if got := cnt.Snapshot().ByReason; !reflect.DeepEqual(got, want) {
		t.Errorf("drops %v, want %v", got, want)
	}
}

func TestNewStepCollectorErrors(t *testing.T) {
	for name, senders := range map[string][]string{"none": nil, "empty": {"a", ""}, "dup": {"a", "a"}} {
		if _, err := NewStepCollector(senders, CollectorOptions{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewStepCollector([]string{"a"}, CollectorOptions{Window: -1}); err == nil {
		t.Error("negative window accepted")
	}
}

func TestCollectTimeoutNamesMissingSenders(t *testing.T) {
	c, _ := NewStepCollector([]string{"agent.0", "agent.1", "agent.2", "agent.3"}, CollectorOptions{})
	ch := make(chan *Message, 8)
	ch <- msg("agent.2", 0, 5, 1)
	ch <- msg("agent.0", 0, 5, 1)
	ch <- msg("agent.1", 0, 4, 1) // late: does not count for step 5
	start := time.Now()
	err := c.Collect(NewChanSource(ch), 0, 5, time.Now().Add(50*time.Millisecond))
	waited := time.Since(start)
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("Collect = %v, want *TimeoutError", err)
	}
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("%v does not wrap ErrTimeout", err)
	}
	if !reflect.DeepEqual(te.Missing, []string{"agent.1", "agent.3"}) || te.Step != 5 || te.Episode != 0 {
		t.Errorf("TimeoutError = %+v, want agent.1 and agent.3 missing at episode 0 step 5", te)
	}
	if msg := err.Error(); !strings.Contains(msg, "agent.1, agent.3") || !strings.Contains(msg, "step 5") {
		t.Errorf("error text %q does not name the missing senders and the step", msg)
	}
	if waited < 50*time.Millisecond || waited > 2*time.Second {
		t.Errorf("waited %v for a 50 ms deadline", waited)
	}
}

func TestCollectSucceedsAndBuffersAhead(t *testing.T) {
	c, _ := NewStepCollector([]string{"plant.0", "plant.1"}, CollectorOptions{})
	ch := make(chan *Message, 8)
	src := NewChanSource(ch)
	go func() {
		ch <- msg("plant.0", 0, 0, 0.5)
		ch <- msg("plant.0", 0, 1, 1.5) // ahead of the collector
		time.Sleep(5 * time.Millisecond)
		ch <- msg("plant.1", 0, 0, 0.25)
		ch <- msg("plant.1", 0, 1, 1.25)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for step, want := range [][]float64{{0.5, 0.25}, {1.5, 1.25}} {
		if err := c.Collect(src, 0, step, deadline); err != nil {
			t.Fatal(err)
		}
		if got := []float64{c.Values(0)[0], c.Values(1)[0]}; !reflect.DeepEqual(got, want) {
			t.Errorf("step %d: %v, want %v", step, got, want)
		}
	}
	// A closed source ends the wait with ErrClosed, naming who is missing.
	close(ch)
	err := c.Collect(src, 0, 2, time.Now().Add(time.Second))
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "plant.0, plant.1") {
		t.Errorf("closed source: %v", err)
	}
}

func TestCollectSteadyStateDoesNotAllocate(t *testing.T) {
	c, _ := NewStepCollector([]string{"a.0", "a.1"}, CollectorOptions{})
	ch := make(chan *Message, 4)
	src := NewChanSource(ch)
	m0, m1 := msg("a.0", 0, 0, 1, 2), msg("a.1", 0, 0, 3, 4)
	step := 0
	deadline := time.Now().Add(time.Minute)
	run := func() {
		m0.Step, m1.Step = step, step
		ch <- m0
		ch <- m1
		if err := c.Collect(src, 0, step, deadline); err != nil {
			t.Fatal(err)
		}
		step++
	}
	run()
	if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
		t.Errorf("Collect allocates %v times per step", allocs)
	}
}
