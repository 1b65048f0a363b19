package fault

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/scenario"
)

func inj(t *testing.T, links ...scenario.LinkFault) *Injector {
	t.Helper()
	in, err := New(&scenario.FaultsSpec{Links: links}, 7)
	require.NoError(t, err)
	return in
}

func TestLinkMatching(t *testing.T) {
	in := inj(t,
		scenario.LinkFault{Name: "u", From: "cloud.0", To: "plant.0", Drop: 1},
		scenario.LinkFault{Name: "agents", From: "agent.*", To: "*", Drop: 1},
		scenario.LinkFault{Name: "subj", Subject: "agent.3.>", To: "eavesdropper.0", Drop: 1},
	)
	cases := []struct {
		from, to, subject string
		rules             []string
	}{
		{"cloud.0", "plant.0", "cloud.0.u", []string{"u"}},
		{"cloud.0", "eavesdropper.0", "cloud.0.u", nil},
		{"plant.0", "cloud.0", "plant.0.yhat", nil},
		{"agent.2", "agent.3", "agent.2.y", []string{"agents"}},
		{"agent.3", "eavesdropper.0", "agent.3.y", []string{"agents", "subj"}},
		{"agent.4", "eavesdropper.0", "agent.4.y", []string{"agents"}},
	}
	for _, c := range cases {
		l := in.Link(c.from, c.to, c.subject)
		var got []string
		for _, lr := range l.rules {
			got = append(got, lr.r.name)
		}
		assert.Equal(t, c.rules, got, "%s->%s", c.from, c.to)
		assert.Equal(t, len(c.rules) == 0, l.Clear())
	}
}

func TestBadPatterns(t *testing.T) {
	for _, f := range []scenario.LinkFault{{From: "plant"}, {To: "agent.x"}, {From: "agent.-1"}, {Unit: "s"}} {
		_, err := New(&scenario.FaultsSpec{Links: []scenario.LinkFault{f}}, 1)
		assert.Error(t, err, "%+v", f)
	}
}

// Decide is a pure function of (seed, rule, link, episode, step): the call order does not
// matter, and another seed, link or step gives other draws.
func TestDecideIsPure(t *testing.T) {
	in := inj(t, scenario.LinkFault{Drop: 0.3, Duplicate: 0.2, Reorder: 0.1, Delay: 1,
		RandomDelay: &scenario.RandomDelay{Dist: scenario.DistExponential, Mean: 2}, Jitter: 0.5})
	a, b := in.Link("agent.0", "agent.1", "agent.0.y"), in.Link("agent.0", "agent.1", "agent.0.y")
	fwd := make([]Fate, 200)
	for s := range fwd {
		fwd[s] = a.Decide(3, s)
	}
	for s := len(fwd) - 1; s >= 0; s-- {
		require.Equal(t, fwd[s], b.Decide(3, s), "step %d", s)
	}
	other := in.Link("agent.1", "agent.0", "agent.1.y")
	diff := 0
	for s := range fwd {
		if other.Decide(3, s) != fwd[s] {
			diff++
		}
	}
	assert.Greater(t, diff, 100, "another link draws independently")
}

// The drop, duplicate and reorder frequencies match their probabilities (binomial, 5 sigma),
// and a fixed delay of 2.4 steps with no randomness is 2 steps.
func TestDecideFrequencies(t *testing.T) {
	const n = 20000
	in := inj(t, scenario.LinkFault{Drop: 0.1, Duplicate: 0.05, Reorder: 0.2, Delay: 2.4})
	l := in.Link("plant.0", "cloud.0", "plant.0.yhat")
	var drop, dup, reo int
	for s := 0; s < n; s++ {
		f := l.Decide(s/100, s%100)
		require.Equal(t, 2, f.DelaySteps)
		if f.Drop {
			drop++
		}
		if f.Duplicate {
			dup++
		}
		if f.Reorder {
			reo++
		}
	}
	for _, c := range []struct {
		got int
		p   float64
	}{{drop, 0.1}, {dup, 0.05}, {reo, 0.2}} {
		mean, sd := n*c.p, math.Sqrt(n*c.p*(1-c.p))
		assert.InDelta(t, mean, float64(c.got), 5*sd)
	}
}

// Random delays follow their distributions: the sample mean of each is within 5 standard
// errors of the distribution's mean.
func TestRandomDelayMeans(t *testing.T) {
	cases := []struct {
		rd       scenario.RandomDelay
		mean, sd float64
	}{
		{scenario.RandomDelay{Dist: scenario.DistUniform, Min: 1, Max: 3}, 2, 2 / math.Sqrt(12)},
		{scenario.RandomDelay{Dist: scenario.DistExponential, Mean: 4}, 4, 4},
		{scenario.RandomDelay{Dist: scenario.DistLognormal, Mu: 0.5, Sigma: 0.4}, math.Exp(0.5 + 0.08), math.Sqrt((math.Exp(0.16) - 1) * math.Exp(1+0.16))},
	}
	for _, c := range cases {
		rd := c.rd
		in := inj(t, scenario.LinkFault{Unit: scenario.UnitMS, RandomDelay: &rd})
		l := in.Link("plant.0", "cloud.0", "plant.0.yhat")
		const n = 20000
		var sum float64
		for s := 0; s < n; s++ {
			f := l.Decide(0, s)
			sum += float64(f.Delay) / float64(time.Millisecond)
		}
		assert.InDelta(t, c.mean, sum/n, 5*c.sd/math.Sqrt(n), "%s", rd.Dist)
	}
}

func TestWindow(t *testing.T) {
	in := inj(t, scenario.LinkFault{Drop: 1, Window: &scenario.StepWindow{From: 5, To: 8}})
	l := in.Link("plant.0", "cloud.0", "plant.0.yhat")
	for s := 0; s < 12; s++ {
		assert.Equal(t, s >= 5 && s < 8, l.Decide(0, s).Drop, "step %d", s)
	}
}

type rec struct {
	to, step, at int
	gap, more    bool
	except       string
}

func collect(ob *Outbox, t int, v float64) []rec {
	var out []rec
	ob.Release(t, []float64{v}, func(d *Delivery) {
		out = append(out, rec{d.To, d.Step, d.At, d.Gap, d.More, fmt.Sprint(d.Except)})
	})
	return out
}

// A clear outbox broadcasts once per step.
func TestOutboxClear(t *testing.T) {
	in := inj(t)
	ob := NewOutbox([]*Link{in.Link("plant.0", "cloud.0", "plant.0.yhat"), in.Link("plant.0", "eavesdropper.0", "plant.0.yhat")})
	ob.Begin(0)
	assert.Equal(t, []rec{{Broadcast, 3, 3, false, false, "[]"}}, collect(ob, 3, 1))
	assert.Equal(t, uint64(1), ob.Stats()[0].Sent)
}

// A delay of 2 steps on one link: gaps at the step, the copy at step + 2 ahead of that
// step's own message; the other subscriber gets the plain broadcast (excepting the delayed
// link); copies left at the end expire.
func TestOutboxDelayOrder(t *testing.T) {
	in := inj(t, scenario.LinkFault{To: "cloud.0", Delay: 2})
	ob := NewOutbox([]*Link{in.Link("plant.0", "cloud.0", "plant.0.yhat"), in.Link("plant.0", "eavesdropper.0", "plant.0.yhat")})
	ob.Begin(0)
	bc := func(t int) rec { return rec{Broadcast, t, t, false, false, "[0]"} }
	assert.Equal(t, []rec{bc(0), {0, 0, 0, true, false, "[]"}}, collect(ob, 0, 0))
	assert.Equal(t, []rec{bc(1), {0, 1, 1, true, false, "[]"}}, collect(ob, 1, 1))
	assert.Equal(t, []rec{bc(2), {0, 0, 2, false, false, "[]"}}, collect(ob, 2, 2), "the late copy of step 0 ends step 2 (step 2's own is held)")
	ob.End()
	st := ob.Stats()[0]
	assert.Equal(t, uint64(3), st.Sent)
	assert.Equal(t, uint64(3), st.Delayed)
	assert.Equal(t, uint64(2), st.Expired, "the copies of steps 1 and 2 are due after the last release")
}

// Reordering: the step's message goes one step later, behind the next message; a duplicate
// follows its original.
func TestOutboxReorderAndDuplicate(t *testing.T) {
	in := inj(t, scenario.LinkFault{Reorder: 1, Window: &scenario.StepWindow{From: 0, To: 1}},
		scenario.LinkFault{Duplicate: 1, Window: &scenario.StepWindow{From: 1, To: 2}})
	ob := NewOutbox([]*Link{in.Link("agent.0", "agent.1", "agent.0.y")})
	ob.Begin(0)
	assert.Equal(t, []rec{{0, 0, 0, true, false, "[]"}}, collect(ob, 0, 0))
	assert.Equal(t, []rec{{0, 1, 1, false, true, "[]"}, {0, 1, 1, false, true, "[]"}, {0, 0, 1, false, false, "[]"}}, collect(ob, 1, 1))
	st := ob.Stats()[0]
	assert.Equal(t, uint64(1), st.Reordered)
	assert.Equal(t, uint64(1), st.Duplicated)
}

// Over many steps the outbox's counters add up: every released message is delivered, dropped
// or expired, and the steady state does not allocate.
func TestOutboxAccounting(t *testing.T) {
	in := inj(t, scenario.LinkFault{Drop: 0.1, Duplicate: 0.1, Reorder: 0.1,
		RandomDelay: &scenario.RandomDelay{Dist: scenario.DistUniform, Min: 0, Max: 2}})
	ob := NewOutbox([]*Link{in.Link("agent.0", "agent.1", "agent.0.y")})
	var delivered, gaps uint64
	emit := func(d *Delivery) {
		switch {
		case d.Gap:
			gaps++
		case d.To == Broadcast && len(d.Except) == 0:
			delivered++ // the only link
		case d.To == Broadcast: // excepting the only link: nobody
		default:
			delivered++
		}
	}
	v := []float64{1}
	for ep := 0; ep < 50; ep++ {
		ob.Begin(ep)
		for s := 0; s < 100; s++ {
			ob.Release(s, v, emit)
		}
	}
	ob.End()
	st := ob.Stats()[0]
	assert.Equal(t, st.Sent-st.Dropped+st.Duplicated-st.Expired, delivered)
	assert.Greater(t, gaps, uint64(0))
	allocs := testing.AllocsPerRun(100, func() {
		ob.Begin(0)
		for s := 0; s < 100; s++ {
			ob.Release(s, v, emit)
		}
	})
	assert.Zero(t, allocs)
}

// A partition drops every message across its cut in its window, and nothing else: not the
// links within a side, not the eavesdropper's, not outside the window.
func TestPartitionCutsAcross(t *testing.T) {
	spec := &scenario.FaultsSpec{Partitions: []scenario.Partition{{Name: "halves", Side: []int{0, 1}, Window: scenario.StepWindow{From: 5, To: 8}}}}
	in, err := New(spec, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Active() {
		t.Fatal("a partition is an active fault")
	}
	cases := []struct {
		from, to string
		cut      bool
	}{
		{"agent.0", "agent.2", true}, {"agent.3", "agent.1", true},
		{"agent.0", "agent.1", false}, {"agent.2", "agent.3", false},
		{"agent.0", "eavesdropper.0", false},
	}
	for _, c := range cases {
		l := in.Link(c.from, c.to, "agent.0.y")
		for ep := 0; ep < 3; ep++ {
			for st := 0; st < 12; st++ {
				f := l.Decide(ep, st)
				want := c.cut && st >= 5 && st < 8
				if f.Drop != want {
					t.Fatalf("%s->%s episode %d step %d: drop %v, want %v", c.from, c.to, ep, st, f.Drop, want)
				}
				if f.Duplicate || f.Reorder || f.DelaySteps != 0 {
					t.Fatalf("%s->%s: a partition only drops: %+v", c.from, c.to, f)
				}
			}
		}
	}
}

// A subscriber that is down (a crash) gets nothing in its window: no delivery, no gap notice;
// what was due is counted lost, and the other subscribers get the message as usual.
func TestOutboxReceiverDown(t *testing.T) {
	spec := &scenario.FaultsSpec{Crashes: []scenario.Crash{{Proc: "agent.1", Episode: 2, Step: 3, Restart: 5}}}
	in, err := New(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	ob := NewOutbox([]*Link{in.Link("agent.0", "agent.1", "agent.0.y"), in.Link("agent.0", "agent.2", "agent.0.y")})
	if ob.Clear() {
		t.Fatal("an outbox with a crashing subscriber is not clear")
	}
	for _, ep := range []int{1, 2} {
		ob.Begin(ep)
		for st := 0; st < 8; st++ {
			got := map[int]bool{}
			ob.Release(st, []float64{float64(st)}, func(d *Delivery) {
				if d.Gap {
					t.Fatalf("episode %d step %d: unexpected gap to %d", ep, st, d.To)
				}
				if d.To == Broadcast {
					for k := 0; k < 2; k++ {
						if !slices.Contains(d.Except, k) {
							got[k] = true
						}
					}
					return
				}
				got[d.To] = true
			})
			down := ep == 2 && st >= 3 && st < 5
			if got[0] == down || !got[1] {
				t.Fatalf("episode %d step %d: delivered to agent.1 %v, agent.2 %v (down %v)", ep, st, got[0], got[1], down)
			}
		}
		ob.End()
	}
	st := ob.Stats()
	if st[0].Lost != 2 || st[1].Lost != 0 || st[0].Sent != 16 {
		t.Fatalf("counters %+v", st)
	}
}
