package audit

import (
	"fmt"
	"math"
	"strings"
)

// ApplySequential makes r the report of a sequential audit: its verdict is the sequential test's,
// and the fixed-size bounds of its trials stay for comparison, said to be such.
func (r *GameReport) ApplySequential(s *SequentialReport) {
	r.Sequential = s
	r.Verdict = s.Verdict
	r.Notes = append(r.Notes,
		fmt.Sprintf("sequential: the verdict rests on the anytime-valid test (%s); stopped because: %s after %d trials per value of the secret bit, %d looks", s.Construction, s.StoppedBecause, s.TrialsUsed.Bit0, s.Looks),
		"sequential: eps_lb_cp, eps_lb_gdp and eps_lb_fdp are the fixed-size bounds of the trials used, computed as if their number had been fixed in advance; after a stop chosen by the data they do not hold at the stated confidence: for comparison only")
}

// sequentialVerdict is the verdict line of a sequential audit: the decision, what it rests on and
// the anytime-valid bounds.
func (r *GameReport) sequentialVerdict() string {
	s := r.Sequential
	var parts []string
	for _, f := range s.Families {
		b := fmt.Sprintf("%s family (%s, alpha %s): e-value of the claim %s against 1/alpha = %s, eps_lb %s", f.Name, f.Hypothesis, fmtG(f.Alpha), fmtG(math.Exp(f.LogE)), fmtG(1/f.Alpha), fmtG(f.EpsilonLB))
		if f.Capped {
			b += " (the top of its grid: eps is at least that)"
		}
		parts = append(parts, b)
	}
	why := map[string]string{
		StopViolation:   "a test rejected the claim",
		StopTarget:      fmt.Sprintf("a lower bound reached the target %s eps", fmtG(s.Target)),
		StopTrialCap:    "the trial cap was reached without a decision",
		StopInterrupted: "interrupted",
	}[s.StoppedBecause]
	return fmt.Sprintf("%s (sequential, stopped after %d trials per value of the secret bit, %d looks: %s): %s; every statement holds over every look at once at joint confidence %g; eps = %s claimed",
		strings.ToUpper(s.Verdict), s.TrialsUsed.Bit0, s.Looks, why, strings.Join(parts, "; "), s.Confidence, fmtG(r.Claimed()))
}
