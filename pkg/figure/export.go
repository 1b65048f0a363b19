package figure

import (
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/finitejson"
)

// Data is what a figure draws, as numbers: for each panel its title, its axes (label, range,
// log or linear, the names of a nominal axis) and its series in data units (a log axis's
// values themselves, not their logarithms), each with the name its legend gives it. A page
// draws it again as an interactive plot (dpsim view); WriteData writes it as Name.json.
type Data struct {
	Name    string `json:"name"`
	Caption string `json:"caption,omitempty"`
	// Panels are the rows of panels, as Figure.Panels.
	Panels [][]PanelData `json:"panels"`
}

// PanelData is one panel of Data.
type PanelData struct {
	Title  string       `json:"title"`
	X      AxisData     `json:"x"`
	Y      AxisData     `json:"y"`
	Series []SeriesData `json:"series"`
}

// AxisData is one axis of a panel: its label, its range in data units, whether it is
// logarithmic (LogTicker) and, for a nominal axis (plot.NominalX), its named ticks.
type AxisData struct {
	Label string     `json:"label"`
	Min   float64    `json:"min"`
	Max   float64    `json:"max"`
	Log   bool       `json:"log,omitempty"`
	Ticks []TickData `json:"ticks,omitempty"`
}

// TickData is a named tick of a nominal axis.
type TickData struct {
	Value float64 `json:"value"`
	Label string  `json:"label"`
}

// The kinds of SeriesData.
const (
	KindLine   = "line"   // X, Y joined (Markers: with a marker at each point; Lo, Hi: error bars)
	KindPoints = "points" // markers at X, Y only
	KindBand   = "band"   // the area between Lo and Hi over X (a confidence band, a shaded window)
)

// SeriesData is one series of a panel. A line drawn in several pieces (steps without data
// between them) is one series whose pieces are separated by a NaN (null in JSON) at an x
// between them.
type SeriesData struct {
	Kind    string    `json:"kind"`
	Label   string    `json:"label,omitempty"` // its legend entry ("": none)
	Color   string    `json:"color"`           // CSS rgba()
	Dash    []float64 `json:"dash,omitempty"`  // dash pattern in points (none: solid)
	Width   float64   `json:"width,omitempty"` // line width in points
	Markers bool      `json:"markers,omitempty"`
	X       Values    `json:"x"`
	Y       Values    `json:"y,omitempty"`
	Lo      Values    `json:"lo,omitempty"`
	Hi      Values    `json:"hi,omitempty"`
}

// Values is a series of numbers whose NaN entries (a gap) are JSON nulls.
type Values []float64

// MarshalJSON writes NaN and the infinities as null, every other value exactly.
func (v Values) MarshalJSON() ([]byte, error) {
	return AppendJSONArray(make([]byte, 0, 2+len(v)*12), v, -1), nil
}

// AppendJSONArray appends v as a JSON array to b: NaN and the infinities as null (a gap), the
// other values with prec significant digits (-1: the fewest that read back as the same float64).
func AppendJSONArray(b []byte, v []float64, prec int) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, x, 'g', prec, 64)
	}
	return append(b, ']')
}

// UnmarshalJSON reads null as NaN.
func (v *Values) UnmarshalJSON(b []byte) error {
	var raw []*float64
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*v = make(Values, len(raw))
	for i, p := range raw {
		if p == nil {
			(*v)[i] = math.NaN()
		} else {
			(*v)[i] = *p
		}
	}
	return nil
}

// DataFile is the name of the file WriteData writes for a figure named name.
func DataFile(name string) string { return name + ".json" }

// Data returns what the figure draws (see Data). A panel's grid draws no data and is left
// out; a plotter of a kind Data does not know is an error, so that a figure never loses a
// series silently.
func (f *Figure) Data() (*Data, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	d := &Data{Name: f.Name, Caption: f.Caption, Panels: make([][]PanelData, len(f.Panels))}
	for i, row := range f.Panels {
		for j, p := range row {
			pd, err := panelData(p)
			if err != nil {
				return nil, fmt.Errorf("figure %s: panel (%d, %d): %w", f.Name, i, j, err)
			}
			d.Panels[i] = append(d.Panels[i], pd)
		}
	}
	return d, nil
}

// WriteData writes Data as dir/Name.json, atomically, and returns its path.
func (f *Figure) WriteData(dir string) (string, error) { return f.WriteDataMode(dir, 0o644) }

// WriteDataMode is WriteData with the file's mode perm.
func (f *Figure) WriteDataMode(dir string, perm os.FileMode) (string, error) {
	d, err := f.Data()
	if err != nil {
		return "", err
	}
	// an axis limit or a bound line that overflowed float64 is written as null, not the reason
	// the figure is lost (the series' own gaps are null already)
	data, _, err := finitejson.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("figure %s: %w", f.Name, err)
	}
	path := filepath.Join(dir, DataFile(f.Name))
	if err := atomicfile.WriteFile(path, append(data, '\n'), perm); err != nil {
		return "", fmt.Errorf("figure %s: writing %s: %w", f.Name, path, err)
	}
	return path, nil
}

// axisData is the data of axis a (labelled label).
func axisData(a *plot.Axis) AxisData {
	ad := AxisData{Label: a.Label.Text, Min: a.Min, Max: a.Max}
	switch t := a.Tick.Marker.(type) {
	case LogTicker:
		// a decade's end a rounding away from it (log10 of a floor computed in float64) is
		// that decade: 0.009999999999999988 would make the page's log axis split forever
		ad.Log, ad.Min, ad.Max = true, math.Pow(10, snapDecade(a.Min)), math.Pow(10, snapDecade(a.Max))
	case plot.ConstantTicks:
		for _, k := range t {
			if k.Label != "" {
				ad.Ticks = append(ad.Ticks, TickData{Value: k.Value, Label: k.Label})
			}
		}
	}
	return ad
}

// panelData is the data of panel p: its plotters in the order they were added, pieces of one
// line (or band) joined into one series, markers and error bars drawn on a line's points
// folded into that line.
func panelData(p *plot.Plot) (PanelData, error) {
	pd := PanelData{Title: p.Title.Text, X: axisData(&p.X), Y: axisData(&p.Y), Series: []SeriesData{}}
	pls, err := panelPlotters(p)
	if err != nil {
		return pd, err
	}
	entries, err := legendEntries(&p.Legend)
	if err != nil {
		return pd, err
	}
	labels := map[plot.Thumbnailer]string{}
	for _, e := range entries {
		for _, t := range e.thumbs {
			if reflect.TypeOf(t).Comparable() { // a map key
				labels[t] = e.text
			}
		}
	}
	x := func(v float64) float64 { return unlog(pd.X.Log, v) }
	y := func(v float64) float64 { return unlog(pd.Y.Log, v) }
	for _, pl := range pls {
		label := ""
		if t, ok := pl.(plot.Thumbnailer); ok && reflect.TypeOf(t).Comparable() {
			label = labels[t]
		}
		switch d := pl.(type) {
		case *plotter.Grid:
		case *plotter.Line:
			s := SeriesData{Kind: KindLine, Label: label, Color: cssColor(d.Color), Dash: points(d.Dashes), Width: d.Width.Points()}
			for _, q := range d.XYs {
				s.X, s.Y = append(s.X, x(q.X)), append(s.Y, y(q.Y))
			}
			pd.Series = addPiece(pd.Series, s)
		case *plotter.Scatter:
			s := SeriesData{Kind: KindPoints, Label: label, Color: cssColor(d.Color)}
			for _, q := range d.XYs {
				s.X, s.Y = append(s.X, x(q.X)), append(s.Y, y(q.Y))
			}
			if l := lineAt(pd.Series, s.X, s.Y); l != nil {
				l.Markers = true
				continue
			}
			pd.Series = append(pd.Series, s)
		case *plotter.YErrorBars:
			var xs, ys, lo, hi Values
			for k, q := range d.XYs {
				xs, ys = append(xs, x(q.X)), append(ys, y(q.Y))
				lo, hi = append(lo, y(q.Y-math.Abs(d.YErrors[k].Low))), append(hi, y(q.Y+math.Abs(d.YErrors[k].High)))
			}
			l := lineAt(pd.Series, xs, ys)
			if l == nil {
				return pd, fmt.Errorf("error bars of %d points not drawn on a line's points", len(xs))
			}
			l.Lo, l.Hi = lo, hi
		case *plotter.Polygon:
			for _, ring := range d.XYs {
				s, ok := bandOf(ring, x, y)
				if !ok {
					return pd, fmt.Errorf("a polygon of %d points that is not a band (upper edge forth, lower edge back)", len(ring))
				}
				s.Label, s.Color = label, cssColor(d.Color)
				pd.Series = addPiece(pd.Series, s)
				label = "" // the polygon's other rings are pieces of the same series
			}
		default:
			return pd, fmt.Errorf("a plotter of type %T that figure.Data does not know", pl)
		}
	}
	return pd, nil
}

// unlog maps an axis coordinate to data units (10^v on a log axis).
func unlog(log bool, v float64) float64 {
	if log {
		return math.Pow(10, v)
	}
	return v
}

// bandOf reads a polygon ring drawn as a band - the upper edge at increasing x, then the
// lower edge back - as a band series (each x's ends sorted into Lo <= Hi); false when the ring
// is not such a band.
func bandOf(ring plotter.XYs, x, y func(float64) float64) (SeriesData, bool) {
	n := len(ring)
	if n < 4 || n%2 != 0 {
		return SeriesData{}, false
	}
	s := SeriesData{Kind: KindBand}
	for k := 0; k < n/2; k++ {
		a, b := ring[k], ring[n-1-k]
		if a.X != b.X || (k > 0 && !(a.X > ring[k-1].X)) {
			return SeriesData{}, false
		}
		lo, hi := math.Min(a.Y, b.Y), math.Max(a.Y, b.Y)
		s.X, s.Lo, s.Hi = append(s.X, x(a.X)), append(s.Lo, y(lo)), append(s.Hi, y(hi))
	}
	return s, true
}

// addPiece appends s to the series, or joins it to the last series of its kind drawn alike
// when s has no legend entry of its own and continues that series to the right (the pieces of
// one line split where steps have no data).
func addPiece(series []SeriesData, s SeriesData) []SeriesData {
	if s.Label == "" {
		for k := len(series) - 1; k >= 0; k-- {
			p := &series[k]
			if p.Kind != s.Kind || p.Color != s.Color || fmt.Sprint(p.Dash) != fmt.Sprint(s.Dash) || p.Width != s.Width {
				continue
			}
			last := p.X[len(p.X)-1]
			if !(s.X[0] > last) {
				break
			}
			p.X = append(p.X, (last+s.X[0])/2)
			p.X = append(p.X, s.X...)
			if s.Kind == KindBand {
				p.Lo, p.Hi = append(p.Lo, math.NaN()), append(p.Hi, math.NaN())
				p.Lo, p.Hi = append(p.Lo, s.Lo...), append(p.Hi, s.Hi...)
			} else {
				p.Y = append(p.Y, math.NaN())
				p.Y = append(p.Y, s.Y...)
			}
			return series
		}
	}
	return append(series, s)
}

// lineAt is the line series whose points are exactly xs, ys (nil: none).
func lineAt(series []SeriesData, xs, ys Values) *SeriesData {
	for k := range series {
		s := &series[k]
		if s.Kind == KindLine && equalValues(s.X, xs) && equalValues(s.Y, ys) {
			return s
		}
	}
	return nil
}

func equalValues(a, b Values) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

// cssColor writes c as CSS rgba() (not premultiplied); nil is transparent.
func cssColor(c color.Color) string {
	if c == nil {
		return "rgba(0,0,0,0)"
	}
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	return fmt.Sprintf("rgba(%d,%d,%d,%.3g)", n.R, n.G, n.B, float64(n.A)/255)
}

// points is a dash pattern in points.
func points[L ~float64](ds []L) []float64 {
	if len(ds) == 0 {
		return nil
	}
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d)
	}
	return out
}

// snapDecade returns the integer nearest e when e is within 1e-9 of it, else e.
func snapDecade(e float64) float64 {
	if r := math.Round(e); math.Abs(e-r) < 1e-9 {
		return r
	}
	return e
}
