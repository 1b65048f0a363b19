package engine_test

import (
	"context"
	"fmt"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// Private average consensus on the paper's 10-node graph (Section 6.3), run by the fast engine:
// the network sum is preserved, and the final mean-square deviation from the average stays below
// Proposition 1's bound sum_i sigma_i^2.
func ExampleRun() {
	s, err := scenario.Load("../../scenarios/consensus-gaussian.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	point := s.Expand()[0] // eps = 1
	p, err := plan.New(point, plan.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, _, err := engine.Run(context.Background(), p, sim.NewSeeds(point.Seed), engine.Options{Runs: 200})
	if err != nil {
		fmt.Println(err)
		return
	}
	m := res.Consensus
	fmt.Printf("%d runs, T = %d, x* = %g\n", res.Runs, res.Steps, m.XStar.Mean)
	fmt.Printf("sum preserved to 1e-12: %v\n", m.SumRelDevMax < 1e-12)
	fmt.Printf("E||x(T) - 1x*||^2 = %.1f (95%% CI %.1f..%.1f), Proposition 1 bound %.1f\n",
		m.FinalSqDeviation.Mean, m.FinalSqDeviation.Lo, m.FinalSqDeviation.Hi, m.Prop1Bound)
	// Output:
	// 200 runs, T = 30, x* = 15
	// sum preserved to 1e-12: true
	// E||x(T) - 1x*||^2 = 32.3 (95% CI 29.8..34.8), Proposition 1 bound 35.3
}
