package report

import (
	"fmt"
	"math"
	"math/cmplx"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/noise"
)

// noiseOf returns the point's noise kind.
func noiseOf(p *pointInfo) string {
	if p.plan != nil {
		return string(p.plan.Noise)
	}
	return p.res.Noise
}

// controlChecks computes the cloud-control statements of one point and returns its
// information lines.
func (r *analysis) controlChecks(p *pointInfo) []string {
	c := p.res.Control
	T := p.res.Steps
	kind := noiseOf(p)
	offset := p.plan.ConstantOffset()
	info := r.componentLines(p)
	if r.vehicle && len(c.FinalAbsErrorMax) > 1 && len(c.TrackingSqError) > 1 {
		v := c.FinalAbsErrorMax[1]
		msv := &c.TrackingSqError[1]
		peak, tp := 0.0, 0
		for t := 0; t < msv.Len(); t++ {
			if msv.N[t] > 0 && msv.Mean[t] > peak {
				peak, tp = msv.Mean[t], msv.StepOf(t)
			}
		}
		fin := c.FinalSqError[1]
		if (offset || kind == string(noise.None)) && fin.N > 0 {
			r.addRule(p, "velocity-vanishes", measured{value: fin.Mean, threshold: VanishFactor * peak,
				detail: fmt.Sprintf("E[(v(T) - v_r(T))^2] at T = %d is %s (95%% interval), its peak %s at t = %d", T, ci(fin), num(peak), tp)})
		}
		line := fmt.Sprintf("velocity error at T = %d: max over runs |v(T) - v_r(T)| = %s", T, num(v))
		if v >= VelocityTol && (offset || kind == string(noise.None)) {
			line += fmt.Sprintf(", not below the tolerance %s that dpsim states for it (a stated target, not a check: the theory does not promise it)", num(VelocityTol))
			dev := deviation{point: p.label, T: T, v: v}
			if rho, ok := slowestPole(p); ok {
				dev.rho = rho
				line += fmt.Sprintf(": the slowest closed-loop pole |lambda| = %s decays only by %s over T = %d steps", numP(rho, 4), num(math.Pow(rho, float64(T))), T)
			}
			r.deviations = append(r.deviations, dev)
		}
		if !(offset || kind == string(noise.None)) {
			line += fmt.Sprintf(" (no vanishing is predicted for %s noise on this private model)", kind)
		}
		info = append(info, line)
		if r.offsetChecked(p) {
			fs := c.FinalSqError[0]
			V := p.res.NoiseVariance
			tol := OffsetZ * fs.SE
			// The interval the check uses (99.9 %) is printed first, so a PASS never sits beside
			// an interval of another level that excludes the theory value.
			r.addRule(p, "position-offset", measured{value: math.Abs(fs.Mean - V), threshold: tol,
				detail: fmt.Sprintf("E[(p(T) - p_r(T))^2] = %s with its %s interval [%s, %s] against Var(gamma) = %s", num(fs.Mean), pct(OffsetLevel), num(fs.Mean-tol), num(fs.Mean+tol), num(V))})
		}
	}
	// Bounded in mean square where the theory predicts a stationary error.
	if len(c.TrackingSqError) > 0 {
		s := &c.TrackingSqError[0]
		q3, q4, ok := quarterMeans(s)
		if ok {
			if kind != string(noise.Structured) || offset {
				r.addRule(p, "position-bounded", measured{subject: r.comps[0], value: growth(q3, q4), threshold: GrowthRatio,
					detail: fmt.Sprintf("last quarter %s, third quarter %s (means over the steps of the Monte Carlo means, no interval)", num(q4), num(q3))})
			} else {
				info = append(info, fmt.Sprintf("%s MSE: last quarter %s, third quarter %s (ratio %s): structured noise C A^t sqrt(Sigma) eta grows with t for this private model, so no bound is claimed",
					r.compLong[0], num(q4), num(q3), num(safeRatio(q4, q3))))
			}
		}
	}
	info = append(info, r.eveCheck(p)...)
	return info
}

// componentLines states each state component's error at T: its mean, its mean square (with,
// for the position of the paper's vehicle, the interval the position-offset check uses first)
// and its largest absolute value over the runs.
func (r *analysis) componentLines(p *pointInfo) []string {
	c := p.res.Control
	var info []string
	for i := range c.FinalSqError {
		if i >= len(r.comps) {
			break
		}
		name := r.comps[i]
		fe := metrics.Stat{}
		if n := c.TrackingError[i].Len(); n > 0 {
			fe = c.TrackingError[i].At(n - 1)
		}
		mse := ci(c.FinalSqError[i])
		if fs := c.FinalSqError[i]; i == 0 && r.offsetChecked(p) && fs.N > 1 {
			// The interval the position-offset check decides on comes first, with its level.
			h := OffsetZ * fs.SE
			mse = fmt.Sprintf("%s, %s interval [%s, %s] (the one the position-offset check uses), 95%% interval [%s, %s]",
				num(fs.Mean), pct(OffsetLevel), num(fs.Mean-h), num(fs.Mean+h), num(fs.Lo), num(fs.Hi))
		}
		line := fmt.Sprintf("%s: E[%s(T) - %s_r(T)] = %s, E[(%s(T) - %s_r(T))^2] = %s", r.compLong[i], name, name, ci(fe), name, name, mse)
		if i < len(c.FinalAbsErrorMax) {
			line += fmt.Sprintf(", max over runs |%s(T) - %s_r(T)| = %s", name, name, num(c.FinalAbsErrorMax[i]))
		}
		info = append(info, line)
	}
	return info
}

// offsetChecked reports whether the position-offset check applies to p: the paper's vehicle
// with a constant offset of known variance and a final position error measured.
func (r *analysis) offsetChecked(p *pointInfo) bool {
	c := p.res.Control
	return r.vehicle && p.plan.ConstantOffset() && p.res.NoiseVariance > 0 && c != nil && len(c.FinalSqError) > 1 &&
		len(c.FinalAbsErrorMax) > 1 && len(c.TrackingSqError) > 1 && c.FinalSqError[0].N > 0
}

// quarterMeans returns the means of a series over [T/2, 3T/4) and [3T/4, T].
func quarterMeans(s *metrics.Series) (q3, q4 float64, ok bool) {
	n := s.Len()
	a, b := n/2, (3*n)/4
	if b <= a || b >= n {
		return 0, 0, false
	}
	var s3, s4 float64
	var n3, n4 int
	for t := a; t < n; t++ {
		if s.N[t] == 0 {
			continue
		}
		if t < b {
			s3, n3 = s3+s.Mean[t], n3+1
		} else {
			s4, n4 = s4+s.Mean[t], n4+1
		}
	}
	if n3 == 0 || n4 == 0 {
		return 0, 0, false
	}
	return s3 / float64(n3), s4 / float64(n4), true
}

// growth is the ratio q4/q3 of the last to the third quarter's mean square; an error that is
// zero in both does not grow (0/0 counts as 1).
func growth(q3, q4 float64) float64 {
	if q4 == 0 {
		return 0
	}
	return safeRatio(q4, q3)
}

func safeRatio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return a / b
}

// eveCheck states the eavesdropper's trend: flat for structured noise, shrinking for iid-naive.
func (r *analysis) eveCheck(p *pointInfo) []string {
	s := eveSeries(p)
	if !hasData(s) {
		return []string{"no eavesdropper estimates were recorded"}
	}
	early, late, t0, t1, ok := eveTrend(s)
	if !ok {
		return []string{"the eavesdropper had an estimate at one step only"}
	}
	ratio := safeRatio(late, early)
	detail := fmt.Sprintf("E||x0hat(t) - x(0)||^2 from t = %d to t = %d: %s -> %s (95%% intervals)", s.StepOf(t0), s.StepOf(t1), ci(s.At(t0)), ci(s.At(t1)))
	m := measured{value: ratio, threshold: FlatRatio, detail: detail}
	switch noiseOf(p) {
	case string(noise.Structured):
		r.addRule(p, "eve-no-shrink", m)
	case string(noise.IIDNaive):
		r.addRule(p, "eve-shrinks", m)
	default:
		return []string{fmt.Sprintf("eavesdropper's error %s (ratio late/early %s)", detail, num(ratio))}
	}
	return nil
}

// consensusChecks computes the consensus statements of one point and returns information lines.
func (r *analysis) consensusChecks(p *pointInfo) []string {
	c := p.res.Consensus
	T := p.res.Steps
	var info []string
	// Proposition 1 and the sum preservation of eq. (25) assume that every message arrives on
	// time: with faults (a loss, a delay, a crashed agent, a partition) neither is a
	// prediction, and the run's numbers are reported, not checked.
	if t := linkTotals(p.res.Links); faulty(t) {
		info = append(info, fmt.Sprintf("not checked under faults: Proposition 1 and the sum preservation of eq. (25) assume every message arrives on time, "+
			"and here %d were dropped, %d lost to a crash, %d delayed or reordered and %d steps went without a neighbour's message: "+
			"final E||x(T) - 1x*||^2 = %s (Proposition 1 bound without faults %s), network sum drift max |sum x(t) - sum x(0)| / scale = %s",
			t.Dropped, t.Lost, t.Delayed+t.Reordered, t.Gaps, ci(c.FinalSqDeviation), num(c.Prop1Bound), num(c.SumRelDevMax)))
		info = append(info, r.eveCheck(p)...)
		return info
	}
	if c.Prop1Bound > 0 {
		fs := c.FinalSqDeviation
		if fs.N > 0 {
			r.addRule(p, "prop1-bound", measured{value: fs.Hi, threshold: c.Prop1Bound, interval: &fs,
				detail: fmt.Sprintf("final E||x(T) - 1x*||^2 = %s (95%% interval)", ci(fs))})
		}
		info = append(info, fmt.Sprintf("exact limit for constant offsets: (N - 1) Var(gamma_i) = %s; the bound is loose by N/(N-1) = %s",
			num(c.OffsetLimit), num(safeRatio(float64(c.Agents), float64(c.Agents-1)))))
	} else {
		info = append(info, fmt.Sprintf("final E||x(T) - 1x*||^2 = %s (no noise: no Proposition 1 bound)", ci(c.FinalSqDeviation)))
	}
	// E[x_i(T) - x*] -> 0: every agent's interval meets the deterministic envelope
	// alpha^T ||x(0) - 1x*|| (Bonferroni over the agents, family-wise 95%).
	if n := len(c.Deviation); n > 0 && c.Deviation[0].Len() > 0 {
		var d0 float64
		if n == c.Agents {
			for i := range c.Deviation {
				m := c.Deviation[i].Mean[0]
				d0 += m * m
			}
		} else if c.SqDeviation.Len() > 0 {
			// a subset of the agents is tracked: E||x(0) - 1x*||^2 >= ||E[x(0) - 1x*]||^2 (equal
			// for the scenario's fixed x(0)) bounds the envelope from above
			d0 = c.SqDeviation.Mean[0]
		}
		env := math.Pow(c.Alpha, float64(T)) * math.Sqrt(d0)
		z := distuv.UnitNormal.Quantile(1 - 0.025/float64(n))
		miss, worst, lowest := 0, 0.0, 0.0
		for i := range c.Deviation {
			if c.Deviation[i].Len() == 0 {
				continue
			}
			st := c.Deviation[i].At(c.Deviation[i].Len() - 1)
			worst = math.Max(worst, math.Abs(st.Mean))
			lo := math.Max(0, math.Abs(st.Mean)-z*st.SE) // the lower simultaneous limit of |E[x_i(T) - x*]|
			lowest = math.Max(lowest, lo)
			if lo > env {
				miss++
			}
		}
		r.addRule(p, "mean-deviation", measured{value: lowest, threshold: env,
			detail: fmt.Sprintf("z = %s, alpha = %s; max_i |E[x_i(T) - x*]| = %s; %d of %d agents%s outside the envelope",
				numP(z, 3), numP(c.Alpha, 4), num(worst), miss, n, trackedOf(c))})
	}
	r.addRule(p, "sum-preserved", measured{value: c.SumRelDevMax, threshold: SumTol})
	if p.plan != nil && p.plan.Scale > 0 {
		info = append(info, fmt.Sprintf("each agent's offset gamma_i = %s eta_i (variance %s), x* = %s", numP(p.plan.Scale, 4), num(p.res.NoiseVariance), ci(c.XStar)))
	}
	info = append(info, r.eveCheck(p)...)
	return info
}

// sweepComparisons states, for a sweep with noise kinds, whether structured noise beats the
// i.i.d. calibrated baseline at every value of the swept parameter.
func (r *analysis) sweepComparisons() {
	if !r.sweep || !slices.Contains(r.seriesParams, "noise") || len(r.seriesParams) != 1 {
		return
	}
	si := slices.Index(r.seriesLabels, string(noise.Structured))
	ci := slices.Index(r.seriesLabels, string(noise.IIDCalibrated))
	if si < 0 || ci < 0 {
		return
	}
	type metric struct {
		name string
		get  func(*pointInfo) (float64, bool)
	}
	var ms []metric
	switch {
	case r.points[0].res.Control != nil:
		for i := range r.comps {
			ms = append(ms, metric{"final E[(" + r.comps[i] + "(T) - " + r.comps[i] + "_r(T))^2]", func(p *pointInfo) (float64, bool) {
				fs := p.res.Control.FinalSqError
				if i >= len(fs) || fs[i].N == 0 {
					return 0, false
				}
				return fs[i].Mean, true
			}})
		}
	case r.points[0].res.Consensus != nil:
		ms = append(ms, metric{"final E||x(T) - 1x*||^2", func(p *pointInfo) (float64, bool) {
			fs := p.res.Consensus.FinalSqDeviation
			return fs.Mean, fs.N > 0
		}})
	}
	for _, m := range ms {
		var worse []string
		compared := 0
		maxRatio := 0.0
		for a := range r.axisLabels {
			var sp, cp *pointInfo
			for _, p := range r.pointsAt(a) {
				switch p.series {
				case si:
					sp = p
				case ci:
					cp = p
				}
			}
			if sp == nil || cp == nil {
				continue
			}
			sv, ok1 := m.get(sp)
			cv, ok2 := m.get(cp)
			if !ok1 || !ok2 {
				continue
			}
			compared++
			maxRatio = math.Max(maxRatio, safeRatio(sv, cv))
			if !(sv < cv) {
				worse = append(worse, r.axisLabels[a])
			}
		}
		if compared == 0 {
			continue
		}
		detail := fmt.Sprintf("%d values of %s", compared, r.axisParam)
		if len(worse) > 0 {
			detail += "; not lower at " + r.axisParam + " = " + strings.Join(worse, ", ")
		}
		r.addRule(nil, "structured-beats-iid", measured{subject: m.name, value: maxRatio, threshold: 1, detail: detail})
	}
}

// slowestPole returns the spectral radius of the closed loop of eq. (24): the eigenvalues of
// A - B K (controller) and A - L C (observer).
func slowestPole(p *pointInfo) (float64, bool) {
	pl := p.plan
	if pl == nil || pl.System == nil || pl.K == nil || pl.L == nil {
		return 0, false
	}
	A, B, C := pl.System.A, pl.System.B, pl.System.C
	var bk, lc, m1, m2 mat.Dense
	bk.Mul(B, pl.K)
	lc.Mul(pl.L, C)
	m1.Sub(A, &bk)
	m2.Sub(A, &lc)
	rho := 0.0
	for _, m := range []*mat.Dense{&m1, &m2} {
		var e mat.Eigen
		if !e.Factorize(m, mat.EigenNone) {
			return 0, false
		}
		for _, v := range e.Values(nil) {
			rho = math.Max(rho, cmplx.Abs(v))
		}
	}
	return rho, true
}

// trackedOf says, when the results keep the deviation of a subset of the agents, of how many.
func trackedOf(c *metrics.ConsensusMetrics) string {
	if len(c.Deviation) < c.Agents {
		return fmt.Sprintf(" (tracked, evenly spaced, of %d)", c.Agents)
	}
	return ""
}
