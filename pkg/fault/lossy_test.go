package fault

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/scenario"
)

// lossyPlay releases steps 0..39 of a few episodes through ob and returns every delivery and
// fault event, in order, and the counters. swap, if set, runs before each release.
func lossyPlay(ob *Outbox, swap func(ep, t int)) ([]string, []LinkStats) {
	return playWith(ob, swap, func(step int, vals []float64, emit func(*Delivery)) { ob.Release(step, vals, emit) })
}

// dropsPlay is lossyPlay through Drops: the deliveries Release would make of its answer (the
// broadcast excepting the links lost, then their gaps).
func dropsPlay(t *testing.T, ob *Outbox) ([]string, []LinkStats) {
	return playWith(ob, nil, func(step int, vals []float64, emit func(*Delivery)) {
		var events []*Event
		log := ob.Log
		ob.Log = func(e *Event) { c := *e; events = append(events, &c) }
		lost, ok := ob.Drops(step)
		ob.Log = log
		require.True(t, ok)
		if len(lost) < len(ob.Links()) {
			d := Delivery{To: Broadcast, Step: step, At: step, Values: vals}
			if len(lost) > 0 {
				d.Except = lost
			}
			emit(&d)
		}
		for i, k := range lost {
			log(events[i]) // Release tells of each loss before its gap
			emit(&Delivery{To: k, Step: step, At: step, Gap: true})
		}
	})
}

func playWith(ob *Outbox, swap func(ep, t int), release func(step int, vals []float64, emit func(*Delivery))) ([]string, []LinkStats) {
	var out []string
	ob.Log = func(e *Event) { out = append(out, fmt.Sprintf("event %+v", *e)) }
	for _, ep := range []int{0, 1, 3, 1} {
		ob.Begin(ep)
		for step := 0; step < 40; step++ {
			if swap != nil {
				swap(ep, step)
			}
			release(step, []float64{float64(step)}, func(d *Delivery) {
				out = append(out, fmt.Sprintf("%d %v %d %d %v %v %v %v", d.To, d.Except, d.Step, d.At, d.Gap, d.More, d.Delay, d.Values))
			})
		}
	}
	ob.End()
	return out, append([]LinkStats(nil), ob.Stats()...)
}

// An outbox whose links are clear or drop-only takes the lossy path (releaseLossy), and it
// yields the general path's deliveries, fault events and counters exactly: the same draws,
// the same order, episode after episode - and so does Drops, for a caller that delivers
// itself. Links that do more, or a subscriber that crashes, keep the general path (Drops
// declines).
func TestOutboxLossyPathAsGeneral(t *testing.T) {
	cases := []struct {
		name   string
		agents int // subscribers agent.1..agent.<agents>, then eavesdropper.0
		spec   scenario.FaultsSpec
		lossy  bool
	}{
		{"drop on every link", 3, scenario.FaultsSpec{Links: []scenario.LinkFault{{Drop: 0.3}}}, true},
		{"drops on some links", 3, scenario.FaultsSpec{Links: []scenario.LinkFault{{To: "agent.2", Drop: 0.5}, {To: "eavesdropper.0", Drop: 0.2}}}, true},
		{"certain drop", 3, scenario.FaultsSpec{Links: []scenario.LinkFault{{To: "agent.*", Drop: 1}}}, true},
		{"70 dropping links", 69, scenario.FaultsSpec{Links: []scenario.LinkFault{{Drop: 0.1}}}, true},
		{"a delay on one link", 3, scenario.FaultsSpec{Links: []scenario.LinkFault{{To: "agent.2", Drop: 0.5}, {To: "agent.3", Delay: 1}}}, false},
		{"a crashing subscriber", 3, scenario.FaultsSpec{Links: []scenario.LinkFault{{Drop: 0.3}},
			Crashes: []scenario.Crash{{Proc: "agent.1", Episode: 1, Step: 3, Restart: 5}}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := New(&c.spec, 7)
			require.NoError(t, err)
			links := func(in *Injector) []*Link {
				var ls []*Link
				for a := 1; a <= c.agents; a++ {
					ls = append(ls, in.Link("agent.0", fmt.Sprintf("agent.%d", a), "agent.0.y"))
				}
				return append(ls, in.Link("agent.0", "eavesdropper.0", "agent.0.y"))
			}
			fast, ref := NewOutbox(links(in)), NewOutbox(links(in))
			require.Equal(t, c.lossy, fast.lossy != nil)
			ref.lossy = nil // the general path
			want, wantStats := lossyPlay(ref, nil)
			got, gotStats := lossyPlay(fast, nil)
			assert.Equal(t, want, got)
			assert.Equal(t, wantStats, gotStats)
			drops := NewOutbox(links(in))
			if _, ok := drops.Drops(0); !c.lossy {
				assert.False(t, ok, "Drops answers on the lossy path only")
				return
			}
			drops = NewOutbox(links(in))
			got, gotStats = dropsPlay(t, drops)
			assert.Equal(t, want, got, "Drops")
			assert.Equal(t, wantStats, gotStats, "Drops")
		})
	}
}

// Copies held under a link's earlier rule (a delay) are delivered by the general path after
// SetLinks makes the link drop-only; the lossy path takes over once none is held, with the
// fates of an outbox that went the general path throughout.
func TestOutboxLossyAfterHeldCopies(t *testing.T) {
	delay := scenario.LinkFault{Name: "delay", To: "agent.1", Delay: 3, Active: &scenario.Lifetime{Until: &scenario.StepPoint{Episode: 1, Step: 10}}}
	drop := scenario.LinkFault{Name: "drop", Drop: 0.4}
	mk := func(rules ...scenario.LinkFault) []*Link {
		in := inj(t, rules...)
		return []*Link{in.Link("agent.0", "agent.1", "agent.0.y"), in.Link("agent.0", "agent.2", "agent.0.y")}
	}
	swapped := map[*Outbox]bool{} // at step 10 of the first episode 1 (lossyPlay plays it twice)
	at := func(ob *Outbox, ep, step int) bool {
		if ep != 1 || step != 10 || swapped[ob] {
			return false
		}
		swapped[ob] = true
		return true
	}
	ref := NewOutbox(mk(delay, drop))
	ref.lossy = nil
	want, wantStats := lossyPlay(ref, func(ep, step int) {
		if at(ref, ep, step) {
			require.NoError(t, ref.SetLinks(mk(drop)))
			ref.lossy = nil
		}
	})
	ob := NewOutbox(mk(delay, drop))
	require.Nil(t, ob.lossy)
	usedLossy, checked := false, false
	got, gotStats := lossyPlay(ob, func(ep, step int) {
		if at(ob, ep, step) {
			require.NoError(t, ob.SetLinks(mk(drop)))
			require.NotNil(t, ob.lossy)
			require.Positive(t, ob.nheld, "copies of the delay rule are still held")
		}
		if ep == 1 && step == 39 && swapped[ob] && !checked { // the end of the episode of the swap
			usedLossy, checked = ob.lossy != nil && ob.nheld == 0, true
		}
	})
	assert.True(t, usedLossy, "the lossy path takes over in the episode of the swap, once the held copies are delivered")
	assert.Equal(t, want, got)
	assert.Equal(t, wantStats, gotStats)
}

// The lossy path allocates nothing in the steady state.
func TestOutboxLossyNoAlloc(t *testing.T) {
	in := inj(t, scenario.LinkFault{Drop: 0.3})
	ob := NewOutbox([]*Link{in.Link("agent.0", "agent.1", "agent.0.y"), in.Link("agent.0", "agent.2", "agent.0.y")})
	v := []float64{1}
	emit := func(*Delivery) {}
	ob.Begin(0)
	ob.Release(0, v, emit)
	allocs := testing.AllocsPerRun(100, func() {
		ob.Begin(1)
		for s := 0; s < 100; s++ {
			ob.Release(s, v, emit)
		}
	})
	assert.Zero(t, allocs)
}
