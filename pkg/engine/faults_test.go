package engine

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// withFaults returns a copy of the shipped scenario name (its first point) with the given link
// rules and runs.
func withFaults(t testing.TB, name string, runs int, links ...scenario.LinkFault) *scenario.Scenario {
	t.Helper()
	s := load(t, name).Expand()[0].Clone()
	s.Runs = runs
	s.Faults.Links = links
	return s
}

func fastLinks(t testing.TB, s *scenario.Scenario, seed uint64) (*metrics.Results, map[string]fault.LinkStats) {
	t.Helper()
	res, _, err := Run(context.Background(), planOf(t, s), sim.NewSeeds(seed), Options{Workers: 2})
	require.NoError(t, err)
	m := map[string]fault.LinkStats{}
	for _, l := range res.Links {
		m[l.Link] = l
	}
	return res, m
}

// Each fault kind alone: what the receivers counted matches what the injector did, link by
// link, and the kind's own counter is what its probability predicts.
func TestFaultStatsMatchInjector(t *testing.T) {
	const runs = 200
	cases := []struct {
		name string
		rule scenario.LinkFault
		kind func(l fault.LinkStats) uint64
		p    float64
	}{
		{"drop", scenario.LinkFault{Drop: 0.1}, func(l fault.LinkStats) uint64 { return l.Dropped }, 0.1},
		{"duplicate", scenario.LinkFault{Duplicate: 0.1}, func(l fault.LinkStats) uint64 { return l.Duplicated }, 0.1},
		{"reorder", scenario.LinkFault{Reorder: 0.1}, func(l fault.LinkStats) uint64 { return l.Reordered }, 0.1},
		{"delay", scenario.LinkFault{Delay: 2}, func(l fault.LinkStats) uint64 { return l.Delayed }, 1},
		{"random-delay", scenario.LinkFault{RandomDelay: &scenario.RandomDelay{Dist: scenario.DistUniform, Min: 0, Max: 1}},
			func(l fault.LinkStats) uint64 { return l.Delayed }, 0.5},
	}
	for _, name := range []string{"cloud-vehicle", "consensus-gaussian"} {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				res, links := fastLinks(t, withFaults(t, name, runs, c.rule), 5)
				require.Equal(t, runs, res.Runs)
				require.NotEmpty(t, links)
				for _, l := range links {
					require.Equal(t, uint64(runs*res.Steps), l.Sent, l.Link)
					assert.Equal(t, l.Sent-l.Dropped+l.Duplicated-l.Expired, l.Delivered, "%s: delivered", l.Link)
					assert.Equal(t, l.Duplicated, l.DupReceived, "%s: duplicates received", l.Link)
					// Every copy delivered after its step is late: the delayed and reordered
					// ones that did not expire (a duplicate of a late message is counted
					// as a duplicate, not twice as late).
					assert.LessOrEqual(t, l.Late, l.Delayed+l.Reordered, l.Link)
					if l.Duplicated == 0 {
						assert.Equal(t, l.Delayed+l.Reordered-l.Expired, l.Late, "%s: late", l.Link)
					}
					// Lockstep: a step with nothing on time for the receiver is a gap notice.
					assert.GreaterOrEqual(t, l.Gaps, l.Dropped, l.Link)
					got := float64(c.kind(l))
					want := c.p * float64(l.Sent)
					sd := 5 * math.Sqrt(float64(l.Sent)*c.p*(1-c.p))
					assert.InDelta(t, want, got, sd+1, "%s: %s frequency", l.Link, c.name)
				}
			})
		}
	}
}

// A configured rule that does nothing changes nothing: the metrics.Results equal the fault-free
// run's bit for bit (the injector without faults is a pass-through).
func TestIdleFaultRuleChangesNothing(t *testing.T) {
	for _, name := range []string{"cloud-vehicle", "consensus-gaussian"} {
		clean, _ := fastLinks(t, withFaults(t, name, 50), 3)
		idle, _ := fastLinks(t, withFaults(t, name, 50, scenario.LinkFault{Drop: 0, Delay: 0}), 3)
		assert.Equal(t, withoutLinks(clean), withoutLinks(idle), name)
	}
}

// Faults are reproducible from the seed (and independent of the number of workers), and
// another seed draws other faults.
func TestFaultsReproducible(t *testing.T) {
	rule := scenario.LinkFault{Drop: 0.2, Duplicate: 0.1, Reorder: 0.1, RandomDelay: &scenario.RandomDelay{Dist: scenario.DistExponential, Mean: 1}}
	s := withFaults(t, "consensus-gaussian", 40, rule)
	p := planOf(t, s)
	a, _, err := Run(context.Background(), p, sim.NewSeeds(9), Options{Workers: 1})
	require.NoError(t, err)
	b, _, err := Run(context.Background(), p, sim.NewSeeds(9), Options{Workers: 3})
	require.NoError(t, err)
	assert.Equal(t, a, b)
	c, _, err := Run(context.Background(), p, sim.NewSeeds(10), Options{Workers: 1})
	require.NoError(t, err)
	assert.NotEqual(t, a.Links, c.Links)
}

// Loss breaks eq. (25)'s symmetry: without loss the network sum is preserved to rounding;
// with 20 % loss it drifts, under both missing-input rules.
func TestConsensusSumDriftsUnderLoss(t *testing.T) {
	clean, _ := fastLinks(t, withFaults(t, "consensus-gaussian", 100), 4)
	assert.Less(t, clean.Consensus.SumRelDevMax, 1e-9)
	assert.InDelta(t, 0, clean.Consensus.FinalSumAbsDrift.Mean, 1e-9)
	for _, rule := range []scenario.AgentMissing{scenario.AgentReuseLast, scenario.AgentSkip} {
		s := withFaults(t, "consensus-gaussian", 100, scenario.LinkFault{Drop: 0.2})
		s.Faults.Missing.Agent = rule
		lossy, _ := fastLinks(t, s, 4)
		assert.Greater(t, lossy.Consensus.FinalSumAbsDrift.Lo, 1.0, "%s: the sum drifts", rule)
	}
}

// A delayed input degrades tracking: the plant holding u(t - d) tracks worse as d grows.
func TestDelayDegradesTracking(t *testing.T) {
	var prev float64
	for _, d := range []float64{0, 2, 5} {
		res, _ := fastLinks(t, withFaults(t, "cloud-vehicle", 100, scenario.LinkFault{From: "cloud.0", To: "plant.0", Delay: d}), 6)
		mse := res.Control.TrackingSqError[0].Mean
		var sum float64
		for _, v := range mse {
			sum += v
		}
		if d > 0 {
			assert.Greater(t, sum, prev, "delay %v", d)
		}
		prev = sum
	}
}

// The fast engine's record of what the injector did (trace.Traces.Faults, for the traced episodes)
// says what the per-link statistics say, message by message.
func TestFaultRecordMatchesStats(t *testing.T) {
	s := withFaults(t, "consensus-gaussian", 30, scenario.LinkFault{Drop: 0.1, Duplicate: 0.05, Reorder: 0.05,
		RandomDelay: &scenario.RandomDelay{Dist: scenario.DistUniform, Min: 0, Max: 1.2}})
	res, tr, err := Run(context.Background(), planOf(t, s), sim.NewSeeds(8), Options{KeepTraces: true, Workers: 2})
	require.NoError(t, err)
	type counts struct{ drop, dup, reorder, delay uint64 }
	got := map[string]*counts{}
	for _, ev := range tr.Faults {
		c := got[ev.Link]
		if c == nil {
			c = &counts{}
			got[ev.Link] = c
		}
		if ev.Drop {
			c.drop++
			continue
		}
		if ev.Duplicate {
			c.dup++
		}
		if ev.Reorder {
			c.reorder++
		}
		if ev.DelaySteps > 0 || ev.DelayNS > 0 {
			c.delay++
		}
	}
	require.NotEmpty(t, tr.Faults)
	for _, l := range res.Links {
		c := got[l.Link]
		if c == nil {
			c = &counts{}
		}
		assert.Equal(t, counts{l.Dropped, l.Duplicated, l.Reordered, l.Delayed}, *c, l.Link)
	}
}
