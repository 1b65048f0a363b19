package sim

import (
	"github.com/dpsim/dpsim/internal/dpsimtest"
)

// The shipped scenarios and plans, as every package's tests load them (internal/dpsimtest).
var (
	load             = dpsimtest.LoadScenario
	planOf           = dpsimtest.PlanOf
	loadPlan         = dpsimtest.LoadPlan
	loadPlanSampler  = dpsimtest.LoadPlanSampler
	consensusVariant = dpsimtest.ConsensusVariant
	largeConsensus   = dpsimtest.LargeConsensus
)
