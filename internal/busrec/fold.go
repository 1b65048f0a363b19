package busrec

import (
	"bufio"
	"fmt"
	"os"

	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
)

// foldEve computes the eavesdropper's metric of a re-run from the fresh eavesdropper's trace
// file (its estimates x0_hat(t) of each episode, written in episode order) with the one
// metrics.Accumulator the launcher folds a run with. Its metric, ||x0_hat(t) - x(0)||^2, needs
// besides the estimates only x(0), the plan's initial state (a run's every episode starts
// there); the true states x(t) of later steps are never on the bus. Each step's record
// therefore carries x(0) as its state: the accumulator's other metrics are meaningless here,
// its eve_sq_error is the launcher's.
func foldEve(p *plan.Plan, seed uint64, episodes int, path string) (*metrics.Series, error) {
	acc, err := metrics.NewAccumulator(p, seed)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the fresh eavesdropper's trace: %w", err)
	}
	defer f.Close()
	in := bufio.NewReaderSize(f, 1<<16)
	switch p.Scenario.Kind {
	case scenario.CloudControl:
		x0 := p.Scenario.Plant.X0
		err = foldEpisodes(trace.NewReader[trace.ControlRecord](in), p.Steps, episodes,
			func(r *trace.ControlRecord) (int, []float64) { return r.Step, r.EveX0 },
			func(ep, t int, eve []float64) error {
				return acc.AddControl(&trace.ControlRecord{Episode: ep, Step: t, X: x0, EveX0: eve})
			})
	case scenario.Consensus:
		x0 := p.Scenario.X0
		err = foldEpisodes(trace.NewReader[trace.ConsensusRecord](in), p.Steps, episodes,
			func(r *trace.ConsensusRecord) (int, []float64) { return r.Step, r.EveX0 },
			func(ep, t int, eve []float64) error {
				return acc.AddConsensus(&trace.ConsensusRecord{Episode: ep, Step: t, X: x0, EveX0: eve})
			})
	default:
		return nil, fmt.Errorf("scenario kind %q has no eavesdropper", p.Scenario.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("the fresh eavesdropper's trace %s: %w", path, err)
	}
	eve := EveSeries(acc.Results())
	if eve == nil {
		return nil, fmt.Errorf("no eavesdropper metrics")
	}
	return eve, nil
}

// foldEpisodes reads the eavesdropper's records of episodes 0..episodes-1 from r, one episode
// at a time, and hands add every step 0..steps of each with the estimate of that step (nil:
// none, and at the final step, where the eavesdropper estimates nothing).
func foldEpisodes[R trace.ControlRecord | trace.ConsensusRecord](r *trace.Reader[R], steps, episodes int,
	est func(*R) (int, []float64), add func(ep, t int, eve []float64) error) error {
	var recs []R
	byStep := make([][]float64, steps+1)
	for ep := range episodes {
		var err error
		if recs, err = r.ReadEpisode(ep, recs[:0]); err != nil {
			return err
		}
		clear(byStep)
		for i := range recs {
			t, eve := est(&recs[i])
			if t < 0 || t >= steps {
				return fmt.Errorf("episode %d: an estimate at step %d, outside 0..%d", ep, t, steps-1)
			}
			byStep[t] = eve
		}
		for t := 0; t <= steps; t++ {
			if err := add(ep, t, byStep[t]); err != nil {
				return err
			}
		}
	}
	return r.Err()
}
