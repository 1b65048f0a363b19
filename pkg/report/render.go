package report

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// PNGDPI is the resolution of the PNG figures.
const PNGDPI = 150

// Figure is one figure of the report: a grid of panels (plots), written as Name.png and Name.svg.
type Figure struct {
	Name    string         // file base name
	Caption string         // what the figure shows, for report.md
	Panels  [][]*plot.Plot // rows of panels, all rows of the same length
	Width   vg.Length
	Height  vg.Length
}

// Render draws the figure as "png" or "svg". Drawing problems are returned as errors.
func (f *Figure) Render(format string) (data []byte, err error) {
	if len(f.Panels) == 0 || len(f.Panels[0]) == 0 {
		return nil, fmt.Errorf("report: figure %s has no panels", f.Name)
	}
	defer func() {
		if rec := recover(); rec != nil {
			data, err = nil, fmt.Errorf("report: figure %s: drawing %s failed: %v", f.Name, format, rec)
		}
	}()
	var cw vg.CanvasWriterTo
	switch format {
	case "png":
		cw = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(PNGDPI))}
	case "svg":
		cw = vgsvg.New(f.Width, f.Height)
	default:
		return nil, fmt.Errorf("report: figure %s: unknown format %q (png, svg)", f.Name, format)
	}
	dc := draw.New(cw)
	rows, cols := len(f.Panels), len(f.Panels[0])
	for i, row := range f.Panels {
		if len(row) != cols {
			return nil, fmt.Errorf("report: figure %s: row %d has %d panels, row 0 has %d", f.Name, i, len(row), cols)
		}
	}
	if rows == 1 && cols == 1 {
		f.Panels[0][0].Draw(dc)
	} else {
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 5,
			PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 3}
		canvases := plot.Align(f.Panels, tiles, dc)
		for i := range f.Panels {
			for j, p := range f.Panels[i] {
				if p != nil {
					p.Draw(canvases[i][j])
				}
			}
		}
	}
	var buf bytes.Buffer
	if _, err := cw.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("report: figure %s: %w", f.Name, err)
	}
	return buf.Bytes(), nil
}

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// palette is a colour-blind-friendly qualitative palette (Tableau 10).
var palette = []color.RGBA{
	{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255},
}

func colorOf(i int) color.RGBA { return palette[i%len(palette)] }

func translucent(c color.RGBA, a uint8) color.Color {
	// premultiplied alpha
	return color.RGBA{R: uint8(uint16(c.R) * uint16(a) / 255), G: uint8(uint16(c.G) * uint16(a) / 255),
		B: uint8(uint16(c.B) * uint16(a) / 255), A: a}
}

var dashed = []vg.Length{vg.Points(6), vg.Points(3)}

// newPlot returns a plot with readable sans-serif text, a grid and the legend at the top right.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 13)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 12)
		a.Tick.Label.Font = font.From(sans, 10)
		a.Tick.Marker = plot.TickerFunc(niceTicks)
	}
	p.Legend.TextStyle.Font = font.From(sans, 10)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(22)
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 225}
	g.Horizontal.Color = color.Gray{Y: 225}
	p.Add(g)
	return p
}

// spansDecades reports whether the positive values span at least two decades (log axis).
func spansDecades(vals []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vals {
		if v > 0 && !math.IsInf(v, 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return hi > 0 && hi >= 100*lo
}

// positiveRange returns the smallest and largest positive finite values.
func positiveRange(vals []float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), 0
	for _, v := range vals {
		if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return lo, hi, hi > 0
}

// Log axes are drawn on linear axes holding log10 of the data, with ticks labelled as the
// powers of ten they stand for (gonum's LogScale mis-places the axis label's glyph box, which
// shrinks the data area, and panics on non-positive ranges).

// lg maps a positive value to the log axis coordinate.
func lg(v float64) float64 { return math.Log10(v) }

// setLogY makes the y axis logarithmic over [lo, hi] (positive data values).
func setLogY(p *plot.Plot, lo, hi float64) {
	if hi <= lo {
		lo, hi = lo/2, hi*2
	}
	p.Y.Tick.Marker = plot.TickerFunc(logTicks)
	p.Y.Min, p.Y.Max = lg(lo/1.15), lg(hi*1.15)
}

// setLogX makes the x axis logarithmic over [lo, hi] (positive data values).
func setLogX(p *plot.Plot, lo, hi float64) {
	if hi <= lo {
		lo, hi = lo/2, hi*2
	}
	p.X.Tick.Marker = plot.TickerFunc(logTicks)
	p.X.Min, p.X.Max = lg(lo/1.4), lg(hi*1.4)
}

// logTicks gives the ticks of a log axis whose coordinates are log10 values in [min, max]:
// labels at powers of ten (every k-th decade when there are many), minor ticks at 2..9 times
// them; within about one decade it also labels 2 and 5 times powers of ten.
func logTicks(min, max float64) []plot.Tick {
	if !(max > min) || math.IsInf(min, 0) || math.IsInf(max, 0) {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	lo, hi := int(math.Floor(min)), int(math.Ceil(max))
	decades := hi - lo
	step := 1
	if decades > 7 {
		step = (decades + 6) / 7
	}
	in := func(x float64) bool { return x >= min-1e-9 && x <= max+1e-9 }
	var ticks []plot.Tick
	labelled := 0
	for e := lo; e <= hi; e++ {
		x := float64(e)
		if (e-lo)%step == 0 && in(x) {
			ticks = append(ticks, plot.Tick{Value: x, Label: tickLabel(math.Pow(10, x))})
			labelled++
		} else if in(x) {
			ticks = append(ticks, plot.Tick{Value: x})
		}
		if decades <= 7 {
			for k := 2; k <= 9; k++ {
				if xm := x + math.Log10(float64(k)); in(xm) {
					ticks = append(ticks, plot.Tick{Value: xm})
				}
			}
		}
	}
	// Up to four decades, 2 and 5 times the powers of ten are labelled too (one format, the
	// same as the decades'), so a value such as a bound at 35 sits between labels.
	if labelled < 2 || decades <= 4 {
		for i := range ticks {
			frac := ticks[i].Value - math.Floor(ticks[i].Value+1e-9)
			if math.Abs(frac-math.Log10(2)) < 1e-9 || math.Abs(frac-math.Log10(5)) < 1e-9 {
				ticks[i].Label = tickLabel(math.Pow(10, ticks[i].Value))
			}
		}
	}
	// Nothing below the lowest label (or above the highest) by more than a factor 1.5: label
	// the outermost minor tick there, so no curve runs under the first label.
	if decades <= 4 {
		labelEnd(ticks, min, max)
	}
	// One format per axis: when any label needs an exponent, every label gets one (1e-2, not
	// 0.01 beside 1e-4).
	exp := false
	for _, t := range ticks {
		exp = exp || strings.Contains(t.Label, "e")
	}
	if exp {
		for i := range ticks {
			if ticks[i].Label != "" {
				ticks[i].Label = expLabel(math.Pow(10, ticks[i].Value))
			}
		}
	}
	return ticks
}

// expLabel prints v as m e k ("1e-2", "5e3"); 1 stays "1".
func expLabel(v float64) string {
	if math.Abs(v-1) < 1e-9 {
		return "1"
	}
	s := strconv.FormatFloat(v, 'e', -1, 64)
	mant, e, _ := strings.Cut(s, "e")
	if m, err := strconv.ParseFloat(mant, 64); err == nil {
		mant = strconv.FormatFloat(math.Round(m*1e6)/1e6, 'g', -1, 64)
	}
	sign := ""
	if strings.HasPrefix(e, "-") {
		sign = "-"
	}
	e = strings.TrimLeft(strings.TrimLeft(e, "+-"), "0")
	if e == "" {
		return mant
	}
	return mant + "e" + sign + e
}

// labelEnd labels the lowest and highest minor ticks of a log axis when the labels leave more
// than a factor 1.5 of the axis unlabelled at either end.
func labelEnd(ticks []plot.Tick, min, max float64) {
	lowL, highL := math.Inf(1), math.Inf(-1)
	lowT, highT := -1, -1
	for i, t := range ticks {
		if t.Label != "" {
			lowL, highL = math.Min(lowL, t.Value), math.Max(highL, t.Value)
		}
		if t.Value >= min-1e-9 && (lowT < 0 || t.Value < ticks[lowT].Value) {
			lowT = i
		}
		if t.Value <= max+1e-9 && (highT < 0 || t.Value > ticks[highT].Value) {
			highT = i
		}
	}
	gap := math.Log10(1.5)
	if lowT >= 0 && lowL-min > gap && lowL-ticks[lowT].Value > 1e-9 {
		ticks[lowT].Label = tickLabel(math.Pow(10, ticks[lowT].Value))
	}
	if highT >= 0 && max-highL > gap && ticks[highT].Value-highL > 1e-9 {
		ticks[highT].Label = tickLabel(math.Pow(10, ticks[highT].Value))
	}
}

// niceTicks labels a linear axis every 1, 2, 2.5 or 5 times a power of ten (5 to 10 labels),
// with minor ticks in between, printing each label with only the digits the step needs.
func niceTicks(min, max float64) []plot.Tick {
	if !(max > min) || math.IsInf(min, 0) || math.IsInf(max, 0) {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	raw := (max - min) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step, minorDiv := 10*mag, 5
	for _, m := range []struct {
		f   float64
		div int
	}{{1, 5}, {2, 4}, {2.5, 5}, {5, 5}} {
		if m.f*mag >= raw {
			step, minorDiv = m.f*mag, m.div
			break
		}
	}
	dec := 0
	if e := -int(math.Floor(math.Log10(step) + 1e-9)); e > 0 {
		dec = e
	}
	if math.Abs(step/mag-2.5) < 1e-9 && step < 1 {
		dec++
	}
	big := math.Max(math.Abs(min), math.Abs(max))
	var ticks []plot.Tick
	minor := step / float64(minorDiv)
	k0 := int(math.Ceil(min/minor - 1e-9))
	for k := k0; ; k++ {
		v := float64(k) * minor
		if v > max+1e-9*step {
			break
		}
		if k%minorDiv == 0 {
			v = float64(k/minorDiv) * step
			var label string
			if big >= 1e5 || big < 1e-3 {
				label = tickLabel(v)
			} else {
				label = strconv.FormatFloat(v, 'f', dec, 64)
				if strings.Trim(label, "-0.") == "" {
					label = "0"
				}
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		} else {
			ticks = append(ticks, plot.Tick{Value: v})
		}
		if len(ticks) > 200 {
			break
		}
	}
	return ticks
}

// tickLabel prints a tick value compactly: 0.01, 100, 1e-5, 2e6.
func tickLabel(v float64) string {
	v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	a := math.Abs(v)
	if a != 0 && (a < 1e-3 || a >= 1e5) {
		s := strconv.FormatFloat(v, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		sign := ""
		if strings.HasPrefix(exp, "-") {
			sign = "-"
		}
		exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
		if mant == "1" {
			return "1e" + sign + exp
		}
		return mant + "e" + sign + exp
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

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
func addSeries(p *plot.Plot, s *sim.Series, x func(t int) float64, st seriesStyle, logY bool, floor float64) (bool, error) {
	if s == nil || s.Len() == 0 {
		return false, nil
	}
	var segs []plotter.XYs
	var bands []plotter.XYs
	var cur plotter.XYs
	var lo, hi []float64
	flush := func() {
		if len(cur) > 0 {
			segs = append(segs, cur)
			if st.band && len(cur) > 1 {
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
		if t >= len(s.Lo) || s.N[t] < 2 {
			l, h = m, m
		}
		if logY {
			m = math.Max(m, floor) // below the panel's floor: drawn on its lower edge
			l = math.Max(l, floor)
			h = math.Max(h, l)
			m, l, h = lg(m), lg(l), lg(h)
		}
		cur = append(cur, plotter.XY{X: x(t), Y: m})
		lo, hi = append(lo, l), append(hi, h)
	}
	flush()
	if len(segs) == 0 {
		return false, nil
	}
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
			return false, fmt.Errorf("report: band: %w", err)
		}
		poly.Color = translucent(st.color, 60)
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	var first *plotter.Line
	for _, seg := range segs {
		l, err := plotter.NewLine(seg)
		if err != nil {
			return false, fmt.Errorf("report: line: %w", err)
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
	return true, nil
}

// hline draws a horizontal line at y over [x0, x1] (y > 0 on a log axis).
func hline(p *plot.Plot, x0, x1, y float64, st seriesStyle, logY bool) error {
	if logY {
		y = lg(y)
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
func seriesValues(s *sim.Series, withHi bool) []float64 {
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
func (r *run) faultWindows() []faultWindow {
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
func (r *run) shadeFaults(p *plot.Plot) string {
	ws := r.faultWindows()
	if len(ws) == 0 {
		return ""
	}
	var what []string
	for _, w := range ws {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: w.lo, Y: p.Y.Min}, {X: w.hi, Y: p.Y.Min}, {X: w.hi, Y: p.Y.Max}, {X: w.lo, Y: p.Y.Max}})
		if err != nil {
			continue
		}
		poly.Color = color.NRGBA{R: 230, G: 120, B: 20, A: 50}
		poly.LineStyle.Width = 0
		p.Add(poly)
		what = append(what, w.what)
	}
	return " Shaded: " + strings.Join(what, "; ") + "."
}
