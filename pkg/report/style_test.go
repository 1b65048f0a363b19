package report

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// TestFiguresInHouseStyle builds the report of shipped scenarios that together draw every
// figure the report knows (FigureNames) and checks each against the house style
// (figure.Check: fonts, sizes, nothing clipped, readable axes, both formats render).
func TestFiguresInHouseStyle(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range []string{"cloud-vehicle", "cloud-vehicle-sweep", "consensus-gaussian", "consensus-laplace",
		"faults-vehicle-latency", "faults-consensus-loss", "faults-agent-crash", "faults-partition"} {
		t.Run(name, func(t *testing.T) {
			s, err := scenario.Load(filepath.Join("..", "..", "scenarios", name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			pts, err := sim.RunSweep(context.Background(), s, s.Seed, plan.Options{}, sim.FastOptions{Runs: 40})
			if err != nil {
				t.Fatal(err)
			}
			in := Input{Scenario: s, Seed: s.Seed, Engine: "fast", Mode: "lockstep"}
			for _, p := range pts {
				in.Points = append(in.Points, Point{Scenario: p.Scenario, Plan: p.Plan, Results: p.Results})
			}
			rep, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.Figures {
				seen[f.Name] = true
				if err := f.Check(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for _, n := range FigureNames() {
		if !seen[n] {
			t.Errorf("no shipped scenario draws %s: it is not checked", n)
		}
	}
}
