package auditrun

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// The estimate of a sequential audit counts the copies of the scores the test keeps: a budget
// that a fixed audit of the same cap fits is refused for the sequential one, with its estimate.
func TestSequentialCost(t *testing.T) {
	s, err := scenario.Load(dpsimtest.Scenario("audit-vehicle-structured"))
	require.NoError(t, err)
	fixed, err := engine.EstimateAuditCost(s.Expand(), engine.AuditCostOptions{Trials: 1_000_000, Scores: 3, Workers: 2})
	require.NoError(t, err)
	o := &Options{Trials: 1_000_000, Precision: true, Workers: 2, Budget: fixed.MemoryBytes + fixed.MemoryBytes/8}
	require.NoError(t, CheckCost(o, s))
	o.Sequential = true
	err = CheckCost(o, s)
	require.Error(t, err)
	require.ErrorContains(t, err, "estimate")
}
