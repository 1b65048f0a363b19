package privacy

import (
	"math"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/rng"
	"gonum.org/v1/gonum/mat"
)

// blockFreeSets are the T block index sets of Theorem 3: all of x(t) free.
func blockFreeSets(T, nx int) [][]int {
	var sets [][]int
	for t := 0; t < T; t++ {
		var s []int
		for k := 0; k < nx; k++ {
			s = append(s, t*nx+k)
		}
		sets = append(sets, s)
	}
	return sets
}

// cloudProblem is the explicit mechanism (18) on the manifold (19)-(20) with LambdaBar = O_T.
func cloudProblem(A, C *mat.Dense, T int) Problem {
	return Problem{F: stackedF(C, T), D: stackedD(A, T), LambdaBar: obsMatrix(A, C, T)}
}

// TestDynamicsEqualsBruteForceRandom proves the dynamics fast path equals the literal eq. (13) on
// the explicit (F = I_T (x) C, D of eq. (20), LambdaBar = O_T): manifold against every index set,
// block against the T block index sets, for random (A, C) with n_x in {1,2,3}, n_y in {1,2},
// T in {2,3,4}, both norms; the iid variant (LambdaBar = I) likewise.
func TestDynamicsEqualsBruteForceRandom(t *testing.T) {
	compared, refused := 0, 0
	for nx := 1; nx <= 3; nx++ {
		for ny := 1; ny <= 2; ny++ {
			for T := 2; T <= 4; T++ {
				r := rng.New(11, rng.Label("dyn-vs-brute"), uint64(nx), uint64(ny), uint64(T))
				A := randDense(r, nx, nx)
				C := randDense(r, ny, nx)
				p := cloudProblem(A, C, T)
				observable := numRank(p.LambdaBar) == nx
				for _, norm := range []int{2, 1} {
					fast, err := DynamicsSensitivity(A, C, T, Manifold, norm, 0)
					if !observable {
						if err == nil || !strings.Contains(err.Error(), "not observable") {
							t.Fatalf("nx=%d ny=%d T=%d: unobservable system gave err=%v", nx, ny, T, err)
						}
						refused++
						continue
					}
					if err != nil {
						t.Fatalf("nx=%d ny=%d T=%d: %v", nx, ny, T, err)
					}
					slow, err := BruteForceSensitivity(p, norm)
					if err != nil {
						t.Fatal(err)
					}
					if !relClose(fast.Value, slow.Value, 1e-8) {
						t.Errorf("manifold nx=%d ny=%d T=%d norm=%d: fast %v, brute force %v", nx, ny, T, norm, fast.Value, slow.Value)
					}
					sameConstraintSets(t, fast.Constraints, slow.Constraints, 1e-7)
					checkWorstPair(t, p, fast)
					if fast.Worst.Time*nx+fast.Worst.Component != fast.Worst.Coordinate {
						t.Errorf("Time/Component %d/%d do not locate coordinate %d", fast.Worst.Time, fast.Worst.Component, fast.Worst.Coordinate)
					}
					// Param is the initial-state difference: Diff = D_perp Param.
					var dp mat.VecDense
					dp.MulVec(dPerp(A, T), mat.NewVecDense(nx, fast.Worst.Param))
					for i, v := range fast.Worst.Diff {
						if math.Abs(dp.AtVec(i)-v) > 1e-8*math.Max(1, math.Abs(v)) {
							t.Errorf("Diff[%d] = %v but D_perp Param gives %v", i, v, dp.AtVec(i))
							break
						}
					}

					blk, err := DynamicsSensitivity(A, C, T, Block, norm, 0)
					if err != nil {
						t.Fatal(err)
					}
					slowBlk, err := sensitivityOverFreeSets(p, norm, blockFreeSets(T, nx))
					if err != nil {
						t.Fatal(err)
					}
					if !relClose(blk.Value, slowBlk.Value, 1e-8) {
						t.Errorf("block nx=%d ny=%d T=%d norm=%d: fast %v, brute force %v", nx, ny, T, norm, blk.Value, slowBlk.Value)
					}
					sameConstraintSets(t, blk.Constraints, slowBlk.Constraints, 1e-7)
					checkWorstPair(t, p, blk)
					if blk.Value > fast.Value*(1+1e-9) {
						t.Errorf("block %v exceeds manifold %v: the block sets are a subset of Definition 4's", blk.Value, fast.Value)
					}
					compared++
				}
				// iid baseline: LambdaBar = I_{T ny}; no observability needed.
				pi := Problem{F: p.F, D: p.D, LambdaBar: identity(T * ny)}
				for _, norm := range []int{2, 1} {
					for _, adj := range []Adjacency{Manifold, Block} {
						got, err := IIDSensitivity(A, C, T, adj, norm, 0)
						if err != nil {
							t.Fatal(err)
						}
						var want Sensitivity
						if adj == Manifold {
							want, err = BruteForceSensitivity(pi, norm)
						} else {
							want, err = sensitivityOverFreeSets(pi, norm, blockFreeSets(T, nx))
						}
						if err != nil {
							t.Fatal(err)
						}
						if !relClose(got.Value, want.Value, 1e-8) {
							t.Errorf("iid %s nx=%d ny=%d T=%d norm=%d: %v, brute force %v", adj, nx, ny, T, norm, got.Value, want.Value)
						}
						checkWorstPair(t, pi, got)
					}
				}
			}
		}
	}
	if compared < 20 || refused == 0 {
		t.Fatalf("compared %d systems, refused %d unobservable ones: the sweep did not cover both cases", compared, refused)
	}
}

// vehicleManifold is the closed form of the full-state vehicle's manifold sensitivity: the circuit
// vanishing on p(t) has z ∝ (-t Ts, 1) and smallest nonzero entry |p(t±1)| = Ts/||z||, so
// Delta_N = max_t sqrt(1 + (t Ts)^2)/Ts = sqrt(1 + ((T-1) Ts)^2)/Ts (T >= 2, Ts <= 1), and
// Delta_L = (1 + (T-1) Ts)/Ts. The block sets give ||A^{-t} e_2|| = sqrt(1 + (t Ts)^2), 1-norm 1 + t Ts.
func vehicleManifold(T int, Ts float64, norm int) (manifold, block float64) {
	a := float64(T-1) * Ts
	if norm == 1 {
		return (1 + a) / Ts, 1 + a
	}
	return math.Sqrt(1+a*a) / Ts, math.Sqrt(1 + a*a)
}

// TestVehicleFullState: the paper's vehicle with the full state private (docs/math.md section 1): block
// ≈ 9.95 and manifold ≈ 99.5 at T = 100 (Ts = 0.1), matching the closed forms exactly, with the
// worst pair derived by hand: R = {p(99)}, the change at p(98), z = (99, -10).
func TestVehicleFullState(t *testing.T) {
	const Ts = 0.1
	A, C := vehicle(Ts)
	Ts100 := []int{2, 3, 5, 10, 37, 100}
	if !testing.Short() {
		Ts100 = append(Ts100, 1000)
	}
	for _, T := range Ts100 {
		for _, norm := range []int{2, 1} {
			wantM, wantB := vehicleManifold(T, Ts, norm)
			man, err := DynamicsSensitivity(A, C, T, Manifold, norm, 0)
			if err != nil {
				t.Fatal(err)
			}
			blk, err := DynamicsSensitivity(A, C, T, Block, norm, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !relClose(man.Value, wantM, 1e-9) || !relClose(blk.Value, wantB, 1e-9) {
				t.Errorf("T=%d norm=%d: manifold %v (want %v), block %v (want %v)", T, norm, man.Value, wantM, blk.Value, wantB)
			}
			if !(man.Value > 5*blk.Value) {
				t.Errorf("T=%d: manifold %v should exceed block %v by about 1/Ts", T, man.Value, blk.Value)
			}
			if T == 100 && norm == 2 {
				w := man.Worst
				if w.Time != 98 || w.Component != 0 || len(w.FreeSet) != 2 || w.FreeSet[0] != 196 || w.FreeSet[1] != 198 {
					t.Errorf("worst pair %+v, want p(98) changing with p(99) fixed", w)
				}
				if !relClose(w.Param[0], 99, 1e-9) || !relClose(w.Param[1], -10, 1e-9) {
					t.Errorf("initial-state difference %v, want (99, -10)", w.Param)
				}
				if bw := blk.Worst; bw.Time != 99 || bw.Component != 1 || !relClose(bw.Param[0], -9.9, 1e-12) || !relClose(bw.Param[1], 1, 1e-12) {
					t.Errorf("block worst pair %+v, want v(99) changing, z = A^-99 e_2 = (-9.9, 1)", bw)
				}
				t.Logf("vehicle T=100: manifold %.6f, block %.6f (ratio %.3f)", man.Value, blk.Value, man.Value/blk.Value)
			}
		}
	}
}

// TestScalarModelsAgree: where manifold and block must agree they do: the position-only model
// (A = 1, C = 1, the paper's private model), consensus (D_i of eq. (28), F = I_T, LambdaBar = 1_T,
// one circuit), and a fully actuated diagonal system.
func TestScalarModelsAgree(t *testing.T) {
	one := mat.NewDense(1, 1, []float64{1})
	for _, T := range []int{1, 2, 7, 100} {
		for _, norm := range []int{2, 1} {
			for _, adj := range []Adjacency{Manifold, Block} {
				s, err := DynamicsSensitivity(one, one, T, adj, norm, 0)
				if err != nil {
					t.Fatal(err)
				}
				if s.Value != 1 {
					t.Errorf("position-only T=%d %s norm %d: %v, want 1", T, adj, norm, s.Value)
				}
			}
		}
	}
	// consensus through the general path: one circuit (k = 1)
	for _, T := range []int{2, 6, 30} {
		ones := mat.NewDense(T, 1, nil)
		for i := 0; i < T; i++ {
			ones.Set(i, 0, 1)
		}
		p := Problem{F: identity(T), D: consensusD(T), LambdaBar: ones}
		for _, norm := range []int{2, 1} {
			s, err := ManifoldSensitivity(p, norm, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !relClose(s.Value, 1, 1e-12) || s.Circuits != 1 {
				t.Errorf("consensus T=%d norm %d: %v over %d circuits, want 1 over 1", T, norm, s.Value, s.Circuits)
			}
			checkWorstPair(t, p, s)
			if T <= 6 {
				b, err := BruteForceSensitivity(p, norm)
				if err != nil || !relClose(b.Value, 1, 1e-12) {
					t.Errorf("consensus brute force T=%d: %v %v", T, b.Value, err)
				}
			}
		}
	}
	// diagonal A, C = I: coordinates are independent chains, manifold = block = max_t |a^-t| ... = 1 with |a| >= 1
	A := mat.NewDense(2, 2, []float64{2, 0, 0, 1.5})
	for _, adj := range []Adjacency{Manifold, Block} {
		s, err := DynamicsSensitivity(A, identity(2), 5, adj, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !relClose(s.Value, 1, 1e-12) {
			t.Errorf("diagonal %s: %v, want 1 (the change at t=0 moves z by 1)", adj, s.Value)
		}
	}
}

// TestIIDBaselines: for the position-only model the iid-calibrated sensitivity is sqrt(T) (1-norm
// T): the same unit change shows in all T outputs; the naive single-release one is 1.
func TestIIDBaselines(t *testing.T) {
	one := mat.NewDense(1, 1, []float64{1})
	for _, T := range []int{1, 4, 100, 1000} {
		for _, adj := range []Adjacency{Manifold, Block} {
			s2, err := IIDSensitivity(one, one, T, adj, 2, 0)
			if err != nil {
				t.Fatal(err)
			}
			s1, err := IIDSensitivity(one, one, T, adj, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !relClose(s2.Value, math.Sqrt(float64(T)), 1e-12) || !relClose(s1.Value, float64(T), 1e-12) {
				t.Errorf("iid T=%d %s: %v / %v, want sqrt(T) / T", T, adj, s2.Value, s1.Value)
			}
			if s2.Constraints != nil || len(s2.Worst.Param) != T {
				t.Errorf("iid: constraints %d, param length %d", len(s2.Constraints), len(s2.Worst.Param))
			}
		}
	}
	for _, adj := range []Adjacency{Manifold, Block} {
		s, err := SingleReleaseSensitivity(one, one, adj, 2)
		if err != nil || s.Value != 1 {
			t.Errorf("single release %s: %v %v, want 1", adj, s.Value, err)
		}
	}
	// vehicle: single release = max_k ||C e_k|| = 1 (no observability needed).
	A, C := vehicle(0.1)
	s, err := SingleReleaseSensitivity(A, C, Manifold, 2)
	if err != nil || s.Value != 1 {
		t.Errorf("vehicle single release: %v %v, want 1", s.Value, err)
	}
	// C with two outputs: max column norm
	C2 := mat.NewDense(2, 2, []float64{3, 1, 4, 0})
	s, err = SingleReleaseSensitivity(identity(2), C2, Block, 2)
	if err != nil || !relClose(s.Value, 5, 1e-12) {
		t.Errorf("single release with C = [3 1; 4 0]: %v %v, want 5", s.Value, err)
	}
}

func TestAssumption1Errors(t *testing.T) {
	cases := []struct {
		name string
		A, C *mat.Dense
		T    int
		want []string
	}{
		{"unobservable", identity(2), mat.NewDense(1, 2, []float64{1, 0}), 10, []string{"assumption 1 (i)", "not observable", "rank O_T = 1 < n_x = 2", "[0 1]"}},
		{"too short", mat.NewDense(2, 2, []float64{1, 0.1, 0, 1}), mat.NewDense(1, 2, []float64{1, 0}), 1, []string{"not observable over T = 1"}},
		{"singular A", mat.NewDense(2, 2, []float64{1, 1, 1, 1}), identity(2), 5, []string{"assumption 1 (ii)", "singular"}},
		{"C shape", identity(2), mat.NewDense(1, 3, []float64{1, 0, 0}), 5, []string{"C is 1x3"}},
		{"T zero", identity(2), identity(2), 0, []string{"T = 0"}},
		{"overflow", mat.NewDense(1, 1, []float64{1e10}), mat.NewDense(1, 1, []float64{1}), 100, []string{"overflows"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DynamicsSensitivity(tc.A, tc.C, tc.T, Manifold, 2, 0)
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := DynamicsSensitivity(identity(2), identity(2), 3, "diagonal", 2, 0); err == nil || !strings.Contains(err.Error(), "unknown adjacency") {
		t.Errorf("unknown adjacency: %v", err)
	}
}

// TestVehicleLongHorizon is the benchmark case T = 10^4 checked against the closed form.
func TestVehicleLongHorizon(t *testing.T) {
	if testing.Short() {
		t.Skip("T = 10^4 enumeration (~1 s) skipped in -short")
	}
	A, C := vehicle(0.1)
	s, err := DynamicsSensitivity(A, C, 10_000, Manifold, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := vehicleManifold(10_000, 0.1, 2)
	if !relClose(s.Value, want, 1e-9) {
		t.Errorf("T=10^4: %v, want %v", s.Value, want)
	}
}
