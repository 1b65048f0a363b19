package privacy

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/rng"
	"gonum.org/v1/gonum/mat"
)

// ---- test helpers: the explicit stacked matrices of Section 5 (pkg/dynamics is not imported) ----

// stackedD is eq. (20): block row t is [.. A -I ..] acting on x(t), x(t+1).
func stackedD(A *mat.Dense, T int) *mat.Dense {
	nx, _ := A.Dims()
	if T < 2 {
		return nil
	}
	D := mat.NewDense((T-1)*nx, T*nx, nil)
	for t := 0; t < T-1; t++ {
		D.Slice(t*nx, (t+1)*nx, t*nx, (t+1)*nx).(*mat.Dense).Copy(A)
		for i := 0; i < nx; i++ {
			D.Set(t*nx+i, (t+1)*nx+i, -1)
		}
	}
	return D
}

// stackedF is I_T (x) C.
func stackedF(C *mat.Dense, T int) *mat.Dense {
	ny, nx := C.Dims()
	F := mat.NewDense(T*ny, T*nx, nil)
	for t := 0; t < T; t++ {
		F.Slice(t*ny, (t+1)*ny, t*nx, (t+1)*nx).(*mat.Dense).Copy(C)
	}
	return F
}

// dPerp is eq. (21): [I; A; ...; A^{T-1}].
func dPerp(A *mat.Dense, T int) *mat.Dense {
	nx, _ := A.Dims()
	P := mat.NewDense(T*nx, nx, nil)
	cur := mat.NewDense(nx, nx, nil)
	for i := 0; i < nx; i++ {
		cur.Set(i, i, 1)
	}
	for t := 0; t < T; t++ {
		P.Slice(t*nx, (t+1)*nx, 0, nx).(*mat.Dense).Copy(cur)
		var nxt mat.Dense
		nxt.Mul(A, cur)
		cur.Copy(&nxt)
	}
	return P
}

// obsMatrix is O_T = [C; CA; ...; CA^{T-1}] = (I_T (x) C) D_perp.
func obsMatrix(A, C *mat.Dense, T int) *mat.Dense {
	var O mat.Dense
	O.Mul(stackedF(C, T), dPerp(A, T))
	return &O
}

func identity(n int) *mat.Dense {
	I := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		I.Set(i, i, 1)
	}
	return I
}

func randDense(r *rand.Rand, rows, cols int) *mat.Dense {
	M := mat.NewDense(rows, cols, nil)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			M.Set(i, j, r.NormFloat64())
		}
	}
	return M
}

func vehicle(Ts float64) (A, C *mat.Dense) {
	return mat.NewDense(2, 2, []float64{1, Ts, 0, 1}), mat.NewDense(1, 2, []float64{1, 0})
}

// consensusD is D_i of eq. (28): rows [1 -1] (the dynamics A = 1).
func consensusD(T int) *mat.Dense { return stackedD(mat.NewDense(1, 1, []float64{1}), T) }

func relClose(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// checkWorstPair verifies the worst pair against Definition 4 and eq. (13) directly: D Diff = 0,
// Diff = 1 at Coordinate and 0 at the other free coordinates, Param = LambdaBar^+ F Diff, and
// ||Param|| = Value.
func checkWorstPair(t *testing.T, p Problem, s Sensitivity) {
	t.Helper()
	w := s.Worst
	n := len(w.Diff)
	if _, fn := p.F.Dims(); fn != n {
		t.Fatalf("Diff has length %d, want %d", n, fn)
	}
	if math.Abs(w.Diff[w.Coordinate]-1) > 1e-12 {
		t.Errorf("Diff[Coordinate=%d] = %v, want 1", w.Coordinate, w.Diff[w.Coordinate])
	}
	inFree := false
	for _, i := range w.FreeSet {
		if i == w.Coordinate {
			inFree = true
			continue
		}
		if w.Diff[i] != 0 {
			t.Errorf("Diff[%d] = %v on a fixed free coordinate, want 0", i, w.Diff[i])
		}
	}
	if !inFree {
		t.Errorf("Coordinate %d not in FreeSet %v", w.Coordinate, w.FreeSet)
	}
	dv := mat.NewVecDense(n, w.Diff)
	scale := mat.Norm(dv, 2)
	if p.D != nil {
		var res mat.VecDense
		res.MulVec(p.D, dv)
		if mat.Norm(&res, 2) > 1e-9*scale*mat.Norm(p.D, 2) {
			t.Errorf("D Diff = %v, want 0 (the pair leaves the manifold)", res.RawVector().Data)
		}
		// the complement of the free set must give a nonsingular D_dj
		q, _ := p.D.Dims()
		if len(w.FreeSet) != n-q {
			t.Errorf("FreeSet has %d coordinates, want n-q = %d", len(w.FreeSet), n-q)
		}
	}
	var fd mat.VecDense
	fd.MulVec(p.F, dv)
	var par mat.VecDense
	if err := par.SolveVec(p.LambdaBar, &fd); err != nil {
		t.Fatal(err)
	}
	for i := range w.Param {
		if !relClose(par.AtVec(i), w.Param[i], 1e-8*math.Max(1, s.Value)) {
			t.Errorf("Param[%d] = %v, LambdaBar^+ F Diff gives %v", i, w.Param[i], par.AtVec(i))
		}
	}
	if got := vecNorm(w.Param, s.Norm); !relClose(got, s.Value, 1e-9) {
		t.Errorf("||Param||_%d = %v, Value = %v", s.Norm, got, s.Value)
	}
}

// sameConstraintSets checks that two constraint lists define the same LMI set (12): every vector of
// one is implied by a vector of the other (parallel up to sign within tol, at least as long). A list
// may hold dominated near-duplicates that rounding kept apart; they are implied and change nothing.
func sameConstraintSets(t *testing.T, a, b [][]float64, tol float64) {
	t.Helper()
	if len(a) == 0 || len(b) == 0 {
		t.Errorf("empty constraint set: %d vs %d", len(a), len(b))
		return
	}
	implied := func(a, b [][]float64, name string) bool {
		for _, u := range a {
			nu := vecNorm(u, 2)
			found := false
			for _, v := range b {
				nv := vecNorm(v, 2)
				dot := 0.0
				for i := range u {
					dot += u[i] * v[i]
				}
				if math.Abs(dot) >= (1-tol)*nu*nv && nv >= (1-tol)*nu {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("constraint %v of the %s list is not implied by the other list", u, name)
				return false
			}
		}
		return true
	}
	if implied(a, b, "first") {
		implied(b, a, "second")
	}
}

// ---- tests ----

// TestManifoldEqualsBruteForceRandom proves the circuit enumeration equals the literal eq. (13)
// over every index set, on random generic (F, D, LambdaBar) with n <= 8, for both norms: same
// value, same set of LMI constraints, and a worst pair that checks out against Definition 4.
func TestManifoldEqualsBruteForceRandom(t *testing.T) {
	trials := 0
	for n := 2; n <= 8; n++ {
		for q := 1; q < n; q++ {
			for rep := 0; rep < 2; rep++ {
				r := rng.New(7, rng.Label("manifold-vs-brute"), uint64(n), uint64(q), uint64(rep))
				m := 1 + r.IntN(n+1)
				F := randDense(r, m, n)
				D := randDense(r, q, n)
				// LambdaBar: either a basis of F ker D (Algorithm 1) or any full-column-rank matrix.
				var L *mat.Dense
				if rep == 0 {
					N, err := KernelBasis(D)
					if err != nil {
						t.Fatal(err)
					}
					var fn mat.Dense
					fn.Mul(F, N)
					k := n - q
					rk := numRank(&fn)
					if rk < k {
						continue // F ker D is rank deficient; covered by rep 1
					}
					L = mat.NewDense(m, k, nil)
					L.Mul(&fn, randDense(r, k, k))
				} else {
					L = randDense(r, m, 1+r.IntN(m))
				}
				p := Problem{F: F, D: D, LambdaBar: L}
				for _, norm := range []int{2, 1} {
					fast, err := ManifoldSensitivity(p, norm, 0)
					if err != nil {
						t.Fatalf("n=%d q=%d: %v", n, q, err)
					}
					slow, err := BruteForceSensitivity(p, norm)
					if err != nil {
						t.Fatalf("n=%d q=%d: %v", n, q, err)
					}
					if !relClose(fast.Value, slow.Value, 1e-9) {
						t.Errorf("n=%d q=%d norm=%d: circuits %v, brute force %v", n, q, norm, fast.Value, slow.Value)
					}
					sameConstraintSets(t, fast.Constraints, slow.Constraints, 1e-7)
					checkWorstPair(t, p, fast)
					checkWorstPair(t, p, slow)
					if fast.Adjacency != Manifold || slow.Adjacency != Manifold {
						t.Errorf("adjacency labels %q %q", fast.Adjacency, slow.Adjacency)
					}
					trials++
				}
			}
		}
	}
	if trials < 40 {
		t.Fatalf("only %d comparisons ran", trials)
	}
}

// TestNoConstraint: with D = nil (q = 0) Definition 4 is Definition 1: Delta = max_i ||L^+ F e_i||.
func TestNoConstraint(t *testing.T) {
	F := mat.NewDense(2, 3, []float64{1, 0, 3, 0, 2, 4})
	p := Problem{F: F, LambdaBar: identity(2)}
	s, err := ManifoldSensitivity(p, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !relClose(s.Value, 5, 1e-12) || s.Worst.Coordinate != 2 {
		t.Errorf("value %v at %d, want 5 at coordinate 2", s.Value, s.Worst.Coordinate)
	}
	b, err := BruteForceSensitivity(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !relClose(b.Value, 7, 1e-12) {
		t.Errorf("1-norm value %v, want 7", b.Value)
	}
}

// TestPaperExample2 is Example 2 of the paper: F = I_3, D = [1 -2 0]. Index sets d = {1} or {2}
// (1-based). Free {2,3} changes x2 by 1 -> x1 by 2: difference (2,1,0); free {1,3} changes x1 by 1 ->
// x2 by 1/2: (1, 1/2, 0); x3 changes alone: e3. With LambdaBar = I: Delta_N = sqrt(5), Delta_L = 3.
func TestPaperExample2(t *testing.T) {
	p := Problem{F: identity(3), D: mat.NewDense(1, 3, []float64{1, -2, 0}), LambdaBar: identity(3)}
	for _, tc := range []struct {
		norm int
		want float64
	}{{2, math.Sqrt(5)}, {1, 3}} {
		for name, f := range map[string]func(Problem, int) (Sensitivity, error){
			"manifold": func(p Problem, n int) (Sensitivity, error) { return ManifoldSensitivity(p, n, 0) },
			"brute":    BruteForceSensitivity,
		} {
			s, err := f(p, tc.norm)
			if err != nil {
				t.Fatal(err)
			}
			if !relClose(s.Value, tc.want, 1e-12) {
				t.Errorf("%s norm %d: %v, want %v", name, tc.norm, s.Value, tc.want)
			}
			if s.Worst.Coordinate != 1 || !relClose(s.Worst.Diff[0], 2, 1e-12) {
				t.Errorf("%s: worst pair %+v, want x2 changing and x1 following by 2", name, s.Worst)
			}
			checkWorstPair(t, p, s)
		}
	}
}

func TestSensitivityErrors(t *testing.T) {
	F := identity(3)
	D := mat.NewDense(1, 3, []float64{1, 1, 1})
	good := Problem{F: F, D: D, LambdaBar: identity(3)}
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"bad norm", func() error { _, err := ManifoldSensitivity(good, 3, 0); return err }, "norm must be 2"},
		{"nil F", func() error { _, err := ManifoldSensitivity(Problem{D: D, LambdaBar: F}, 2, 0); return err }, "F is nil"},
		{"D shape", func() error {
			_, err := ManifoldSensitivity(Problem{F: F, D: mat.NewDense(1, 2, []float64{1, 1}), LambdaBar: F}, 2, 0)
			return err
		}, "D is 1x2"},
		{"D rank", func() error {
			_, err := ManifoldSensitivity(Problem{F: F, D: mat.NewDense(2, 3, []float64{1, 1, 1, 2, 2, 2}), LambdaBar: F}, 2, 0)
			return err
		}, "full row rank"},
		{"D square", func() error {
			_, err := ManifoldSensitivity(Problem{F: F, D: identity(3), LambdaBar: F}, 2, 0)
			return err
		}, "no free coordinate"},
		{"LambdaBar rank", func() error {
			_, err := ManifoldSensitivity(Problem{F: F, D: D, LambdaBar: mat.NewDense(3, 2, []float64{1, 1, 1, 1, 1, 1})}, 2, 0)
			return err
		}, "full column rank"},
		{"LambdaBar rows", func() error {
			_, err := BruteForceSensitivity(Problem{F: F, D: D, LambdaBar: identity(2)}, 2)
			return err
		}, "LambdaBar is 2x2"},
		{"budget", func() error {
			_, err := ManifoldSensitivity(Problem{F: identity(30), D: randDense(rng.New(1), 20, 30), LambdaBar: identity(30)}, 2, 1e6)
			return err
		}, "above the budget of 1000000 flops"},
		{"brute limit", func() error {
			_, err := BruteForceSensitivity(Problem{F: identity(40), D: randDense(rng.New(1), 20, 40), LambdaBar: identity(40)}, 2)
			return err
		}, "exceed the limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestBudgetMessageNamesCost: the refusal names the number of subsets and the flops.
func TestBudgetMessageNamesCost(t *testing.T) {
	A, C := vehicle(0.1)
	_, err := DynamicsSensitivity(A, C, 1_000_000, Manifold, 2, 1e9)
	if err == nil {
		t.Fatal("expected a refusal")
	}
	for _, want := range []string{"2e+06 index subsets", "flops", "budget of 1000000000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestBinomialAndCombinations(t *testing.T) {
	if binomial(10, 3) != 120 || binomial(5, 0) != 1 || binomial(4, 5) != 0 || binomial(20000, 1) != 20000 {
		t.Fatal("binomial wrong")
	}
	idx := []int{0, 1, 2}
	count := 1
	for nextCombination(idx, 6) {
		count++
	}
	if count != 20 {
		t.Fatalf("enumerated %d 3-subsets of 6, want 20", count)
	}
}
