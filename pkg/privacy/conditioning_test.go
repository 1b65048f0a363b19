package privacy

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// fragile3 is a generic 3-state model (the one of internal/cmd/calibrate/testdata/fragile-3state.yaml)
// whose manifold sensitivity at T = 100 is set by a nearly singular free set.
func fragile3() (A, C *mat.Dense) {
	return mat.NewDense(3, 3, []float64{1.01, 0.2, 0.1, -0.1, 0.95, 0.3, 0.05, -0.2, 0.9}), mat.NewDense(1, 3, []float64{1, 0.5, 0.2})
}

func dynamicsEval(T int, adj Adjacency) func(A, C *mat.Dense) (float64, error) {
	return func(A, C *mat.Dense) (float64, error) {
		s, err := DynamicsSensitivity(A, C, T, adj, 2, 0)
		return s.Value, err
	}
}

func conditioningOf(t *testing.T, A, C *mat.Dense, T int, adj Adjacency) (Sensitivity, Conditioning) {
	t.Helper()
	s, err := DynamicsSensitivity(A, C, T, adj, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	nx, _ := A.Dims()
	return s, ModelConditioning(A, C, s, DynamicsCost(adj, T, nx, float64(nx)), dynamicsEval(T, adj))
}

// TestMinDetEqualsBruteForce checks the smallest kept |det D_dj| of the circuit enumeration (a
// volume times |N_i z|, through the complementary minors of D and D_perp) against the literal one:
// the determinants of D_dj of eq. (20) as written, over every index set the brute force keeps.
func TestMinDetEqualsBruteForce(t *testing.T) {
	A, C := fragile3()
	cases := []struct {
		A, C *mat.Dense
		T    int
	}{
		{A, C, 4}, {A, C, 6},
		{mat.NewDense(2, 2, []float64{1, 0.1, 0, 1}), mat.NewDense(1, 2, []float64{1, 0}), 7},
		{mat.NewDense(1, 1, []float64{0.9}), mat.NewDense(1, 1, []float64{1}), 5},
	}
	for _, c := range cases {
		fast, err := DynamicsSensitivity(c.A, c.C, c.T, Manifold, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := BruteForceSensitivity(cloudProblem(c.A, c.C, c.T), 2)
		if err != nil {
			t.Fatal(err)
		}
		if !relClose(fast.MinDet, slow.MinDet, 1e-8) {
			t.Errorf("T=%d A=%v: min |det D_dj| %.10g (circuits) vs %.10g (brute force)", c.T, mat.Formatted(c.A), fast.MinDet, slow.MinDet)
		}
		nx, _ := c.A.Dims()
		blk, err := DynamicsSensitivity(c.A, c.C, c.T, Block, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := math.Inf(1)
		for _, S := range blockFreeSets(c.T, nx) {
			s, err := sensitivityOverFreeSets(cloudProblem(c.A, c.C, c.T), 2, [][]int{S})
			if err != nil {
				t.Fatal(err)
			}
			want = math.Min(want, s.MinDet)
		}
		if !relClose(blk.MinDet, want, 1e-8) {
			t.Errorf("block T=%d: min |det D_dj| %.10g, want %.10g", c.T, blk.MinDet, want)
		}
	}
}

// TestFragileGeneric3State: the generic 3-state model is flagged, with both numbers.
func TestFragileGeneric3State(t *testing.T) {
	A, C := fragile3()
	s, c := conditioningOf(t, A, C, 100, Manifold)
	t.Logf("sensitivity %.6g: %s", s.Value, c.Summary())
	if !c.Fragile || len(c.Reasons) != 2 {
		t.Fatalf("generic 3-state model not flagged on both counts: %+v", c)
	}
	if !(c.MinDet < 1e-7 && c.MinDet > 1e-9) {
		t.Errorf("min |det| = %g, want about 6.1e-8", c.MinDet)
	}
	if !(c.Perturbation > 1) {
		t.Errorf("perturbation %g, want > 100%%", c.Perturbation)
	}
	if c.Directions != 2*(9+3)+conditioningRandomDirections {
		t.Errorf("%d directions", c.Directions)
	}
	for _, w := range []string{"privacy.model", "privacy.adjacency", "steps", "6.11e-08"} {
		if !strings.Contains(c.Advice(), w) {
			t.Errorf("advice does not name %q: %s", w, c.Advice())
		}
	}
}

// TestPerturbationRecomputed checks the figure against an independent recomputation: perturb each
// entry of A and C by hand, recompute the sensitivity directly, and compare the largest change
// with the entry-wise perturbation the figure names (and the figure with the maximum over them).
func TestPerturbationRecomputed(t *testing.T) {
	A, C := fragile3()
	const T = 60
	s, c := conditioningOf(t, A, C, T, Manifold)
	worst, worstName := 0.0, ""
	for _, which := range []string{"A", "C"} {
		M := A
		if which == "C" {
			M = C
		}
		r, cc := M.Dims()
		for i := 0; i < r; i++ {
			for j := 0; j < cc; j++ {
				for _, f := range []float64{1 + 1e-4, 1 - 1e-4} {
					P := mat.DenseCopyOf(M)
					P.Set(i, j, M.At(i, j)*f)
					a, cm := A, C
					if which == "A" {
						a = P
					} else {
						cm = P
					}
					v, err := DynamicsSensitivity(a, cm, T, Manifold, 2, 0)
					if err != nil {
						t.Fatal(err)
					}
					if rel := math.Abs(v.Value/s.Value - 1); rel > worst {
						worst, worstName = rel, which
					}
				}
			}
		}
	}
	if c.Perturbation < worst*(1-1e-12) {
		t.Errorf("figure %g below the entry-wise recomputation %g", c.Perturbation, worst)
	}
	if strings.HasPrefix(c.PerturbedBy, "A[") || strings.HasPrefix(c.PerturbedBy, "C[") {
		if !relClose(c.Perturbation, worst, 1e-12) {
			t.Errorf("figure %g (%s), recomputed %g (%s)", c.Perturbation, c.PerturbedBy, worst, worstName)
		}
	}
	t.Logf("T=%d: %s; by hand %.4g", T, c.Summary(), worst)
}

// TestShippedVehicleModelsNotFragile: the vehicle's position model (A = 1, C = 1) and its full
// state (A = [1 Ts; 0 1], C = [1 0]) at T = 100, both adjacencies, are well conditioned.
func TestShippedVehicleModelsNotFragile(t *testing.T) {
	models := [][2]*mat.Dense{
		{mat.NewDense(1, 1, []float64{1}), mat.NewDense(1, 1, []float64{1})},
		{mat.NewDense(2, 2, []float64{1, 0.1, 0, 1}), mat.NewDense(1, 2, []float64{1, 0})},
	}
	for _, m := range models {
		for _, adj := range []Adjacency{Manifold, Block} {
			_, c := conditioningOf(t, m[0], m[1], 100, adj)
			if c.Fragile || !(c.MinDet >= 0.099) || !(c.Perturbation < 0.02) {
				t.Errorf("%v %s: %s (fragile %v %v)", mat.Formatted(m[0]), adj, c.Summary(), c.Fragile, c.Reasons)
			}
		}
	}
}

// TestPerturbationBudget: an over-budget figure is not computed and says so.
func TestPerturbationBudget(t *testing.T) {
	A, C := fragile3()
	s, err := DynamicsSensitivity(A, C, 10, Manifold, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := ModelConditioning(A, C, s, 1e12, dynamicsEval(10, Manifold))
	if c.Directions != 0 || !math.IsNaN(c.Perturbation) || !strings.Contains(c.Summary(), "not computed") {
		t.Errorf("over budget: %+v", c)
	}
	c = ModelConditioning(A, C, s, PerturbationBudget/float64(conditioningRandomDirections), dynamicsEval(10, Manifold))
	if c.Directions != conditioningRandomDirections || !strings.Contains(c.Note, "skipped") {
		t.Errorf("random directions only: %+v", c)
	}
}
