package vecsum

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/dpsim/dpsim/pkg/figure"
)

// GainFigureName is the file base name of the gain figure.
const GainFigureName = "vecsum_gain"

// GainFigure builds the thesis figure (no I/O): one panel per d, the gain E_n / E_t against
// the Zipf skew alpha (both log scale), one line per n, and the bounds 1 and d dotted.
func GainFigure(rows []GainRow) (*figure.Figure, error) {
	byD := map[int]map[int]plotter.XYs{}
	for _, r := range rows {
		if !(r.Alpha > 0) || !(r.Gain > 0) {
			return nil, inputErr("gain plot: alpha %g, gain %g: both must be positive (log axes)", r.Alpha, r.Gain)
		}
		if byD[r.D] == nil {
			byD[r.D] = map[int]plotter.XYs{}
		}
		byD[r.D][r.N] = append(byD[r.D][r.N], plotter.XY{X: figure.Lg(r.Alpha), Y: figure.Lg(r.Gain)})
	}
	var ds []int
	for d := range byD {
		ds = append(ds, d)
	}
	sort.Ints(ds)
	if len(ds) == 0 {
		return nil, inputErr("gain plot: no rows")
	}
	var panels []*plot.Plot
	for _, d := range ds {
		p := figure.New(fmt.Sprintf("d = %d", d), "Zipf skew alpha", "gain E_n / E_t")
		var ns []int
		for n := range byD[d] {
			ns = append(ns, n)
		}
		sort.Ints(ns)
		xmin, xmax := 0.0, 0.0
		for i, n := range ns {
			pts := byD[d][n]
			sort.Slice(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
			if i == 0 || pts[0].X < xmin {
				xmin = pts[0].X
			}
			if i == 0 || pts[len(pts)-1].X > xmax {
				xmax = pts[len(pts)-1].X
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return nil, err
			}
			l.Color, l.Width = figure.Color(i), figure.LineWidth
			p.Add(l)
			p.Legend.Add("n = "+countLabel(n), l)
		}
		for i, bound := range []float64{1, float64(d)} {
			b, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: figure.Lg(bound)}, {X: xmax, Y: figure.Lg(bound)}})
			if err != nil {
				return nil, err
			}
			b.Color, b.Dashes = figure.Grey, figure.Dotted
			p.Add(b)
			if i == 0 { // one entry names both bounds (drawn alike)
				p.Legend.Add("bounds 1 and d", b)
			}
		}
		figure.SetLogX(p, math.Pow(10, xmin), math.Pow(10, xmax))
		figure.SetLogY(p, 1, float64(d))
		panels = append(panels, p)
	}
	return &figure.Figure{Name: GainFigureName, Panels: [][]*plot.Plot{panels}, Caption: "Gain of the normal (per-coordinate) mechanism over the plain one against the Zipf skew of the coordinates' scales; dotted: the bounds 1 and d."}, nil
}

// countLabel prints a row count n as the axes print numbers: 100, 1000, 1e6 (not 1e+06).
func countLabel(n int) string {
	if n < 100000 {
		return strconv.Itoa(n)
	}
	s := strconv.FormatFloat(float64(n), 'e', -1, 64) // "1e+06", "2.5e+07"
	mant, exp, _ := strings.Cut(s, "e+")
	return mant + "e" + strings.TrimLeft(exp, "0")
}

// WriteGainPlot renders the gain figure (GainFigure) as "png" or "svg" to w.
func WriteGainPlot(w io.Writer, rows []GainRow, format string) error {
	f, err := GainFigure(rows)
	if err != nil {
		return err
	}
	data, err := f.Render(format)
	if err != nil {
		return inputErr("gain plot: %v", err)
	}
	_, err = w.Write(data)
	return err
}
