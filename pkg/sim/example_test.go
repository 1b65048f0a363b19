package sim_test

import (
	"fmt"

	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

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
	// no link faults; NewTopology: who hears whom (the zero Hosts: one core per agent)
	net := sim.NewNetwork(sim.NewTopology(p, sim.Blocks{}), cores, nil)
	drv := sim.NewDriver(cores, net, nil, nil)
	const episode = 0
	net.Begin(episode)
	if err := drv.Episode(episode, nil, nil); err != nil {
		fmt.Println(err)
		return
	}
	plant := cores[0].(*sim.PlantCore).Plant()
	x0hat := make([]float64, 2)
	cores[2].(*sim.EavesdropperCore).Estimator().EstimateX0(x0hat)
	x := plant.State()
	fmt.Printf("x(T) = (%.3f, %.3f), offset gamma = %.3f\n", x[0], x[1], plant.Gamma()[0])
	fmt.Printf("eavesdropper's x0 estimate = (%.3f, %.3f): x0 + (gamma, 0)\n", x0hat[0], x0hat[1])
	// Output:
	// x(T) = (1.762, -0.000), offset gamma = -0.761
	// eavesdropper's x0 estimate = (-0.761, 0.000): x0 + (gamma, 0)
}
