package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// msgFrom is an on-time delivery of step t from e (the last of its step).
func msgFrom(e endpoint.Endpoint, t int, v ...float64) *Msg {
	return &Msg{From: e, ToAll: true, Step: t, At: t, Values: v}
}

// gapFrom is a lockstep gap notice: e has nothing for step t.
func gapFrom(e endpoint.Endpoint, t int) *Msg {
	return &Msg{From: e, ToAll: true, Step: t, At: t, Gap: true}
}

// vehicle returns the cloud-vehicle plan with the plant's missing-input rule set.
func vehiclePlan(t *testing.T, rule scenario.PlantMissing) *scenario.Scenario {
	s, _ := loadPlan(t, "cloud-vehicle")
	s = s.Clone()
	s.Faults.Missing.Plant = rule
	return s
}

// The plant's rules: with u(1) missing, hold applies the newest u received (u(0)), zero
// applies 0; a late u(0) delivered at step 2 does not replace the newer u(1).
func TestPlantCoreMissingInput(t *testing.T) {
	for _, rule := range []scenario.PlantMissing{scenario.PlantHold, scenario.PlantZero} {
		t.Run(string(rule), func(t *testing.T) {
			p := planOf(t, vehiclePlan(t, rule))
			c, err := NewPlantCore(p, 1)
			require.NoError(t, err)
			ref := dynamics.NewPlant(p.System, p.Scenario.Plant.X0)
			require.NoError(t, c.Begin(0, nil))
			rd := c.Ready()
			require.Len(t, rd.Out, 1)
			assert.Equal(t, 0, rd.Out[0].Step)

			require.NoError(t, c.Deliver(msgFrom(CloudEndpoint, 0, 2.5)))
			ref.Step([]float64{2.5})
			assert.Equal(t, ref.State(), c.Plant().State())
			assert.Equal(t, 1, c.Cur())
			assert.Equal(t, 0, c.Ready().Missing)

			// step 1: the message is lost (lockstep: a gap notice)
			require.NoError(t, c.Deliver(gapFrom(CloudEndpoint, 1)))
			want := 2.5
			if rule == scenario.PlantZero {
				want = 0
			}
			ref.Step([]float64{want})
			assert.Equal(t, ref.State(), c.Plant().State())
			assert.Equal(t, 1, c.Ready().Missing)

			// step 2 by deadline (Tick), nothing received: the same rule again
			require.NoError(t, c.Tick(2))
			ref.Step([]float64{want})
			assert.Equal(t, ref.State(), c.Plant().State())
			assert.Equal(t, 3, c.Cur())
		})
	}
}

// Hold takes the newest u by step: a late u(1) arriving at step 3 (behind a lost u(3)... ) is
// used, an older one is not.
func TestPlantCoreHoldNewestByStep(t *testing.T) {
	p := planOf(t, vehiclePlan(t, scenario.PlantHold))
	c, err := NewPlantCore(p, 1)
	require.NoError(t, err)
	ref := dynamics.NewPlant(p.System, p.Scenario.Plant.X0)
	require.NoError(t, c.Begin(0, nil))
	require.NoError(t, c.Deliver(msgFrom(CloudEndpoint, 0, 1)))
	ref.Step([]float64{1})
	require.NoError(t, c.Deliver(gapFrom(CloudEndpoint, 1))) // u(1) delayed by 1 step
	ref.Step([]float64{1})
	// step 2: the late u(1) = 7, then u(2) lost
	require.NoError(t, c.Deliver(&Msg{From: CloudEndpoint, ToAll: true, Step: 1, At: 2, More: true, Values: []float64{7}}))
	require.NoError(t, c.Deliver(gapFrom(CloudEndpoint, 2)))
	ref.Step([]float64{7})
	assert.Equal(t, ref.State(), c.Plant().State())
	assert.Equal(t, uint64(1), c.LinkStats()[0].Late)
}

// The cloud's rule: yhat(t) missing -> the prediction C xhat(t), i.e. the observer runs open
// loop (zero innovation) for that step.
func TestCloudCorePredicts(t *testing.T) {
	p := planOf(t, vehiclePlan(t, scenario.PlantHold))
	c, err := NewCloudCore(p)
	require.NoError(t, err)
	ref, err := NewController(p)
	require.NoError(t, err)
	require.NoError(t, c.Begin(0, nil))
	ref.Begin(0)
	u := make([]float64, 1)
	require.NoError(t, c.Deliver(msgFrom(PlantEndpoint, 0, 0.3)))
	ref.Step(0, []float64{0.3}, u)
	assert.Equal(t, u, c.Ready().Out[0].Values)
	// step 1 missing: yhat = C xhat(1) = xhat_p(1)
	pred := []float64{ref.Next()[0]}
	require.NoError(t, c.Tick(1))
	ref.Step(1, pred, u)
	rd := c.Ready()
	require.Len(t, rd.Out, 1)
	assert.Equal(t, u, rd.Out[0].Values)
	assert.Equal(t, 1, rd.Missing)
	assert.Equal(t, ref.Next(), c.ctl.Next())
}

// consensusPlan is the 10-agent paper graph with the agents' rule set.
func consensusCore(t *testing.T, rule scenario.AgentMissing, i int) (*AgentCore, *Agent) {
	s := consensusVariant(t, "gaussian", 1, 1, 5).Clone()
	s.Faults.Missing.Agent = rule
	p := planOf(t, s)
	c, err := NewAgentCore(p, 9, i)
	require.NoError(t, err)
	ref, err := NewAgent(p, 9, i)
	require.NoError(t, err)
	return c, ref
}

// The agents' rules: a neighbour's y_j(1) missing is replaced by its y_j(0) (reuse-last) or
// left out (skip); a neighbour never heard from is left out under both.
func TestAgentCoreMissingInput(t *testing.T) {
	for _, rule := range []scenario.AgentMissing{scenario.AgentReuseLast, scenario.AgentSkip} {
		t.Run(string(rule), func(t *testing.T) {
			c, ref := consensusCore(t, rule, 1) // agent 2 of the paper: neighbours 0, 2, 4, 9
			nb := c.agent.Neighbors()
			require.Equal(t, []int{0, 2, 4, 9}, nb)
			require.NoError(t, c.Begin(0, nil))
			require.NoError(t, ref.Begin(0, ref.X0()))
			y0 := ref.Emit()
			assert.Equal(t, y0, c.Ready().Out[0].Values[0])
			// step 0: neighbour 9 never heard from (gap); the others on time
			vals := []float64{10, 20, 40}
			for k, j := range nb[:3] {
				require.NoError(t, c.Deliver(msgFrom(AgentEndpoint(j), 0, vals[k])))
			}
			require.NoError(t, c.Deliver(gapFrom(AgentEndpoint(9), 0)))
			require.NoError(t, ref.Update(y0, []float64{10, 20, 40, y0}))
			assert.Equal(t, ref.State(), c.agent.State())
			y1 := ref.Emit()
			// step 1: neighbour 2 missing (deadline), the others on time
			require.NoError(t, c.Deliver(msgFrom(AgentEndpoint(0), 1, 11)))
			require.NoError(t, c.Deliver(msgFrom(AgentEndpoint(4), 1, 41)))
			require.NoError(t, c.Deliver(msgFrom(AgentEndpoint(9), 1, 91)))
			require.NoError(t, c.Tick(1))
			stand := y1 // skip
			if rule == scenario.AgentReuseLast {
				stand = 20
			}
			require.NoError(t, ref.Update(y1, []float64{11, stand, 41, 91}))
			assert.Equal(t, ref.State(), c.agent.State())
			assert.Equal(t, 2, c.Cur())
		})
	}
}

// The eavesdropper estimates from what it received and marks the gap: a missing yhat(t)
// leaves that row out, the record says how many messages it missed.
func TestEavesdropperCoreMarksGaps(t *testing.T) {
	p := planOf(t, vehiclePlan(t, scenario.PlantHold))
	c, err := NewEavesdropperCore(p)
	require.NoError(t, err)
	require.NoError(t, c.Begin(0, nil))
	require.NoError(t, c.Deliver(msgFrom(PlantEndpoint, 0, 0.5)))
	require.NoError(t, c.Deliver(msgFrom(CloudEndpoint, 0, 1)))
	rd := c.Ready()
	require.Len(t, rd.Control, 1)
	assert.Zero(t, rd.Control[0].EveMissing)
	require.NoError(t, c.Deliver(gapFrom(PlantEndpoint, 1)))
	require.NoError(t, c.Deliver(msgFrom(CloudEndpoint, 1, 1)))
	rd = c.Ready()
	require.Len(t, rd.Control, 1)
	assert.Equal(t, 1, rd.Control[0].EveMissing)
	assert.Equal(t, 2, c.Cur())
}

// Deliveries from a stranger or beyond the horizon are counted unexpected and dropped; one of
// an earlier episode is stale (counted apart, never used).
func TestCoreDropsStrangers(t *testing.T) {
	p := planOf(t, vehiclePlan(t, scenario.PlantHold))
	c, err := NewCloudCore(p)
	require.NoError(t, err)
	require.NoError(t, c.Begin(3, nil))
	require.NoError(t, c.Deliver(&Msg{From: PlantEndpoint, ToAll: true, Episode: 2, Values: []float64{1}}))
	require.NoError(t, c.Deliver(&Msg{From: AgentEndpoint(0), ToAll: true, Episode: 3, Values: []float64{1}}))
	require.NoError(t, c.Deliver(&Msg{From: PlantEndpoint, ToAll: true, Episode: 3, Step: 500, At: 500, Values: []float64{1}}))
	assert.Equal(t, uint64(2), c.Unexpected())
	assert.Equal(t, uint64(1), c.Stale())
	assert.Equal(t, 0, c.Cur())
}

// Deliveries for a later step wait, but not without bound, and never for a step beyond the
// horizon: a flood of them is counted and dropped.
func TestCoreBoundsWaitingDeliveries(t *testing.T) {
	p := planOf(t, vehiclePlan(t, scenario.PlantHold))
	c, err := NewCloudCore(p)
	require.NoError(t, err)
	require.NoError(t, c.Begin(0, nil))
	require.NoError(t, c.Deliver(&Msg{From: PlantEndpoint, ToAll: true, Step: 3, At: p.Steps, Values: []float64{1}}))
	assert.Equal(t, uint64(1), c.Unexpected(), "At beyond the horizon")
	for i := 0; i < 10*p.Steps; i++ {
		require.NoError(t, c.Deliver(&Msg{From: PlantEndpoint, ToAll: true, Step: 5, At: 5, More: true, Values: []float64{1}}))
	}
	assert.LessOrEqual(t, len(c.in.ahead), 4*p.Steps)
	assert.Greater(t, c.Unexpected(), uint64(1), "the flood beyond the bound is counted")
	require.NoError(t, c.Deliver(msgFrom(PlantEndpoint, 0, 0.3)))
	assert.Equal(t, 1, c.Cur(), "genuine traffic still goes through")
}

// The endpoint index finds every listed endpoint and nothing else, whether its ids are dense
// (a slice by id) or a few far apart (sorted pairs: an agent's neighbours among thousands).
func TestEndpointIndex(t *testing.T) {
	for _, list := range [][]endpoint.Endpoint{
		{CloudEndpoint, EavesdropperEndpoint},
		{AgentEndpoint(0), AgentEndpoint(1), AgentEndpoint(2), EavesdropperEndpoint},
		{AgentEndpoint(9999), AgentEndpoint(17), AgentEndpoint(5000), AgentEndpoint(250), EavesdropperEndpoint},
	} {
		x := newEndpointIndex(list)
		for k, e := range list {
			got, ok := x.of(e)
			require.True(t, ok, "%v in %v", e, list)
			require.Equal(t, k, got, "%v in %v", e, list)
		}
		for _, e := range []endpoint.Endpoint{AgentEndpoint(3), AgentEndpoint(10000), AgentEndpoint(-1), PlantEndpoint, {Role: 9, ID: 0}} {
			_, ok := x.of(e)
			require.False(t, ok, "%v is not in %v", e, list)
		}
		for r := range x.byRole {
			require.LessOrEqual(t, len(x.byRole[r]), 4*len(list)+64, "a dense slice is never much longer than the list")
		}
	}
}
