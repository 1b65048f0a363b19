package john

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/rng"
)

// The accuracy experiment: max_i h_i(v) - 1, the verified accuracy of each method's output
// (h_i(v) = a_i^T Q^{-1} a_i, Q = A^T diag(v) A), against its iterations, for the exact method
// (Wolfe-Atwood, Todd and Yildirim 2007) and for Algorithm 1 of Gu et al. without (fast) and
// with (dp) noise, drawn in pkg/figure's one plot style.

// PlotConfig parameterises the accuracy plot.
type PlotConfig struct {
	Dir     string
	Xi      float64
	MaxIter int // 0: the fast method's default T
	Seed    uint64
	Workers int
	// dp curves: one per epsilon, noise calibrated with Delta and Eps0 (heuristic, see
	// CalibrateNoise); if the local sensitivity is unbounded the curves use the fixed
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
// checkpoints.
func traceRun(a *mat.Dense, cfg Config, T int, label string) (Curve, error) {
	s, err := NewSolver(a, cfg)
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
	}
	return c, nil
}

// ExactLabel names the exact method's curve.
const ExactLabel = "exact (Wolfe-Atwood, O(nd) per iteration)"

// Curves runs exact (ExactTrace), fast and dp (one curve per epsilon) on a for the plot.
// notes explain fallbacks.
func Curves(a *mat.Dense, pc PlotConfig) (curves []Curve, notes []string, err error) {
	n, d := a.Dims()
	T := pc.MaxIter
	if T == 0 {
		T = DefaultMaxIter(Fast, n, d, pc.Xi, DefaultSketchSize(pc.Xi))
	}
	base := Config{Xi: pc.Xi, Workers: pc.Workers, MaxIter: 1 << 30}
	run := func(cfg Config, label string, stream string) error {
		cfg.Seed = rng.Derive(pc.Seed, rng.Label("john-plot"), rng.Label(stream))
		c, err := traceRun(a, cfg, T, label)
		if err != nil {
			return fmt.Errorf("%s curve: %w", label, err)
		}
		curves = append(curves, c)
		return nil
	}
	ex, err := exactCurve(a)
	if err != nil {
		return nil, nil, err
	}
	curves = append(curves, ex)
	fast := base
	fast.Method = Fast
	if err := run(fast, string(Fast), string(Fast)); err != nil {
		return nil, nil, err
	}
	// dp: calibrate sigma per epsilon from the local sensitivity at w_1.
	w1 := make([]float64, n)
	for i := range w1 {
		w1[i] = float64(d) / float64(n)
	}
	sens, err := LocalSensitivity(a, w1, pc.Eps0)
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
			sigma, err := CalibrateNoise(sens, T, eps, pc.Delta)
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
		cfg.Method, cfg.NoiseScale = DP, r.sigma
		if err := run(cfg, r.label, r.label); err != nil {
			return nil, nil, err
		}
	}
	return curves, notes, nil
}

// exactCurve is the exact method's curve: the Wolfe-Atwood iterations dpsim john --method exact
// runs, to its default accuracy; its x axis counts its own (cheaper, O(n d)) iterations.
func exactCurve(a *mat.Dense) (Curve, error) {
	tr, err := ExactTrace(a, DefaultXiExact, MaxIterWolfeAtwood)
	if err != nil {
		return Curve{}, fmt.Errorf("exact curve: %w", err)
	}
	ex := Curve{Label: ExactLabel}
	if len(tr) == 1 {
		// optimal at the start (a symmetric polytope): the flat curve of a method that has
		// nothing left to do, drawn from iteration 1 on the log axis
		ex.Iter, ex.Acc = []int{1}, []float64{tr[0].MaxLeverage - 1}
	}
	for _, it := range checkpoints(len(tr) - 1) {
		if it < len(tr) {
			ex.Iter = append(ex.Iter, it)
			ex.Acc = append(ex.Acc, tr[it].MaxLeverage-1)
		}
	}
	return ex, nil
}

// Plot writes john_accuracy.png and john_accuracy.svg into pc.Dir (created if needed):
// max_i h_i(v) - 1 against iterations, both on log scales, with the target xi dashed.
func Plot(a *mat.Dense, pc PlotConfig) (files, notes []string, err error) {
	curves, notes, err := Curves(a, pc)
	if err != nil {
		return nil, nil, err
	}
	f, err := AccuracyFigure(a, pc.Xi, curves)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(pc.Dir, 0o755); err != nil {
		return nil, nil, err
	}
	files, err = f.WriteFiles(pc.Dir)
	return files, notes, err
}

// accuracyFloor is where the log axis ends: an answer exact to rounding reaches 0.
const accuracyFloor = 1e-12

// AccuracyFigure draws the curves (no I/O): max_i h_i - 1 against iterations, both on log
// scales, with the target xi dashed.
func AccuracyFigure(a *mat.Dense, xi float64, curves []Curve) (*figure.Figure, error) {
	n, d := a.Dims()
	p := figure.New(fmt.Sprintf("John ellipsoid accuracy (n = %d, d = %d, xi = %g)", n, d, xi), "iterations", "max_i h_i(v) - 1")
	maxIt, lo, hi := 1, xi, xi
	exact := false // a value exact to rounding (at most accuracyFloor)
	for _, c := range curves {
		for k := range c.Iter {
			maxIt = max(maxIt, c.Iter[k])
			hi = math.Max(hi, c.Acc[k])
			if c.Acc[k] > accuracyFloor {
				lo = math.Min(lo, c.Acc[k])
			} else {
				exact = true
			}
		}
	}
	if exact {
		// the axis's lower edge, a decade below the smallest other value, stands for exact:
		// a fixed 1e-12 would leave most of the axis empty between it and the other curves
		lo /= 10
	}
	floor, _ := figure.SetLogY(p, lo, hi)
	figure.SetLogX(p, 1, float64(maxIt))
	for i, c := range curves {
		var pts plotter.XYs
		for k := range c.Iter {
			if c.Iter[k] < 1 {
				continue
			}
			pts = append(pts, plotter.XY{X: figure.Lg(float64(c.Iter[k])), Y: figure.Lg(math.Max(c.Acc[k], floor))})
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = figure.Color(i), figure.LineWidth
		if c.Label == ExactLabel {
			l.Color = color.Black
		}
		p.Add(l)
		if len(pts) > 1 {
			p.Legend.Add(c.Label, l)
			continue
		}
		// one point (a method optimal from the start) draws no line: a marker shows it
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape, sc.Radius = l.Color, figure.Marker(i), vg.Points(4)
		p.Add(sc)
		p.Legend.Add(c.Label, l, sc)
	}
	target, err := plotter.NewLine(plotter.XYs{{X: 0, Y: figure.Lg(xi)}, {X: figure.Lg(float64(maxIt)), Y: figure.Lg(xi)}})
	if err != nil {
		return nil, err
	}
	target.Dashes, target.Color, target.Width = figure.Dashed, figure.Grey, vg.Points(1)
	p.Add(target)
	p.Legend.Add(fmt.Sprintf("target xi = %g (fast, dp)", xi), target)
	return &figure.Figure{Name: "john_accuracy", Panels: [][]*plot.Plot{{p}},
		Caption: "Largest leverage minus one of each method's output against its iterations; exact runs to 1e-9; a value exact to rounding (at most 1e-12) is drawn on the lower edge of the axis."}, nil
}
