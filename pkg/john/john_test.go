package john

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpsim/dpsim/pkg/rng"
	"gonum.org/v1/gonum/mat"
)

// randomPolytope returns n rows with iid N(0,1) entries (seeded).
func randomPolytope(n, d int, seed uint64) *mat.Dense {
	r := rng.New(seed, rng.Label("test-polytope"))
	a := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			a.Set(i, j, r.NormFloat64())
		}
	}
	return a
}

func identityRows(d int) *mat.Dense {
	a := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		a.Set(i, i, 1)
	}
	return a
}

// crossPolytope returns the 2^(d-1) sign vectors with first entry +1 (s and -s give the
// same constraint |s^T x| <= 1): P = {x : sum |x_i| <= 1}.
func crossPolytope(d int) *mat.Dense {
	n := 1 << (d - 1)
	a := mat.NewDense(n, d, nil)
	for r := 0; r < n; r++ {
		a.Set(r, 0, 1)
		for j := 1; j < d; j++ {
			if r>>(j-1)&1 == 1 {
				a.Set(r, j, -1)
			} else {
				a.Set(r, j, 1)
			}
		}
	}
	return a
}

func maxAbsDiffSym(q *mat.SymDense, want func(i, j int) float64) float64 {
	n := q.SymmetricDim()
	m := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			m = math.Max(m, math.Abs(q.At(i, j)-want(i, j)))
		}
	}
	return m
}

func eye(s float64) func(i, j int) float64 {
	return func(i, j int) float64 {
		if i == j {
			return s
		}
		return 0
	}
}

// TestKnownAnswers: the cube {|x_i| <= 1} has the unit ball as John ellipsoid (Q = I),
// the cross-polytope the ball of radius 1/sqrt(d) (Q = d I), both with h_i = 1 exactly.
func TestKnownAnswers(t *testing.T) {
	cases := []struct {
		name  string
		a     *mat.Dense
		qDiag float64
	}{
		{"cube d=1", identityRows(1), 1},
		{"cube d=5", identityRows(5), 1},
		{"cube d=20", identityRows(20), 1},
		{"cross d=2", crossPolytope(2), 2},
		{"cross d=3", crossPolytope(3), 3},
		{"cross d=6", crossPolytope(6), 6},
		{"cross d=9", crossPolytope(9), 9},
	}
	for _, tc := range cases {
		{
			t.Run(tc.name, func(t *testing.T) {
				res, err := Solve(tc.a, Config{Method: Exact, Xi: 1e-9, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				n, d := tc.a.Dims()
				if math.Abs(res.SumWeights-float64(d)) > 1e-9 {
					t.Errorf("sum v = %.12g, want %d", res.SumWeights, d)
				}
				// Symmetric polytopes: the uniform weights d/n are the fixed point.
				for i, v := range res.Weights {
					if math.Abs(v-float64(d)/float64(n)) > 1e-9 {
						t.Fatalf("v[%d] = %g, want %g", i, v, float64(d)/float64(n))
					}
				}
				if e := maxAbsDiffSym(res.Q, eye(tc.qDiag)); e > 1e-9 {
					t.Errorf("Q differs from %g I by %g", tc.qDiag, e)
				}
				if math.Abs(res.MaxLeverage-1) > 1e-9 {
					t.Errorf("max h = %.12g, want 1", res.MaxLeverage)
				}
				if want := float64(d) * math.Log(tc.qDiag); math.Abs(res.LogDetQ-want) > 1e-9 {
					t.Errorf("log det Q = %g, want %g", res.LogDetQ, want)
				}
			})
		}
	}
}

// stack returns the rows of a followed by extra rows.
func stack(a *mat.Dense, extra [][]float64) *mat.Dense {
	n, d := a.Dims()
	out := mat.NewDense(n+len(extra), d, nil)
	out.Slice(0, n, 0, d).(*mat.Dense).Copy(a)
	for i, r := range extra {
		out.SetRow(n+i, r)
	}
	return out
}

func relDiff(q, ref *mat.SymDense) float64 {
	var d mat.Dense
	d.Sub(q, ref)
	return mat.Norm(&d, 2) / mat.Norm(ref, 2)
}

// TestDuplicateAndRedundantRows: a duplicated row shares its weight (the two copies split
// it equally) and a redundant row (0.5 a_i, whose slab |0.5 a_i^T x| <= 1 contains P) gets
// weight 0; the ellipsoid Q is unchanged.
func TestDuplicateAndRedundantRows(t *testing.T) {
	base := randomPolytope(40, 3, 21)
	const xi = 1e-9
	cfg := Config{Method: Exact, Xi: xi, MaxIter: 20000}
	ref, err := Solve(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !ref.Converged {
		t.Fatalf("reference did not converge: max h = %.12g after %d iterations", ref.MaxLeverage, ref.Iterations)
	}
	// Row with the largest weight: the interesting one to duplicate or shadow.
	top := 0
	for i, v := range ref.Weights {
		if v > ref.Weights[top] {
			top = i
		}
	}
	row := base.RawRowView(top)
	half := make([]float64, len(row))
	for k, x := range row {
		half[k] = 0.5 * x
	}
	cases := []struct {
		name  string
		extra [][]float64
		check func(t *testing.T, v []float64)
	}{
		{"duplicate", [][]float64{row}, func(t *testing.T, v []float64) {
			if got, want := v[top]+v[40], ref.Weights[top]; math.Abs(got-want) > 1e-5 {
				t.Errorf("v_top + v_copy = %g, want %g", got, want)
			}
			if math.Abs(v[top]-v[40]) > 1e-9 {
				t.Errorf("copies get %g and %g, want equal shares", v[top], v[40])
			}
		}},
		{"triplicate", [][]float64{row, row}, func(t *testing.T, v []float64) {
			if got, want := v[top]+v[40]+v[41], ref.Weights[top]; math.Abs(got-want) > 1e-5 {
				t.Errorf("sum over copies = %g, want %g", got, want)
			}
		}},
		{"redundant 0.5 a_i", [][]float64{half}, func(t *testing.T, v []float64) {
			if v[40] > 1e-8 {
				t.Errorf("redundant row weight %g, want 0", v[40])
			}
		}},
		{"redundant and duplicate", [][]float64{half, row, half}, func(t *testing.T, v []float64) {
			if v[40] > 1e-8 || v[42] > 1e-8 {
				t.Errorf("redundant rows weights %g, %g, want 0", v[40], v[42])
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Solve(stack(base, tc.extra), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Converged {
				t.Fatalf("max h = %.12g after %d iterations", res.MaxLeverage, res.Iterations)
			}
			if math.Abs(res.SumWeights-3) > 1e-9 {
				t.Errorf("sum v = %g, want 3", res.SumWeights)
			}
			if e := relDiff(res.Q, ref.Q); e > 1e-4 {
				t.Errorf("Q differs from the reference by %g (relative)", e)
			}
			if math.Abs(res.LogDetQ-ref.LogDetQ) > 1e-6 {
				t.Errorf("log det Q = %.10g, reference %.10g", res.LogDetQ, ref.LogDetQ)
			}
			tc.check(t, res.Weights)
		})
	}
}

// TestKnownWeights: polytopes whose John weights are not the uniform start d/n.
func TestKnownWeights(t *testing.T) {
	cases := []struct {
		name    string
		rows    [][]float64
		weights []float64
		q       []float64 // row-major d x d
	}{
		// d = 1: P = {|x| <= 1/2}; the two rows with |a| = 2 share the weight.
		{"interval", [][]float64{{0.5}, {2}, {1}, {-2}, {0.1}}, []float64{0, 0.5, 0, 0.5, 0}, []float64{4}},
		// box |x| <= 1, |y| <= 1/2 plus the redundant diagonal |x/2 + y/2| <= 1 (max 3/4 on the box).
		{"box with redundant diagonal", [][]float64{{1, 0}, {0, 2}, {0.5, 0.5}}, []float64{1, 1, 0}, []float64{1, 0, 0, 4}},
		// box with a duplicated side: the copies share it.
		{"box with duplicated side", [][]float64{{1, 0}, {0, 3}, {0, 3}}, []float64{1, 0.5, 0.5}, []float64{1, 0, 0, 9}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := len(tc.rows[0])
			a := mat.NewDense(len(tc.rows), d, nil)
			for i, r := range tc.rows {
				a.SetRow(i, r)
			}
			res, err := Solve(a, Config{Method: Exact, Xi: 1e-10, MaxIter: 5000})
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range res.Weights {
				if math.Abs(v-tc.weights[i]) > 1e-6 {
					t.Errorf("v[%d] = %.9g, want %g", i, v, tc.weights[i])
				}
			}
			if e := maxAbsDiffSym(res.Q, func(i, j int) float64 { return tc.q[i*d+j] }); e > 1e-6 {
				t.Errorf("Q = %v, want %v", mat.Formatted(res.Q), tc.q)
			}
			if res.MaxLeverage > 1+1e-10 || math.Abs(res.SumWeights-float64(d)) > 1e-12 {
				t.Errorf("max h = %.15g, sum v = %.15g", res.MaxLeverage, res.SumWeights)
			}
		})
	}
}

// TestApproximationGuarantee: fast and dp reach max_i h_i(v) <= 1 + xi (xi = 0.1) with their
// default iteration counts on seeded Gaussian polytopes. K runs per row of the table, all
// must pass; with 0 failures in K runs the one-sided 95% Clopper-Pearson bound on the
// per-run failure probability is 1 - 0.05^(1/K) (K = 6: 39%; over the 48 fast and dp runs,
// if failures are equally likely across them: 6%). The exact method's T carries a proof
// (max h <= (n/d)^(1/T)); it is checked on the same inputs.
func TestApproximationGuarantee(t *testing.T) {
	if testing.Short() {
		t.Skip("Monte Carlo over seeds")
	}
	const xi, runs = 0.1, 6
	sizes := [][2]int{{500, 5}, {1500, 10}}
	cfgs := []Config{
		{Method: Exact},
		{Method: Fast},
		{Method: DP, NoiseScale: 0.05},
		{Method: DP, NoiseScale: 1},
		{Method: DP, Epsilon: 1, Delta: 1e-6, Eps0: 1e-3},
	}
	for _, sz := range sizes {
		for _, cfg := range cfgs {
			name := fmt.Sprintf("n=%d d=%d %s sigma=%g eps=%g", sz[0], sz[1], cfg.Method, cfg.NoiseScale, cfg.Epsilon)
			t.Run(name, func(t *testing.T) {
				worst := 0.0
				for seed := uint64(0); seed < runs; seed++ {
					a := randomPolytope(sz[0], sz[1], 1000+seed)
					c := cfg
					c.Xi, c.Seed = xi, seed
					res, err := Solve(a, c)
					if err != nil {
						t.Fatal(err)
					}
					if math.Abs(res.SumWeights-float64(sz[1])) > 1e-9 {
						t.Errorf("seed %d: sum v = %.12g", seed, res.SumWeights)
					}
					if cfg.Method == Exact {
						bound := math.Pow(float64(sz[0])/float64(sz[1]), 1/float64(res.Iterations))
						if res.Output == "average" && res.MaxLeverage > bound*(1+1e-12) {
							t.Errorf("seed %d: averaged iterate %g above the convexity bound %g", seed, res.MaxLeverage, bound)
						}
					}
					if !res.Converged {
						t.Errorf("seed %d: max h = %.4f > 1 + xi after %d iterations", seed, res.MaxLeverage, res.Iterations)
					}
					worst = math.Max(worst, res.MaxLeverage)
				}
				t.Logf("worst max h over %d seeds: %.4f", runs, worst)
			})
		}
	}
}
