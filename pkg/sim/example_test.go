package sim_test

import (
	"context"
	"fmt"

	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// Private average consensus on the paper's 10-node graph (Section 6.3), run by the fast engine:
// the network sum is preserved, and the final mean-square deviation from the average stays below
// Proposition 1's bound sum_i sigma_i^2.
func ExampleRunFast() {
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
	res, _, err := sim.RunFast(context.Background(), p, point.Seed, sim.FastOptions{Runs: 200})
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
	// E||x(T) - 1x*||^2 = 31.8 (95% CI 30.0..33.7), Proposition 1 bound 35.3
}

// The role cores step by step: one episode of the cloud-controlled vehicle in the documented order.
func ExamplePlantNode() {
	s, err := scenario.Load("../../scenarios/cloud-vehicle.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := plan.New(s.Expand()[0], plan.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	plant, _ := sim.NewPlantNode(p, s.Seed)
	cloud, _ := sim.NewCloudNode(p)
	eve, _ := sim.NewEavesdropperNode(p)
	const episode = 0
	_ = plant.Begin(episode, nil)
	cloud.Begin(episode)
	eve.Begin(episode)
	yhat, u, x0hat := make([]float64, 1), make([]float64, 1), make([]float64, 2)
	for t := 0; t < p.Steps; t++ {
		plant.Emit(yhat) // yhat(t) = p(t) + gamma(t)
		_ = eve.ObserveYhat(t, yhat)
		cloud.Step(t, yhat, u) // u(t) from yhat(0..t)
		_ = eve.ObserveU(t, u)
		plant.Apply(u)
	}
	eve.EstimateX0(x0hat)
	x := plant.State()
	fmt.Printf("x(T) = (%.3f, %.3f), offset gamma = %.3f\n", x[0], x[1], plant.Gamma()[0])
	fmt.Printf("eavesdropper's x0 estimate = (%.3f, %.3f): x0 + (gamma, 0)\n", x0hat[0], x0hat[1])
	// Output:
	// x(T) = (0.863, 0.000), offset gamma = 0.137
	// eavesdropper's x0 estimate = (0.137, 0.000): x0 + (gamma, 0)
}
