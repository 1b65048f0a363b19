package report

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// Figure names (files NAME.png and NAME.svg).
const (
	FigTrackingError     = "tracking-error"      // cloud control: x - x_r against t (paper Fig. 2)
	FigTrackingMSE       = "tracking-mse"        // cloud control: E[(x - x_r)^2] against t
	FigEavesdropper      = "eavesdropper-error"  // E||x0hat(t) - x(0)||^2 against t
	FigSweepFinalMSE     = "sweep-final-mse"     // final mean-square error against the swept parameter (Fig. 3)
	FigSweepEavesdropper = "sweep-eavesdropper"  // eavesdropper error against t per noise kind
	FigConsensusDev      = "consensus-deviation" // E[x_i(t) - x*] against t (Fig. 5)
	FigConsensusMSE      = "consensus-mse"       // E||x(t) - 1x*||^2 with the Proposition 1 bound (Figs. 6, 7)
	FigFaults            = "faults"              // final errors (and sum drift) against a swept fault parameter
)

// figures builds every figure of the run (no I/O).
func (r *run) figures() ([]*figure.Figure, error) {
	var figs []*figure.Figure
	add := func(f *figure.Figure, err error) error {
		if err != nil {
			return err
		}
		if f != nil {
			figs = append(figs, f)
		}
		return nil
	}
	var steps []func() (*figure.Figure, error)
	switch r.kind {
	case string(scenario.CloudControl):
		steps = []func() (*figure.Figure, error){r.figTrackingError, r.figTrackingMSE, r.figEavesdropper}
	case string(scenario.Consensus):
		steps = []func() (*figure.Figure, error){r.figConsensusDeviation, r.figConsensusMSE, r.figEavesdropper}
	}
	if r.sweep {
		steps = append(steps, r.figSweepFinal, r.figSweepEavesdropper)
	}
	if r.sweep && faultAxis(r.axisParam) {
		steps = append(steps, r.figFaults)
	}
	for _, s := range steps {
		f, err := s()
		if errors.Is(err, errNoData) {
			r.skipped = append(r.skipped, err.Error())
			continue
		}
		if err := add(f, err); err != nil {
			return nil, err
		}
	}
	return figs, nil
}

// repSuffix names the representative point in titles of a sweep.
func (r *run) repSuffix() string {
	if !r.sweep {
		return ""
	}
	return " (" + r.rep.label + ")"
}

func (r *run) figTrackingError() (*figure.Figure, error) {
	c := r.rep.res.Control
	f := &figure.Figure{Name: FigTrackingError}
	shaded := ""
	for i := range c.TrackingError {
		s := &c.TrackingError[i]
		title := ""
		if i == 0 {
			title = fmt.Sprintf("Tracking error: mean and 95%% CI band over %d runs%s", r.rep.res.Runs, r.repSuffix())
		}
		name := r.comps[i]
		p := figure.New(title, "step t", fmt.Sprintf("%s(t) - %s_r(t)", name, name))
		if err := hline(p, 0, float64(s.Len()-1), 0, seriesStyle{color: figure.Grey, width: vg.Points(0.6)}, false); err != nil {
			return nil, err
		}
		ok, err := addSeries(p, s, stepAxis, seriesStyle{color: figure.Color(i), band: true}, false, 0)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("report: %s: %s: %w", FigTrackingError, name, errNoData)
		}
		shaded = r.shadeFaults(p)
		f.Panels = append(f.Panels, []*plot.Plot{p})
	}
	f.Caption = fmt.Sprintf("Tracking errors %s against the step t: mean over the runs with its 95%% confidence band (paper Fig. 2)%s.",
		joinErr(r.comps), r.repSuffix()) + shaded
	return f, nil
}

func joinErr(comps []string) string {
	s := ""
	for i, c := range comps {
		if i > 0 {
			s += " and "
		}
		s += c + " - " + c + "_r"
	}
	return s
}

// logY gives p a log y axis for the means (positive ones) and the upper band limits all;
// it returns the floor to draw smaller values at and whether the axis had to cut values off
// (figure.MaxLogDecades).
func logY(p *plot.Plot, means, all []float64) (floor float64, clipped bool) {
	lo, hi, _ := figure.PositiveRange(means)
	if _, h, ok := figure.PositiveRange(all); ok {
		hi = math.Max(hi, h)
	}
	return figure.SetLogY(p, lo, hi)
}

// trackingDecades is the span of a log panel of the tracking-mse figure: the errors of interest
// lie within a few decades of the peak, the exact start (v(0) = v_r(0)) far below.
const trackingDecades = 8

// clipNote is the caption's sentence for a log panel that cut small values off.
var clipNote = fmt.Sprintf(" A log panel spans at most %d decades below its largest value; smaller values are drawn on its lower edge.", figure.MaxLogDecades)

func (r *run) figTrackingMSE() (*figure.Figure, error) {
	c := r.rep.res.Control
	f := &figure.Figure{Name: FigTrackingMSE}
	clipped := false
	for i := range c.TrackingSqError {
		s := &c.TrackingSqError[i]
		title := ""
		if i == 0 {
			title = fmt.Sprintf("Mean-square tracking error: mean and 95%% CI band over %d runs%s", r.rep.res.Runs, r.repSuffix())
		}
		name := r.comps[i]
		p := figure.New(title, "step t", fmt.Sprintf("E[(%s - %s_r)^2]", name, name))
		isLog := figure.SpansDecades(seriesValues(s, false))
		floor := 0.0
		if isLog {
			// A near-zero start (the exact v(0) = v_r(0): 1e-15) would stretch the axis over
			// fifteen decades: the panel shows trackingDecades below the peak, lower values
			// sit on its edge.
			means, all := seriesValues(s, false), seriesValues(s, true) // all holds the means too
			_, hi, _ := figure.PositiveRange(all)
			lo := hi * math.Pow(10, -trackingDecades)
			for k := range means {
				if means[k] > 0 && means[k] < lo {
					means[k], clipped = lo, true
				}
			}
			var cut bool
			floor, cut = logY(p, means, all)
			clipped = clipped || cut
		}
		ok, err := addSeries(p, s, stepAxis, seriesStyle{color: figure.Color(i), band: true}, isLog, floor)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("report: %s: %s: %w", FigTrackingMSE, name, errNoData)
		}
		nonNegAxis(p, isLog)
		f.Panels = append(f.Panels, []*plot.Plot{p})
	}
	f.Caption = "Mean-square tracking errors against the step t with 95% confidence bands (a band narrower than its line, as for an error the noise hardly affects, is hidden by it)" + r.repSuffix() + "."
	if clipped {
		f.Caption += fmt.Sprintf(" A log panel spans %d decades below its largest value; smaller values are drawn on its lower edge.", trackingDecades)
	}
	return f, nil
}

// eveSeries returns the eavesdropper series of a point.
func eveSeries(p *pointInfo) *sim.Series {
	if p.res.Control != nil {
		return &p.res.Control.EveSqError
	}
	if p.res.Consensus != nil {
		return &p.res.Consensus.EveSqError
	}
	return nil
}

func hasData(s *sim.Series) bool {
	if s == nil {
		return false
	}
	for _, n := range s.N {
		if n > 0 {
			return true
		}
	}
	return false
}

// eveLabel is the y label of the eavesdropper figures.
func (r *run) eveLabel() string {
	return "E||x0hat(t) - x(0)||^2"
}

func (r *run) figEavesdropper() (*figure.Figure, error) {
	s := eveSeries(r.rep)
	if !hasData(s) {
		return nil, nil
	}
	p := figure.New(fmt.Sprintf("Eavesdropper's error, %s noise: mean and 95%% CI band%s", r.rep.res.Noise, r.repSuffix()),
		"step t (estimate from releases 0..t)", r.eveLabel())
	st := seriesStyle{color: figure.Color(0), band: true}
	note, err := r.plotEve(p, []*sim.Series{s}, []seriesStyle{st})
	if err != nil {
		return nil, err
	}
	shaded := r.shadeFaults(p) + note
	what := "x(0) of the plant"
	if r.kind == string(scenario.Consensus) {
		what = "every agent's x_i(0)"
	}
	return &figure.Figure{Name: FigEavesdropper, Panels: [][]*plot.Plot{{p}},
		Caption: fmt.Sprintf("The eavesdropper's mean-square error in estimating %s from everything published up to step t, "+
			"with its 95%% confidence band%s. A flat curve means the releases do not reveal more over time.", what, r.repSuffix()) + shaded}, nil
}

// plotEve draws eavesdropper series on p with a log y axis when they span decades; it
// returns the caption's note on a cut-off log axis ("" if none).
func (r *run) plotEve(p *plot.Plot, ss []*sim.Series, styles []seriesStyle) (string, error) {
	var means, all []float64
	for _, s := range ss {
		means = append(means, seriesValues(s, false)...)
		all = append(all, seriesValues(s, true)...)
	}
	isLog := figure.SpansDecades(means)
	floor, clipped := 0.0, false
	if isLog {
		floor, clipped = logY(p, means, all)
	}
	drawn := false
	for i, s := range ss {
		ok, err := addSeries(p, s, stepAxis, styles[i], isLog, floor)
		if err != nil {
			return "", err
		}
		drawn = drawn || ok
	}
	if !drawn {
		return "", fmt.Errorf("report: eavesdropper figure: %w", errNoData)
	}
	nonNegAxis(p, isLog)
	if clipped {
		return clipNote, nil
	}
	return "", nil
}

// deviationAgent is the agent (0-based) of c.Deviation[k].
func deviationAgent(c *sim.ConsensusMetrics, k int) int {
	if k < len(c.DeviationAgents) {
		return c.DeviationAgents[k]
	}
	return k
}

func (r *run) figConsensusDeviation() (*figure.Figure, error) {
	c := r.rep.res.Consensus
	p := figure.New(fmt.Sprintf("Deviation from the average, mean over %d runs%s", r.rep.res.Runs, r.repSuffix()),
		"step t", "E[x_i(t) - x*]")
	n := len(c.Deviation)
	if n == 0 {
		return nil, fmt.Errorf("report: %s: no agents: %w", FigConsensusDev, errNoData)
	}
	if err := hline(p, 0, float64(c.Deviation[0].Len()-1), 0, seriesStyle{color: figure.Grey, width: vg.Points(0.6)}, false); err != nil {
		return nil, err
	}
	legend := n <= 12
	drawn := false
	for i := range c.Deviation {
		st := seriesStyle{color: figure.Color(i), band: n <= 4, width: vg.Points(1.3)}
		if legend {
			st.name = fmt.Sprintf("agent %d", deviationAgent(c, i)+1)
		}
		ok, err := addSeries(p, &c.Deviation[i], stepAxis, st, false, 0)
		if err != nil {
			return nil, err
		}
		drawn = drawn || ok
	}
	if !drawn {
		return nil, fmt.Errorf("report: %s: %w", FigConsensusDev, errNoData)
	}
	p.Legend.Top = true
	cap := fmt.Sprintf("Mean deviation E[x_i(t) - x*] of each agent from the average x* of x(0) against the step t (paper Fig. 5)%s; "+
		"Proposition 1: it tends to 0.", r.repSuffix()) + r.shadeFaults(p)
	if n > 4 {
		cap += " The 95% intervals are left out for readability; report.md checks them."
	}
	if n < c.Agents {
		cap += fmt.Sprintf(" %d of the %d agents, evenly spaced (summary.json max_abs_deviation has the spread of all).", n, c.Agents)
	} else if !legend {
		cap += fmt.Sprintf(" %d agents, not labelled.", n)
	}
	return &figure.Figure{Name: FigConsensusDev, Panels: [][]*plot.Plot{{p}}, Caption: cap}, nil
}

// mseGroup returns the points the consensus-mse figure compares: the representative series
// across the swept values (one point without a sweep).
func (r *run) mseGroup() []*pointInfo {
	if !r.sweep {
		return []*pointInfo{r.rep}
	}
	return r.pointsOfSeries(r.rep.series)
}

func (r *run) figConsensusMSE() (*figure.Figure, error) {
	group := r.mseGroup()
	title := "Mean-square deviation and the Proposition 1 bound"
	if r.sweep && len(r.seriesLabels) > 1 {
		title += " (" + r.seriesLabels[r.rep.series] + ")"
	}
	p := figure.New(title, "step t", "E||x(t) - 1x*||^2")
	var means, all []float64
	for _, g := range group {
		c := g.res.Consensus
		means = append(means, seriesValues(&c.SqDeviation, false)...)
		means = append(means, c.Prop1Bound)
		all = append(all, seriesValues(&c.SqDeviation, true)...)
	}
	if _, _, ok := figure.PositiveRange(means); !ok {
		return nil, fmt.Errorf("report: %s: %w", FigConsensusMSE, errNoData)
	}
	// Always log: the deviation falls from ||x(0) - 1x*||^2 to the noise floor.
	floor, clipped := logY(p, means, all)
	for k, g := range group {
		c := g.res.Consensus
		name := "E||x(t) - 1x*||^2"
		bname := "Proposition 1 bound"
		if len(group) > 1 {
			name = r.axisText(g)
			bname = "bound, " + r.axisText(g)
		}
		_, err := addSeries(p, &c.SqDeviation, stepAxis, seriesStyle{name: name, color: figure.Color(k), band: true}, true, floor)
		if err != nil {
			return nil, err
		}
		if c.Prop1Bound > 0 {
			if err := hline(p, 0, float64(c.SqDeviation.Len()-1), c.Prop1Bound, seriesStyle{name: bname, color: figure.Color(k), dashes: figure.Dashed}, true); err != nil {
				return nil, err
			}
		}
	}
	cap := "Mean-square deviation E||x(t) - 1x*||^2 against the step t with its 95% confidence band (log scale), and the Proposition 1 bound " +
		"(dashed, same colour)"
	if len(group) > 1 {
		cap += ", one pair per " + r.axisParam + " (paper Figs. 6, 7)."
	} else {
		cap += " (paper Figs. 6, 7)."
	}
	if clipped {
		cap += clipNote
	}
	return &figure.Figure{Name: FigConsensusMSE, Panels: [][]*plot.Plot{{p}}, Caption: cap}, nil
}

// errPoints are points with asymmetric y error bars (distances below and above).
type errPoints struct {
	xy     plotter.XYs
	lo, hi []float64
}

func (e errPoints) Len() int                        { return len(e.xy) }
func (e errPoints) XY(i int) (float64, float64)     { return e.xy[i].X, e.xy[i].Y }
func (e errPoints) YError(i int) (float64, float64) { return e.lo[i], e.hi[i] }

// sweepX is the x coordinate of axis index a.
func (r *run) sweepX(a int) float64 {
	if r.axisNumeric {
		return r.axisValues[a]
	}
	return float64(a)
}

// sweepPanel draws stat(point) against the swept parameter, one line per series, with 95% CI
// error bars; bound(point) > 0 adds a dashed line per series. It returns the caption note of a
// cut-off log axis ("" if none).
func (r *run) sweepPanel(title, ylabel string, stat func(*pointInfo) sim.Stat, bound func(*pointInfo) float64, boundName string) (*plot.Plot, string, error) {
	xlabel := r.axisParam
	if r.axisParam == string(scenario.SweepEpsilon) {
		xlabel = "privacy budget epsilon"
	}
	if t, ok := faultAxisLabel[scenario.SweepParam(r.axisParam)]; ok {
		xlabel = t
	}
	p := figure.New(title, xlabel, ylabel)
	var means, all []float64
	for _, pt := range r.points {
		s := stat(pt)
		if s.N > 0 {
			means = append(means, s.Mean)
			all = append(all, s.Hi)
		}
		if bound != nil && bound(pt) > 0 {
			means = append(means, bound(pt))
		}
	}
	if len(means) == 0 {
		return nil, "", errNoData
	}
	isLog := figure.SpansDecades(means)
	floor, clipped := 0.0, false
	if isLog {
		floor, clipped = logY(p, means, all)
	}
	if r.axisLog {
		lo, hi, _ := figure.PositiveRange(r.axisValues)
		figure.SetLogX(p, lo, hi)
	}
	for s := range r.seriesLabels {
		pts := r.pointsOfSeries(s)
		var e errPoints
		var bxy plotter.XYs
		for _, pt := range pts {
			st := stat(pt)
			if st.N == 0 || (isLog && !(st.Mean > 0)) {
				continue
			}
			x := r.sweepX(pt.axis)
			if r.axisLog {
				x = figure.Lg(x)
			}
			m, l, h := st.Mean, st.Lo, st.Hi
			if st.N < 2 {
				l, h = m, m
			}
			by := 0.0
			if bound != nil {
				by = bound(pt)
			}
			if isLog {
				m = math.Max(m, floor) // below the axis: drawn on its lower edge
				l = math.Max(l, floor)
				if by > 0 {
					by = math.Max(by, floor)
				}
				m, l, h = figure.Lg(m), figure.Lg(l), figure.Lg(math.Max(h, l))
				if by > 0 {
					by = figure.Lg(by)
				}
			}
			e.xy = append(e.xy, plotter.XY{X: x, Y: m})
			e.lo = append(e.lo, math.Max(0, m-l))
			e.hi = append(e.hi, math.Max(0, h-m))
			if bound != nil && bound(pt) > 0 {
				bxy = append(bxy, plotter.XY{X: x, Y: by})
			}
		}
		if len(e.xy) == 0 {
			continue
		}
		col := figure.Color(s)
		name, bname := r.seriesLabels[s], boundName+", "+r.seriesLabels[s]
		if name == "" {
			name, bname = "mean, 95% CI", boundName
		}
		line, sc, err := plotter.NewLinePoints(e.xy)
		if err != nil {
			return nil, "", fmt.Errorf("report: sweep line: %w", err)
		}
		line.Color, line.Width = col, vg.Points(1.5)
		sc.Color, sc.Shape, sc.Radius = col, figure.Marker(s), vg.Points(3.5)
		eb, err := plotter.NewYErrorBars(e)
		if err != nil {
			return nil, "", fmt.Errorf("report: sweep error bars: %w", err)
		}
		eb.Color, eb.Width, eb.CapWidth = col, vg.Points(1), vg.Points(5)
		p.Add(line, sc, eb)
		p.Legend.Add(name, line, sc)
		if len(bxy) > 0 {
			bl, err := plotter.NewLine(bxy)
			if err != nil {
				return nil, "", fmt.Errorf("report: sweep bound: %w", err)
			}
			bl.Color, bl.Width, bl.Dashes = col, vg.Points(1.2), figure.Dashed
			p.Add(bl)
			p.Legend.Add(bname, bl)
		}
	}
	if !r.axisNumeric {
		p.NominalX(r.axisLabels...)
		p.X.Min, p.X.Max = -0.5, float64(len(r.axisLabels))-0.5
	}
	if !isLog && p.Y.Max > p.Y.Min {
		// errors are non-negative: from 0, with room above the highest bar
		p.Y.Min = math.Min(p.Y.Min, 0)
		p.Y.Max += 0.05 * (p.Y.Max - p.Y.Min)
	}
	if clipped {
		return p, clipNote, nil
	}
	return p, "", nil
}

func (r *run) figSweepFinal() (*figure.Figure, error) {
	T := r.rep.res.Steps
	f := &figure.Figure{Name: FigSweepFinalMSE}
	note := ""
	switch r.kind {
	case string(scenario.CloudControl):
		n := len(r.comps)
		for i := 0; i < n; i++ {
			title := ""
			if i == 0 {
				title = fmt.Sprintf("Mean-square tracking error at the final step T = %d", T)
			}
			name := r.comps[i]
			p, n, err := r.sweepPanel(title, fmt.Sprintf("E[(%s(T) - %s_r(T))^2]", name, name), func(pt *pointInfo) sim.Stat {
				if i < len(pt.res.Control.FinalSqError) {
					return pt.res.Control.FinalSqError[i]
				}
				return sim.Stat{}
			}, nil, "")
			if err != nil {
				return nil, fmt.Errorf("report: %s: %w", FigSweepFinalMSE, err)
			}
			if n != "" {
				note = n
			}
			f.Panels = append(f.Panels, []*plot.Plot{p})
		}
		f.Caption = fmt.Sprintf("Mean-square tracking errors at the final step T = %d against %s, one line per %s, with 95%% confidence bars (paper Fig. 3).",
			T, r.axisParam, seriesWord(r))
	case string(scenario.Consensus):
		p, n, err := r.sweepPanel(fmt.Sprintf("Final mean-square deviation at T = %d", T), "E||x(T) - 1x*||^2",
			func(pt *pointInfo) sim.Stat { return pt.res.Consensus.FinalSqDeviation },
			func(pt *pointInfo) float64 { return pt.res.Consensus.Prop1Bound }, "Proposition 1 bound")
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", FigSweepFinalMSE, err)
		}
		note = n
		f.Panels = [][]*plot.Plot{{p}}
		f.Caption = fmt.Sprintf("Final mean-square deviation E||x(T) - 1x*||^2 against %s with 95%% confidence bars and the Proposition 1 bound (dashed).", r.axisParam)
	}
	f.Caption += note
	return f, nil
}

func seriesWord(r *run) string {
	if len(r.seriesParams) == 1 {
		if r.seriesParams[0] == string(scenario.SweepNoise) {
			return "noise kind"
		}
		return r.seriesParams[0]
	}
	if len(r.seriesParams) == 0 {
		return "series"
	}
	return "combination of the other swept parameters"
}

func (r *run) figSweepEavesdropper() (*figure.Figure, error) {
	var group []*pointInfo
	var title, cap string
	if len(r.seriesLabels) > 1 {
		group = r.pointsAt(r.rep.axis)
		title = "Eavesdropper's estimation error at " + r.axisText(r.rep)
		cap = fmt.Sprintf("The eavesdropper's mean-square error in estimating x(0) against the step t at %s, one line per %s, with 95%% confidence bands. "+
			"Structured noise keeps it flat; i.i.d. noise calibrated for one release lets it shrink with every step (the leak made visible).",
			r.axisText(r.rep), seriesWord(r))
	} else {
		group = r.pointsOfSeries(0)
		title = "Eavesdropper's estimation error per " + r.axisParam
		cap = fmt.Sprintf("The eavesdropper's mean-square error in estimating x(0) against the step t, one line per %s, with 95%% confidence bands.", r.axisParam)
	}
	var ss []*sim.Series
	var styles []seriesStyle
	for k, g := range group {
		s := eveSeries(g)
		if !hasData(s) {
			continue
		}
		name := r.axisText(g)
		if len(r.seriesLabels) > 1 {
			name = r.seriesLabels[g.series]
		}
		ss = append(ss, s)
		styles = append(styles, seriesStyle{name: name, color: figure.Color(k), band: true})
	}
	if len(ss) == 0 {
		return nil, nil
	}
	p := figure.New(title, "step t (estimate from releases 0..t)", r.eveLabel())
	note, err := r.plotEve(p, ss, styles)
	if err != nil {
		return nil, err
	}
	cap += note
	return &figure.Figure{Name: FigSweepEavesdropper, Panels: [][]*plot.Plot{{p}}, Caption: cap}, nil
}

// nonNegAxis finishes a plot of a non-negative quantity against the step: x from 0 and, on a
// linear y axis, y from 0 with some head room.
func nonNegAxis(p *plot.Plot, logY bool) {
	p.X.Min = 0
	if !logY {
		p.Y.Min = 0
		if p.Y.Max > 0 {
			p.Y.Max *= 1.08
		}
	}
}

// faultAxisLabel names the x axis of a fault sweep.
var faultAxisLabel = map[scenario.SweepParam]string{
	scenario.SweepFaultDelay:     "delay per link rule (faults.delay)",
	scenario.SweepFaultJitter:    "jitter per link rule (faults.jitter)",
	scenario.SweepFaultDrop:      "loss probability per link (faults.drop)",
	scenario.SweepFaultDuplicate: "duplication probability (faults.duplicate)",
	scenario.SweepFaultReorder:   "reordering probability (faults.reorder)",
}

// eveFinal is the eavesdropper's squared error of its final estimate (t = T-1).
func eveFinal(pt *pointInfo) sim.Stat {
	s := eveSeries(pt)
	if s == nil || s.Len() == 0 {
		return sim.Stat{}
	}
	return s.At(s.Len() - 1)
}

// figFaults draws what a fault sweep is for, against the swept fault parameter, one line per
// value of the other swept parameters: cloud control - the final mean-square tracking error
// of the first state component and the eavesdropper's final error; consensus - the final
// deviation with the Proposition 1 bound, the network-sum drift and the eavesdropper's final
// error.
func (r *run) figFaults() (*figure.Figure, error) {
	T := r.rep.res.Steps
	var panels [][]*plot.Plot
	note := ""
	add := func(p *plot.Plot, n string, err error) error {
		if err != nil {
			return fmt.Errorf("report: %s: %w", FigFaults, err)
		}
		if n != "" {
			note = n
		}
		panels = append(panels, []*plot.Plot{p})
		return nil
	}
	var cap string
	switch r.kind {
	case string(scenario.CloudControl):
		c := r.comps[0]
		if err := add(r.sweepPanel("Tracking error over the run against the fault", fmt.Sprintf("mean over t of (%s(t) - %s_r(t))^2", c, c),
			func(pt *pointInfo) sim.Stat {
				if fs := pt.res.Control.AvgSqError; len(fs) > 0 {
					return fs[0]
				}
				return sim.Stat{}
			}, nil, "")); err != nil {
			return nil, err
		}
		cap = fmt.Sprintf("Top: the squared tracking error of the %s averaged over t = 0..%d (one number per run, so the bars are across runs); bottom: the eavesdropper's squared error of its final x(0) estimate; both against %s, one line per %s, with 95%% confidence bars.",
			r.compLong[0], T, r.axisParam, seriesWord(r))
	case string(scenario.Consensus):
		if err := add(r.sweepPanel(fmt.Sprintf("Final deviation at T = %d against the fault", T), "E||x(T) - 1x*||^2",
			func(pt *pointInfo) sim.Stat { return pt.res.Consensus.FinalSqDeviation },
			func(pt *pointInfo) float64 { return pt.res.Consensus.Prop1Bound }, "Proposition 1 bound")); err != nil {
			return nil, err
		}
		if err := add(r.sweepPanel("Network-sum drift", "E|sum x(T) - sum x(0)|",
			func(pt *pointInfo) sim.Stat { return pt.res.Consensus.FinalSumAbsDrift }, nil, "")); err != nil {
			return nil, err
		}
		cap = fmt.Sprintf("Top: the final mean-square deviation from the true average (dashed: the Proposition 1 bound, which assumes a lossless network); middle: the drift of the network sum, which eq. (25) preserves only when every message arrives; bottom: the eavesdropper's squared error of its final estimate; all against %s, one line per %s, with 95%% confidence bars.",
			r.axisParam, seriesWord(r))
	default:
		return nil, nil
	}
	if err := add(r.sweepPanel("Eavesdropper's final error", r.eveLabel(), eveFinal, nil, "")); err != nil {
		return nil, err
	}
	return &figure.Figure{Name: FigFaults, Panels: panels, Caption: cap + note}, nil
}
