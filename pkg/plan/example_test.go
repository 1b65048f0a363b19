package plan_test

import (
	"fmt"

	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// The full-state vehicle calibrated for Theorem 3's block index sets, and what that noise is
// worth under Definition 4's manifold adjacency.
func ExamplePlan_AchievedEpsilon() {
	s, err := scenario.Load("../../scenarios/cloud-vehicle-fullstate.yaml")
	if err != nil {
		panic(err)
	}
	block, err := plan.New(s, plan.Options{Adjacency: privacy.Block})
	if err != nil {
		panic(err)
	}
	manifold, err := plan.New(s, plan.Options{Adjacency: privacy.Manifold})
	if err != nil {
		panic(err)
	}
	eps, err := block.AchievedEpsilon(manifold.Sensitivity)
	if err != nil {
		panic(err)
	}
	fmt.Printf("block: Delta = %.4f, sigma = %.4f\n", block.Sensitivity.Value, block.Scale)
	fmt.Printf("manifold: Delta = %.4f, sigma = %.4f\n", manifold.Sensitivity.Value, manifold.Scale)
	fmt.Printf("block noise under manifold adjacency: eps = %.1f (claimed %g)\n", eps, s.Privacy.Epsilon)
	// Output:
	// block: Delta = 9.9504, sigma = 18.6856
	// manifold: Delta = 99.5038, sigma = 186.8557
	// block noise under manifold adjacency: eps = 25.7 (claimed 1)
}
