package trace_test

import (
	"context"
	"testing"

	"github.com/dpsim/dpsim/internal/dpsimtest"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// The shipped scenarios and plans, as every package's tests load them (internal/dpsimtest).
var (
	loadPlan = dpsimtest.LoadPlan
)

// runFast runs the fast engine, whose records the joins must reproduce, without the per-link
// counters (only an engine that ran the episodes reports them, not the Accumulator).
func runFast(t testing.TB, p *plan.Plan, seed uint64, o engine.Options) (*metrics.Results, *trace.Traces) {
	t.Helper()
	res, tr, err := engine.Run(context.Background(), p, sim.NewSeeds(seed), o)
	require.NoError(t, err)
	res.Links = nil
	return res, tr
}
func nan() float64 { var z float64; return z / z }
