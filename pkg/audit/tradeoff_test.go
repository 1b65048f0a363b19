package audit

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpsim/dpsim/pkg/privacy"
)

func TestAllowedAndGDPCurves(t *testing.T) {
	// eps = 0, delta = 0: no test beats random guessing, FNR = 1 - FPR; mu = 0 likewise.
	for _, x := range []float64{0, 0.1, 0.5, 0.9, 1} {
		if v := AllowedFNR(0, 0, x); math.Abs(v-(1-x)) > 1e-15 {
			t.Errorf("AllowedFNR(0,0,%v) = %v", x, v)
		}
		if v := GDPFNR(0, x); math.Abs(v-(1-x)) > 1e-15 {
			t.Errorf("GDPFNR(0,%v) = %v", x, v)
		}
	}
	// Known value: eps = ln 2, delta = 0.1, FPR = 0.2: max(0, 0.9 - 0.4, 0.5*0.7) = 0.5.
	if v := AllowedFNR(math.Ln2, 0.1, 0.2); math.Abs(v-0.5) > 1e-15 {
		t.Errorf("AllowedFNR(ln2, 0.1, 0.2) = %v, want 0.5", v)
	}
	// The mu-GDP curve with mu = KappaInverse(eps, delta) is (eps, delta)-DP: it lies above the allowed
	// curve everywhere and touches it (the conversion is tight, Dong-Roth-Su Cor. 2.13).
	for _, c := range []struct{ eps, delta float64 }{{1, 1e-5}, {0.5, 1e-2}, {3, 1e-6}} {
		mu := mustMu(t, c.eps, c.delta)
		gap := math.Inf(1)
		for i := 0; i <= 200000; i++ {
			x := math.Pow(10, -12*float64(i)/200000) // 1 down to 1e-12
			d := GDPFNR(mu, x) - AllowedFNR(c.eps, c.delta, x)
			if d < -1e-12 {
				t.Fatalf("eps=%g: GDP curve below the allowed curve at FPR %g by %g", c.eps, x, -d)
			}
			gap = math.Min(gap, d)
		}
		if gap > 1e-6 {
			t.Errorf("eps=%g: GDP curve never touches the allowed curve (min gap %g)", c.eps, gap)
		}
		// And with a 1% larger mu it crosses below: the claim would be violated.
		crossed := false
		for i := 0; i <= 20000 && !crossed; i++ {
			x := math.Pow(10, -12*float64(i)/20000)
			crossed = GDPFNR(1.01*mu, x) < AllowedFNR(c.eps, c.delta, x)
		}
		if !crossed {
			t.Errorf("eps=%g: mu*1.01 still inside the allowed region", c.eps)
		}
	}
}

// The empirical curve runs from (1, 0) to (0, 1) monotonically and matches the exact mu-GDP curve of
// N(0,1) vs N(mu,1) scores within the Kolmogorov-Smirnov 99.9% band (1.95/sqrt(n) per side).
func TestEmpiricalCurve(t *testing.T) {
	const n = 200000
	mu := 1.0
	r := analyze(t, gaussTrials(61, n, mu), Options{EpsilonClaimed: 5, Delta: 1e-5, CurvePoints: 300})
	c := r.Curve
	if len(c) < 250 {
		t.Fatalf("%d curve points", len(c))
	}
	if c[0].FPR != 1 || c[0].FNR != 0 || c[len(c)-1].FPR != 0 || c[len(c)-1].FNR != 1 {
		t.Errorf("end points %+v %+v", c[0], c[len(c)-1])
	}
	band := 1.95 / math.Sqrt(n)
	for i, p := range c {
		if i > 0 && (p.FPR > c[i-1].FPR || p.FNR < c[i-1].FNR) {
			t.Fatalf("not monotone at %d: %+v after %+v", i, p, c[i-1])
		}
		if math.Abs(p.Threshold) > 1e300 {
			continue
		}
		if e := math.Abs(p.FPR - privacy.Phi(-p.Threshold)); e > band {
			t.Errorf("FPR at tau %v: %v vs %v", p.Threshold, p.FPR, privacy.Phi(-p.Threshold))
		}
		if e := math.Abs(p.FNR - privacy.Phi(p.Threshold-mu)); e > band {
			t.Errorf("FNR at tau %v: %v vs %v", p.Threshold, p.FNR, privacy.Phi(p.Threshold-mu))
		}
	}
}

func TestPlotTradeoff(t *testing.T) {
	mu := mustMu(t, 1, 1e-5)
	r := analyze(t, gaussTrials(71, 20000, mu), Options{EpsilonClaimed: 1, Delta: 1e-5, CurvePoints: 200})
	dir := t.TempDir()
	files, err := PlotTradeoff(filepath.Join(dir, "tradeoff.png"), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0] != filepath.Join(dir, "tradeoff.png") || files[1] != filepath.Join(dir, "tradeoff.svg") {
		t.Fatalf("files %v", files)
	}
	png, _ := os.ReadFile(files[0])
	svg, _ := os.ReadFile(files[1])
	if !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 5000 {
		t.Errorf("PNG: %d bytes", len(png))
	}
	if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("forbidden")) {
		t.Errorf("SVG: %d bytes, no legend", len(svg))
	}
	if _, err := PlotTradeoff(filepath.Join(dir, "missing", "x"), r); err == nil {
		t.Error("unwritable path accepted")
	}
	if _, err := TradeoffFigure(nil, "x"); err == nil {
		t.Error("nil result accepted")
	}
	// the house style, for a Gaussian and a Laplace claim
	for _, res := range []*Result{r, analyze(t, gaussTrials(72, 2000, mu), Options{EpsilonClaimed: 1, Mechanism: privacy.Laplace, CurvePoints: 50})} {
		f, err := TradeoffFigure(res, "tradeoff")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Check(); err != nil {
			t.Error(err)
		}
	}
}
