package figure

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"unsafe"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// The checks of what a panel draws (clipped or duplicated data, indistinguishable legend
// entries, an uninformative log axis) need the panel's plotters and legend entries, which
// gonum keeps unexported: panelPlotters and legendEntries read them by reflection and fail
// loudly (an error, not a silent pass) if gonum's layout changes.

// panelPlotters returns the plotters added to p (plot.Plot.plotters).
func panelPlotters(p *plot.Plot) ([]plot.Plotter, error) {
	f := reflect.ValueOf(p).Elem().FieldByName("plotters")
	if !f.IsValid() || f.Type() != reflect.TypeOf([]plot.Plotter(nil)) {
		return nil, errors.New("cannot read the panel's plotters (gonum plot.Plot changed)")
	}
	return *(*[]plot.Plotter)(unsafe.Pointer(f.UnsafeAddr())), nil
}

// legendEntry is one line of a legend: its text and the thumbnails drawn before it.
type legendEntry struct {
	text   string
	thumbs []plot.Thumbnailer
}

// legendEntries returns the entries of l (plot.Legend.entries).
func legendEntries(l *plot.Legend) ([]legendEntry, error) {
	f := reflect.ValueOf(l).Elem().FieldByName("entries")
	if !f.IsValid() || f.Kind() != reflect.Slice {
		return nil, errors.New("cannot read the legend's entries (gonum plot.Legend changed)")
	}
	var out []legendEntry
	for i := 0; i < f.Len(); i++ {
		e := f.Index(i)
		text, thumbs := e.FieldByName("text"), e.FieldByName("thumbs")
		if !text.IsValid() || text.Kind() != reflect.String || !thumbs.IsValid() ||
			thumbs.Type() != reflect.TypeOf([]plot.Thumbnailer(nil)) {
			return nil, errors.New("cannot read the legend's entries (gonum plot.Legend changed)")
		}
		out = append(out, legendEntry{text.String(), *(*[]plot.Thumbnailer)(unsafe.Pointer(thumbs.UnsafeAddr()))})
	}
	return out, nil
}

// thumbSignature is what a legend entry's thumbnails draw (colours, dashes, widths, shapes) on
// a fixed icon: two entries with the same signature cannot be told apart.
func thumbSignature(thumbs []plot.Thumbnailer) string {
	var rec recorder.Canvas
	c := draw.Canvas{Canvas: &rec, Rectangle: vg.Rectangle{Max: vg.Point{X: vg.Points(22), Y: vg.Points(10)}}}
	for _, t := range thumbs {
		t.Thumbnail(&c)
	}
	var b strings.Builder
	for _, a := range rec.Actions {
		b.WriteString(a.Call())
		b.WriteByte('\n')
	}
	return b.String()
}

// checkLegendStyles reports legend entries of the figure that look the same (same colour,
// dash pattern, marker and band) but name different series.
func (f *Figure) checkLegendStyles() []string {
	var probs []string
	seen := map[string]string{} // signature -> text
	for i, row := range f.Panels {
		for j, p := range row {
			entries, err := legendEntries(&p.Legend)
			if err != nil {
				return []string{err.Error()}
			}
			for _, e := range entries {
				sig := thumbSignature(e.thumbs)
				if other, ok := seen[sig]; ok && other != e.text {
					probs = append(probs, fmt.Sprintf("panel (%d, %d): legend entries %q and %q are drawn alike (same colour and dash or marker)", i, j, other, e.text))
					continue
				}
				seen[sig] = e.text
			}
		}
	}
	return probs
}

// dataKey identifies what a data plotter draws (its type and values); "" for plotters that
// draw no data (the grid).
func dataKey(pl plot.Plotter) string {
	switch d := pl.(type) {
	case *plotter.Line:
		return fmt.Sprintf("line %v", d.XYs)
	case *plotter.Scatter:
		return fmt.Sprintf("scatter %v", d.XYs)
	case *plotter.Polygon:
		return fmt.Sprintf("polygon %v", d.XYs)
	case *plotter.YErrorBars:
		return fmt.Sprintf("errorbars %v %v", d.XYs, d.YErrors)
	}
	return ""
}

// yValues are the y coordinates a data plotter draws (error bars: their ends too).
func yValues(pl plot.Plotter) []float64 {
	var ys []float64
	add := func(xys plotter.XYs) {
		for _, q := range xys {
			ys = append(ys, q.Y)
		}
	}
	switch d := pl.(type) {
	case *plotter.Line:
		add(d.XYs)
	case *plotter.Scatter:
		add(d.XYs)
	case *plotter.Polygon:
		for _, r := range d.XYs {
			add(r)
		}
	case *plotter.YErrorBars:
		for k, q := range d.XYs {
			ys = append(ys, q.Y, q.Y-math.Abs(d.YErrors[k].Low), q.Y+math.Abs(d.YErrors[k].High))
		}
	}
	return ys
}

// checkData reports what a panel draws that a reader cannot read: data outside the axis
// ranges (clipped), data running into an end of an axis that carries no label (it looks cut
// off), the same data drawn twice (one line hides the other), error-bar caps no wider than
// the markers (a short bar vanishes under its marker) and a log y axis left mostly empty
// by a gap in the values (LogUseful).
func checkData(p *plot.Plot) []string {
	pls, err := panelPlotters(p)
	if err != nil {
		return []string{err.Error()}
	}
	var probs []string
	seen := map[string]bool{}
	var ys []float64
	var capW, markerR vg.Length
	for _, pl := range pls {
		key := dataKey(pl)
		if key == "" {
			continue
		}
		if seen[key] {
			probs = append(probs, fmt.Sprintf("the same %s is drawn twice (one hides the other)", strings.Fields(key)[0]))
		}
		seen[key] = true
		if dr, ok := pl.(plot.DataRanger); ok {
			xmin, xmax, ymin, ymax := dr.DataRange()
			probs = append(probs, checkRange("x", &p.X, xmin, xmax)...)
			probs = append(probs, checkRange("y", &p.Y, ymin, ymax)...)
		}
		ys = append(ys, yValues(pl)...)
		switch d := pl.(type) {
		case *plotter.YErrorBars:
			capW = max(capW, d.CapWidth)
		case *plotter.Scatter:
			markerR = max(markerR, d.Radius)
		}
	}
	if capW > 0 && markerR > 0 && capW <= 2*markerR {
		probs = append(probs, fmt.Sprintf("error-bar caps %.1f pt wide, markers %.1f pt: a short bar is hidden by its marker", capW.Points(), (2*markerR).Points()))
	}
	probs = unique(probs)
	if _, log := p.Y.Tick.Marker.(LogTicker); log {
		if lo, hi, gap := largestGap(ys); gap > 0 && !gapOK(gap, p.Y.Max-p.Y.Min) {
			probs = append(probs, fmt.Sprintf("y axis: nothing between %s and %s: %.0f of its %.0f decades are empty (a linear axis shows these values)",
				expLabel(math.Pow(10, lo)), expLabel(math.Pow(10, hi)), gap, p.Y.Max-p.Y.Min))
		}
	}
	return probs
}

// checkRange reports data [lo, hi] outside the axis a, or reaching an end of it that is not
// labelled.
func checkRange(name string, a *plot.Axis, lo, hi float64) []string {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil // no finite data
	}
	if !(a.Max > a.Min) {
		return []string{fmt.Sprintf("%s axis [%g, %g] is empty", name, a.Min, a.Max)}
	}
	tol := 1e-9 * math.Max(a.Max-a.Min, 1e-300)
	var probs []string
	if lo < a.Min-tol || hi > a.Max+tol {
		probs = append(probs, fmt.Sprintf("%s axis [%g, %g]: data over [%g, %g] is clipped", name, a.Min, a.Max, lo, hi))
		return probs
	}
	labelled := func(v float64) bool {
		for _, t := range a.Tick.Marker.Ticks(a.Min, a.Max) {
			if t.Label != "" && math.Abs(t.Value-v) <= tol {
				return true
			}
		}
		return false
	}
	if lo <= a.Min+tol && !labelled(a.Min) {
		probs = append(probs, fmt.Sprintf("%s axis: data runs into its unlabelled low end %g (it looks clipped: Fit the axis)", name, a.Min))
	}
	if hi >= a.Max-tol && !labelled(a.Max) {
		probs = append(probs, fmt.Sprintf("%s axis: data runs into its unlabelled high end %g (it looks clipped: Fit the axis)", name, a.Max))
	}
	return probs
}

// largestGap is the widest interval without a value among the finite values vs: its ends and
// width (0 when there are fewer than two values).
func largestGap(vs []float64) (lo, hi, gap float64) {
	var s []float64
	for _, v := range vs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			s = append(s, v)
		}
	}
	sort.Float64s(s)
	for k := 1; k < len(s); k++ {
		if d := s[k] - s[k-1]; d > gap {
			lo, hi, gap = s[k-1], s[k], d
		}
	}
	return lo, hi, gap
}

// MaxLogGap is the widest empty stretch, in decades, a log axis may have between its values
// when that stretch is also more than half the axis (LogUseful).
const MaxLogGap = 4

// gapOK reports whether an empty stretch of gap decades on a log axis spanning span decades
// leaves the axis informative.
func gapOK(gap, span float64) bool { return gap <= MaxLogGap || gap <= span/2 }

// LogUseful reports whether positive values are worth a log axis: they span at least two
// decades (SpansDecades) and no empty stretch between them is wider than MaxLogGap decades
// and half their span. A value such as a rounding residue of 1e-11 beside values near 10
// fails: on a log axis it would stretch one line over twelve empty decades.
func LogUseful(vals []float64) bool {
	if !SpansDecades(vals) {
		return false
	}
	var lg []float64
	for _, v := range vals {
		if v > 0 && !math.IsInf(v, 0) {
			lg = append(lg, Lg(v))
		}
	}
	lo, hi, _ := PositiveRange(vals)
	_, _, gap := largestGap(lg)
	return gapOK(gap, Lg(hi)-Lg(lo))
}

// unique drops repeated messages, keeping the first of each.
func unique(msgs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range msgs {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}
