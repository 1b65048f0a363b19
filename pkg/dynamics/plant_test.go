package dynamics

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/rng"
)

// runVehicle simulates the paper's closed loop (eqs. 23-24) for steps+1 outputs with a constant
// output offset g (y^ = C x + g) and returns the position and velocity tracking errors x(t) - x_r(t).
func runVehicle(t testing.TB, steps int, x0, xhat0 []float64, g float64) (perr, verr []float64) {
	sys := vehicle(t)
	K, L := paperGains()
	p := NewPlant(sys, x0)
	c, err := NewObserverController(sys, K, L, TanhReference{}, xhat0)
	require.NoError(t, err)
	y, u, r := make([]float64, 1), make([]float64, 1), make([]float64, 2)
	for k := 0; k <= steps; k++ {
		TanhReference{}.At(k, r)
		x := p.State()
		perr = append(perr, x[0]-r[0])
		verr = append(verr, x[1]-r[1])
		p.Output(y)
		y[0] += g
		c.Step(k, y, u)
		p.Step(u)
	}
	return perr, verr
}

// Without noise and with x^(0) = x(0) the observer error stays 0 and the tracking error decays at
// the rate of A - BK (spectral radius 0.9023; A - LC has 0.9046) once the reference settles
// (t > ~15), so at T = 100 the velocity error is 2.8e-5 - NOT below 1e-6; it drops below 1e-6 at
// T = 133.
func TestClosedLoopTracksTanh(t *testing.T) {
	perr, verr := runVehicle(t, 300, nil, nil, 0)
	t.Logf("velocity error at T=100: %.4g, position error %.4g", verr[100], perr[100])
	require.Less(t, math.Abs(verr[100]), 1e-4)
	require.Greater(t, math.Abs(verr[100]), 1e-6, "documented: 1e-6 at T=100 is not reachable with the paper's gains")
	first := -1
	for k := 100; k < len(verr); k++ {
		if math.Abs(verr[k]) < 1e-6 && first < 0 {
			first = k
		}
	}
	t.Logf("velocity error first below 1e-6 at T=%d", first)
	require.Greater(t, first, 100)
	require.Less(t, first, 150)
	require.Less(t, math.Abs(verr[300]), 1e-12)
	require.Less(t, math.Abs(perr[300]), 1e-12)
	// the decay rate matches the closed-loop spectral radius
	veh := vehicle(t)
	K, _ := paperGains()
	var BK, Acl mat.Dense
	BK.Mul(veh.B, K)
	Acl.Sub(veh.A, &BK)
	rho := SpectralRadius(&Acl)
	rate := math.Pow(math.Abs(verr[200]/verr[100]), 0.01)
	t.Logf("spectral radius of A - BK %.5f, observed velocity-error rate %.5f", rho, rate)
	require.InDelta(t, rho, rate, 1e-3)
}

// With a constant output offset g the loop is linear: the error moves by g times a bounded
// response that settles at position error -g (the observer reads p + g) and velocity error 0.
func TestClosedLoopConstantOffsetBounded(t *testing.T) {
	p0, v0 := runVehicle(t, 400, []float64{0.3, -0.2}, nil, 0)
	for _, g := range []float64{0.7, -2.5} {
		pg, vg := runVehicle(t, 400, []float64{0.3, -0.2}, nil, g)
		sup := 0.0
		for k := range pg {
			sup = math.Max(sup, math.Abs(pg[k]-p0[k]))
			require.LessOrEqual(t, math.Abs(pg[k]), 2*math.Abs(g)+1, "position error bounded at t=%d", k)
		}
		t.Logf("g=%v: sup_t |p_g - p_0| = %.4f |g|, final position error %.6g", g, sup/math.Abs(g), pg[400])
		require.LessOrEqual(t, sup, 2*math.Abs(g))
		require.InDelta(t, -g, pg[400], 1e-9)
		require.InDelta(t, 0, vg[400], 1e-9)
		require.InDelta(t, 0, v0[400], 1e-12)
	}
}

// One step of ObserverController against eq. (24) evaluated with gonum.
func TestObserverControllerStepMatchesEq24(t *testing.T) {
	sys := randomLTI(t, 3, 3, 2, 2)
	r := rng.New(4, rng.Label("oc"))
	rnd := func(rows, cols int) *mat.Dense {
		m := mat.NewDense(rows, cols, nil)
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				m.Set(i, j, r.NormFloat64())
			}
		}
		return m
	}
	K, L := rnd(2, 3), rnd(3, 2)
	xhat0 := []float64{0.1, -0.4, 2}
	ref := ConstantReference{V: []float64{1, 2, 3}}
	c, err := NewObserverController(sys, K, L, ref, xhat0)
	require.NoError(t, err)
	yhat := []float64{0.5, -1.5}
	u := make([]float64, 2)
	c.Step(7, yhat, u)

	xh := mat.NewVecDense(3, xhat0)
	var e, wantU, innov, next, tmp mat.VecDense
	e.SubVec(xh, mat.NewVecDense(3, ref.V))
	wantU.MulVec(K, &e)
	wantU.ScaleVec(-1, &wantU)
	innov.MulVec(sys.C, xh)
	innov.SubVec(mat.NewVecDense(2, yhat), &innov)
	next.MulVec(sys.A, xh)
	tmp.MulVec(sys.B, &wantU)
	next.AddVec(&next, &tmp)
	tmp.MulVec(L, &innov)
	next.AddVec(&next, &tmp)
	require.InDeltaSlice(t, wantU.RawVector().Data, u, 1e-14)
	require.InDeltaSlice(t, next.RawVector().Data, c.Estimate(), 1e-14)

	c.Reset(nil)
	require.Equal(t, []float64{0, 0, 0}, c.Estimate())
}

func TestStepsDoNotAllocate(t *testing.T) {
	sys := vehicle(t)
	K, L := paperGains()
	p := NewPlant(sys, []float64{0, 0})
	c, err := NewObserverController(sys, K, L, TanhReference{}, nil)
	require.NoError(t, err)
	y, u := make([]float64, 1), make([]float64, 1)
	k := 0
	allocs := testing.AllocsPerRun(1000, func() {
		p.Output(y)
		c.Step(k, y, u)
		p.Step(u)
		k++
	})
	require.Zero(t, allocs)
	require.Zero(t, testing.AllocsPerRun(100, func() { p.Reset([]float64{1, 2}[:2:2]) }))
}

func TestPlantBasics(t *testing.T) {
	sys := vehicle(t)
	p := NewPlant(sys, []float64{1, 2})
	y := make([]float64, 1)
	p.Output(y)
	require.Equal(t, []float64{1}, y)
	p.Step([]float64{10})
	require.InDeltaSlice(t, []float64{1 + 0.2 + 0.05, 2 + 1}, p.State(), 1e-15)
	p.Reset(nil)
	require.Equal(t, []float64{0, 0}, p.State())
	require.Panics(t, func() { p.Reset([]float64{1}) })
	require.Panics(t, func() { NewPlant(sys, []float64{1, 2, 3}) })
	require.ErrorContains(t, sys.CheckState([]float64{1}), "length 1, want nx=2")
	require.Equal(t, []int{2, 1, 1}, []int{p.Nx(), p.Nu(), p.Ny()})

	// autonomous model (B nil): Step ignores u
	auto, err := NewLTI(mat.NewDense(1, 1, []float64{2}), nil, mat.NewDense(1, 1, []float64{1}))
	require.NoError(t, err)
	pa := NewPlant(auto, []float64{3})
	pa.Step(nil)
	require.Equal(t, []float64{6}, pa.State())
}

func TestNewObserverControllerErrors(t *testing.T) {
	sys := vehicle(t)
	K, L := paperGains()
	auto, err := NewLTI(sys.A, nil, sys.C)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		sys   *LTI
		K, L  *mat.Dense
		ref   Reference
		xhat0 []float64
		want  string
	}{
		{"nil system", nil, K, L, nil, nil, "system is nil"},
		{"no B", auto, K, L, nil, nil, "no input matrix B"},
		{"no K", sys, nil, L, nil, nil, "gain K is missing"},
		{"no L", sys, K, nil, nil, nil, "observer gain L is missing"},
		{"K as column", sys, mat.NewDense(2, 1, []float64{3.424, 4.3095}), L, nil, nil, "K must be nu x nx = 1x2 (u = -K x), got 2x1"},
		{"L as row", sys, K, mat.NewDense(1, 2, nil), nil, nil, "L must be nx x ny = 2x1, got 1x2"},
		{"K NaN", sys, mat.NewDense(1, 2, []float64{math.NaN(), 1}), L, nil, nil, "not finite"},
		{"ref dim", sys, K, L, ZeroReference{N: 3}, nil, "reference has dimension 3, want nx=2"},
		{"xhat0", sys, K, L, TanhReference{}, []float64{1, 2, 3}, "initial estimate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewObserverController(tc.sys, tc.K, tc.L, tc.ref, tc.xhat0)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
