package figure

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// Data gives what each panel draws in data units: a log axis's values (not their
// logarithms), a line drawn in pieces as one series with a null between the pieces, a band
// as its lower and upper edges, markers and error bars folded into their line, a nominal
// axis's names, the legend's names; WriteData writes it as JSON that reads back the same.
func TestData(t *testing.T) {
	p := New("a log panel", "step t", "error")
	band(t, p, 0, []float64{0, 0.5, 1}, []float64{2, 3, 4}) // drawn in lg units: 1, 10^0.5, 10 to 100, ...
	line(t, p, "mean", 0, nil, 0, 1, 2)
	second, err := plotter.NewLine(plotter.XYs{{X: 5, Y: 1}, {X: 6, Y: 2}}) // the mean's second piece
	if err != nil {
		t.Fatal(err)
	}
	second.Color, second.Width = Color(0), LineWidth
	p.Add(second)
	p.Y.Tick.Marker = LogTicker{}
	p.Y.Min, p.Y.Max = -1, 5

	q := New("sweep", "noise", "final error")
	e := errXY{xy: plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 2}}, d: 0.5}
	l, sc, err := plotter.NewLinePoints(e.xy)
	if err != nil {
		t.Fatal(err)
	}
	l.Color, sc.Color = Color(1), Color(1)
	eb, err := plotter.NewYErrorBars(e)
	if err != nil {
		t.Fatal(err)
	}
	q.Add(l, sc, eb)
	q.Legend.Add("structured", l, sc)
	q.NominalX("structured", "iid")

	f := &Figure{Name: "test", Caption: "a caption", Panels: [][]*plot.Plot{{p, q}}}
	d, err := f.Data()
	if err != nil {
		t.Fatal(err)
	}
	a, b := d.Panels[0][0], d.Panels[0][1]
	if a.Title != "a log panel" || a.X.Label != "step t" || a.Y.Label != "error" || !a.Y.Log || a.X.Log {
		t.Fatalf("panel 0 axes: %+v %+v %+v", a.Title, a.X, a.Y)
	}
	if math.Abs(a.Y.Min-0.1) > 1e-12 || math.Abs(a.Y.Max-1e5) > 1e-6 {
		t.Fatalf("log axis range in data units: [%g, %g], want [0.1, 1e5]", a.Y.Min, a.Y.Max)
	}
	if len(a.Series) != 2 {
		t.Fatalf("panel 0: %d series, want the band and the mean in two pieces: %+v", len(a.Series), a.Series)
	}
	bd, mean := a.Series[0], a.Series[1]
	if bd.Kind != KindBand || len(bd.X) != 3 || bd.Lo[0] != 1 || bd.Hi[2] != 1e4 {
		t.Fatalf("band: %+v", bd)
	}
	if mean.Kind != KindLine || mean.Label != "mean" || len(mean.X) != 6 || mean.X[3] != 3.5 || !math.IsNaN(mean.Y[3]) || mean.Y[4] != 10 {
		t.Fatalf("mean (pieces joined by a null at x = 3.5): %+v", mean)
	}
	if len(b.Series) != 1 || !b.Series[0].Markers || b.Series[0].Label != "structured" || b.Series[0].Lo[1] != 1.5 || b.Series[0].Hi[1] != 2.5 {
		t.Fatalf("sweep panel: one line with markers and error bars, got %+v", b.Series)
	}
	if len(b.X.Ticks) != 2 || b.X.Ticks[1].Label != "iid" {
		t.Fatalf("nominal axis: %+v", b.X.Ticks)
	}

	path, err := f.WriteData(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "test.json" {
		t.Fatalf("wrote %s", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Data
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Caption != "a caption" || !math.IsNaN(back.Panels[0][0].Series[1].Y[3]) || back.Panels[0][0].Series[1].Y[5] != 100 {
		t.Fatalf("read back: %+v", back.Panels[0][0].Series[1])
	}

	p.Add(plotter.NewFunction(math.Sin)) // a plotter Data does not know: an error, never a lost series
	if _, err := f.Data(); err == nil {
		t.Fatal("a function plotter passed")
	}
}

// A log axis whose end lies a rounding away from a decade is exported at the decade: the page's
// log axis (uPlot) splits forever from 0.009999999999999988 (seen in a sweep's final-MSE panel).
func TestAxisDataSnapsDecades(t *testing.T) {
	p := New("t", "x", "y")
	SetLogY(p, 0.01, 1e5)
	p.Y.Min = math.Nextafter(-2, -3)
	ad := axisData(&p.Y)
	if !ad.Log || ad.Min != 0.01 || ad.Max != math.Pow(10, p.Y.Max) {
		t.Fatalf("log axis exported as [%v, %v] (log %v), want [0.01, %v]", ad.Min, ad.Max, ad.Log, math.Pow(10, p.Y.Max))
	}
	p.Y.Min = -2.5 // not near a decade: kept
	if ad := axisData(&p.Y); math.Abs(ad.Min-math.Pow(10, -2.5)) > 1e-15 {
		t.Fatalf("log axis min %v, want 10^-2.5", ad.Min)
	}
}
