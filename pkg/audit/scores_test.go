package audit

import (
	"errors"
	"math"
	"testing"

	"github.com/dpsim/dpsim/pkg/rng"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// The LLR scores equal the log-density ratios computed independently with gonum's distributions.
func TestLLRMatchesDensities(t *testing.T) {
	r := rng.New(1, rng.Label("llr"))
	m0 := []float64{0.3, -1.2, 2.0}
	m1 := []float64{1.1, -0.7, 2.0}
	obs := make([]float64, 3)
	for it := 0; it < 200; it++ {
		for j := range obs {
			obs[j] = 4 * (r.Float64() - 0.5)
		}
		for _, sigma := range []float64{0.5, 1, 3} {
			var want float64
			for j, o := range obs {
				want += distuv.Normal{Mu: m1[j], Sigma: sigma}.LogProb(o) - distuv.Normal{Mu: m0[j], Sigma: sigma}.LogProb(o)
			}
			if got := GaussianLLR(obs, m0, m1, sigma); math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
				t.Fatalf("GaussianLLR = %.15g, want %.15g", got, want)
			}
		}
		for _, b := range []float64{0.5, 2} {
			var want float64
			for j, o := range obs {
				want += distuv.Laplace{Mu: m1[j], Scale: b}.LogProb(o) - distuv.Laplace{Mu: m0[j], Scale: b}.LogProb(o)
			}
			if got := LaplaceLLR(obs, m0, m1, b); math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
				t.Fatalf("LaplaceLLR = %.15g, want %.15g", got, want)
			}
		}
	}
	for _, bad := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if !math.IsNaN(GaussianLLR(obs, m0, m1, bad)) || !math.IsNaN(LaplaceLLR(obs, m0, m1, bad)) {
			t.Errorf("scale %v accepted", bad)
		}
	}
	if !math.IsNaN(GaussianLLR(obs[:2], m0, m1, 1)) || !math.IsNaN(LaplaceLLR(obs, m0[:2], m1, 1)) {
		t.Error("length mismatch accepted")
	}
}

// The clamped Laplace term gives bit-identical atoms in the tails. The naive |o-m0| - |o-m1| does not:
// for an observation o = m0 + noise in (-1, 0) (the x side, full precision) 1 - o rounds and the atom -1
// comes out as -1 +- ulps, while for o = m1 + noise (the x' side, o already on the coarser grid of 1 +
// noise) it is exact; a threshold between the rounded copies then separates the hypotheses through
// floating point alone (the auditor found exactly this on an early version: eps_lb ~ 3.5 for eps = 1).
func TestLaplaceLLRExactAtoms(t *testing.T) {
	r := rng.New(2, rng.Label("atoms"))
	m0, m1 := []float64{0}, []float64{1}
	o := []float64{0}
	naive := map[float64]bool{}
	for i := 0; i < 10000; i++ {
		o[0] = -r.Float64() // x side, o <= 0: the LLR is exactly -1
		if s := LaplaceLLR(o, m0, m1, 1); s != -1 {
			t.Fatalf("o=%v: LLR %v, want exactly -1", o[0], s)
		}
		naive[math.Abs(o[0]-0)-math.Abs(o[0]-1)] = true
		o[0] = 1 + 3*r.Float64()
		if s := LaplaceLLR(o, m0, m1, 1); s != 1 {
			t.Fatalf("o=%v: LLR %v, want exactly 1", o[0], s)
		}
	}
	if len(naive) < 2 {
		t.Errorf("naive form gave %d distinct atom values; the clamped form's justification is gone", len(naive))
	}
}

func TestGaussianScorer(t *testing.T) {
	m0 := []float64{1, 0, -1}
	m1 := []float64{1.5, 0.2, -1}
	full := mat.NewSymDense(3, []float64{2, 0.3, 0.1, 0.3, 1, -0.2, 0.1, -0.2, 0.5})
	g, err := NewGaussianScorer(m0, m1, full)
	if err != nil {
		t.Fatal(err)
	}
	// Independent reference: quadratic forms through a Cholesky solve (the constants cancel).
	var chol mat.Cholesky
	if !chol.Factorize(full) {
		t.Fatal("cholesky")
	}
	quad := func(o, m []float64) float64 {
		v := make([]float64, len(o))
		for j := range o {
			v[j] = o[j] - m[j]
		}
		var w mat.VecDense
		if err := chol.SolveVecTo(&w, mat.NewVecDense(len(v), v)); err != nil {
			t.Fatal(err)
		}
		return mat.Dot(mat.NewVecDense(len(v), v), &w)
	}
	r := rng.New(3, rng.Label("scorer"))
	obs := make([]float64, 3)
	for it := 0; it < 100; it++ {
		for j := range obs {
			obs[j] = 3 * (r.Float64() - 0.5)
		}
		want := -0.5*quad(obs, m1) + 0.5*quad(obs, m0)
		if got := g.Score(obs); math.Abs(got-want) > 1e-10*(1+math.Abs(want)) {
			t.Fatalf("score %.15g, want %.15g", got, want)
		}
	}
	// Mu = sqrt(d' C^-1 d).
	var C mat.Dense
	if err := C.Inverse(full); err != nil {
		t.Fatal(err)
	}
	d := mat.NewVecDense(3, []float64{0.5, 0.2, 0})
	if want := math.Sqrt(mat.Inner(d, &C, d)); math.Abs(g.Mu()-want) > 1e-12 {
		t.Errorf("Mu = %.15g, want %.15g", g.Mu(), want)
	}

	// Singular covariance (rank 2, the third coordinate noiseless): a difference inside the range is
	// scored like the whitened 2-D problem; one with a component on the noiseless coordinate is
	// perfectly distinguishable.
	sing := mat.NewSymDense(3, []float64{4, 0, 0, 0, 1, 0, 0, 0, 0})
	g2, err := NewGaussianScorer(m0, m1, sing)
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Hypot(0.5/2, 0.2/1); math.Abs(g2.Mu()-want) > 1e-12 {
		t.Errorf("singular Mu = %v, want %v", g2.Mu(), want)
	}
	obs = []float64{1.3, -0.4, 7} // the noiseless coordinate does not count
	want := (1.3-1.25)*0.5/4 + (-0.4-0.1)*0.2/1
	if got := g2.Score(obs); math.Abs(got-want) > 1e-12 {
		t.Errorf("singular score %v, want %v", got, want)
	}
	if _, err := NewGaussianScorer(m0, []float64{1.5, 0.2, -0.9}, sing); !errors.Is(err, ErrDistinguishable) {
		t.Errorf("difference outside the range: err = %v, want ErrDistinguishable", err)
	}
	for _, c := range []struct {
		name   string
		m0, m1 []float64
		cov    mat.Symmetric
	}{
		{"equal means", m0, m0, full},
		{"dim", m0, m1[:2], full},
		{"nil cov", m0, m1, nil},
		{"not psd", m0, m1, mat.NewSymDense(3, []float64{1, 0, 0, 0, -1, 0, 0, 0, 1})},
		{"zero cov", m0, m1, mat.NewSymDense(3, nil)},
	} {
		if _, err := NewGaussianScorer(c.m0, c.m1, c.cov); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

// ProjectionScore reuses estimate.ProjectScore with the game's orientation: +1/2 at x', -1/2 at x.
func TestProjectionScoreOrientation(t *testing.T) {
	x := []float64{1, 2}
	xp := []float64{1, 3}
	if s := ProjectionScore(xp, x, xp); s != 0.5 {
		t.Errorf("at x': %v, want 0.5", s)
	}
	if s := ProjectionScore(x, x, xp); s != -0.5 {
		t.Errorf("at x: %v, want -0.5", s)
	}
	if s := ProjectionScore(x, x, x); !math.IsNaN(s) {
		t.Errorf("x = x': %v, want NaN", s)
	}
}

func TestScoresAllocationFree(t *testing.T) {
	m0, m1, o := []float64{0, 1}, []float64{1, 1}, []float64{0.3, 0.9}
	g, err := NewGaussianScorer(m0, m1, mat.NewSymDense(2, []float64{1, 0, 0, 1}))
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTrials(200)
	var sink float64
	a := testing.AllocsPerRun(100, func() {
		sink += GaussianLLR(o, m0, m1, 1) + LaplaceLLR(o, m0, m1, 1) + g.Score(o) + ProjectionScore(o, m0, m1)
		tr.Add(0, sink)
	})
	if a != 0 {
		t.Errorf("%v allocations per scored trial, want 0", a)
	}
}
