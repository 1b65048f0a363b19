package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/dpsim/dpsim/pkg/scenario"
)

// NoiseDominance is the factor of the noise-dominance warning. The noise dominates the control
// when either
//
//   - the root-mean-square tracking error at T exceeds NoiseDominance times the scale of what the
//     controller is asked to do (the largest |x_r(t)| over the horizon and |x(0)|): the
//     deterministic part of the error decays with the closed loop, so what is left at T is the
//     noise's doing, and an error ten times the reference's size means the state mostly follows
//     the noise; or
//   - for some state component, the run's time-averaged root-mean-square tracking error (over
//     t = 0..T) exceeds NoiseDominance times that of the same closed loop without noise
//     (plan.NoiseFreeTracking, computed deterministically): the noise then makes more than 99% of
//     the mean-square error (1 - 1/10^2). The transient is the yardstick, not the noise-free error
//     at T, which a converging loop drives to ~0. The shipped vehicle runs sit below it (about 5.6x
//     for cloud-vehicle and 7.9x for cloud-vehicle-lqr at eps = 1: the normal price of privacy);
//     generic ill-conditioned 3-state plants are at 10^5 - 10^7 x.
const NoiseDominance = 10

// noiseDominance is one point at which the noise dominates the control.
type noiseDominance struct {
	point string
	comp  string  // the component with the largest final mean-square error
	rms   float64 // sqrt of its final mean-square error
	scale float64 // the reference's scale
	unit  bool    // the reference and x(0) are zero: the scale is taken as 1

	// The time-averaged comparison with the noise-free loop (avgComp == "": not computed).
	avgComp     string  // the component with the largest ratio
	avgRMS      float64 // the run's time-averaged RMS tracking error of avgComp
	noiseFree   float64 // the noise-free loop's
	byScale     bool    // rms > NoiseDominance * scale
	byNoiseFree bool    // avgRMS > NoiseDominance * noiseFree
}

// ratio is the larger of the two criteria's ratios.
func (d noiseDominance) ratio() float64 {
	x := d.rms / d.scale
	if d.avgComp != "" && d.noiseFree > 0 {
		x = math.Max(x, d.avgRMS/d.noiseFree)
	}
	return x
}

// findNoiseDominance records the control points whose noise dominates the control.
func (r *analysis) findNoiseDominance() {
	if r.kind != string(scenario.CloudControl) {
		return
	}
	for _, p := range r.points {
		c := p.res.Control
		if c == nil || p.res.Runs == 0 {
			continue
		}
		worst, at := -1.0, 0
		for i, fs := range c.FinalSqError {
			if fs.N > 0 && fs.Mean > worst {
				worst, at = fs.Mean, i
			}
		}
		if worst < 0 {
			continue
		}
		scale := referenceScale(p)
		d := noiseDominance{point: p.label, comp: r.comps[min(at, len(r.comps)-1)], rms: math.Sqrt(worst), scale: scale}
		if scale == 0 {
			d.scale, d.unit = 1, true
		}
		d.byScale = d.rms > NoiseDominance*d.scale
		if p.plan != nil && p.plan.System != nil {
			if nf, err := p.plan.NoiseFreeTracking(); err == nil {
				best := -1.0
				for i, a := range c.AvgSqError {
					if i >= len(nf.Avg) || a.N == 0 || !(nf.Avg[i] > 0) {
						continue
					}
					if q := math.Sqrt(a.Mean / nf.Avg[i]); q > best {
						best = q
						d.avgComp = r.comps[min(i, len(r.comps)-1)]
						d.avgRMS, d.noiseFree = math.Sqrt(a.Mean), math.Sqrt(nf.Avg[i])
					}
				}
				d.byNoiseFree = d.avgComp != "" && d.avgRMS > NoiseDominance*d.noiseFree
			}
		}
		if d.byScale || d.byNoiseFree {
			r.dominated = append(r.dominated, d)
		}
	}
}

// referenceScale is the largest |x_r(t)| over t = 0..T and |x(0)| of a control point (0 when
// neither is known or both are zero).
func referenceScale(p *pointInfo) float64 {
	scale := 0.0
	if p.sc != nil && p.sc.Plant != nil {
		for _, v := range p.sc.Plant.X0 {
			scale = math.Max(scale, math.Abs(v))
		}
	}
	if p.plan == nil || p.plan.Reference == nil || p.plan.System == nil {
		return scale
	}
	xr := make([]float64, p.plan.System.Nx())
	for t := 0; t <= p.res.Steps; t++ {
		p.plan.Reference.At(t, xr)
		for _, v := range xr {
			scale = math.Max(scale, math.Abs(v))
		}
	}
	return scale
}

// dominanceCriterion states the noise-dominance criterion in words.
func dominanceCriterion() string {
	return fmt.Sprintf("the noise dominates the control when the root-mean-square tracking error at T, sqrt(max_i E[(x_i(T) - x_r,i(T))^2]), "+
		"exceeds %d x the scale of the task, max(max_t |x_r(t)|, |x(0)|) (1 when both are zero), or when for some component i the time-averaged "+
		"root-mean-square tracking error over t = 0..T exceeds %d x that of the same closed loop without noise (computed deterministically from the plan; "+
		"the noise then makes more than 99%% of the mean-square error)", NoiseDominance, NoiseDominance)
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

// faultsInjected lists what the scenario injects that the theory does not model (nil: none):
// link faults, crashes, partitions and server restarts.
func (r *analysis) faultsInjected() []string {
	sc := r.sc
	if sc == nil && len(r.points) > 0 {
		sc = r.points[0].sc
	}
	if sc == nil {
		return nil
	}
	f := &sc.Faults
	var out []string
	add := func(n int, what string) {
		if n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(len(f.Links), "link-fault rule(s)")
	add(len(f.Crashes), "process crash(es)")
	add(len(f.Partitions), "partition(s)")
	add(len(f.ServerRestarts), "NATS server restart(s)")
	return out
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
