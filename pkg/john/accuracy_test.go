package john

import (
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/rng"
)

// gaussianRows is the matrix dpsim john's tests write as a CSV (the same seed and label, so
// the same rows): n seeded Gaussian rows of dimension d.
func gaussianRows(n, d int) *mat.Dense {
	r := rng.New(3, rng.Label("cli-test"))
	a := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			a.Set(i, j, r.NormFloat64())
		}
	}
	return a
}

// TestAccuracyCurves: the exact curve ends below its default accuracy, the dp curves are
// labelled by epsilon, and the figure passes the house style; with a zero row no calibration
// is possible and the dp curves fall back to fixed sigmas.
func TestAccuracyCurves(t *testing.T) {
	a := gaussianRows(300, 3)
	curves, _, err := Curves(a, PlotConfig{Xi: 0.1, MaxIter: 120, Seed: 2, Delta: 1e-6, Eps0: 1e-3, Epsilons: []float64{0.5, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(curves) != 5 || curves[0].Label != ExactLabel || !strings.HasPrefix(curves[2].Label, "dp eps=0.5") {
		t.Fatalf("curves %d, labels %q %q", len(curves), curves[0].Label, curves[2].Label)
	}
	if last := curves[0].Acc[len(curves[0].Acc)-1]; last > 1e-9 {
		t.Errorf("exact curve ends at %g above 1e-9 (its default accuracy)", last)
	}
	fig, err := AccuracyFigure(a, 0.1, curves)
	if err != nil {
		t.Fatal(err)
	}
	if err := fig.Check(); err != nil {
		t.Error(err)
	}
	// A zero row: no calibration possible, the dp curves fall back to fixed sigmas.
	a = mat.NewDense(4, 2, []float64{1, 0, 0, 1, 0, 0, 1, 1})
	curves, notes, err := Curves(a, PlotConfig{Xi: 0.1, MaxIter: 20, Seed: 2, Delta: 1e-6, Eps0: 1e-3, Epsilons: []float64{1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) == 0 || len(curves) != 2+len(FallbackSigmas) {
		t.Errorf("fallback: notes %q, %d curves", notes, len(curves))
	}
}

// The cube's uniform weights are optimal from the start: the exact curve is one point, not a
// panic, and the figure still passes the house style.
func TestCurvesWhenExactStartsOptimal(t *testing.T) {
	a := mat.NewDense(3, 3, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1})
	curves, _, err := Curves(a, PlotConfig{Xi: 0.1, MaxIter: 20, Seed: 2, Delta: 1e-6, Eps0: 1e-3, Epsilons: []float64{1}})
	if err != nil {
		t.Fatal(err)
	}
	if c := curves[0]; c.Label != ExactLabel || len(c.Iter) != 1 || c.Acc[0] > 1e-9 {
		t.Fatalf("exact curve %+v", c)
	}
	fig, err := AccuracyFigure(a, 0.1, curves)
	if err != nil {
		t.Fatal(err)
	}
	if err := fig.Check(); err != nil {
		t.Error(err)
	}
}
