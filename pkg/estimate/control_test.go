package estimate

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
)

func testSystems(t testing.TB) []system {
	return []system{
		{name: "vehicle-observer", A: vehA, B: vehB, C: vehC, x0: []float64{-3, 1.5}, ctrl: vehicleObserver},
		randomStabilised(t, "random-2x1x1", 2, 1, 1),
		randomStabilised(t, "random-3x1x2", 3, 1, 2),
		randomStabilised(t, "random-4x2x1", 4, 2, 1),
		randomStabilised(t, "random-5x2x2", 5, 2, 2),
	}
}

func TestNewControlEstimatorErrors(t *testing.T) {
	cases := []struct {
		name    string
		A, B, C *mat.Dense
		T       int
		want    string
	}{
		{"nil A", nil, vehB, vehC, 10, "A and C are required"},
		{"non-square A", mat.NewDense(2, 3, nil), vehB, vehC, 10, "A must be square"},
		{"C columns", vehA, vehB, mat.NewDense(1, 3, nil), 10, "C needs 2 columns"},
		{"B rows", vehA, mat.NewDense(3, 1, nil), vehC, 10, "B needs 2 rows"},
		{"T", vehA, vehB, vehC, 0, "horizon T must be >= 1"},
		{"NaN", mat.NewDense(1, 1, []float64{math.NaN()}), nil, mat.NewDense(1, 1, []float64{1}), 5, "A[0][0] = NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewControlEstimator(c.A, c.B, c.C, c.T)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestControlObserveErrors(t *testing.T) {
	e, err := NewControlEstimator(vehA, vehB, vehC, 3)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		t       int
		yhat, u []float64
		want    string // "" = must succeed
	}{
		{1, []float64{1}, []float64{0}, "step 1 out of order (expected 0)"},
		{0, []float64{1, 2}, []float64{0}, "yhat has 2 values, want 1"},
		{0, []float64{1}, []float64{0, 1}, "u has 2 values, want 1"},
		{0, []float64{math.Inf(1)}, []float64{0}, "yhat[0] = +Inf is not finite"},
		{0, []float64{1}, []float64{math.NaN()}, "u[0] = NaN is not finite"},
		{0, []float64{1}, []float64{0.5}, ""},
		{1, []float64{1.1}, nil, ""}, // u(1) not yet known
		{2, []float64{1.2}, []float64{0}, "u(1) was never given"},
	}
	for _, s := range steps {
		err := e.Observe(s.t, s.yhat, s.u)
		if s.want == "" {
			if err != nil {
				t.Fatalf("Observe(%d): %v", s.t, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), s.want) {
			t.Fatalf("Observe(%d, %v, %v): err = %v, want %q", s.t, s.yhat, s.u, err, s.want)
		}
	}
	if e.Steps() != 2 {
		t.Fatalf("failed Observes changed the state: Steps() = %d", e.Steps())
	}
	e.Reset()
	for s := 0; s < 3; s++ {
		if err := e.Observe(s, []float64{0}, []float64{0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Observe(3, []float64{0}, []float64{0}); err == nil || !strings.Contains(err.Error(), "beyond the horizon T = 3") {
		t.Fatalf("err = %v", err)
	}
}

// TestControlRecoversX0WithoutNoise: noise none, closed loop (random stabilising output feedback, and the
// paper's observer-based controller for the vehicle): x0 is recovered to 1e-9 once O_t has full column
// rank (t = ceil(nx/ny) - 1) and stays so; the implied trajectory equals the true one.
func TestControlRecoversX0WithoutNoise(t *testing.T) {
	const T = 60
	for _, s := range testSystems(t) {
		t.Run(s.name, func(t *testing.T) {
			nx, _, ny := dims(s)
			est, err := NewControlEstimator(s.A, s.B, s.C, T)
			if err != nil {
				t.Fatal(err)
			}
			none, _ := noise.NewNone(ny)
			none.Reset(nil)
			first := (nx+ny-1)/ny - 1 // first step with nx rows
			x0h := make([]float64, nx)
			tol := 1e-9 * math.Max(1, norm2(s.x0))
			xs := episode(t, s, none, T, est, func(step int) {
				ok := est.Estimate(x0h)
				if step < first && ok {
					t.Fatalf("step %d: estimate claimed with only %d rows for nx = %d", step, (step+1)*ny, nx)
				}
				if step >= first {
					if !ok {
						t.Fatalf("step %d: no estimate although O_t has full rank", step)
					}
					if d := dist2(x0h, s.x0); d > tol {
						t.Fatalf("step %d: |x0_hat - x0| = %g > %g", step, d, tol)
					}
				}
			})
			xt := make([]float64, nx)
			for step := 0; step <= T; step++ {
				if !est.Trajectory(step, xt) {
					t.Fatalf("Trajectory(%d) not available", step)
				}
				if d := dist2(xt, xs[step]); d > 1e-8*math.Max(1, norm2(xs[step])) {
					t.Fatalf("Trajectory(%d) = %v, true %v", step, xt, xs[step])
				}
			}
			if est.Trajectory(T+1, xt) || est.Trajectory(-1, xt) {
				t.Fatal("Trajectory out of range reported ok")
			}
		})
	}
}

// TestControlStructuredNoiseIsFlat: with gamma(t) = C A^t z, z = S eta (Theorem 3), the transcript is the
// noise-free transcript of x0 + z, so x0_hat = x0 + z exactly at every t: the error does not shrink.
// The position-only private model of the paper (A_m = C_m = 1) gives z = (sigma eta, 0) for the
// adversary who uses the full plant model.
func TestControlStructuredNoiseIsFlat(t *testing.T) {
	const T = 200
	pos := system{name: "vehicle-position-model", A: vehA, B: vehB, C: vehC, x0: []float64{-3, 1.5}, ctrl: vehicleObserver}
	type tc struct {
		s          system
		Am, Cm, S  *mat.Dense
		dist       privacy.Mechanism
		zFromState func(z []float64) []float64 // the initial-state perturbation in plant coordinates
	}
	id := func(z []float64) []float64 { return z }
	var cases []tc
	r := rng.New(testSeed, rng.Label("structured-S"))
	for _, s := range testSystems(t) {
		nx, _, _ := dims(s)
		cases = append(cases, tc{s, s.A, s.C, randDense(r, nx, nx, 2), privacy.Gaussian, id})
	}
	cases = append(cases,
		tc{cases[0].s, vehA, vehC, mat.NewDense(2, 2, []float64{3, 0, 0, 3}), privacy.Laplace, id},
		tc{pos, mat.NewDense(1, 1, []float64{1}), mat.NewDense(1, 1, []float64{1}), mat.NewDense(1, 1, []float64{2.5244}),
			privacy.Gaussian, func(z []float64) []float64 { return []float64{z[0], 0} }},
	)
	for _, c := range cases {
		t.Run(c.s.name+"/"+string(c.dist), func(t *testing.T) {
			nx, _, ny := dims(c.s)
			est, _ := NewControlEstimator(c.s.A, c.s.B, c.s.C, T)
			gamma, err := noise.NewStructured(c.Am, c.Cm, c.S, c.dist)
			if err != nil {
				t.Fatal(err)
			}
			gamma.Reset(rng.New(testSeed, rng.Label("plant-noise"), rng.Label(c.s.name)))
			z := c.zFromState(gamma.State())
			want := make([]float64, nx)
			for i := range want {
				want[i] = c.s.x0[i] + z[i]
			}
			first := (nx+ny-1)/ny - 1
			tol := 1e-9 * math.Max(1, norm2(want))
			x0h := make([]float64, nx)
			var errMin, errMax = math.Inf(1), 0.0
			episode(t, c.s, gamma, T, est, func(step int) {
				if step < first {
					return
				}
				if !est.Estimate(x0h) {
					t.Fatalf("step %d: no estimate", step)
				}
				if d := dist2(x0h, want); d > tol {
					t.Fatalf("step %d: x0_hat = %v, want x0 + z = %v (diff %g)", step, x0h, want, d)
				}
				e := dist2(x0h, c.s.x0)
				errMin, errMax = math.Min(errMin, e), math.Max(errMax, e)
			})
			if errMax-errMin > tol || errMin < 1e-3 {
				t.Fatalf("estimation error not flat and positive: min %g, max %g over t", errMin, errMax)
			}
		})
	}
}

// TestControlIIDNoiseShrinks: with i.i.d. N(0, s^2) output noise the error covariance is
// s^2 (O_t'O_t)^{-1}, shrinking like 1/t for marginally stable A (1/sqrt(t) in RMS). Monte Carlo over
// 2000 episodes (fixed seed): the mean squared error at t+1 = 10, 100, 1000 matches
// s^2 trace((O_t'O_t)^{-1}) within 5 standard errors (SE^2 = 2 s^4 trace(P^2)/n for the Gaussian
// quadratic form), and for the scalar model this is s^2/(t+1) exactly.
func TestControlIIDNoiseShrinks(t *testing.T) {
	n, T := 2000, 1000
	if testing.Short() {
		n = 500
	}
	const s = 0.7
	one := mat.NewDense(1, 1, []float64{1})
	scalar := system{name: "position-scalar", A: one, B: one, C: one, x0: []float64{4},
		ctrl: outputFeedback(mat.NewDense(1, 1, []float64{0.3}))}
	vehicle := system{name: "vehicle-observer", A: vehA, B: vehB, C: vehC, x0: []float64{-3, 1.5}, ctrl: vehicleObserver}
	checkpoints := []int{9, 99, 999}
	for _, sys := range []system{scalar, vehicle} {
		t.Run(sys.name, func(t *testing.T) {
			nx, _, ny := dims(sys)
			est, _ := NewControlEstimator(sys.A, sys.B, sys.C, T)
			gamma, _ := noise.NewIID(ny, s, privacy.Gaussian)
			mse := make([]float64, len(checkpoints))
			info := make([]*mat.SymDense, len(checkpoints))
			x0h := make([]float64, nx)
			for ep := 0; ep < n; ep++ {
				est.Reset()
				gamma.Reset(rng.New(testSeed, rng.Label("iid-episode"), uint64(ep)))
				ci := 0
				episode(t, sys, gamma, T, est, func(step int) {
					if ci < len(checkpoints) && step == checkpoints[ci] {
						if !est.Estimate(x0h) {
							t.Fatalf("no estimate at %d", step)
						}
						d := dist2(x0h, sys.x0)
						mse[ci] += d * d / float64(n)
						if ep == 0 {
							info[ci] = est.Information()
						}
						ci++
					}
				})
			}
			for ci, step := range checkpoints {
				var P mat.Dense
				if err := P.Inverse(info[ci]); err != nil {
					t.Fatal(err)
				}
				P.Scale(s*s, &P)
				want := mat.Trace(&P)
				var P2 mat.Dense
				P2.Mul(&P, &P)
				se := math.Sqrt(2 * mat.Trace(&P2) / float64(n))
				if math.Abs(mse[ci]-want) > 5*se {
					t.Errorf("t=%d: MSE %g, theory s^2 tr((O'O)^-1) = %g, beyond 5 SE = %g", step, mse[ci], want, 5*se)
				}
				if sys.name == "position-scalar" && math.Abs(want-s*s/float64(step+1)) > 1e-12 {
					t.Errorf("t=%d: theory %g != s^2/(t+1) = %g", step, want, s*s/float64(step+1))
				}
				t.Logf("t+1=%4d  MSE %.3e  theory %.3e", step+1, mse[ci], want)
			}
			// The leak: 100x more observations, at least ~100x smaller mean squared error.
			if mse[2] > mse[0]/60 {
				t.Errorf("error did not shrink: MSE(10) = %g, MSE(1000) = %g", mse[0], mse[2])
			}
		})
	}
}

func TestControlAllocationFree(t *testing.T) {
	const T = 5000
	est, _ := NewControlEstimator(vehA, vehB, vehC, T)
	y, u, x := []float64{0.3}, []float64{-0.1}, make([]float64, 2)
	step := 0
	var failed error
	obs := func() {
		if err := est.Observe(step, y, u); err != nil && failed == nil {
			failed = err
		}
		step++
	}
	if a := testing.AllocsPerRun(1000, obs); a != 0 {
		t.Errorf("Observe allocates %v per call", a)
	}
	if failed != nil {
		t.Fatal(failed)
	}
	if a := testing.AllocsPerRun(100, func() { est.Estimate(x) }); a != 0 {
		t.Errorf("Estimate allocates %v per call", a)
	}
	if a := testing.AllocsPerRun(100, func() { est.Trajectory(500, x) }); a != 0 {
		t.Errorf("Trajectory allocates %v per call", a)
	}
	if a := testing.AllocsPerRun(100, func() { est.Reset() }); a != 0 {
		t.Errorf("Reset allocates %v per call", a)
	}
}

func TestEstimateNeedsFullRank(t *testing.T) {
	// Unobservable: C = [1 0], A = I: the second coordinate is never seen.
	est, _ := NewControlEstimator(mat.NewDense(2, 2, []float64{1, 0, 0, 1}), nil, vehC, 50)
	x := make([]float64, 2)
	for s := 0; s < 50; s++ {
		if err := est.Observe(s, []float64{1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if est.Estimate(x) {
		t.Fatalf("estimate claimed for an unobservable pair: %v", x)
	}
	// Vehicle: one output row is not enough, two are.
	est, _ = NewControlEstimator(vehA, vehB, vehC, 5)
	_ = est.Observe(0, []float64{1}, []float64{0})
	if est.Estimate(x) {
		t.Fatal("estimate claimed from one scalar output")
	}
	_ = est.Observe(1, []float64{1}, []float64{0})
	if !est.Estimate(x) {
		t.Fatal("no estimate from two outputs of the observable vehicle")
	}
}

func BenchmarkControlObserve(b *testing.B) {
	const T = 1 << 16
	est, _ := NewControlEstimator(vehA, vehB, vehC, T)
	y, u := []float64{0.3}, []float64{-0.1}
	step := 0
	b.ReportAllocs()
	for b.Loop() {
		if step == T {
			est.Reset()
			step = 0
		}
		_ = est.Observe(step, y, u)
		step++
	}
}
