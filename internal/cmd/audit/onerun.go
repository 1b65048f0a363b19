package auditcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dpsim/dpsim/internal/auditrun"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// executeOneRun runs `dpsim audit --one-run` on the single point of s (auditrun.OneRun) and prints
// the result.
func executeOneRun(o *Options, s *scenario.Scenario, seed uint64, stdout, stderr io.Writer) error {
	r, err := auditrun.OneRun(o, s, seed, func(w string) { fmt.Fprintf(stderr, "dpsim audit: warning: %s\n", cli.OneLine(w)) })
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
	switch b {
	case audit.OneRunBoundFDP:
		return "f-DP (Mahloujifar, Melis & Chaudhuri 2024)"
	case audit.OneRunBoundGauss:
		return "Gauss statistic (Agrawal et al. 2026)"
	}
	return "Steinke, Nasr & Jagielski 2023"
}

func writeOneRun(w io.Writer, r *audit.OneRunReport) {
	fmt.Fprintf(w, "one-run audit of %s: one episode, %d agents, each x_i(0) an independent canary (gap %g)\n",
		r.Scenario, r.Canaries, r.Difference)
	fmt.Fprintf(w, "guesses: %d per side (%d in all, fixed before the run), %d correct (score: %s)\n", r.GuessesPerSide, r.Guesses, r.Correct, r.Score)
	fmt.Fprintf(w, "epsilon_lb_one_run = %.4f at confidence %g (delta %g), the %s bound; claimed eps %g; expected at the claim %.4f\n",
		r.EpsilonLBOneRun, r.Confidence, r.Delta, oneRunBoundName(r.Bound), r.EpsilonClaimed, r.EpsilonLBExpected)
	gauss := ""
	if r.EpsilonLBGauss != nil {
		gauss = fmt.Sprintf(", Gauss statistic %.4f (T = %.3f, mu_lb %.4f, the signed standardised scores' variance %.3f: 1 under its assumption)",
			*r.EpsilonLBGauss, *r.GaussStatistic, *r.MuLBGauss, *r.GaussScoreVariance)
	}
	fmt.Fprintf(w, "  from the same run: Steinke et al. %.4f, f-DP %.4f (both from the guesses)%s; only the %s bound, fixed by the mechanism before the run, gives the verdict\n",
		r.EpsilonLBSteinke, r.EpsilonLBFDP, gauss, oneRunBoundName(r.Bound))
	cmp := "<="
	if r.Verdict == audit.Violation {
		cmp = ">"
	}
	fmt.Fprintf(w, "verdict: %s (eps_lb %.4f %s eps %g); played in %.3fs (seed %d)\n", r.Verdict, r.EpsilonLBOneRun, cmp, r.EpsilonClaimed, r.ElapsedSeconds, r.Seed)
	fmt.Fprintf(w, "assumptions:\n  - %s\n", strings.Join(r.Assumptions, "\n  - "))
}
