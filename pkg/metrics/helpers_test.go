package metrics

import (
	"testing"

	"github.com/dpsim/dpsim/internal/dpsimtest"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// The shipped scenarios and plans, as every package's tests load them (internal/dpsimtest).
var (
	load           = dpsimtest.LoadScenario
	planOf         = dpsimtest.PlanOf
	loadPlan       = dpsimtest.LoadPlan
	largeConsensus = dpsimtest.LargeConsensus
)

func nan() float64 { var z float64; return z / z }

// playControl plays episodes 0..runs-1 of a cloud-control plan with the role cores on the
// in-memory network (the machine the engines drive) and joins their partial records with
// trace's join: the records the fast engine keeps, without importing it (it imports this
// package).
func playControl(t testing.TB, p *plan.Plan, seed uint64, runs int) *trace.Traces {
	t.Helper()
	inj, err := fault.New(&p.Scenario.Faults, fault.SeedOf(seed))
	require.NoError(t, err)
	cores, err := sim.NewCores(p, seed)
	require.NoError(t, err)
	join, err := trace.NewControlJoin(p.Steps, p.Reference, true)
	require.NoError(t, err)
	sink := func(c sim.Core, rd *sim.Ready) error {
		from := c.Endpoint().Role // plant, cloud or eavesdropper: the join's roles
		for i := range rd.Control {
			if err := join.Add(from, &rd.Control[i]); err != nil {
				return err
			}
		}
		return nil
	}
	net := sim.NewNetwork(sim.NewTopology(p, sim.Blocks{}), cores, inj)
	drv := sim.NewDriver(cores, net, nil, sink)
	tr := &trace.Traces{}
	for ep := range runs {
		join.Begin(ep)
		net.Begin(ep)
		err := drv.Episode(ep, nil, nil)
		net.End()
		require.NoError(t, err)
		require.NoError(t, join.Emit(func(r *trace.ControlRecord, missing []trace.Missing) error {
			require.Empty(t, missing)
			tr.Control = append(tr.Control, r.Clone())
			return nil
		}))
	}
	return tr
}
