package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// epMsg is a copy of sender e's message of step t in episode ep, delivered on time.
func epMsg(e endpoint.Endpoint, ep, t int, v ...float64) *Msg {
	m := msgFrom(e, t, v...)
	m.Episode = ep
	return m
}

// cloudAt returns a cloud core of episode ep that completed steps 0..n-1 with the plant's
// yhat(t) = t (the genuine values of the test).
func cloudAt(t *testing.T, ep, n int) *CloudCore {
	t.Helper()
	c, err := NewCloudCore(planOf(t, vehiclePlan(t, scenario.PlantHold)))
	require.NoError(t, err)
	require.NoError(t, c.Begin(ep, nil))
	for s := 0; s < n; s++ {
		require.NoError(t, c.Deliver(epMsg(PlantEndpoint, ep, s, float64(s))))
	}
	if n == c.T {
		require.True(t, c.Done())
	} else {
		require.Equal(t, n, c.Cur())
	}
	return c
}

// conflicts sums a core's receive-side conflict counters.
func conflicts(c Core) uint64 {
	var n uint64
	for _, l := range c.LinkStats() {
		n += l.Conflicts
	}
	return n
}

// Every second copy of a (sender, episode, step) that differs from the first is a conflict,
// whenever it arrives: on time, late for the newest or an older step, after the receiver
// finished the episode, or after it began the next one (then it is also stale, never used).
// An exact copy is never a conflict; a copy for an episode the receiver finished is stale.
func TestConflictWheneverTheCopyArrives(t *testing.T) {
	for _, tc := range []struct {
		name string
		// done: steps the cloud completes in episode 0; next: it begins episode 1 after them;
		// step: the step of the copies.
		done, step int
		next       bool
		stale      uint64
	}{
		{"late, newest step", 3, 2, false, 0},
		{"late, older step", 50, 7, false, 0},
		{"after the episode ended", 100, 42, false, 2},
		{"in the next episode, step used", 100, 42, true, 2},
		{"in the next episode, mid episode", 60, 10, true, 2},
		{"in the next episode, step 0", 1, 0, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cloudAt(t, 0, tc.done)
			if tc.next {
				require.NoError(t, c.Begin(1, nil))
			}
			require.NoError(t, c.Deliver(epMsg(PlantEndpoint, 0, tc.step, float64(tc.step))))
			require.Zero(t, conflicts(c), "an exact copy is a duplicate, not a conflict")
			require.NoError(t, c.Deliver(epMsg(PlantEndpoint, 0, tc.step, -1)))
			require.Equal(t, uint64(1), conflicts(c), "the differing copy is a conflict")
			require.Equal(t, tc.stale, c.Stale(), "copies for a finished episode are stale")
			require.Zero(t, c.Unexpected())
		})
	}
	t.Run("on time", func(t *testing.T) {
		c := cloudAt(t, 0, 3)
		used := epMsg(PlantEndpoint, 0, 3, 3)
		used.More = true // another delivery for step 3 follows: the step stays open
		require.NoError(t, c.Deliver(used))
		require.NoError(t, c.Deliver(used))
		require.Zero(t, conflicts(c))
		require.NoError(t, c.Deliver(epMsg(PlantEndpoint, 0, 3, -1)))
		require.Equal(t, uint64(1), conflicts(c))
		require.Equal(t, 4, c.Cur())
	})
}

// A forged copy used first - it came ahead of the genuine one - makes the genuine copy a
// conflict whenever that arrives: late for an older step, or after the receiver ran through
// the episode on forged values.
func TestForgedFirstThenGenuineIsConflict(t *testing.T) {
	for _, forged := range []int{1, 30, 99} {
		c := cloudAt(t, 0, 1)
		for s := 1; s <= forged; s++ { // forged yhat(1..forged), each used at its step
			require.NoError(t, c.Deliver(epMsg(PlantEndpoint, 0, s, 1e6)))
		}
		last := min(forged+10, 99) // then the genuine ones, on time, up to step last
		for s := forged + 1; s <= last; s++ {
			require.NoError(t, c.Deliver(epMsg(PlantEndpoint, 0, s, float64(s))))
		}
		require.Zero(t, conflicts(c))
		for s := 1; s <= forged; s++ { // the genuine copies of the forged steps, late
			require.NoError(t, c.Deliver(epMsg(PlantEndpoint, 0, s, float64(s))))
		}
		require.Equal(t, uint64(forged), conflicts(c), "forged steps 1..%d", forged)
		if last == 99 {
			require.True(t, c.Done())
			require.Equal(t, uint64(forged), c.Stale(), "they came after the episode ended")
		}
	}
}

// Stale copies of an older episode than the previous one cannot be compared (nothing of it is
// kept): they are stale, never unexpected; a later episode's copy is unexpected.
func TestStaleAndUnexpectedEpisodes(t *testing.T) {
	c := cloudAt(t, 5, 0)
	require.NoError(t, c.Deliver(epMsg(PlantEndpoint, 2, 0, 1)))
	require.NoError(t, c.Deliver(epMsg(PlantEndpoint, 4, 0, 1)))
	require.Equal(t, uint64(2), c.Stale())
	require.NoError(t, c.Deliver(epMsg(PlantEndpoint, 6, 0, 1)))
	require.Equal(t, uint64(1), c.Unexpected())
	require.Zero(t, conflicts(c))
	require.Equal(t, 0, c.Cur(), "nothing of another episode is used")
}

// A process restored from its checkpoint (faults.crashes) still knows the copies it used: a
// differing copy of a step before the crash is a conflict after the restart too.
func TestCheckpointKeepsCopyDigests(t *testing.T) {
	c := cloudAt(t, 2, 10)
	st := c.Checkpoint()
	fresh, err := NewCloudCore(planOf(t, vehiclePlan(t, scenario.PlantHold)))
	require.NoError(t, err)
	require.NoError(t, fresh.Restore(st))
	require.NoError(t, fresh.Deliver(epMsg(PlantEndpoint, 2, 3, 3)))
	require.Zero(t, conflicts(fresh))
	require.NoError(t, fresh.Deliver(epMsg(PlantEndpoint, 2, 3, -1)))
	require.Equal(t, uint64(1), conflicts(fresh))
}

// The in-memory network keeps no digests (only the injector's exact copies travel there):
// the fast engine's memory does not grow by 16 bytes per sender and step.
func TestNetworkKeepsNoCopyDigests(t *testing.T) {
	p := planOf(t, vehiclePlan(t, scenario.PlantHold))
	cores, err := NewCores(p, 1)
	require.NoError(t, err)
	for _, c := range cores {
		require.NotNil(t, inputsOf(c).from[0].used, "%s: on by default", c.Endpoint())
	}
	NewNetwork(NewTopology(p, Blocks{}), cores, nil)
	for _, c := range cores {
		for _, f := range inputsOf(c).from {
			require.Nil(t, f.used, c.Endpoint())
			require.Nil(t, f.prev, c.Endpoint())
		}
	}
}

// inputsOf returns the receive side of a control run's core.
func inputsOf(c Core) *inputs {
	switch x := c.(type) {
	case *PlantCore:
		return x.in
	case *CloudCore:
		return x.in
	case *EavesdropperCore:
		return x.in
	}
	panic("no control core: " + c.Endpoint().String())
}
