package auditcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// checkOneRun refuses the flags --one-run does not combine with (it plays one episode in-process).
func (o *Options) checkOneRun(set map[string]bool) error {
	if !o.OneRun {
		if set["guesses"] {
			return cli.UsageError("--guesses needs --one-run")
		}
		return nil
	}
	for _, f := range []string{"trials", "episodes-per-trial", "episodes-per-trial-sweep", "selection"} {
		if set[f] {
			return cli.UsageError("--one-run plays ONE episode (one canary per agent): --%s does not apply", f)
		}
	}
	if o.Engine != audit.EngineFast || o.Farm.Enabled() {
		return cli.UsageError("--one-run plays in-process with the fast engine (no --engine wire, no --dispatch)")
	}
	if o.Guesses < 0 {
		return cli.UsageError("--guesses %d: want >= 1 per side (0: the rule fixed from the claim)", o.Guesses)
	}
	return nil
}

// executeOneRun runs `dpsim audit --one-run` on the single point of s and prints the result.
func executeOneRun(o *Options, s *scenario.Scenario, seed uint64, stdout io.Writer) error {
	points := s.Expand()
	if len(points) != 1 {
		return cli.UsageError("--one-run: the scenario %s sweeps %d points; give a scenario without a sweep", s.Name, len(points))
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
		return err
	}
	r, err := audit.PlayOneRun(p, audit.OneRunOptions{Seed: seed, Confidence: conf, Guesses: o.Guesses, Adjacency: adj})
	if err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		writeOneRun(stdout, r)
	}
	if o.FailOnViolation && r.Verdict == audit.Violation {
		return &ViolationError{Points: []string{r.Scenario}}
	}
	return nil
}

// oneRunBoundName names a one-run bound with its paper.
func oneRunBoundName(b string) string {
	if b == audit.OneRunBoundFDP {
		return "f-DP (Mahloujifar, Melis & Chaudhuri 2024)"
	}
	return "Steinke, Nasr & Jagielski 2023"
}

func writeOneRun(w io.Writer, r *audit.OneRunReport) {
	fmt.Fprintf(w, "one-run audit of %s: one episode, %d agents, each x_i(0) an independent canary (gap %g)\n",
		r.Scenario, r.Canaries, r.Difference)
	fmt.Fprintf(w, "guesses: %d per side (%d in all, fixed before the run), %d correct (score: %s)\n", r.GuessesPerSide, r.Guesses, r.Correct, r.Score)
	fmt.Fprintf(w, "epsilon_lb_one_run = %.4f at confidence %g (delta %g), the %s bound; claimed eps %g; expected at the claim %.4f\n",
		r.EpsilonLBOneRun, r.Confidence, r.Delta, oneRunBoundName(r.Bound), r.EpsilonClaimed, r.EpsilonLBExpected)
	fmt.Fprintf(w, "  from the same guesses: Steinke et al. %.4f, f-DP %.4f (only the %s bound, fixed by the mechanism before the run, gives the verdict)\n",
		r.EpsilonLBSteinke, r.EpsilonLBFDP, oneRunBoundName(r.Bound))
	cmp := "<="
	if r.Verdict == audit.Violation {
		cmp = ">"
	}
	fmt.Fprintf(w, "verdict: %s (eps_lb %.4f %s eps %g); played in %.3fs (seed %d)\n", r.Verdict, r.EpsilonLBOneRun, cmp, r.EpsilonClaimed, r.ElapsedSeconds, r.Seed)
	fmt.Fprintf(w, "assumptions:\n  - %s\n", strings.Join(r.Assumptions, "\n  - "))
}
