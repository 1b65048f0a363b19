package john

import (
	"math"
	"testing"

	"github.com/dpsim/dpsim/pkg/rng"
	"gonum.org/v1/gonum/mat"
)

// leverageRatio returns r_i = F_i(A')/F_i(A) - 1 for F_i = w_i h_i(w; .), computed directly.
func leverageRatio(t *testing.T, a, a2 *mat.Dense, w []float64) []float64 {
	t.Helper()
	h := func(m *mat.Dense) []float64 {
		n, d := m.Dims()
		q := mat.NewSymDense(d, nil)
		for i := 0; i < n; i++ {
			q.SymRankOne(q, w[i], mat.NewVecDense(len(m.RawRowView(i)), m.RawRowView(i)))
		}
		var ch mat.Cholesky
		if !ch.Factorize(q) {
			t.Fatal("Q not PD")
		}
		out := make([]float64, n)
		x := mat.NewVecDense(d, nil)
		for i := 0; i < n; i++ {
			r := mat.NewVecDense(d, m.RawRowView(i))
			if err := ch.SolveVecTo(x, r); err != nil {
				t.Fatal(err)
			}
			out[i] = mat.Dot(r, x)
		}
		return out
	}
	h1, h2 := h(a), h(a2)
	r := make([]float64, len(h1))
	for i := range r {
		if w[i] > 0 {
			r[i] = h2[i]/h1[i] - 1
		}
	}
	return r
}

// TestLocalSensitivityBound: over random and adversarial eps0-neighbours the true relative
// change never exceeds the bound (it is a proof, so any violation is a bug), and the bound
// is not vacuous (within a stated factor of the worst change found).
func TestLocalSensitivityBound(t *testing.T) {
	cases := []struct {
		name    string
		n, d    int
		eps0    float64
		weights string
	}{
		{"uniform w, n=40 d=3", 40, 3, 1e-3, "uniform"},
		{"uniform w, n=80 d=5", 80, 5, 1e-2, "uniform"},
		{"random w, n=60 d=4", 60, 4, 1e-3, "random"},
		{"john w, n=60 d=4", 60, 4, 1e-3, "john"},
	}
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := randomPolytope(tc.n, tc.d, uint64(100+ci))
			r := rng.New(uint64(ci), rng.Label("sens-test"))
			w := make([]float64, tc.n)
			for i := range w {
				switch tc.weights {
				case "uniform":
					w[i] = float64(tc.d) / float64(tc.n)
				case "random":
					w[i] = r.Float64() * 2 * float64(tc.d) / float64(tc.n)
				}
			}
			if tc.weights == "john" {
				res, err := Solve(a, Config{Method: Exact, Xi: 1e-3})
				if err != nil {
					t.Fatal(err)
				}
				copy(w, res.Weights)
				// keep every weight positive so every row can be the changed one
				for i := range w {
					w[i] = math.Max(w[i], 1e-3)
				}
			}
			sens, err := LocalSensitivity(a, w, tc.eps0)
			if err != nil {
				t.Fatal(err)
			}
			if !sens.Finite {
				t.Fatalf("bound not finite: %s", sens.Reason)
			}
			// worst eigenvector of Q: the direction an adversary would push.
			q := mat.NewSymDense(tc.d, nil)
			for i := 0; i < tc.n; i++ {
				q.SymRankOne(q, w[i], mat.NewVecDense(tc.d, a.RawRowView(i)))
			}
			var eq mat.EigenSym
			eq.Factorize(q, true)
			var vecs mat.Dense
			eq.VectorsTo(&vecs)
			worstL2, worstMax := 0.0, 0.0
			a2 := mat.NewDense(tc.n, tc.d, nil)
			for trial := 0; trial < 400; trial++ {
				a2.Copy(a)
				j := r.IntN(tc.n)
				dir := make([]float64, tc.d)
				switch trial % 4 {
				case 0: // random direction
					for k := range dir {
						dir[k] = r.NormFloat64()
					}
				case 1: // smallest-eigenvalue direction of Q
					for k := range dir {
						dir[k] = vecs.At(k, 0)
					}
				case 2: // shrink the row
					copy(dir, a.RawRowView(j))
					for k := range dir {
						dir[k] = -dir[k]
					}
				case 3: // grow the row
					copy(dir, a.RawRowView(j))
				}
				nrm := 0.0
				for _, x := range dir {
					nrm += x * x
				}
				nrm = math.Sqrt(nrm)
				for k := range dir {
					a2.Set(j, k, a.At(j, k)+tc.eps0*dir[k]/nrm)
				}
				rr := leverageRatio(t, a, a2, w)
				l2, mx := 0.0, 0.0
				for _, x := range rr {
					l2 += x * x
					mx = math.Max(mx, math.Abs(x))
				}
				l2 = math.Sqrt(l2)
				if l2 > sens.L2*(1+1e-9) || mx > sens.MaxAbs*(1+1e-9) {
					t.Fatalf("trial %d row %d: ||r||=%g max|r|=%g exceed the bound L2=%g MaxAbs=%g", trial, j, l2, mx, sens.L2, sens.MaxAbs)
				}
				worstL2, worstMax = math.Max(worstL2, l2), math.Max(worstMax, mx)
			}
			ratio := sens.L2 / worstL2
			t.Logf("bound L2=%.3g (worst found %.3g, ratio %.1f), MaxAbs=%.3g (worst %.3g), lambda_min(Q)=%.3g", sens.L2, worstL2, ratio, sens.MaxAbs, worstMax, sens.LambdaMinQ)
			// The bound uses worst-case norms (Ky Fan, spectral); within a factor 4 of the worst
			// change found shows it tracks the real change rather than being vacuous.
			if ratio > 4 {
				t.Errorf("bound %g is %gx the worst change found %g", sens.L2, ratio, worstL2)
			}
		})
	}
}

// TestLocalSensitivityZeroRow: a zero row makes the relative sensitivity unbounded
// (the counterexample of doc.go), and a zero-weight row changes nothing.
func TestLocalSensitivityZeroRow(t *testing.T) {
	a := randomPolytope(30, 3, 9)
	for k := 0; k < 3; k++ {
		a.Set(7, k, 0)
	}
	w := make([]float64, 30)
	for i := range w {
		w[i] = 0.1
	}
	sens, err := LocalSensitivity(a, w, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	if sens.Finite || sens.Row != 7 || !math.IsInf(sens.L2, 1) {
		t.Fatalf("zero row with positive weight: want unbounded at row 7, got %+v", sens)
	}
	w[7] = 0
	sens, err = LocalSensitivity(a, w, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	if !sens.Finite {
		t.Fatalf("zero row with zero weight: want a finite bound, got %s", sens.Reason)
	}
	if _, err := LocalSensitivity(a, w, 0); err == nil {
		t.Error("eps0 = 0 accepted")
	}
	if _, err := LocalSensitivity(a, w[:5], 1e-3); err == nil {
		t.Error("wrong weight count accepted")
	}
}
