package fault

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/scenario"
)

// A rule with a lifetime acts exactly inside it, with the draws it would have without one; a
// rule added later leaves the fates of the others as they were (the replay of a live change).
func TestLifetimeFates(t *testing.T) {
	from, until := &scenario.StepPoint{Episode: 2, Step: 0}, &scenario.StepPoint{Episode: 3, Step: 10}
	always := scenario.LinkFault{Name: "old", From: "cloud.0", To: "plant.0", Unit: scenario.UnitSteps, Drop: 0.4, Duplicate: 0.3}
	bounded := always
	bounded.Active = &scenario.Lifetime{Until: from}
	later := scenario.LinkFault{Name: "new", From: "cloud.0", To: "plant.0", Unit: scenario.UnitSteps, Drop: 0.5, Delay: 1,
		Active: &scenario.Lifetime{From: from, Until: until}}
	cases := []struct {
		name  string
		rules []scenario.LinkFault
		// want returns the fate expected at (ep, t) from the fates of the reference links
		want func(ep, t int, old, new Fate) Fate
	}{
		{"always", []scenario.LinkFault{always}, func(_, _ int, old, _ Fate) Fate { return old }},
		{"ends at (2,0)", []scenario.LinkFault{bounded}, func(ep, _ int, old, _ Fate) Fate {
			if ep < 2 {
				return old
			}
			return Fate{}
		}},
		{"added at (2,0) beside the old rule", []scenario.LinkFault{always, later}, func(ep, t int, old, nw Fate) Fate {
			if ep < 2 || (ep == 3 && t >= 10) || ep > 3 {
				return old
			}
			return Fate{Drop: old.Drop || nw.Drop, Duplicate: old.Duplicate || nw.Duplicate, DelaySteps: old.DelaySteps + nw.DelaySteps}
		}},
		{"change: old until (2,0), new from (2,0)", []scenario.LinkFault{bounded, later}, func(ep, t int, old, nw Fate) Fate {
			switch {
			case ep < 2:
				return old
			case ep == 2 || (ep == 3 && t < 10):
				return nw
			}
			return Fate{}
		}},
	}
	oldRef := inj(t, always).Link("cloud.0", "plant.0", "cloud.0.u")
	unbounded := later
	unbounded.Active = nil
	newRef := inj(t, unbounded).Link("cloud.0", "plant.0", "cloud.0.u")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := inj(t, c.rules...).Link("cloud.0", "plant.0", "cloud.0.u")
			for ep := 0; ep < 5; ep++ {
				for step := 0; step < 30; step++ {
					require.Equal(t, c.want(ep, step, oldRef.Decide(ep, step), newRef.Decide(ep, step)), l.Decide(ep, step), "episode %d step %d", ep, step)
				}
			}
		})
	}
}

// A partition with a lifetime cuts only inside it; through an Outbox the counts agree.
func TestPartitionLifetime(t *testing.T) {
	in, err := New(&scenario.FaultsSpec{Partitions: []scenario.Partition{{Name: "p", Side: []int{0},
		Window: scenario.StepWindow{From: 0, To: 30}, Active: &scenario.Lifetime{From: &scenario.StepPoint{Episode: 1, Step: 5}}}}}, 3)
	require.NoError(t, err)
	l := in.Link("agent.0", "agent.1", "agent.0.y")
	assert.False(t, l.Decide(0, 29).Drop)
	assert.False(t, l.Decide(1, 4).Drop)
	assert.True(t, l.Decide(1, 5).Drop)
	assert.True(t, l.Decide(7, 0).Drop)
	ob := NewOutbox([]*Link{l})
	for ep := 0; ep < 2; ep++ {
		ob.Begin(ep)
		for step := 0; step < 10; step++ {
			ob.Release(step, []float64{1}, func(*Delivery) {})
		}
	}
	ob.End()
	assert.Equal(t, uint64(5), ob.Stats()[0].Dropped)
	assert.Equal(t, uint64(20), ob.Stats()[0].Sent)
}

// An outbox whose links get rules in the middle of an episode (SetLinks) keeps what it holds
// and its counters, and gives the fates of an outbox that had the rules from the start.
func TestSetLinksMidEpisode(t *testing.T) {
	late := scenario.LinkFault{Name: "late", From: "cloud.0", To: "plant.0", Unit: scenario.UnitSteps, Drop: 0.5, Delay: 1,
		Active: &scenario.Lifetime{From: &scenario.StepPoint{Episode: 1, Step: 7}}}
	held := scenario.LinkFault{Name: "held", From: "cloud.0", To: "plant.0", Unit: scenario.UnitSteps, Delay: 2}
	type got struct {
		to, step, at int
		gap          bool
	}
	play := func(ob *Outbox, swap func(ep, t int)) ([]got, LinkStats) {
		var out []got
		for ep := 0; ep < 3; ep++ {
			ob.Begin(ep)
			for step := 0; step < 15; step++ {
				swap(ep, step)
				ob.Release(step, []float64{float64(step)}, func(d *Delivery) { out = append(out, got{d.To, d.Step, d.At, d.Gap}) })
			}
		}
		ob.End()
		return out, ob.Stats()[0]
	}
	want, wantStats := play(NewOutbox([]*Link{inj(t, held, late).Link("cloud.0", "plant.0", "cloud.0.u")}), func(int, int) {})
	ob := NewOutbox([]*Link{inj(t, held).Link("cloud.0", "plant.0", "cloud.0.u")})
	gotOut, gotStats := play(ob, func(ep, step int) {
		if ep == 1 && step == 4 { // before the rule's first step
			require.NoError(t, ob.SetLinks([]*Link{inj(t, held, late).Link("cloud.0", "plant.0", "cloud.0.u")}))
		}
	})
	assert.Equal(t, want, gotOut)
	assert.Equal(t, wantStats, gotStats)
	assert.Error(t, ob.SetLinks([]*Link{inj(t).Link("cloud.0", "eavesdropper.0", "cloud.0.u")}), "another subscriber")
}
