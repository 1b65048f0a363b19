package report

import (
	"math"

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
