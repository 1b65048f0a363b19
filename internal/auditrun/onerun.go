package auditrun

import (
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/report"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// OneRun plays the one-run audit of --one-run (docs/math.md section 6.2) on the single point of
// s: ONE episode whose agents' x_i(0) are independent canaries, scored and guessed by
// audit.PlayOneRun. The confidence and the adjacency are the flags', else the scenario's. warn
// (nil: none) is given the scenario's and its plan's warnings before the episode plays.
func OneRun(o *Options, s *scenario.Scenario, seed uint64, warn func(string)) (*audit.OneRunReport, error) {
	points := s.Expand()
	if len(points) != 1 {
		return nil, cli.UsageError("--one-run: the scenario %s sweeps %d points; give a scenario without a sweep", s.Name, len(points))
	}
	conf := o.Confidence
	if conf == 0 && s.Audit != nil {
		conf = s.Audit.Confidence
	}
	adj := o.Adjacency
	if adj == "" && s.Audit != nil {
		adj = s.Audit.Adjacency
	}
	p, err := plan.New(points[0], plan.Options{})
	if err != nil {
		return nil, err
	}
	if warn != nil {
		for _, w := range report.MergePlanWarnings(s.Warnings, p) {
			warn(w)
		}
	}
	return audit.PlayOneRun(p, audit.OneRunOptions{Seed: seed, Confidence: conf, Guesses: o.Guesses, Adjacency: adj})
}
