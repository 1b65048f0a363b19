package audit

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// TradeoffFigure builds (without I/O) the trade-off figure of a result, named name (files
// name.png and name.svg): the region below the (eps, delta) curve that the claim forbids
// (shaded), its boundary AllowedFNR, for a Gaussian claim also the mu-GDP curves at MuClaimed
// (the claim's mu) and at MuGDP (the mu fitted to the trials, behind the GDP lower bound),
// each labelled with its mu, the mu-GDP curve the f-DP statistic rejects (at MuFDP) with the
// corners of its tests' joint regions (open circles), the empirical (FPR, FNR) curve of the trials (Result.Curve, when
// Options.CurvePoints > 0), and the bounded tests (FPR_up, FNR_up) that gave the CP and the
// GDP lower bounds, one marker each. A point of the empirical
// curve inside the shaded region is a violation seen by the point estimates; the verdict uses
// the upper bounds.
func TradeoffFigure(r *Result, name string) (*figure.Figure, error) {
	if r == nil {
		return nil, errors.New("audit: plot: nil result")
	}
	p := figure.New(tradeoffTitle(r), "FPR = P(guess x' | x)", "FNR = P(guess x | x')")
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	if err := addForbiddenRegion(p, r); err != nil {
		return nil, err
	}
	if err := addGDPCurves(p, r); err != nil {
		return nil, err
	}
	if err := addEmpiricalCurve(p, r); err != nil {
		return nil, err
	}
	if err := addBoundTests(p, r); err != nil {
		return nil, err
	}
	// square data area: the trade-off curve's symmetry is visible
	return &figure.Figure{Name: name, Panels: [][]*plot.Plot{{p}}, PanelHeight: figure.MaxPanelHeight}, nil
}

// tradeoffTitle is the figure's title: the claim, every lower bound the audit computes for the
// mechanism (Bounds; those a pure-eps audit does not, named n/a) and the verdict.
func tradeoffTitle(r *Result) string {
	var lbs, na []string // the bounds (Bounds), and those a pure-eps audit does not compute
	for _, b := range Bounds {
		if b.ValidFor(r.Mechanism) {
			lbs = append(lbs, fmt.Sprintf("%s %.3g", b.Label, b.Of(r)))
		} else {
			na = append(na, b.Label)
		}
	}
	if len(na) > 0 {
		lbs = append(lbs, strings.Join(na, ", ")+" n/a (pure eps)")
	}
	return fmt.Sprintf("Trade-off: claim eps = %.3g, delta = %.3g\nlower bounds on eps: %s - %s",
		r.EpsilonClaimed, r.Delta, strings.Join(lbs, ", "), r.Verdict)
}

// addForbiddenRegion shades the region below the (eps, delta) curve the claim forbids and draws
// its boundary FNR = AllowedFNR(eps, delta, FPR).
func addForbiddenRegion(p *plot.Plot, r *Result) error {
	const k = 400
	allowed := make(plotter.XYs, 0, k+1)
	for i := 0; i <= k; i++ {
		x := float64(i) / k
		allowed = append(allowed, plotter.XY{X: x, Y: AllowedFNR(r.EpsilonClaimed, r.Delta, x)})
	}
	region := append(plotter.XYs{{X: 0, Y: 0}}, allowed...)
	region = append(region, plotter.XY{X: 1, Y: 0})
	poly, err := plotter.NewPolygon(region)
	if err != nil {
		return fmt.Errorf("audit: plot: %w", err)
	}
	poly.Color = color.RGBA{R: 250, G: 200, B: 200, A: 255}
	poly.LineStyle.Width = 0
	p.Add(poly)
	p.Legend.Add("forbidden by the claim", poly)

	bl, err := plotter.NewLine(allowed)
	if err != nil {
		return fmt.Errorf("audit: plot: %w", err)
	}
	bl.Color = color.RGBA{R: 200, A: 255}
	bl.Width = vg.Points(1.5)
	p.Add(bl)
	p.Legend.Add(fmt.Sprintf("(eps, delta) = (%.3g, %.3g) boundary", r.EpsilonClaimed, r.Delta), bl)
	return nil
}

// addGDPCurves draws the mu-GDP curves of the result, each named by whose mu it is: the claim's
// (MuClaimed), the one fitted to the trials (MuGDP, behind the GDP lower bound), which differ,
// and the one the f-DP statistic rejects (MuFDP).
func addGDPCurves(p *plot.Plot, r *Result) error {
	if r.MuClaimed > 0 {
		if err := addGDPCurve(p, r.MuClaimed, color.RGBA{R: 200, G: 100, A: 255}, figure.Dashed,
			fmt.Sprintf("mu-GDP of the claim, mu = %.4g", r.MuClaimed)); err != nil {
			return err
		}
	}
	if r.GDP != nil && r.MuGDP > 0 {
		if err := addGDPCurve(p, r.MuGDP, figure.Color(4), figure.Dotted,
			fmt.Sprintf("mu-GDP fitted to the trials (lower bound), mu = %.4g", r.MuGDP)); err != nil {
			return err
		}
	}
	if len(r.FDP) > 0 && r.MuFDP > 0 {
		if err := addGDPCurve(p, r.MuFDP, figure.Color(2), figure.Dashed,
			fmt.Sprintf("mu-GDP the f-DP statistic rejects (lower bound), mu = %.4g", r.MuFDP)); err != nil {
			return err
		}
	}
	return nil
}

// addEmpiricalCurve draws the empirical (FPR, FNR) curve of the trials (Result.Curve; nothing
// without one).
func addEmpiricalCurve(p *plot.Plot, r *Result) error {
	if len(r.Curve) == 0 {
		return nil
	}
	e := make(plotter.XYs, len(r.Curve))
	for i, c := range r.Curve {
		e[i] = plotter.XY{X: c.FPR, Y: c.FNR}
	}
	el, err := plotter.NewLine(e)
	if err != nil {
		return fmt.Errorf("audit: plot: %w", err)
	}
	el.Color = figure.Color(0)
	el.Width = vg.Points(1.5)
	p.Add(el)
	p.Legend.Add(fmt.Sprintf("empirical (%d+%d trials)", r.Trials.X, r.Trials.XPrime), el)
	return nil
}

// addBoundTests marks the bounded tests (FPR_up, FNR_up) that gave the CP and the GDP lower
// bounds, and the corners of the f-DP tests' joint regions (open circles).
func addBoundTests(p *plot.Plot, r *Result) error {
	// One test may give both bounds (the same threshold chosen for each): drawn once, named so.
	same := r.GDP != nil && r.GDP.Threshold == r.CP.Threshold && r.GDP.Orientation == r.CP.Orientation
	cpName := "test giving the CP bound (FPR_up, FNR_up)"
	if same {
		cpName = "test giving the CP and GDP bounds (FPR_up, FNR_up)"
	}
	if err := addTestPoint(p, r.CP, draw.CrossGlyph{}, cpName); err != nil {
		return err
	}
	if r.GDP != nil && !same {
		if err := addTestPoint(p, *r.GDP, draw.PlusGlyph{}, "test giving the GDP bound (FPR_up, FNR_up)"); err != nil {
			return err
		}
	}
	for i, f := range r.FDP {
		name := "f-DP test: corner of its joint region"
		if i > 0 {
			name = "" // one legend entry for the f-DP tests
		}
		if err := addTestPoint(p, Bound{FPRUpper: f.FPRCorner, FNRUpper: f.FNRCorner}, draw.CircleGlyph{}, name); err != nil {
			return err
		}
	}
	return nil
}

// addGDPCurve draws the trade-off curve of mu-GDP, FNR = GDPFNR(mu, FPR), named name.
func addGDPCurve(p *plot.Plot, mu float64, col color.Color, dashes []vg.Length, name string) error {
	const k = 400
	g := make(plotter.XYs, 0, k+1)
	for i := 0; i <= k; i++ {
		x := float64(i) / k
		g = append(g, plotter.XY{X: x, Y: GDPFNR(mu, x)})
	}
	gl, err := plotter.NewLine(g)
	if err != nil {
		return fmt.Errorf("audit: plot: %w", err)
	}
	gl.Color, gl.Dashes, gl.Width = col, dashes, vg.Points(1.2)
	p.Add(gl)
	p.Legend.Add(name, gl)
	return nil
}

// addTestPoint marks the bounded error rates (FPR_up, FNR_up) of the test b, named name.
func addTestPoint(p *plot.Plot, b Bound, shape draw.GlyphDrawer, name string) error {
	sc, err := plotter.NewScatter(plotter.XYs{{X: b.FPRUpper, Y: b.FNRUpper}})
	if err != nil {
		return fmt.Errorf("audit: plot: %w", err)
	}
	sc.Shape, sc.Radius, sc.Color = shape, vg.Points(5), color.Black
	p.Add(sc)
	if name != "" {
		p.Legend.Add(name, sc)
	}
	return nil
}

// PlotTradeoff writes the trade-off figure (TradeoffFigure) as PNG and SVG: path with its
// .png/.svg extension (if any) replaced, i.e. "out/tradeoff" and "out/tradeoff.png" both give
// out/tradeoff.png and out/tradeoff.svg (each written atomically). It returns the written paths.
func PlotTradeoff(path string, r *Result) ([]string, error) {
	base := path
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".png" || ext == ".svg" {
		base = strings.TrimSuffix(path, filepath.Ext(path))
	}
	f, err := TradeoffFigure(r, filepath.Base(base))
	if err != nil {
		return nil, err
	}
	out, err := f.WriteFiles(filepath.Dir(base))
	if err != nil {
		return out, fmt.Errorf("audit: plot: %w", err)
	}
	return out, nil
}

// CompositionFigure builds (without I/O) the composition figure of reports of one scenario (named in the title)
// audited with k = 1, 2, 4, ... episodes per trial (dpsim audit --episodes-per-trial-sweep), named
// name: against k (log axis), the lower bounds eps_lb_cp and eps_lb_gdp (Gaussian) of each audit,
// the claim composed over k episodes, eps_run(k) (ComposeClaim, at every integer k of the range),
// and the per-episode claim eps. Bounds above eps_run would contradict the whole-run guarantee;
// bounds above eps alone show that the per-episode claim does not cover k episodes of one secret.
func CompositionFigure(scenario string, reports []*GameReport, name string) (*figure.Figure, error) {
	if len(reports) == 0 {
		return nil, errors.New("audit: composition plot: no reports")
	}
	r0 := reports[0]
	gauss := r0.Mechanism == string(privacy.Gaussian)
	kmin, kmax := r0.EpisodesPerTrial, r0.EpisodesPerTrial
	for _, r := range reports {
		if r.EpsilonClaimed != r0.EpsilonClaimed || r.Delta != r0.Delta || r.Mechanism != r0.Mechanism {
			return nil, errors.New("audit: composition plot: the reports audit different claims")
		}
		if r.EpisodesPerTrial < 1 {
			return nil, fmt.Errorf("audit: composition plot: %d episodes per trial", r.EpisodesPerTrial)
		}
		kmin, kmax = min(kmin, r.EpisodesPerTrial), max(kmax, r.EpisodesPerTrial)
	}
	claim := fmt.Sprintf("eps = %.3g", r0.EpsilonClaimed)
	if gauss {
		claim += fmt.Sprintf(", delta = %.3g", r0.Delta)
	}
	p := figure.New(fmt.Sprintf("Composition: %s, per-episode claim %s; k episodes of one secret per trial", scenario, claim),
		"k = episodes per trial", "eps")
	lg := func(k int) float64 { return figure.Lg(float64(k)) }

	// the composed claim at every integer k, and the per-episode claim
	run := make(plotter.XYs, 0, kmax-kmin+1)
	for k := kmin; k <= kmax; k++ {
		e, err := ComposeClaim(privacy.Mechanism(r0.Mechanism), r0.EpsilonClaimed, r0.Delta, k)
		if err != nil {
			return nil, fmt.Errorf("audit: composition plot: %w", err)
		}
		run = append(run, plotter.XY{X: lg(k), Y: e})
	}
	rl, err := plotter.NewLine(run)
	if err != nil {
		return nil, fmt.Errorf("audit: composition plot: %w", err)
	}
	rl.Color, rl.Width, rl.Dashes = figure.Color(1), figure.LineWidth, figure.Dashed
	p.Add(rl)
	how := "sqrt(k) mu-GDP"
	if !gauss {
		how = "k eps"
	}
	p.Legend.Add(fmt.Sprintf("composed claim eps_run(k) (%s): the verdict's", how), rl)
	el, err := plotter.NewLine(plotter.XYs{{X: lg(kmin), Y: r0.EpsilonClaimed}, {X: lg(kmax), Y: r0.EpsilonClaimed}})
	if err != nil {
		return nil, fmt.Errorf("audit: composition plot: %w", err)
	}
	el.Color, el.Width, el.Dashes = figure.Grey, figure.LineWidth, figure.Dotted
	p.Add(el)
	p.Legend.Add(fmt.Sprintf("per-episode claim eps = %.3g", r0.EpsilonClaimed), el)

	// the lower bounds of each audit, in k order
	sorted := slices.Clone(reports)
	slices.SortFunc(sorted, func(a, b *GameReport) int { return a.EpisodesPerTrial - b.EpisodesPerTrial })
	var ss []LowerBound // the bounds the figure plots (LowerBound.Composition)
	for _, b := range Bounds {
		if b.Composition != "" && b.ValidFor(r0.Mechanism) {
			ss = append(ss, b)
		}
	}
	top := run[len(run)-1].Y
	for i, s := range ss {
		xy := make(plotter.XYs, len(sorted))
		for j, r := range sorted {
			xy[j] = plotter.XY{X: lg(r.EpisodesPerTrial), Y: s.OfReport(r)}
			top = math.Max(top, xy[j].Y)
		}
		line, sc, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("audit: composition plot: %w", err)
		}
		col := figure.Color(2 * i)
		line.Color, line.Width = col, figure.LineWidth
		sc.Color, sc.Shape, sc.Radius = col, figure.Marker(i), vg.Points(3.5)
		p.Add(line, sc)
		p.Legend.Add(s.Composition, line, sc)
	}
	figure.SetLogX(p, float64(kmin), float64(kmax))
	p.Y.Min, p.Y.Max = 0, top
	figure.Fit(p)
	return &figure.Figure{Name: name, Panels: [][]*plot.Plot{{p}},
		Caption: "Lower bounds on eps of audits whose trials each play k episodes of the same secret, against the claim composed over k episodes (dashed) and the per-episode claim (dotted)."}, nil
}

// PlotComposition writes the composition figure (CompositionFigure) of scenario as dir/name.png
// and .svg and returns the written paths.
func PlotComposition(dir, name, scenario string, reports []*GameReport) ([]string, error) {
	f, err := CompositionFigure(scenario, reports, name)
	if err != nil {
		return nil, err
	}
	out, err := f.WriteFiles(dir)
	if err != nil {
		return out, fmt.Errorf("audit: composition plot: %w", err)
	}
	return out, nil
}
