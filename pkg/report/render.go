package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// seriesStyle is how one mean line is drawn.
type seriesStyle struct {
	name   string
	color  color.RGBA
	dashes []vg.Length
	band   bool // draw the 95% CI band
	width  vg.Length
}

// addSeries draws the mean of s against x(t) with its 95% CI band (a shaded polygon), skipping
// steps without data (N = 0) and, on a log axis, non-positive means; on a log axis the band is
// clipped below at floor. Returns false when nothing could be drawn.
func addSeries(p *plot.Plot, s *metrics.Series, x func(t int) float64, st seriesStyle, logY bool, floor float64) (bool, error) {
	if s == nil || s.Len() == 0 {
		return false, nil
	}
	segs, bands := seriesSegments(s, x, st.band, logY, floor)
	if len(segs) == 0 {
		return false, nil
	}
	if err := drawSegments(p, segs, bands, st); err != nil {
		return false, err
	}
	return true, nil
}

// seriesSegments returns the runs of consecutive drawable steps of s's mean as line segments
// and, with band, the 95% CI band of each segment of two points or more as a closed ring (upper
// edge forward, lower edge back). On a log axis the values are in log10, clipped below at floor.
func seriesSegments(s *metrics.Series, x func(t int) float64, band, logY bool, floor float64) (segs, bands []plotter.XYs) {
	var cur plotter.XYs
	var lo, hi []float64
	flush := func() {
		if len(cur) > 0 {
			segs = append(segs, cur)
			if band && len(cur) > 1 {
				ring := make(plotter.XYs, 0, 2*len(cur))
				for k := range cur {
					ring = append(ring, plotter.XY{X: cur[k].X, Y: hi[k]})
				}
				for k := len(cur) - 1; k >= 0; k-- {
					ring = append(ring, plotter.XY{X: cur[k].X, Y: lo[k]})
				}
				bands = append(bands, ring)
			}
		}
		cur, lo, hi = nil, nil, nil
	}
	for t := 0; t < s.Len(); t++ {
		m := s.Mean[t]
		ok := t < len(s.N) && s.N[t] > 0 && !math.IsNaN(m) && !math.IsInf(m, 0)
		if ok && logY && !(m > 0) {
			ok = false
		}
		if !ok {
			flush()
			continue
		}
		l, h := s.Lo[t], s.Hi[t]
		if t >= len(s.Lo) || s.N[t] < 2 || math.IsInf(l, 0) || math.IsInf(h, 0) || math.IsNaN(l) || math.IsNaN(h) {
			l, h = m, m // no band where there is none, or where it overflowed float64
		}
		if logY {
			m = math.Max(m, floor) // below the panel's floor: drawn on its lower edge
			l = math.Max(l, floor)
			h = math.Max(h, l)
			m, l, h = figure.Lg(m), figure.Lg(l), figure.Lg(h)
		}
		cur = append(cur, plotter.XY{X: x(s.StepOf(t)), Y: m}) // element t is step StepOf(t) (a thinned series)
		lo, hi = append(lo, l), append(hi, h)
	}
	flush()
	return segs, bands
}

// drawSegments adds the bands (one shaded polygon) and the line segments to p in the style st,
// with one legend entry when st is named.
func drawSegments(p *plot.Plot, segs, bands []plotter.XYs, st seriesStyle) error {
	width := st.width
	if width == 0 {
		width = vg.Points(1.5)
	}
	var poly *plotter.Polygon
	if len(bands) > 0 {
		rings := make([]plotter.XYer, len(bands))
		for i := range bands {
			rings[i] = bands[i]
		}
		var err error
		if poly, err = plotter.NewPolygon(rings...); err != nil {
			return fmt.Errorf("report: band: %w", err)
		}
		poly.Color = figure.Translucent(st.color, 60)
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	var first *plotter.Line
	for _, seg := range segs {
		l, err := plotter.NewLine(seg)
		if err != nil {
			return fmt.Errorf("report: line: %w", err)
		}
		l.Color, l.Width, l.Dashes = st.color, width, st.dashes
		p.Add(l)
		if first == nil {
			first = l
		}
	}
	if st.name != "" {
		if poly != nil {
			p.Legend.Add(st.name, poly, first)
		} else {
			p.Legend.Add(st.name, first)
		}
	}
	return nil
}

// hline draws a horizontal line at y over [x0, x1] (y > 0 on a log axis).
func hline(p *plot.Plot, x0, x1, y float64, st seriesStyle, logY bool) error {
	if logY {
		y = figure.Lg(y)
	}
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return fmt.Errorf("report: line: %w", err)
	}
	l.Color, l.Dashes = st.color, st.dashes
	l.Width = st.width
	if l.Width == 0 {
		l.Width = vg.Points(1.5)
	}
	p.Add(l)
	if st.name != "" {
		p.Legend.Add(st.name, l)
	}
	return nil
}

// seriesValues collects the means (and, with bands, the upper limits) of s where N > 0.
func seriesValues(s *metrics.Series, withHi bool) []float64 {
	var v []float64
	if s == nil {
		return nil
	}
	for t := 0; t < s.Len(); t++ {
		if s.N[t] > 0 {
			v = append(v, s.Mean[t])
			if withHi {
				v = append(v, s.Hi[t])
			}
		}
	}
	return v
}

// stepAxis is x(t) = t.
func stepAxis(t int) float64 { return float64(t) }

var errNoData = errors.New("no data")

// faultWindow is a range of steps a scenario fault covers, drawn shaded on step-axis figures.
type faultWindow struct {
	lo, hi float64 // steps [lo, hi)
	what   string
}

// faultWindows lists the crash down-times, partitions and server restarts of the
// representative point's scenario.
func (r *analysis) faultWindows() []faultWindow {
	if r.rep == nil || r.rep.sc == nil {
		return nil
	}
	f := &r.rep.sc.Faults
	var out []faultWindow
	for _, c := range f.Crashes {
		ep := "episode " + c.EpisodeName()
		if c.Episode == scenario.EveryEpisode {
			ep = "every episode"
		}
		out = append(out, faultWindow{float64(c.Step), float64(c.Restart), fmt.Sprintf("%s down at steps %d..%d (%s)", c.Proc, c.Step, c.Restart-1, ep)})
	}
	for _, p := range f.Partitions {
		out = append(out, faultWindow{float64(p.Window.From), float64(p.Window.To), fmt.Sprintf("partition %s at steps %d..%d", p.Name, p.Window.From, p.Window.To-1)})
	}
	for _, s := range f.ServerRestarts {
		out = append(out, faultWindow{float64(s.Step), float64(s.Step) + 1, fmt.Sprintf("NATS server stopped for %v at step %d of episode %d", s.Down, s.Step, s.Episode)})
	}
	return out
}

// shadeFaults draws the fault windows on p (call it after the data: it spans the y range the
// data set) and returns the caption's sentence about them ("" when there are none).
func (r *analysis) shadeFaults(p *plot.Plot) string {
	ws := r.faultWindows()
	if len(ws) == 0 {
		return ""
	}
	var what []string
	var first *plotter.Polygon
	for _, w := range ws {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: w.lo, Y: p.Y.Min}, {X: w.hi, Y: p.Y.Min}, {X: w.hi, Y: p.Y.Max}, {X: w.lo, Y: p.Y.Max}})
		if err != nil {
			continue
		}
		poly.Color = color.NRGBA{R: 230, G: 120, B: 20, A: 50}
		poly.LineStyle.Width = 0
		p.Add(poly)
		what = append(what, w.what)
		if first == nil {
			first = poly
		}
	}
	// the legend names the shading too (all windows share one colour: one entry)
	if len(what) == 1 {
		p.Legend.Add("shaded: "+what[0], first)
	} else if len(what) > 1 {
		p.Legend.Add("shaded: the fault windows (see the caption)", first)
	}
	return " Shaded: " + strings.Join(what, "; ") + "."
}
