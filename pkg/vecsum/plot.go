package vecsum

import (
	"fmt"
	"io"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// gainPlots builds one panel per d: gain against alpha (both log scale), one line per n, and the
// bounds 1 and d dashed.
func gainPlots(rows []GainRow) ([]*plot.Plot, error) {
	byD := map[int]map[int]plotter.XYs{}
	for _, r := range rows {
		if byD[r.D] == nil {
			byD[r.D] = map[int]plotter.XYs{}
		}
		byD[r.D][r.N] = append(byD[r.D][r.N], plotter.XY{X: r.Alpha, Y: r.Gain})
	}
	var ds []int
	for d := range byD {
		ds = append(ds, d)
	}
	sort.Ints(ds)
	if len(ds) == 0 {
		return nil, inputErr("gain plot: no rows")
	}
	var plots []*plot.Plot
	for _, d := range ds {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("d = %d", d)
		p.X.Label.Text = "Zipf skew alpha"
		p.Y.Label.Text = "gain E_n / E_t"
		p.X.Scale = plot.LogScale{}
		p.Y.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		var ns []int
		for n := range byD[d] {
			ns = append(ns, n)
		}
		sort.Ints(ns)
		xmin, xmax := 0.0, 0.0
		for i, n := range ns {
			pts := byD[d][n]
			sort.Slice(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
			if i == 0 {
				xmin, xmax = pts[0].X, pts[len(pts)-1].X
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return nil, err
			}
			l.Color = plotutil.Color(i)
			l.Width = vg.Points(1.5)
			l.Dashes = plotutil.Dashes(i)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("n = %g", float64(n)), l)
		}
		for _, bound := range []float64{1, float64(d)} {
			b, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: bound}, {X: xmax, Y: bound}})
			if err != nil {
				return nil, err
			}
			b.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
			b.Width = vg.Points(0.7)
			p.Add(b)
		}
		p.Legend.Top = false // bottom right: the curves sit at gain d there
		p.Legend.Left = false
		p.Legend.YOffs = vg.Points(6)
		p.Y.Min = 0.8
		p.Y.Max = 1.25 * float64(d)
		plots = append(plots, p)
	}
	return plots, nil
}

// WriteGainPlot renders the thesis figure (one panel per d) as "png" or "svg" to w.
func WriteGainPlot(w io.Writer, rows []GainRow, format string) error {
	plots, err := gainPlots(rows)
	if err != nil {
		return err
	}
	width, height := vg.Points(330*float64(len(plots))), vg.Points(300)
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(144))}
	case "svg":
		c = vgsvg.New(width, height)
	default:
		return inputErr("gain plot: format %q: allowed png, svg", format)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	_, err = c.WriteTo(w)
	return err
}
