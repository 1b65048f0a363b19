package figure

import (
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// line adds a line through ys (x = 0, 1, ...) in colour i and dashes, named name if not "".
func line(t *testing.T, p *plot.Plot, name string, i int, dashes []vg.Length, ys ...float64) {
	t.Helper()
	xy := make(plotter.XYs, len(ys))
	for k, y := range ys {
		xy[k] = plotter.XY{X: float64(k), Y: y}
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		t.Fatal(err)
	}
	l.Color, l.Dashes, l.Width = Color(i), dashes, LineWidth
	p.Add(l)
	if name != "" {
		p.Legend.Add(name, l)
	}
}

// band adds a translucent band between lo and hi (x = 0, 1, ...) in colour i.
func band(t *testing.T, p *plot.Plot, i int, lo, hi []float64) {
	t.Helper()
	var ring plotter.XYs
	for k := range hi {
		ring = append(ring, plotter.XY{X: float64(k), Y: hi[k]})
	}
	for k := len(lo) - 1; k >= 0; k-- {
		ring = append(ring, plotter.XY{X: float64(k), Y: lo[k]})
	}
	poly, err := plotter.NewPolygon(ring)
	if err != nil {
		t.Fatal(err)
	}
	poly.Color = Translucent(Color(i), 60)
	poly.LineStyle.Width = 0
	p.Add(poly)
}

// bars adds points with error bars: markers of radius r, caps capW wide.
func bars(t *testing.T, p *plot.Plot, r, capW vg.Length) {
	t.Helper()
	e := errXY{xy: plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 2}, {X: 2, Y: 3}}, d: 0.01}
	sc, err := plotter.NewScatter(e.xy)
	if err != nil {
		t.Fatal(err)
	}
	sc.Radius, sc.Shape = r, Marker(0)
	eb, err := plotter.NewYErrorBars(e)
	if err != nil {
		t.Fatal(err)
	}
	eb.CapWidth = capW
	p.Add(sc, eb)
}

type errXY struct {
	xy plotter.XYs
	d  float64
}

func (e errXY) Len() int                        { return len(e.xy) }
func (e errXY) XY(i int) (float64, float64)     { return e.xy[i].X, e.xy[i].Y }
func (e errXY) YError(i int) (float64, float64) { return e.d, e.d }

// TestCheckData: each defect of what a figure draws fails Check, naming it, and the figure
// drawn right passes.
func TestCheckData(t *testing.T) {
	ramp := []float64{-74, 85, 20, 0, 5}
	cases := []struct {
		name  string
		build func(t *testing.T, p *plot.Plot)
		want  string // "" = passes
	}{
		{"lines fitted", func(t *testing.T, p *plot.Plot) {
			line(t, p, "agent 0", 0, nil, ramp...)
			line(t, p, "agent 1", 1, nil, 1, 2, 3, 4, 5)
			Fit(p)
		}, ""},
		{"line into the unlabelled top", func(t *testing.T, p *plot.Plot) {
			line(t, p, "agent 0", 0, nil, ramp...)
		}, "unlabelled high end"},
		{"band clipped at the top", func(t *testing.T, p *plot.Plot) {
			line(t, p, "", 0, nil, 1, 2, 3, 2, 1)
			band(t, p, 0, []float64{0, 1, 2, 1, 0}, []float64{2, 3, 4.5, 3, 2})
			p.Y.Min, p.Y.Max = 0, 4 // set from the means only
		}, "is clipped"},
		{"band inside", func(t *testing.T, p *plot.Plot) {
			line(t, p, "", 0, nil, 1, 2, 3, 2, 1)
			band(t, p, 0, []float64{0, 1, 2, 1, 0}, []float64{2, 3, 4.5, 3, 2})
			Fit(p)
		}, ""},
		{"same colour and dash", func(t *testing.T, p *plot.Plot) {
			line(t, p, "delay 0", 0, nil, 1, 2, 3)
			line(t, p, "delay 10", 10, nil, 2, 3, 4) // the palette cycles: blue again
			Fit(p)
		}, "drawn alike"},
		{"same colour, other dash", func(t *testing.T, p *plot.Plot) {
			line(t, p, "delay 0", 0, SeriesDashes(0, 11), 1, 2, 3)
			line(t, p, "delay 10", 10, SeriesDashes(10, 11), 2, 3, 4)
			Fit(p)
		}, ""},
		{"identical lines over each other", func(t *testing.T, p *plot.Plot) {
			line(t, p, "Proposition 1 bound, reuse-last", 0, Dashed, 35, 35)
			line(t, p, "Proposition 1 bound, skip", 1, Dashed, 35, 35)
			Fit(p)
		}, "drawn twice"},
		{"one line across empty decades", func(t *testing.T, p *plot.Plot) {
			ys := []float64{1e-11, 20, 25, 30}
			SetLogY(p, 1e-11, 30)
			for k := range ys {
				ys[k] = Lg(ys[k])
			}
			line(t, p, "", 0, nil, ys...)
			p.X.Min, p.X.Max = -0.5, 3.5
		}, "decades are empty"},
		{"the same values on a linear axis", func(t *testing.T, p *plot.Plot) {
			line(t, p, "", 0, nil, 1e-11, 20, 25, 30)
			Fit(p)
		}, ""},
		{"caps hidden by markers", func(t *testing.T, p *plot.Plot) {
			bars(t, p, vg.Points(3.5), vg.Points(5))
			Fit(p)
		}, "hidden by its marker"},
		{"caps wider than markers", func(t *testing.T, p *plot.Plot) {
			bars(t, p, vg.Points(3), vg.Points(9))
			Fit(p)
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New("title", "step t", "value")
			c.build(t, p)
			f := &Figure{Name: "test", Panels: [][]*plot.Plot{{p}}}
			err := f.Check()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Check: %v, want none", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Check: %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestCheckStylesAcrossPanels: the same series in two panels may share a style; two series
// of one figure may not, even in different panels.
func TestCheckStylesAcrossPanels(t *testing.T) {
	for _, c := range []struct {
		names [2]string
		ok    bool
	}{{[2]string{"structured", "structured"}, true}, {[2]string{"structured", "iid"}, false}} {
		var row []*plot.Plot
		for _, n := range c.names {
			p := New("", "x", "y")
			line(t, p, n, 0, nil, 1, 2, 3)
			Fit(p)
			row = append(row, p)
		}
		f := &Figure{Name: "test", Panels: [][]*plot.Plot{{row[0]}, {row[1]}}}
		if err := f.Check(); (err == nil) != c.ok {
			t.Errorf("%v: Check = %v, want ok %v", c.names, err, c.ok)
		}
	}
}

// TestOddLabels: labels such as 40 or 9000 at the end of a log axis, or a linear step of 4,
// are not in the style.
func TestOddLabels(t *testing.T) {
	tk := func(vs ...float64) []plot.Tick {
		var out []plot.Tick
		for _, v := range vs {
			out = append(out, plot.Tick{Value: v, Label: tickLabel(v)})
		}
		return out
	}
	cases := []struct {
		name   string
		ticker plot.Ticker
		ticks  []plot.Tick
		odd    int
	}{
		{"log 40 and 9000", LogTicker{}, tk(Lg(40), Lg(100), Lg(1000), Lg(9000)), 2},
		{"log 1-2-5", LogTicker{}, tk(Lg(20), Lg(50), Lg(100), Lg(200)), 0},
		{"linear step 40", NiceTicker{}, tk(0, 40, 80), 2},
		{"linear step 2.5", NiceTicker{}, tk(0, 2.5, 5, 7.5), 0},
		{"linear off the step", NiceTicker{}, tk(0, 20, 50), 1},
	}
	for _, c := range cases {
		if got := oddLabels(c.ticker, c.ticks); len(got) != c.odd {
			t.Errorf("%s: odd labels %v, want %d", c.name, got, c.odd)
		}
	}
}

// TestMixedFormats: 50000 beside 1e5 (or 0.01 beside 1e-4) is two formats on one axis.
func TestMixedFormats(t *testing.T) {
	lab := func(ls ...string) []plot.Tick {
		var out []plot.Tick
		for _, l := range ls {
			out = append(out, plot.Tick{Label: l})
		}
		return out
	}
	for _, c := range []struct {
		labels []plot.Tick
		mixed  bool
	}{
		{lab("-50000", "0", "50000", "1e5"), true},
		{lab("0.01", "1e-4"), true},
		{lab("-5e4", "0", "5e4", "1e5"), false},
		{lab("1e-2", "1", "1e2"), false},
	} {
		if got := mixedFormats(c.labels); got != c.mixed {
			t.Errorf("%v: mixed %v, want %v", c.labels, got, c.mixed)
		}
	}
}
