package figure

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Check reports every way the figure breaks the house style, as one error naming each
// problem (nil when there is none):
//
//   - a panel's texts not in Sans at the style's sizes;
//   - a row height outside [MinPanelHeight, MaxPanelHeight];
//   - a title, axis label or legend wider than the space it is drawn in (it would be clipped);
//   - an axis with fewer than two labels in its range (one for a nominal axis with one
//     category), or x tick labels that overlap;
//   - tick labels that mix formats (0.01 beside 1e-4, 50000 beside 1e5);
//   - a log axis (LogTicker) that spans more than MaxLogDecades + 2 decades, or that leaves
//     more than a decade unlabelled at an end (more than a factor 1.5 when it spans four
//     decades or less);
//   - tick labels at values other than 1, 2, 2.5 or 5 times a power of ten (1, 2 or 5 on a
//     log axis);
//   - data outside a panel's axis ranges (clipped), or running into an end of an axis that
//     carries no label (it looks clipped: Fit the axis);
//   - the same data drawn twice in a panel (two identical lines, one hiding the other);
//   - error-bar caps no wider than the markers (a short confidence bar would vanish);
//   - a log y axis whose values leave an empty stretch of more than MaxLogGap decades and
//     half the axis (LogUseful: a linear axis shows them);
//   - two legend entries of the figure with different texts drawn alike (same colour and
//     the same dash, marker and band): every series must be distinguishable;
//   - a rendering that fails, or a PNG or SVG whose size is not the figure's.
func (f *Figure) Check() error {
	if err := f.validate(); err != nil {
		return err
	}
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if ph := f.panelHeight(); ph < MinPanelHeight || ph > MaxPanelHeight {
		bad("row height %.2f in outside [%.1f, %.1f] in", inches(ph), inches(MinPanelHeight), inches(MaxPanelHeight))
	}
	tw := f.tileWidth()
	for i, row := range f.Panels {
		for j, p := range row {
			at := fmt.Sprintf("panel (%d, %d)", i, j)
			checkFont := func(what string, st text.Style, size vg.Length) {
				if st.Font.Typeface != Sans.Typeface || st.Font.Variant != Sans.Variant || st.Font.Size != size {
					bad("%s: %s font %s %s %.0f pt, want %s %s %.0f pt", at, what, st.Font.Typeface, st.Font.Variant,
						st.Font.Size.Points(), Sans.Typeface, Sans.Variant, size.Points())
				}
			}
			checkFont("title", p.Title.TextStyle, TitleSize)
			checkFont("x label", p.X.Label.TextStyle, LabelSize)
			checkFont("y label", p.Y.Label.TextStyle, LabelSize)
			checkFont("x tick", p.X.Tick.Label, TickSize)
			checkFont("y tick", p.Y.Tick.Label, TickSize)
			checkFont("legend", p.Legend.TextStyle, LegendSize)
			for _, line := range strings.Split(wrap(p.Title.TextStyle, p.Title.Text, tw), "\n") {
				if w := p.Title.TextStyle.Rectangle(line).Size().X; w > tw {
					bad("%s: title line %q is %.2f in wide, the panel %.2f in (clipped)", at, line, inches(w), inches(tw))
				}
			}
			if w := p.X.Label.TextStyle.Rectangle(p.X.Label.Text).Size().X; w > tw-vg.Inch {
				bad("%s: x label %q is wider than the data area", at, p.X.Label.Text)
			}
			if w := p.Y.Label.TextStyle.Rectangle(p.Y.Label.Text).Size().X; w > f.panelHeight()-vg.Inch {
				bad("%s: y label %q is taller than the data area", at, p.Y.Label.Text)
			}
			if w := p.Legend.Rectangle(draw.Canvas{}).Size().X; w > tw-0.7*vg.Inch {
				bad("%s: legend %.2f in wide does not fit under the panel (%.2f in)", at, inches(w), inches((tw - 0.7*vg.Inch)))
			}
			for _, msg := range checkData(p) {
				bad("%s: %s", at, msg)
			}
			for _, ax := range []struct {
				name     string
				a        *plot.Axis
				span     vg.Length
				vertical bool
			}{{"x", &p.X, tw - vg.Inch, false}, {"y", &p.Y, f.panelHeight() - vg.Inch, true}} {
				for _, msg := range checkAxis(ax.a, ax.span, ax.vertical) {
					bad("%s: %s axis: %s", at, ax.name, msg)
				}
			}
		}
	}
	probs = append(probs, f.checkLegendStyles()...)
	w, h := f.Size()
	if data, err := f.Render("png"); err != nil {
		bad("%v", err)
	} else if img, err := png.Decode(bytes.NewReader(data)); err != nil {
		bad("PNG does not decode: %v", err)
	} else if b := img.Bounds(); math.Abs(float64(b.Dx())-inches(w)*DPI) > 1 || math.Abs(float64(b.Dy())-inches(h)*DPI) > 1 {
		bad("PNG is %dx%d px, want %.0fx%.0f", b.Dx(), b.Dy(), inches(w)*DPI, inches(h)*DPI)
	}
	if data, err := f.Render("svg"); err != nil {
		bad("%v", err)
	} else {
		var doc struct {
			Width  string `xml:"width,attr"`
			Height string `xml:"height,attr"`
		}
		if err := xml.Unmarshal(data, &doc); err != nil {
			bad("SVG does not parse: %v", err)
		} else if !sizeIs(doc.Width, w) || !sizeIs(doc.Height, h) {
			bad("SVG is %s x %s, want %.1fpt x %.1fpt", doc.Width, doc.Height, w.Points(), h.Points())
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("figure %s: %w", f.Name, errors.New(strings.Join(probs, "; ")))
	}
	return nil
}

// checkAxis checks an axis's tick labels; span is about its drawn length, for the test that
// labels do not overlap (side by side on a horizontal axis, one above the other with a fifth
// of a line between them on a vertical one).
func checkAxis(a *plot.Axis, span vg.Length, vertical bool) []string {
	var probs []string
	ticks := a.Tick.Marker.Ticks(a.Min, a.Max)
	var labelled []plot.Tick
	for _, t := range ticks {
		if t.Label != "" && t.Value >= a.Min-1e-9*math.Abs(a.Max-a.Min) && t.Value <= a.Max+1e-9*math.Abs(a.Max-a.Min) {
			labelled = append(labelled, t)
		}
	}
	_, nominal := a.Tick.Marker.(plot.ConstantTicks)
	if len(labelled) < 2 && !(nominal && len(labelled) == 1) {
		probs = append(probs, fmt.Sprintf("%d labels in [%g, %g]", len(labelled), a.Min, a.Max))
	}
	if span > 0 && a.Max > a.Min {
		for k := 1; k < len(labelled); k++ {
			gap := vg.Length((labelled[k].Value - labelled[k-1].Value) / (a.Max - a.Min) * float64(span))
			need := (a.Tick.Label.Rectangle(labelled[k].Label).Size().X + a.Tick.Label.Rectangle(labelled[k-1].Label).Size().X) / 2
			if vertical {
				need = 1.2 * a.Tick.Label.Rectangle(labelled[k].Label).Size().Y
			}
			if gap < need {
				probs = append(probs, fmt.Sprintf("tick labels %q and %q overlap", labelled[k-1].Label, labelled[k].Label))
			}
		}
	}
	if odd := oddLabels(a.Tick.Marker, labelled); len(odd) > 0 {
		probs = append(probs, fmt.Sprintf("tick labels %s are not at 1, 2, 2.5 or 5 times a power of ten (1, 2, 5 on a log axis)", strings.Join(odd, ", ")))
	}
	if mixedFormats(labelled) {
		probs = append(probs, "tick labels mix formats (50000 beside 1e5)")
	}
	if _, log := a.Tick.Marker.(LogTicker); log && len(labelled) > 0 {
		decades := a.Max - a.Min
		if decades > MaxLogDecades+2 { // + the rounding to whole decades
			probs = append(probs, fmt.Sprintf("log axis spans %.1f decades", decades))
		}
		gap := 1.0
		if decades <= 4 {
			gap = math.Log10(1.5)
		}
		if lo := labelled[0].Value - a.Min; lo > gap+1e-9 {
			probs = append(probs, fmt.Sprintf("nothing labelled over the lowest factor %.3g", math.Pow(10, lo)))
		}
		if hi := a.Max - labelled[len(labelled)-1].Value; hi > gap+1e-9 {
			probs = append(probs, fmt.Sprintf("nothing labelled over the highest factor %.3g", math.Pow(10, hi)))
		}
	}
	return probs
}

// mixedFormats reports whether some labels have an exponent and others, except 0 and 1
// (which sit well in either format), have none.
func mixedFormats(labelled []plot.Tick) bool {
	exp, plain := 0, 0
	for _, t := range labelled {
		switch {
		case t.Label == "1" || t.Label == "0":
		case strings.Contains(t.Label, "e"):
			exp++
		default:
			plain++
		}
	}
	return exp > 0 && plain > 0
}

// oddLabels returns the labels of a linear (NiceTicker) axis that are not multiples of one
// step of 1, 2, 2.5 or 5 times a power of ten, and those of a log axis that do not stand for
// 1, 2 or 5 times a power of ten (such as 40 or 9000 at an end).
func oddLabels(m plot.Ticker, labelled []plot.Tick) []string {
	var odd []string
	switch m.(type) {
	case LogTicker:
		for _, t := range labelled {
			if !mantissaIn(math.Pow(10, t.Value), 1, 2, 5) {
				odd = append(odd, t.Label)
			}
		}
	case NiceTicker:
		if len(labelled) < 2 {
			return nil
		}
		step := labelled[1].Value - labelled[0].Value
		if !mantissaIn(step, 1, 2, 2.5, 5) {
			return []string{labelled[0].Label, labelled[1].Label}
		}
		for _, t := range labelled {
			if k := t.Value / step; math.Abs(k-math.Round(k)) > 1e-6 {
				odd = append(odd, t.Label)
			}
		}
	}
	return odd
}

// mantissaIn reports whether v > 0 is m times a power of ten for one of ms.
func mantissaIn(v float64, ms ...float64) bool {
	if !(v > 0) {
		return false
	}
	mant := v / math.Pow(10, math.Floor(math.Log10(v)+1e-9))
	for _, m := range ms {
		if math.Abs(mant-m) < 1e-6*m {
			return true
		}
	}
	return false
}

// sizeIs reports whether an SVG length ("504pt", "504") is l to within a point.
func sizeIs(attr string, l vg.Length) bool {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(attr), "pt"), 64)
	return err == nil && math.Abs(v-l.Points()) <= 1
}

func inches(l vg.Length) float64 { return float64(l / vg.Inch) }
