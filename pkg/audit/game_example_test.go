package audit_test

import (
	"context"
	"fmt"

	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Audit the paper's vehicle with i.i.d. per-step noise calibrated for a single release: the fast
// engine plays 2 x 3000 episodes of the closed loop (plant, cloud, eavesdropper), the eavesdropper's
// estimates are scored and the statistics expose the under-calibration.
func ExamplePlayFast() {
	s, err := scenario.Load("../../scenarios/audit-vehicle-iid-naive.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := plan.New(s, plan.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := audit.NewGame(p, audit.GameOptions{}) // the worst pair of the calibrated adjacency
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := audit.PlayFast(context.Background(), g, audit.FastOptions{Trials: 3000, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := g.Analyze(out, audit.ReportOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("pair: x0 = %v, x0' = %v (%s)\n", r.Pair.X0, r.Pair.X0Prime, r.Pair.Source)
	fmt.Printf("scores: %v, strongest %s\n", g.ScoreNames(), r.Score)
	fmt.Printf("claim eps = %g; the pair's mechanism is mu = %.2f GDP (claim allows %.2f)\n", r.EpsilonClaimed, r.Theory.MuPair, r.MuClaimed)
	fmt.Printf("verdict %s, eps_lb_gdp > 5: %v\n", r.Verdict, r.EpsilonLBGDP > 5)
	// Output:
	// pair: x0 = [0 0], x0' = [1 0] (worst-pair)
	// scores: [projection llr precision], strongest precision
	// claim eps = 1; the pair's mechanism is mu = 5.33 GDP (claim allows 0.53)
	// verdict violation, eps_lb_gdp > 5: true
}
