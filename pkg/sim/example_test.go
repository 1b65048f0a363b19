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

// The role cores as state machines: one episode of the cloud-controlled vehicle, plant, cloud
// and eavesdropper driven over the in-memory network. The order of the steps is not written
// anywhere: each core completes a step when its inputs arrived.
func ExampleDriver() {
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
	cores, _ := sim.NewCores(p, s.Seed) // plant, cloud, eavesdropper
	net := sim.NewNetwork(cores, nil)   // no link faults
	drv := sim.NewDriver(cores, net, nil, nil)
	const episode = 0
	net.Begin(episode)
	if err := drv.Episode(episode, nil, nil); err != nil {
		fmt.Println(err)
		return
	}
	plant := cores[0].(*sim.PlantCore).Node()
	x0hat := make([]float64, 2)
	cores[2].(*sim.EavesdropperCore).Node().EstimateX0(x0hat)
	x := plant.State()
	fmt.Printf("x(T) = (%.3f, %.3f), offset gamma = %.3f\n", x[0], x[1], plant.Gamma()[0])
	fmt.Printf("eavesdropper's x0 estimate = (%.3f, %.3f): x0 + (gamma, 0)\n", x0hat[0], x0hat[1])
	// Output:
	// x(T) = (0.863, 0.000), offset gamma = 0.137
	// eavesdropper's x0 estimate = (0.137, 0.000): x0 + (gamma, 0)
}
