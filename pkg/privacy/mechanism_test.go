package privacy

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/rng"
	"gonum.org/v1/gonum/mat"
)

func TestKernelBasis(t *testing.T) {
	r := rng.New(3, rng.Label("kernel"))
	for _, dims := range [][2]int{{1, 2}, {3, 5}, {7, 8}, {2, 9}} {
		D := randDense(r, dims[0], dims[1])
		N, err := KernelBasis(D)
		if err != nil {
			t.Fatal(err)
		}
		nr, k := N.Dims()
		if nr != dims[1] || k != dims[1]-dims[0] {
			t.Fatalf("kernel basis %dx%d for D %dx%d", nr, k, dims[0], dims[1])
		}
		var dn, ntn mat.Dense
		dn.Mul(D, N)
		ntn.Mul(N.T(), N)
		if mat.Norm(&dn, 2) > 1e-12*mat.Norm(D, 2) || !mat.EqualApprox(&ntn, identity(k), 1e-12) {
			t.Errorf("D N = %v (want 0), N^T N = %v (want I)", mat.Norm(&dn, 2), mat.Formatted(&ntn))
		}
	}
	if _, err := KernelBasis(mat.NewDense(2, 3, []float64{1, 2, 3, 2, 4, 6})); err == nil || !strings.Contains(err.Error(), "rank deficient") {
		t.Errorf("rank-deficient D: %v", err)
	}
}

// TestCheckRank: condition (8) holds for Lambda = O_T (Theorem 3) and any Lambda containing F ker D,
// and fails - naming the missing direction - when Lambda misses part of F ker D.
func TestCheckRank(t *testing.T) {
	A, C := vehicle(0.1)
	T := 6
	F, N := stackedF(C, T), dPerp(A, T)
	O := obsMatrix(A, C, T)
	if err := CheckRank(O, F, N); err != nil {
		t.Errorf("O_T must satisfy (8): %v", err)
	}
	// a wider Lambda containing O_T's columns is fine too
	wide := mat.NewDense(T, 3, nil)
	for i := 0; i < T; i++ {
		wide.Set(i, 0, O.At(i, 0)+O.At(i, 1))
		wide.Set(i, 1, O.At(i, 1))
		wide.Set(i, 2, float64(i*i))
	}
	if err := CheckRank(wide, F, N); err != nil {
		t.Errorf("Lambda ⊇ span(O_T) must satisfy (8): %v", err)
	}
	// iid noise Lambda = I always covers F ker D
	if err := CheckRank(identity(T), F, N); err != nil {
		t.Errorf("Lambda = I must satisfy (8): %v", err)
	}

	cases := []struct {
		name        string
		Lambda      *mat.Dense
		F, DPerp    *mat.Dense
		wantMissing []float64 // up to sign; nil: Lambda itself rank deficient
		wantText    []string
	}{
		{
			// span(Lambda) = span(e1, e2); F ker D = span(e1, e3): e3 is missing.
			name:        "missing e3",
			Lambda:      mat.NewDense(3, 2, []float64{1, 0, 0, 1, 0, 0}),
			F:           identity(3),
			DPerp:       mat.NewDense(3, 2, []float64{1, 0, 0, 0, 0, 1}),
			wantMissing: []float64{0, 0, 1},
			wantText:    []string{"rank(Lambda) = 2 but rank([Lambda, F D_perp]) = 3", "[0 0 1]"},
		},
		{
			// consensus: noise on the first step only misses the constant direction 1_T/sqrt(T)
			name:        "consensus first step only",
			Lambda:      mat.NewDense(4, 1, []float64{1, 0, 0, 0}),
			F:           identity(4),
			DPerp:       mat.NewDense(4, 1, []float64{1, 1, 1, 1}),
			wantMissing: []float64{0.5, 0.5, 0.5, 0.5},
			wantText:    []string{"[0.5 0.5 0.5 0.5]", "rank([Lambda, F D_perp]) = 2"},
		},
		{
			// vehicle: noise only along the first column of O_T (position offset) misses the velocity mode
			name:     "vehicle position noise only",
			Lambda:   mat.NewDense(T, 1, mat.Col(nil, 0, O)),
			F:        F,
			DPerp:    N,
			wantText: []string{"misses the direction", "w = [0 1]"}, // the velocity mode of the initial state
		},
		{
			name:     "Lambda rank deficient",
			Lambda:   mat.NewDense(3, 2, []float64{1, 2, 1, 2, 1, 2}),
			F:        identity(3),
			DPerp:    mat.NewDense(3, 1, []float64{1, 1, 1}),
			wantText: []string{"Lambda has 2 columns but rank 1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRank(tc.Lambda, tc.F, tc.DPerp)
			var re *RankError
			if !errors.As(err, &re) {
				t.Fatalf("want *RankError, got %v", err)
			}
			for _, w := range tc.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not contain %q", err, w)
				}
			}
			if tc.wantMissing != nil {
				for i, v := range tc.wantMissing {
					if math.Abs(math.Abs(re.Missing[i])-math.Abs(v)) > 1e-9 {
						t.Errorf("missing direction %v, want ±%v", re.Missing, tc.wantMissing)
						break
					}
				}
			}
			if re.Missing != nil {
				// the direction is a unit vector of F ker D and not in span(Lambda)
				if nrm := vecNorm(re.Missing, 2); math.Abs(nrm-1) > 1e-12 {
					t.Errorf("missing direction has norm %v", nrm)
				}
				if !(re.Distance > 1e-6) {
					t.Errorf("distance from span(Lambda) = %v, want > 0", re.Distance)
				}
				var fk mat.Dense
				fk.Mul(tc.F, tc.DPerp)
				var coef mat.VecDense
				if err := coef.SolveVec(&fk, mat.NewVecDense(len(re.Missing), re.Missing)); err != nil {
					t.Fatal(err)
				}
				var back mat.VecDense
				back.MulVec(&fk, &coef)
				for i, v := range re.Missing {
					if math.Abs(back.AtVec(i)-v) > 1e-9 {
						t.Errorf("missing direction %v is not in F ker D", re.Missing)
						break
					}
				}
			}
		})
	}
	if err := CheckRank(identity(3), identity(2), mat.NewDense(2, 1, []float64{1, 1})); err == nil || !strings.Contains(err.Error(), "shapes do not fit") {
		t.Errorf("shape mismatch: %v", err)
	}
}

// TestDeltaNForLambda: Delta_N scales as 1/s for Lambda = s LambdaBar; a Lambda failing (8) is
// reported by DeltaN itself.
func TestDeltaNForLambda(t *testing.T) {
	A, C := vehicle(0.1)
	T := 5
	p := cloudProblem(A, C, T)
	base, err := ManifoldSensitivity(p, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []float64{0.5, 2.5244, 40} {
		var L mat.Dense
		L.Scale(s, p.LambdaBar)
		dn, err := DeltaN(p.F, p.D, &L, 0)
		if err != nil {
			t.Fatal(err)
		}
		dl, err := DeltaL(p.F, p.D, &L, 0)
		if err != nil {
			t.Fatal(err)
		}
		base1, _ := ManifoldSensitivity(p, 1, 0)
		if !relClose(dn.Value, base.Value/s, 1e-10) || !relClose(dl.Value, base1.Value/s, 1e-10) {
			t.Errorf("s=%v: Delta_N %v (want %v), Delta_L %v (want %v)", s, dn.Value, base.Value/s, dl.Value, base1.Value/s)
		}
	}
	bad := mat.NewDense(T, 1, mat.Col(nil, 0, p.LambdaBar))
	_, err = DeltaN(p.F, p.D, bad, 0)
	var re *RankError
	if !errors.As(err, &re) {
		t.Errorf("Lambda missing the velocity direction: want *RankError, got %v", err)
	}
	rd := mat.NewDense(T, 2, nil)
	for i := 0; i < T; i++ {
		rd.Set(i, 0, 1)
		rd.Set(i, 1, 2)
	}
	if _, err = DeltaN(p.F, p.D, rd, 0); !errors.As(err, &re) || re.RankLambda != 1 {
		t.Errorf("rank-deficient Lambda: want *RankError with rank 1, got %v", err)
	}
}

func TestFormatVector(t *testing.T) {
	if got := FormatVector([]float64{1, -0.5, 1e-17}); got != "[1 -0.5 0]" {
		t.Errorf("short: %q", got)
	}
	v := make([]float64, 20)
	v[3], v[17], v[5] = -2, 1, 0.25
	got := FormatVector(v)
	if got != "{e3:-2 e17:1 e5:0.25 of 20}" {
		t.Errorf("long: %q", got)
	}
	for i := range v {
		v[i] = float64(i + 1)
	}
	if got := FormatVector(v); !strings.HasPrefix(got, "{e19:20 e18:19") || !strings.Contains(got, "+14 more nonzero of 20") {
		t.Errorf("dense long: %q", got)
	}
}
