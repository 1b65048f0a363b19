package report

import (
	"fmt"
	"strings"

	"github.com/dpsim/dpsim/internal/finitejson"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// warnings lists the run's warnings: the scenario's, the plans' (once), the
// incomplete episodes and the noise-dominance warning.
func (r *analysis) warnings() []string {
	var warn []string
	if r.sc != nil {
		warn = append(warn, r.sc.Warnings...)
	}
	for _, p := range r.points {
		if p.plan != nil {
			warn = MergePlanWarnings(warn, p.plan)
		}
	}
	for _, p := range r.points {
		if len(p.res.IncompleteEpisodes) > 0 {
			warn = append(warn, fmt.Sprintf("%s%d incomplete episodes were not aggregated: %s", r.prefix(p), len(p.res.IncompleteEpisodes), intList(p.res.IncompleteEpisodes, 10)))
		}
	}
	for _, p := range r.points {
		if nf := finitejson.Find(p.res); nf != nil {
			warn = append(warn, fmt.Sprintf("%sthe metrics overflowed float64 (an unstable loop, or a horizon too long for its growth): %s; "+
				"they are left out of the figures, and the checks that use them fail", r.prefix(p), nf.Brief(3)))
		}
	}
	if w := r.fragileWarning(); w != "" {
		warn = append(warn, w)
	}
	if w := r.dominanceWarning(); w != "" {
		warn = append(warn, w)
	}
	return warn
}

// fragileWarning is the Warnings entry of the points whose sensitivity is fragile ("" when none).
func (r *analysis) fragileWarning() string {
	var pts []string
	var first *privacy.Conditioning
	for _, p := range r.points {
		if p.cond != nil && p.cond.Fragile {
			if first == nil {
				first = p.cond
			}
			pts = append(pts, p.label)
		}
	}
	if first == nil {
		return ""
	}
	where := ""
	if r.sweep {
		where = " at " + pointList(pts, len(r.points))
	}
	return fmt.Sprintf("**the sensitivity is fragile**%s: %s. The noise it calibrates is then a property of the digits written, not of the plant.",
		where, strings.TrimPrefix(first.Advice(), "the calibration is fragile: "))
}

// dominanceWarning is the Warnings entry of the noise-dominance points ("" when none).
func (r *analysis) dominanceWarning() string {
	if len(r.dominated) == 0 {
		return ""
	}
	worst := r.dominated[0]
	for _, d := range r.dominated[1:] {
		if d.ratio() > worst.ratio() {
			worst = d
		}
	}
	where := ""
	if r.sweep {
		var pts []string
		for i, d := range r.dominated {
			if i == 6 {
				pts = append(pts, "...")
				break
			}
			pts = append(pts, d.point)
		}
		where = fmt.Sprintf(" at %d of %d points (%s)", len(r.dominated), len(r.points), strings.Join(pts, "; "))
	}
	s := fmt.Sprintf("**%s**%s: the root-mean-square tracking error of %s at T is %s against a task of scale %s",
		r.swampWords(), where, worst.comp, num(worst.rms), num(worst.scale))
	if worst.unit {
		s += " (the reference and x(0) are zero: scale taken as 1)"
	}
	s += fmt.Sprintf(" (%s x)", num(worst.rms/worst.scale))
	if worst.avgComp != "" {
		s += fmt.Sprintf("; averaged over t = 0..T the root-mean-square tracking error of %s is %s against %s for the same loop without noise (%s x)",
			worst.avgComp, num(worst.avgRMS), num(worst.noiseFree), num(worst.avgRMS/worst.noiseFree))
	}
	if r.sweep {
		s += " at " + worst.point
	}
	cause := "the privacy noise"
	if len(r.faultsInjected()) > 0 {
		cause = "the privacy noise and the injected faults"
	}
	return s + fmt.Sprintf(". The state mostly follows %s, so passing checks say the theory holds, not that the control is useful. "+
		"To trade privacy for control, change `privacy.model` (protect a smaller subsystem, as the vehicle's position model A = 1, C = 1), "+
		"`privacy.adjacency` (block: Theorem 3's index sets, a weaker guarantee), `steps` (a shorter horizon T) or the budget "+
		"(`privacy.epsilon`, `privacy.delta`, `privacy.mu`). Criterion: %s.",
		cause, dominanceCriterion())
}

// swampWords names the noise-dominance warning: under faults the tracking error is the noise's
// and the faults' doing together.
func (r *analysis) swampWords() string {
	if len(r.faultsInjected()) > 0 {
		return "the noise and the faults swamp the control"
	}
	return "the noise swamps the control"
}

// dominanceCriterion states the noise-dominance criterion in words.
func dominanceCriterion() string {
	return fmt.Sprintf("the noise dominates the control when the root-mean-square tracking error at T, sqrt(max_i E[(x_i(T) - x_r,i(T))^2]), "+
		"exceeds %d x the scale of the task, max(max_t |x_r(t)|, |x(0)|) (1 when both are zero), or when for some component i the time-averaged "+
		"root-mean-square tracking error over t = 0..T exceeds %d x that of the same closed loop without noise (computed deterministically from the plan; "+
		"the noise then makes more than 99%% of the mean-square error)", NoiseDominance, NoiseDominance)
}

// faultsNote opens the report of a scenario with faults: FAIL lines are expected there.
func (r *analysis) faultsNote(b *strings.Builder) {
	what := r.faultsInjected()
	if len(what) == 0 {
		return
	}
	fmt.Fprintf(b, "> **This scenario injects faults** (%s; see \"Faults and links\"). The theory behind the checks assumes a lossless network "+
		"on which every message arrives on time, so FAIL lines are expected where the faults break that assumption: they measure the "+
		"faults' effect, not a defect.", strings.Join(what, ", "))
	if r.kind == string(scenario.Consensus) {
		b.WriteString(" Points whose links saw faults state their Proposition 1 numbers without checking them.")
	}
	b.WriteString("\n\n")
}
