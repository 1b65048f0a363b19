package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"reflect"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Figure names (files NAME.png and NAME.svg): declared with the run's record (pkg/record).
const (
	FigTrackingError     = record.FigTrackingError
	FigTrackingMSE       = record.FigTrackingMSE
	FigEavesdropper      = record.FigEavesdropper
	FigSweepFinalMSE     = record.FigSweepFinalMSE
	FigSweepEavesdropper = record.FigSweepEavesdropper
	FigConsensusDev      = record.FigConsensusDev
	FigConsensusMSE      = record.FigConsensusMSE
	FigFaults            = record.FigFaults
)

// figures builds every figure of the run (no I/O).
func (r *analysis) figures() ([]*figure.Figure, error) {
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
func (r *analysis) repSuffix() string {
	if !r.sweep {
		return ""
	}
	return " (" + r.rep.label + ")"
}

func (r *analysis) figTrackingError() (*figure.Figure, error) {
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
		if err := hline(p, 0, float64(s.LastStep()), 0, seriesStyle{color: figure.Grey, width: vg.Points(0.6)}, false); err != nil {
			return nil, err
		}
		ok, err := addSeries(p, s, stepAxis, seriesStyle{color: figure.Color(i), band: true}, false, 0)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("report: %s: %s: %w", FigTrackingError, name, errNoData)
		}
		figure.Fit(p) // the band ends on labels, not at the panel's edge
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

func (r *analysis) figTrackingMSE() (*figure.Figure, error) {
	c := r.rep.res.Control
	f := &figure.Figure{Name: FigTrackingMSE}
	clipped, shaded := false, ""
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
			// The axis spans the values kept; the others are drawn on its lower edge.
			means, all := seriesValues(s, false), seriesValues(s, true) // all holds the means too
			_, hi, _ := figure.PositiveRange(all)
			lo := hi * math.Pow(10, -trackingDecades)
			keep := func(vs []float64) []float64 {
				var out []float64
				for _, v := range vs {
					if v >= lo {
						out = append(out, v)
					} else if v > 0 {
						clipped = true
					}
				}
				return out
			}
			var cut bool
			floor, cut = logY(p, keep(means), keep(all))
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
		shaded = r.shadeFaults(p)
		f.Panels = append(f.Panels, []*plot.Plot{p})
	}
	f.Caption = "Mean-square tracking errors against the step t with 95% confidence bands (a band narrower than its line, as for an error the noise hardly affects, is hidden by it)" + r.repSuffix() + "." + shaded
	if clipped {
		f.Caption += fmt.Sprintf(" A log panel shows the values within %d decades of its largest one; smaller values (such as the exact start, 0 up to rounding) are drawn on its lower edge.", trackingDecades)
	}
	return f, nil
}

// eveSeries returns the eavesdropper series of a point.
func eveSeries(p *pointInfo) *metrics.Series {
	if p.res.Control != nil {
		return &p.res.Control.EveSqError
	}
	if p.res.Consensus != nil {
		return &p.res.Consensus.EveSqError
	}
	return nil
}

func hasData(s *metrics.Series) bool {
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
func (r *analysis) eveLabel() string {
	return "E||x0hat(t) - x(0)||^2"
}

func (r *analysis) figEavesdropper() (*figure.Figure, error) {
	s := eveSeries(r.rep)
	if !hasData(s) {
		return nil, nil
	}
	p := figure.New(fmt.Sprintf("Eavesdropper's error, %s noise: mean and 95%% CI band%s", r.rep.res.Noise, r.repSuffix()),
		"step t (estimate from releases 0..t)", r.eveLabel())
	st := seriesStyle{color: figure.Color(0), band: true}
	note, err := r.plotEve(p, []*metrics.Series{s}, []seriesStyle{st})
	if err != nil {
		return nil, err
	}
	figure.Fit(p)
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
func (r *analysis) plotEve(p *plot.Plot, ss []*metrics.Series, styles []seriesStyle) (string, error) {
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
func deviationAgent(c *metrics.ConsensusMetrics, k int) int {
	if k < len(c.DeviationAgents) {
		return c.DeviationAgents[k]
	}
	return k
}

func (r *analysis) figConsensusDeviation() (*figure.Figure, error) {
	c := r.rep.res.Consensus
	p := figure.New(fmt.Sprintf("Deviation from the average, mean over %d runs%s", r.rep.res.Runs, r.repSuffix()),
		"step t", "E[x_i(t) - x*]")
	n := len(c.Deviation)
	if n == 0 {
		return nil, fmt.Errorf("report: %s: no agents: %w", FigConsensusDev, errNoData)
	}
	if err := hline(p, 0, float64(c.Deviation[0].LastStep()), 0, seriesStyle{color: figure.Grey, width: vg.Points(0.6)}, false); err != nil {
		return nil, err
	}
	legend := n <= 12
	drawn := false
	for i := range c.Deviation {
		st := seriesStyle{color: figure.Color(i), dashes: figure.SeriesDashes(i, n), band: n <= 4, width: vg.Points(1.3)}
		if legend {
			// agents are numbered from 0, as in the scenario's x0 and the processes (agent.0)
			st.name = fmt.Sprintf("agent %d", deviationAgent(c, i))
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
	figure.Fit(p)
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
func (r *analysis) mseGroup() []*pointInfo {
	if !r.sweep {
		return []*pointInfo{r.rep}
	}
	return r.pointsOfSeries(r.rep.series)
}

func (r *analysis) figConsensusMSE() (*figure.Figure, error) {
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
	oneBound := sameBounds(group)
	for k, g := range group {
		c := g.res.Consensus
		name := "E||x(t) - 1x*||^2"
		bst := seriesStyle{name: "Proposition 1 bound", color: figure.Color(k), dashes: figure.Dashed}
		if len(group) > 1 {
			name = r.axisText(g)
			bst.name = "bound, " + r.axisText(g)
		}
		_, err := addSeries(p, &c.SqDeviation, stepAxis, seriesStyle{name: name, color: figure.Color(k), dashes: figure.SeriesDashes(k, colourFirst), band: true}, true, floor)
		if err != nil {
			return nil, err
		}
		if c.Prop1Bound > 0 && !oneBound {
			if err := hline(p, 0, float64(c.SqDeviation.LastStep()), c.Prop1Bound, bst, true); err != nil {
				return nil, err
			}
		}
	}
	// equal bounds: one grey line after the series, not several drawn over each other
	if c := group[0].res.Consensus; oneBound && c.Prop1Bound > 0 {
		bst := seriesStyle{name: "Proposition 1 bound", color: figure.Grey, dashes: figure.Dashed}
		if err := hline(p, 0, float64(c.SqDeviation.LastStep()), c.Prop1Bound, bst, true); err != nil {
			return nil, err
		}
	}
	figure.Fit(p)
	cap := "Mean-square deviation E||x(t) - 1x*||^2 against the step t with its 95% confidence band (log scale), and the Proposition 1 bound "
	if oneBound {
		cap += "(dashed grey)"
	} else {
		cap += "(dashed, same colour)"
	}
	if len(group) > 1 {
		cap += ", one pair per " + r.axisParam + " (paper Figs. 6, 7)."
	} else {
		cap += " (paper Figs. 6, 7)."
	}
	if clipped {
		cap += clipNote
	}
	cap += r.shadeFaults(p)
	return &figure.Figure{Name: FigConsensusMSE, Panels: [][]*plot.Plot{{p}}, Caption: cap}, nil
}

// sameBounds reports whether every point of group has the same Proposition 1 bound (one
// line then stands for all).
func sameBounds(group []*pointInfo) bool {
	for _, g := range group[1:] {
		if g.res.Consensus.Prop1Bound != group[0].res.Consensus.Prop1Bound {
			return false
		}
	}
	return true
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
func (r *analysis) sweepX(a int) float64 {
	if r.axisNumeric {
		return r.axisValues[a]
	}
	return float64(a)
}

// sweepPanel draws stat(point) against the swept parameter, one line per series, with 95% CI
// error bars; bound(point) > 0 adds a dashed line per series (one grey line when the bound is
// the same for every series). Series with identical values are drawn once, named together. It
// returns the caption note of a cut-off log axis ("" if none).
func (r *analysis) sweepPanel(title, ylabel string, stat func(*pointInfo) metrics.Stat, bound func(*pointInfo) float64, boundName string) (*plot.Plot, string, error) {
	p := figure.New(title, r.sweepXLabel(), ylabel)
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
	// log only where it shows something: a drift of 1e-11 (rounding) beside drifts near 10
	// would stretch the lines over empty decades
	ax := sweepAxes{isLog: figure.LogUseful(means)}
	clipped := false
	if ax.isLog {
		ax.floor, clipped = logY(p, means, all)
	}
	if r.axisLog {
		lo, hi, _ := figure.PositiveRange(r.axisValues)
		figure.SetLogX(p, lo, hi)
	}
	var lines []sweepLine
	for s := range r.seriesLabels {
		if l, ok := r.sweepSeriesLine(s, stat, bound, ax); ok {
			lines = append(lines, l)
		}
	}
	if err := r.drawSweepLines(p, mergeSweepLines(lines), boundName, r.sameSweepBounds(bound)); err != nil {
		return nil, "", err
	}
	if !r.axisNumeric {
		p.NominalX(r.axisLabels...)
		p.X.Min, p.X.Max = -0.5, float64(len(r.axisLabels))-0.5
	}
	if !ax.isLog && p.Y.Max > p.Y.Min {
		p.Y.Min = math.Min(p.Y.Min, 0) // errors are non-negative: from 0
	}
	figure.Fit(p) // up to the labels around the highest bar
	if clipped {
		return p, clipNote, nil
	}
	return p, "", nil
}

// sweepXLabel is the x label of a sweep panel: the swept parameter, in words where dpsim has
// them.
func (r *analysis) sweepXLabel() string {
	if r.axisParam == string(scenario.SweepEpsilon) {
		return "privacy budget epsilon"
	}
	if t, ok := faultAxisLabel[scenario.SweepParam(r.axisParam)]; ok {
		return strings.Replace(t, " (", r.delayUnit()+" (", 1) // "delay per link rule in ms (faults.delay)"
	}
	return r.axisParam
}

// sweepAxes is how a sweep panel's y axis maps values: log10 above floor, or linear.
type sweepAxes struct {
	isLog bool
	floor float64
}

// y maps a value to the axis (below the floor of a log axis: on its lower edge).
func (a sweepAxes) y(v float64) float64 {
	if !a.isLog {
		return v
	}
	return figure.Lg(math.Max(v, a.floor))
}

// sweepLine is one series of a sweep panel: its points with error bars, its bound (may be
// empty), its index (colour, dash, marker) and the labels of the series it stands for.
type sweepLine struct {
	e      errPoints
	bound  plotter.XYs
	series int
	names  []string
}

// sweepSeriesLine computes series s of a sweep panel; false when it has no point to draw.
func (r *analysis) sweepSeriesLine(s int, stat func(*pointInfo) metrics.Stat, bound func(*pointInfo) float64, ax sweepAxes) (sweepLine, bool) {
	l := sweepLine{series: s, names: []string{r.seriesLabels[s]}}
	for _, pt := range r.pointsOfSeries(s) {
		st := stat(pt)
		if st.N == 0 || (ax.isLog && !(st.Mean > 0)) {
			continue
		}
		x := r.sweepX(pt.axis)
		if r.axisLog {
			x = figure.Lg(x)
		}
		lo, hi := st.Lo, st.Hi
		if st.N < 2 {
			lo, hi = st.Mean, st.Mean
		}
		m, lo := ax.y(st.Mean), ax.y(lo)
		hi = math.Max(ax.y(hi), lo)
		l.e.xy = append(l.e.xy, plotter.XY{X: x, Y: m})
		l.e.lo = append(l.e.lo, math.Max(0, m-lo))
		l.e.hi = append(l.e.hi, math.Max(0, hi-m))
		if bound != nil && bound(pt) > 0 {
			l.bound = append(l.bound, plotter.XY{X: x, Y: ax.y(bound(pt))})
		}
	}
	return l, len(l.e.xy) > 0
}

// mergeSweepLines folds each line identical to an earlier one (points, bars and bound) into
// it: drawn over each other, only the last would show.
func mergeSweepLines(lines []sweepLine) []sweepLine {
	var out []sweepLine
next:
	for _, l := range lines {
		for k := range out {
			if reflect.DeepEqual(out[k].e, l.e) && reflect.DeepEqual(out[k].bound, l.bound) {
				out[k].names = append(out[k].names, l.names...)
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// drawSweepLines draws the lines of a sweep panel and their bounds (one grey line, after the
// series, when oneBound).
func (r *analysis) drawSweepLines(p *plot.Plot, lines []sweepLine, boundName string, oneBound bool) error {
	var shared plotter.XYs
	for _, l := range lines {
		col := figure.Color(l.series)
		name := joinNames(l.names)
		bname := boundName
		if name == "" {
			name = "mean, 95% CI"
		} else {
			bname += ", " + name
		}
		if err := addSweepSeries(p, l.e, col, l.series, name); err != nil {
			return err
		}
		switch {
		case len(l.bound) == 0:
		case oneBound:
			shared = l.bound
		default:
			if err := addBoundLine(p, l.bound, col, bname); err != nil {
				return err
			}
		}
	}
	if len(shared) > 0 {
		return addBoundLine(p, shared, figure.Grey, boundName)
	}
	return nil
}

// joinNames names series drawn as one line: "a", "a, b and c (identical)", or for names of
// one parameter "p = 0, 10 and 20 (identical)".
func joinNames(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	prefix, _, ok := strings.Cut(names[0], " = ")
	vals := make([]string, len(names))
	for i, n := range names {
		p, v, found := strings.Cut(n, " = ")
		ok = ok && found && p == prefix
		vals[i] = v
	}
	head := ""
	if !ok {
		vals = names
	} else {
		head = prefix + " = "
	}
	return head + strings.Join(vals[:len(vals)-1], ", ") + " and " + vals[len(vals)-1] + " (identical)"
}

// addSweepSeries draws the s-th series of a sweep panel: its means joined by a line (dashed
// after the palette's colours run out) with markers, and 95% CI bars whose caps are wider than
// the markers, so that a bar shorter than a marker still shows.
func addSweepSeries(p *plot.Plot, e errPoints, col color.RGBA, s int, name string) error {
	line, sc, err := plotter.NewLinePoints(e.xy)
	if err != nil {
		return fmt.Errorf("report: sweep line: %w", err)
	}
	line.Color, line.Width, line.Dashes = col, vg.Points(1.5), figure.SeriesDashes(s, colourFirst)
	sc.Color, sc.Shape, sc.Radius = col, figure.Marker(s), vg.Points(3)
	eb, err := plotter.NewYErrorBars(e)
	if err != nil {
		return fmt.Errorf("report: sweep error bars: %w", err)
	}
	eb.Color, eb.Width, eb.CapWidth = col, vg.Points(1.2), vg.Points(10)
	p.Add(line, sc, eb)
	p.Legend.Add(name, line, sc)
	return nil
}

// addBoundLine draws a bound through xy, dashed, named name in the legend.
func addBoundLine(p *plot.Plot, xy plotter.XYs, col color.RGBA, name string) error {
	bl, err := plotter.NewLine(xy)
	if err != nil {
		return fmt.Errorf("report: sweep bound: %w", err)
	}
	bl.Color, bl.Width, bl.Dashes = col, vg.Points(1.2), figure.Dashed
	p.Add(bl)
	p.Legend.Add(name, bl)
	return nil
}

// sameSweepBounds reports whether bound (nil: no bound) gives every series the same values
// at the same swept value, so that one line stands for all instead of identical lines drawn
// over each other (the Proposition 1 bound does not depend on how lost messages are handled).
func (r *analysis) sameSweepBounds(bound func(*pointInfo) float64) bool {
	if bound == nil || len(r.seriesLabels) < 2 {
		return false
	}
	at := map[int]float64{}
	for _, pt := range r.points {
		b := bound(pt)
		if v, ok := at[pt.axis]; ok && v != b {
			return false
		}
		at[pt.axis] = b
	}
	return true
}

func (r *analysis) figSweepFinal() (*figure.Figure, error) {
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
			p, n, err := r.sweepPanel(title, fmt.Sprintf("E[(%s(T) - %s_r(T))^2]", name, name), func(pt *pointInfo) metrics.Stat {
				if i < len(pt.res.Control.FinalSqError) {
					return pt.res.Control.FinalSqError[i]
				}
				return metrics.Stat{}
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
			func(pt *pointInfo) metrics.Stat { return pt.res.Consensus.FinalSqDeviation },
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

func seriesWord(r *analysis) string {
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

// colourFirst, as the number of series given to figure.SeriesDashes, keeps the first ten
// series' lines solid: where dashes mean a bound (consensus-mse) or markers tell the series
// apart (sweep panels).
const colourFirst = 1 << 20

// maxBands is the most confidence bands one panel draws.
const maxBands = 4

func (r *analysis) figSweepEavesdropper() (*figure.Figure, error) {
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
	var ss []*metrics.Series
	var styles []seriesStyle
	var names [][]string
next:
	for k, g := range group {
		s := eveSeries(g)
		if !hasData(s) {
			continue
		}
		name := r.axisText(g)
		if len(r.seriesLabels) > 1 {
			name = r.seriesLabels[g.series]
		}
		// a series identical to an earlier one is named with it, not drawn over it
		for i := range ss {
			if reflect.DeepEqual(*ss[i], *s) {
				names[i] = append(names[i], name)
				continue next
			}
		}
		ss = append(ss, s)
		names = append(names, []string{name})
		styles = append(styles, seriesStyle{color: figure.Color(k), dashes: figure.SeriesDashes(k, len(group))})
	}
	if len(ss) == 0 {
		return nil, nil
	}
	for i := range styles {
		styles[i].name = joinNames(names[i])
	}
	// bands of more than a few series hide each other and the lines
	if len(ss) <= maxBands {
		for k := range styles {
			styles[k].band = true
		}
	} else {
		cap = strings.Replace(cap, ", with 95% confidence bands", "", 1) +
			fmt.Sprintf(" The 95%% confidence bands are left out for readability (%d series).", len(ss))
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
// linear y axis, y from 0, both linear axes up to the labels around the data (figure.Fit).
func nonNegAxis(p *plot.Plot, logY bool) {
	p.X.Min = 0
	if !logY {
		p.Y.Min = 0
	}
	figure.Fit(p) // up to the next labels: no line or band runs into the panel's edge
}

// delayUnit is " in UNIT" for a sweep of the links' delay or jitter when every link of the
// representative point counts it in one unit (steps or ms), else "".
func (r *analysis) delayUnit() string {
	p := scenario.SweepParam(r.axisParam)
	if (p != scenario.SweepFaultDelay && p != scenario.SweepFaultJitter) || r.rep == nil || r.rep.sc == nil {
		return ""
	}
	unit := scenario.DelayUnit("")
	for _, l := range r.rep.sc.Faults.Links {
		u := l.Unit
		if u == "" {
			u = scenario.UnitSteps
		}
		if unit != "" && u != unit {
			return ""
		}
		unit = u
	}
	if unit == "" {
		return ""
	}
	return " in " + string(unit)
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
func eveFinal(pt *pointInfo) metrics.Stat {
	s := eveSeries(pt)
	if s == nil || s.Len() == 0 {
		return metrics.Stat{}
	}
	return s.At(s.Len() - 1)
}

// figFaults draws what a fault sweep is for, against the swept fault parameter, one line per
// value of the other swept parameters: cloud control - the final mean-square tracking error
// of the first state component and the eavesdropper's final error; consensus - the final
// deviation with the Proposition 1 bound, the network-sum drift and the eavesdropper's final
// error.
func (r *analysis) figFaults() (*figure.Figure, error) {
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
			func(pt *pointInfo) metrics.Stat {
				if fs := pt.res.Control.AvgSqError; len(fs) > 0 {
					return fs[0]
				}
				return metrics.Stat{}
			}, nil, "")); err != nil {
			return nil, err
		}
		cap = fmt.Sprintf("Top: the squared tracking error of the %s averaged over t = 0..%d (one number per run, so the bars are across runs); bottom: the eavesdropper's squared error of its final x(0) estimate; both against %s, one line per %s, with 95%% confidence bars.",
			r.compLong[0], T, r.axisParam, seriesWord(r))
	case string(scenario.Consensus):
		if err := add(r.sweepPanel(fmt.Sprintf("Final deviation at T = %d against the fault", T), "E||x(T) - 1x*||^2",
			func(pt *pointInfo) metrics.Stat { return pt.res.Consensus.FinalSqDeviation },
			func(pt *pointInfo) float64 { return pt.res.Consensus.Prop1Bound }, "Proposition 1 bound")); err != nil {
			return nil, err
		}
		if err := add(r.sweepPanel("Network-sum drift", "E|sum x(T) - sum x(0)|",
			func(pt *pointInfo) metrics.Stat { return pt.res.Consensus.FinalSumAbsDrift }, nil, "")); err != nil {
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
