package dynamics

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/rng"
)

func TestNewLTIDimensionErrors(t *testing.T) {
	A2 := mat.NewDense(2, 2, []float64{1, 0.1, 0, 1})
	B2 := mat.NewDense(2, 1, []float64{0.005, 0.1})
	C2 := mat.NewDense(1, 2, []float64{1, 0})
	for _, tc := range []struct {
		name    string
		A, B, C *mat.Dense
		want    string
	}{
		{"nil A", nil, B2, C2, "A is missing"},
		{"nil C", A2, B2, nil, "C is missing"},
		{"non-square A", mat.NewDense(2, 3, nil), B2, C2, "A must be square, got 2x3"},
		{"B rows", A2, mat.NewDense(3, 1, nil), C2, "B must have nx=2 rows"},
		{"C cols", A2, B2, mat.NewDense(1, 3, nil), "C must have nx=2 columns"},
		{"NaN", mat.NewDense(2, 2, []float64{1, math.NaN(), 0, 1}), B2, C2, "A[0,1] = NaN is not finite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewLTI(tc.A, tc.B, tc.C)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	sys, err := NewLTI(A2, nil, C2)
	require.NoError(t, err)
	require.Equal(t, 0, sys.Nu())
	require.Equal(t, []float64{0, 0, 0, 0}, sys.InputTerm([][]float64{{}, {}}))
	// NewLTI copies: changing the input afterwards does not change the system.
	A := mat.DenseCopyOf(A2)
	sys, err = NewLTI(A, B2, C2)
	require.NoError(t, err)
	A.Set(0, 0, 7)
	require.Equal(t, 1.0, sys.A.At(0, 0))
	require.Equal(t, 2, sys.Nx())
	require.Equal(t, 1, sys.Nu())
	require.Equal(t, 1, sys.Ny())
}

// randomLTI draws a system with entries in [-1, 1] (A scaled to spectral radius about 1).
func randomLTI(t *testing.T, seed uint64, nx, nu, ny int) *LTI {
	r := rng.New(seed, rng.Label("dynamics-test"), uint64(nx), uint64(nu), uint64(ny))
	fill := func(m *mat.Dense) *mat.Dense {
		rr, cc := m.Dims()
		for i := 0; i < rr; i++ {
			for j := 0; j < cc; j++ {
				m.Set(i, j, 2*r.Float64()-1)
			}
		}
		return m
	}
	A := fill(mat.NewDense(nx, nx, nil))
	if rho := SpectralRadius(A); rho > 0 {
		A.Scale(1/rho, A)
	}
	sys, err := NewLTI(A, fill(mat.NewDense(nx, nu, nil)), fill(mat.NewDense(ny, nx, nil)))
	require.NoError(t, err)
	return sys
}

// The stacked operators of eqs. (18)-(21): D D_perp = 0, [D' D_perp] has full rank, F D_perp = O_T,
// and every simulated trajectory satisfies D x + b = 0 with b = InputTerm(u).
func TestStackedOperators(t *testing.T) {
	for _, tc := range []struct{ nx, nu, ny, T int }{{2, 1, 1, 2}, {2, 1, 1, 7}, {3, 2, 1, 5}, {4, 1, 2, 6}, {1, 1, 1, 4}} {
		sys := randomLTI(t, 1, tc.nx, tc.nu, tc.ny)
		T, nx := tc.T, tc.nx
		D, P, F, O := sys.StackedD(T), sys.DPerp(T), sys.StackedF(T), sys.Observability(T)
		r, c := D.Dims()
		require.Equal(t, []int{(T - 1) * nx, T * nx}, []int{r, c})
		var DP, FP mat.Dense
		DP.Mul(D, P)
		require.Less(t, mat.Norm(&DP, math.Inf(1)), 1e-12, "D D_perp = 0")
		var aug mat.Dense
		aug.Augment(D.T(), P)
		require.Equal(t, T*nx, rank(t, &aug), "rank [D' D_perp] = n")
		FP.Mul(F, P)
		require.True(t, mat.EqualApprox(&FP, O, 1e-12), "F D_perp = O_T")
		// simulate with random inputs
		rr := rng.New(2, rng.Label("inputs"))
		x0 := make([]float64, nx)
		for i := range x0 {
			x0[i] = rr.NormFloat64()
		}
		p := NewPlant(sys, x0)
		xs := make([]float64, 0, T*nx)
		us := make([][]float64, T-1)
		ys := make([]float64, 0, T*tc.ny)
		y := make([]float64, tc.ny)
		for k := 0; k < T; k++ {
			xs = append(xs, p.State()...)
			p.Output(y)
			ys = append(ys, y...)
			if k < T-1 {
				us[k] = make([]float64, tc.nu)
				for j := range us[k] {
					us[k][j] = rr.NormFloat64()
				}
				p.Step(us[k])
			}
		}
		b := sys.InputTerm(us)
		var Dx mat.VecDense
		Dx.MulVec(D, mat.NewVecDense(len(xs), xs))
		for i := range b {
			require.InDelta(t, 0, Dx.AtVec(i)+b[i], 1e-12, "D x + b = 0 (eq. 19)")
		}
		var Fx mat.VecDense
		Fx.MulVec(F, mat.NewVecDense(len(xs), xs))
		require.InDeltaSlice(t, ys, Fx.RawVector().Data, 1e-12, "F x = stacked outputs")
	}
}

func TestCheckAssumption1(t *testing.T) {
	veh := vehicle(t)
	require.NoError(t, veh.CheckAssumption1(2))
	require.NoError(t, veh.CheckAssumption1(100))
	rk, smin, smax, err := veh.ObservabilityRank(2)
	require.NoError(t, err)
	require.Equal(t, 2, rk)
	// O_2 = [1 0; 1 0.1]: singular values multiply to |det| = 0.1
	require.InDelta(t, 0.1, smin*smax, 1e-12)

	unobs, err := NewLTI(mat.NewDense(2, 2, []float64{1, 0.1, 0, 1}), nil, mat.NewDense(1, 2, []float64{0, 1}))
	require.NoError(t, err)
	singular, err := NewLTI(mat.NewDense(2, 2, []float64{1, 0, 0, 0}), nil, mat.NewDense(1, 2, []float64{1, 1}))
	require.NoError(t, err)
	both, err := NewLTI(mat.NewDense(2, 2, []float64{0, 0, 0, 0}), nil, mat.NewDense(1, 2, []float64{0, 1}))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		sys  *LTI
		T    int
		want []string
		not  []string
	}{
		{"short horizon", veh, 1, []string{"Assumption 1(i)", "rank O_T = 1 < nx = 2", "smallest singular value 0", "take T >= 2"}, []string{"1(ii)"}},
		{"unobservable", unobs, 10, []string{"Assumption 1(i)", "not observable over T=10", "rank O_T = 1"}, []string{"1(ii)"}},
		{"singular A", singular, 10, []string{"Assumption 1(ii)", "A is singular", "smallest singular value 0"}, []string{"1(i)"}},
		{"both", both, 10, []string{"Assumption 1(i)", "Assumption 1(ii)"}, nil},
		{"bad T", veh, 0, []string{"T must be >= 1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sys.CheckAssumption1(tc.T)
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			for _, w := range tc.not {
				require.False(t, strings.Contains(err.Error(), w), "unexpected %q in %v", w, err)
			}
		})
	}
	// Nearly singular A: reported with the size of its smallest singular value.
	near, err := NewLTI(mat.NewDense(2, 2, []float64{1, 0, 0, 1e-20}), nil, mat.NewDense(1, 2, []float64{1, 1}))
	require.NoError(t, err)
	err = near.CheckNonsingularA()
	require.ErrorContains(t, err, "smallest singular value 1e-20")
}

func TestInputTermPanicsOnBadLength(t *testing.T) {
	veh := vehicle(t)
	require.ErrorContains(t, veh.CheckInputs([][]float64{{1}, {1, 2}}), "u(1) has length 2, want nu=1")
	require.Panics(t, func() { veh.InputTerm([][]float64{{1, 2}}) })
	require.InDeltaSlice(t, []float64{0.015, 0.3, -0.005, -0.1}, veh.InputTerm([][]float64{{3}, {-1}}), 1e-15)
}

func TestHorizonPanics(t *testing.T) {
	veh := vehicle(t)
	require.Panics(t, func() { veh.Observability(0) })
	require.Panics(t, func() { veh.StackedD(1) })
	require.Panics(t, func() { veh.DPerp(0) })
	require.Panics(t, func() { veh.StackedF(0) })
}
