package johncmd

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/dpsim/dpsim/pkg/john"
	"github.com/dpsim/dpsim/pkg/rng"
)

// PlotConfig parameterises the accuracy plot.
type PlotConfig struct {
	Dir     string
	Xi      float64
	MaxIter int // 0: the fast method's default T
	Seed    uint64
	Workers int
	// dp curves: one per epsilon, noise calibrated with Delta and Eps0 (heuristic, see
	// john.CalibrateNoise); if the local sensitivity is unbounded the curves use the fixed
	// noise scales FallbackSigmas instead.
	Delta, Eps0 float64
	Epsilons    []float64
}

// FallbackSigmas are the dp noise scales plotted when no sigma can be calibrated.
var FallbackSigmas = []float64{0.05, 0.2, 1}

// Curve is the accuracy max_i h_i - 1 of one method's output against iterations.
type Curve struct {
	Label string
	Iter  []int
	Acc   []float64
}

// checkpoints returns about 40 log-spaced iteration counts in [1, T] (always 1 and T).
func checkpoints(T int) []int {
	var out []int
	last := 0
	for k := 0; k <= 40; k++ {
		it := int(math.Round(math.Pow(float64(T), float64(k)/40)))
		if it > last {
			out = append(out, it)
			last = it
		}
	}
	return out
}

// traceRun steps a solver to T iterations and evaluates its output exactly at the
// checkpoints. exact stops early once max h - 1 <= xi/100 (the curve is then well below
// the target and further exact iterations cost O(n d^2) each).
func traceRun(a *mat.Dense, cfg john.Config, T int, label string) (Curve, error) {
	s, err := john.NewSolver(a, cfg)
	if err != nil {
		return Curve{}, err
	}
	defer s.Close()
	c := Curve{Label: label}
	for _, it := range checkpoints(T) {
		for s.Iterations() < it {
			if err := s.Step(); err != nil {
				return c, err
			}
		}
		mh, err := s.MaxLeverage()
		if err != nil {
			return c, err
		}
		c.Iter = append(c.Iter, it)
		c.Acc = append(c.Acc, mh-1)
		if cfg.Method == john.Exact && mh-1 <= cfg.Xi/100 {
			break
		}
	}
	return c, nil
}

// Curves runs exact, fast and dp (one curve per epsilon) on a for the plot. notes explain
// fallbacks.
func Curves(a *mat.Dense, pc PlotConfig) (curves []Curve, notes []string, err error) {
	n, d := a.Dims()
	T := pc.MaxIter
	if T == 0 {
		T = john.DefaultMaxIter(john.Fast, n, d, pc.Xi, john.DefaultSketchSize(pc.Xi))
	}
	base := john.Config{Xi: pc.Xi, Workers: pc.Workers, MaxIter: 1 << 30}
	run := func(cfg john.Config, label string, stream string) error {
		cfg.Seed = rng.Derive(pc.Seed, rng.Label("john-plot"), rng.Label(stream))
		c, err := traceRun(a, cfg, T, label)
		if err != nil {
			return fmt.Errorf("%s curve: %w", label, err)
		}
		curves = append(curves, c)
		return nil
	}
	for _, m := range []john.Method{john.Exact, john.Fast} {
		cfg := base
		cfg.Method = m
		if err := run(cfg, string(m), string(m)); err != nil {
			return nil, nil, err
		}
	}
	// dp: calibrate sigma per epsilon from the local sensitivity at w_1.
	w1 := make([]float64, n)
	for i := range w1 {
		w1[i] = float64(d) / float64(n)
	}
	sens, err := john.LocalSensitivity(a, w1, pc.Eps0)
	if err != nil {
		return nil, nil, err
	}
	type dpRun struct {
		label string
		sigma float64
	}
	var runs []dpRun
	if sens.Finite {
		for _, eps := range pc.Epsilons {
			sigma, err := john.CalibrateNoise(sens, T, eps, pc.Delta)
			if err != nil {
				return nil, nil, err
			}
			runs = append(runs, dpRun{fmt.Sprintf("dp eps=%g (sigma=%.3g, heuristic: no guarantee)", eps, sigma), sigma})
		}
	} else {
		notes = append(notes, "plot: dp noise cannot be calibrated ("+sens.Reason+"); dp curves use fixed noise scales")
		for _, s := range FallbackSigmas {
			runs = append(runs, dpRun{fmt.Sprintf("dp sigma=%g", s), s})
		}
	}
	for _, r := range runs {
		cfg := base
		cfg.Method, cfg.NoiseScale = john.DP, r.sigma
		if err := run(cfg, r.label, r.label); err != nil {
			return nil, nil, err
		}
	}
	return curves, notes, nil
}

// Plot writes john_accuracy.png and john_accuracy.svg into pc.Dir (created if needed):
// max_i h_i(v) - 1 on a log scale against iterations, with the target xi dashed.
func Plot(a *mat.Dense, pc PlotConfig) (files, notes []string, err error) {
	curves, notes, err := Curves(a, pc)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(pc.Dir, 0o755); err != nil {
		return nil, nil, err
	}
	n, d := a.Dims()
	p := plot.New()
	p.Title.Text = fmt.Sprintf("John ellipsoid accuracy (n = %d, d = %d, xi = %g)", n, d, pc.Xi)
	p.X.Label.Text = "iterations"
	p.Y.Label.Text = "max_i h_i(v) - 1"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	const floor = 1e-12 // exact answers reach 0; the log axis needs a floor
	palette := []color.Color{
		color.RGBA{0, 0, 0, 255}, color.RGBA{31, 119, 180, 255}, color.RGBA{214, 39, 40, 255},
		color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255}, color.RGBA{148, 103, 189, 255},
	}
	maxIt := 1
	for i, c := range curves {
		pts := make(plotter.XYs, len(c.Iter))
		for k := range c.Iter {
			pts[k].X = float64(c.Iter[k])
			pts[k].Y = math.Max(c.Acc[k], floor)
			maxIt = max(maxIt, c.Iter[k])
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, nil, err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(c.Label, l)
	}
	target, err := plotter.NewLine(plotter.XYs{{X: 0, Y: pc.Xi}, {X: float64(maxIt), Y: pc.Xi}})
	if err != nil {
		return nil, nil, err
	}
	target.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	target.Color = color.Gray{Y: 120}
	target.Width = vg.Points(1)
	p.Add(target)
	p.Legend.Add(fmt.Sprintf("target xi = %g", pc.Xi), target)
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Legend.YPosition = draw.PosTop
	for _, ext := range []string{"png", "svg"} {
		f := filepath.Join(pc.Dir, "john_accuracy."+ext)
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, f); err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	return files, notes, nil
}
