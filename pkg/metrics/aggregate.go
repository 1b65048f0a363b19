package metrics

import (
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/trace"
)

// AggregateControl computes the Results of cloud-control records (any order) for plan p, as
// Results of an Accumulator fed with them.
func AggregateControl(p *plan.Plan, seed uint64, recs []trace.ControlRecord) (*Results, error) {
	a, err := NewAccumulator(p, seed)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if err := a.AddControl(&recs[i]); err != nil {
			return nil, err
		}
	}
	return a.Results(), nil
}

// AggregateConsensus computes the Results of consensus records (any order) for plan p, as
// Results of an Accumulator fed with them.
func AggregateConsensus(p *plan.Plan, seed uint64, recs []trace.ConsensusRecord) (*Results, error) {
	a, err := NewAccumulator(p, seed)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if err := a.AddConsensus(&recs[i]); err != nil {
			return nil, err
		}
	}
	return a.Results(), nil
}
