package john

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
	"gonum.org/v1/gonum/mat"
)

// TestStepAllocationFree: after warm-up an iteration allocates nothing, for every method
// and with one or two workers.
func TestStepAllocationFree(t *testing.T) {
	a := randomPolytope(3000, 8, 5)
	for _, m := range []Method{Exact, Fast, DP} {
		for _, workers := range []int{1, 2} {
			s, err := NewSolver(a, Config{Method: m, NoiseScale: 0.1, Workers: workers, MaxIter: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 5; k++ {
				if err := s.Step(); err != nil {
					t.Fatal(err)
				}
			}
			allocs := testing.AllocsPerRun(10, func() {
				if err := s.Step(); err != nil {
					t.Fatal(err)
				}
			})
			s.Close()
			if allocs != 0 {
				t.Errorf("%s, %d workers: %g allocations per iteration, want 0", m, workers, allocs)
			}
		}
	}
}

// TestDeterminism: the same seed gives bit-identical weights whatever the worker count;
// another seed gives other weights (fast, dp).
func TestDeterminism(t *testing.T) {
	a := randomPolytope(2000, 6, 8)
	for _, m := range []Method{Exact, Fast, DP} {
		run := func(seed uint64, workers int) []float64 {
			res, err := Solve(a, Config{Method: m, Seed: seed, Workers: workers, NoiseScale: 0.2, MaxIter: 30})
			if err != nil {
				t.Fatal(err)
			}
			return res.Weights
		}
		w1, w2 := run(1, 1), run(1, 2)
		if !slices.Equal(w1, w2) {
			t.Errorf("%s: weights differ between 1 and 2 workers", m)
		}
		if w3 := run(2, 2); m != Exact && slices.Equal(w1, w3) {
			t.Errorf("%s: seeds 1 and 2 gave identical weights", m)
		}
	}
}

func TestErrors(t *testing.T) {
	good := randomPolytope(20, 3, 1)
	nan := randomPolytope(20, 3, 1)
	nan.Set(4, 2, math.NaN())
	rankDef := randomPolytope(20, 3, 1)
	for i := 0; i < 20; i++ {
		rankDef.Set(i, 2, 2*rankDef.At(i, 0)-rankDef.At(i, 1))
	}
	cases := []struct {
		name string
		a    *mat.Dense
		cfg  Config
		want string
	}{
		{"n < d", randomPolytope(2, 3, 1), Config{}, "n >= d"},
		{"NaN", nan, Config{}, "row 5, column 3"},
		{"rank deficient exact", rankDef, Config{Method: Exact}, "rank"},
		{"rank deficient fast", rankDef, Config{Method: Fast}, "rank"},
		{"negative xi", good, Config{Xi: -1}, "xi"},
		{"unknown method", good, Config{Method: "newton"}, "unknown method"},
		{"dp without noise", good, Config{Method: DP}, "noise scale"},
		{"dp bad delta", good, Config{Method: DP, Epsilon: 1, Delta: 2, Eps0: 0.1}, "delta"},
		{"negative noise", good, Config{Method: DP, NoiseScale: -1}, "noise scale"},
		{"negative max-iter", good, Config{MaxIter: -1}, ">= 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Solve(tc.a, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	// A zero row makes the sensitivity unbounded: calibration from epsilon must refuse.
	zero := randomPolytope(20, 3, 1)
	zero.SetRow(3, []float64{0, 0, 0})
	_, err := Solve(zero, Config{Method: DP, Epsilon: 1, Delta: 1e-6, Eps0: 1e-3})
	if err == nil || !strings.Contains(err.Error(), "unbounded") {
		t.Fatalf("zero row, calibrated dp: error %v, want unbounded sensitivity", err)
	}
	// ... but with an explicit noise scale it runs and warns; the zero row keeps only its
	// share of w_1 = d/n in the average (every later iterate gives it exactly 0).
	res, err := Solve(zero, Config{Method: DP, NoiseScale: 0.1, Eps0: 1e-3, MaxIter: 50})
	if err != nil {
		t.Fatal(err)
	}
	if res.Weights[3] > 1.2*(3.0/20)/50 || len(res.Warnings) == 0 || res.Sensitivity.Finite {
		t.Errorf("zero row: weight %g, warnings %q, sensitivity finite %v", res.Weights[3], res.Warnings, res.Sensitivity.Finite)
	}
}

// TestTruncatedNormal: support [-0.5, 0.5], mean 0 and the variance of TruncatedVariance,
// for both samplers (sigma <= 0.5 rejects from the normal, larger sigma from the uniform).
// 200000 draws: the standard error of the variance is below 0.3% of it, we allow 2%.
// TestErrorsRangeAndOverflow: regressions. xi = 1e-300 used to collapse int(+Inf) to 1 iteration; an
// entry of 1e308 used to be reported as "must have rank d"; errors repeated their "john:" prefix.
func TestErrorsRangeAndOverflow(t *testing.T) {
	good := randomPolytope(20, 3, 1)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"xi 1e-300", Config{Xi: 1e-300}, "xi = 1e-300: must lie in [1e-12, 10] for method exact"},
		{"xi below sketched minimum", Config{Method: Fast, Xi: 1e-9}, "xi = 1e-09: must lie in [1e-06, 10] for method fast"},
		{"xi too large", Config{Xi: 11}, "xi = 11: must lie in"},
		{"xi NaN", Config{Xi: math.NaN()}, "xi = NaN"},
		{"xi negative", Config{Xi: -1}, "xi = -1"},
		{"huge sketch", Config{Method: Fast, SketchSize: 1 << 30}, "sketch size 1073741824 (at most 16777216)"},
	} {
		_, err := Solve(good, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	// the default iteration counts saturate instead of wrapping to 1
	if got := DefaultMaxIter(Exact, 1000, 2, 1e-300, 0); got != math.MaxInt32 {
		t.Errorf("DefaultMaxIter(exact, xi = 1e-300) = %d, want saturation at %d", got, math.MaxInt32)
	}
	if got := DefaultMaxIter(Fast, 1000, 2, 1e-300, 1); got != math.MaxInt32 {
		t.Errorf("DefaultMaxIter(fast, xi = 1e-300) = %d, want saturation", got)
	}
	if got := DefaultSketchSize(1e-300); got != math.MaxInt32 {
		t.Errorf("DefaultSketchSize(1e-300) = %d", got)
	}

	// overflow is named as such, with the entry, for every method
	big := mat.NewDense(3, 2, []float64{1, 0, 0, 1, 1e308, 1})
	mid := mat.NewDense(3, 2, []float64{1, 0, 0, 1, 1e160, 1})
	for _, a := range []*mat.Dense{big, mid} {
		for _, m := range Methods {
			_, err := Solve(a, Config{Method: m, NoiseScale: 0.1})
			if err == nil || !strings.Contains(err.Error(), "too large: A^T W A overflows float64 (largest |a_ij| = ") ||
				!strings.Contains(err.Error(), "at row 3, column 1, 1-based") || strings.Contains(err.Error(), "rank") {
				t.Errorf("%s, entry %g: error %v, want the overflow named", m, a.At(2, 0), err)
			}
		}
	}
	// tiny entries: the rank message says why
	tiny := mat.NewDense(3, 2, []float64{1e-170, 0, 0, 1e-170, 1e-170, 1e-170})
	if _, err := Solve(tiny, Config{}); err == nil || !strings.Contains(err.Error(), "underflow") {
		t.Errorf("tiny entries: error %v, want the underflow named", err)
	}

	// the prefix appears once
	rankDef := mat.NewDense(3, 2, []float64{1, 0, 2, 0, 3, 0})
	for _, m := range Methods {
		_, err := Solve(rankDef, Config{Method: m, NoiseScale: 0.1})
		if err == nil || strings.Count(err.Error(), "john:") != 1 || !strings.HasPrefix(err.Error(), "john: ") ||
			!strings.Contains(err.Error(), "must have rank d = 2") {
			t.Errorf("%s: rank-deficient error %q, want one \"john:\" prefix and the rank", m, err)
		}
	}
	if _, err := Solve(randomPolytope(20, 3, 1), Config{Method: DP, Epsilon: 1, Delta: 1e-6, Eps0: -1}); err == nil || strings.Count(err.Error(), "john:") != 1 {
		t.Errorf("dp error %q: want one prefix", err)
	}
	zero := randomPolytope(20, 3, 1)
	zero.SetRow(3, []float64{0, 0, 0})
	if _, err := Solve(zero, Config{Method: DP, Epsilon: 1, Delta: 1e-6, Eps0: 1e-3}); err == nil || strings.Count(err.Error(), "john:") != 1 {
		t.Errorf("dp calibration error %q: want one prefix", err)
	}
	if _, err := LocalSensitivity(good, make([]float64, 20), 1e-3); err == nil || strings.Count(err.Error(), "john:") != 1 {
		t.Errorf("LocalSensitivity error %q: want one prefix", err)
	}

	// a non-converged result carries the warning; a converged one none
	res, err := Solve(good, Config{Method: Exact, Xi: 1e-9, MaxIter: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Converged || !strings.HasPrefix(res.ConvergenceWarning(), "not converged: max leverage") ||
		!slices.Contains(res.Warnings, res.ConvergenceWarning()) {
		t.Errorf("converged %v, warning %q, warnings %q", res.Converged, res.ConvergenceWarning(), res.Warnings)
	}
	res, err = Solve(good, Config{Method: Exact})
	if err != nil || !res.Converged || res.ConvergenceWarning() != "" {
		t.Errorf("default exact run: %v converged %v warning %q", err, res != nil && res.Converged, res.ConvergenceWarning())
	}
}

func TestTruncatedNormal(t *testing.T) {
	r := rng.New(4, rng.Label("trunc"))
	for _, sigma := range []float64{0.01, 0.1, 0.3, 0.5, 0.7, 2, 100} {
		const n = 200000
		var s1, s2 float64
		for i := 0; i < n; i++ {
			z := TruncatedNormal(r, sigma)
			if math.Abs(z) > TruncHalfWidth {
				t.Fatalf("sigma %g: draw %g outside [-0.5, 0.5]", sigma, z)
			}
			s1 += z
			s2 += z * z
		}
		v := TruncatedVariance(sigma)
		if math.Abs(s1/n) > 5*math.Sqrt(v/n) {
			t.Errorf("sigma %g: mean %g", sigma, s1/n)
		}
		if got := s2 / n; math.Abs(got/v-1) > 0.02 {
			t.Errorf("sigma %g: variance %g, want %g", sigma, got, v)
		}
	}
	if TruncatedNormal(r, 0) != 0 || TruncatedVariance(0) != 0 {
		t.Error("sigma 0 must give 0")
	}
	if v := TruncatedVariance(1e6); math.Abs(v-1.0/12) > 1e-6 {
		t.Errorf("uniform limit %g, want 1/12", v)
	}
	if v := TruncatedVariance(0.01); math.Abs(v/1e-4-1) > 1e-9 {
		t.Errorf("small sigma: %g, want sigma^2", v)
	}
}

// TestCalibrateNoise: the sigma found satisfies kappa(eps, sqrt(T) beta / sigma) <= delta
// (GDP composition, eq. (7)) and 0.999 sigma does not.
func TestCalibrateNoise(t *testing.T) {
	sens := &Sensitivity{Finite: true, ZShift: 0.03}
	for _, c := range []struct {
		T          int
		eps, delta float64
	}{{1, 1, 1e-5}, {100, 1, 1e-6}, {900, 0.5, 1e-8}, {10, 4, 1e-3}} {
		sigma, err := CalibrateNoise(sens, c.T, c.eps, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		mu := func(s float64) float64 { return math.Sqrt(float64(c.T)) * sens.ZShift / s }
		if k := privacy.Kappa(c.eps, mu(sigma)); k > c.delta*(1+1e-6) {
			t.Errorf("%+v: kappa = %g > delta", c, k)
		}
		if k := privacy.Kappa(c.eps, mu(0.999*sigma)); k <= c.delta {
			t.Errorf("%+v: 0.999 sigma still satisfies (kappa %g)", c, k)
		}
	}
	if _, err := CalibrateNoise(&Sensitivity{Finite: false, Reason: "x"}, 10, 1, 1e-6); err == nil {
		t.Error("unbounded sensitivity accepted")
	}
}

// TestDPResultFields: dp never claims an (eps, delta); it reports sigma, its source, the
// local sensitivity and warns when sigma exceeds the truncation width.
func TestDPResultFields(t *testing.T) {
	a := randomPolytope(400, 4, 3)
	res, err := Solve(a, Config{Method: DP, Epsilon: 1, Delta: 1e-6, Eps0: 1e-3, MaxIter: 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.Guarantee != GuaranteeNone || res.GuaranteeNote == "" || res.NoiseSource != NoiseCalibrated {
		t.Errorf("guarantee %q source %q", res.Guarantee, res.NoiseSource)
	}
	if res.Sensitivity == nil || !res.Sensitivity.Finite || !(res.NoiseScale > 0) {
		t.Fatalf("sensitivity %+v sigma %g", res.Sensitivity, res.NoiseScale)
	}
	want, _ := CalibrateNoise(res.Sensitivity, 20, 1, 1e-6)
	if res.NoiseScale != want {
		t.Errorf("sigma %g, want %g", res.NoiseScale, want)
	}
	res, err = Solve(a, Config{Method: DP, NoiseScale: 3, MaxIter: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.NoiseSource != NoiseUser || res.Sensitivity != nil || len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "truncation") {
		t.Errorf("user sigma 3: source %q sensitivity %v warnings %q", res.NoiseSource, res.Sensitivity, res.Warnings)
	}
	for _, m := range []Method{Exact, Fast} {
		res, err := Solve(a, Config{Method: m, MaxIter: 3})
		if err != nil {
			t.Fatal(err)
		}
		if res.Guarantee != "" || res.NoiseScale != 0 {
			t.Errorf("%s carries privacy fields", m)
		}
	}
}

// TestCheckEveryAndTrace: CheckEvery stops the fast method as soon as the averaged iterate
// is verified, and the trace is the accuracy of the output, ending at the result's.
func TestCheckEveryAndTrace(t *testing.T) {
	a := randomPolytope(1000, 5, 6)
	res, err := Solve(a, Config{Method: Fast, CheckEvery: 10, Seed: 2, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	full := DefaultMaxIter(Fast, 1000, 5, DefaultXi, DefaultSketchSize(DefaultXi))
	if !res.Converged || res.Iterations%10 != 0 || res.Iterations >= full {
		t.Errorf("converged %v after %d iterations (default T %d)", res.Converged, res.Iterations, full)
	}
	if len(res.Trace) != res.Iterations+1 || res.Trace[0].Iteration != 0 {
		t.Fatalf("trace has %d points for %d iterations", len(res.Trace), res.Iterations)
	}
	if last := res.Trace[len(res.Trace)-1]; math.Abs(last.MaxLeverage-res.MaxLeverage) > 1e-12 {
		t.Errorf("trace ends at %g, result %g", last.MaxLeverage, res.MaxLeverage)
	}
	// Exact: the trace is non-increasing here (last iterate and average both improve).
	res, err = Solve(a, Config{Method: Exact, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(res.Trace); i++ {
		if res.Trace[i].MaxLeverage > res.Trace[i-1].MaxLeverage+1e-12 {
			t.Errorf("exact trace increases at %d: %g -> %g", i, res.Trace[i-1].MaxLeverage, res.Trace[i].MaxLeverage)
		}
	}
}

// TestEllipsoidInsidePolytope checks Lemma 3.5 numerically: points on the boundary of
// E / sqrt(max h) satisfy every constraint, and sqrt(d) E contains the polytope's vertices
// along random directions (x on the boundary of P, x^T Q x <= d).
func TestEllipsoidInsidePolytope(t *testing.T) {
	a := randomPolytope(300, 4, 12)
	res, err := Solve(a, Config{Method: Fast, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var ch mat.Cholesky
	if !ch.Factorize(res.Q) {
		t.Fatal("Q not PD")
	}
	var l mat.TriDense
	ch.LTo(&l)
	r := rng.New(1, rng.Label("dirs"))
	ax := mat.NewVecDense(300, nil)
	for k := 0; k < 200; k++ {
		// x = L^{-T} y / sqrt(max h) with |y| = 1 is on the boundary of E / sqrt(max h).
		y := mat.NewVecDense(4, nil)
		for i := 0; i < 4; i++ {
			y.SetVec(i, r.NormFloat64())
		}
		y.ScaleVec(1/mat.Norm(y, 2), y)
		x := mat.NewVecDense(4, nil)
		if err := x.SolveVec(l.T(), y); err != nil {
			t.Fatal(err)
		}
		x.ScaleVec(1/math.Sqrt(res.MaxLeverage), x)
		ax.MulVec(a, x)
		if m := mat.Norm(ax, math.Inf(1)); m > 1+1e-9 {
			t.Fatalf("point of E/sqrt(max h) violates a constraint: max |a_i^T x| = %g", m)
		}
		// Scale the direction to the boundary of P: x / max|a_i^T x|; then x^T Q x <= d.
		x.ScaleVec(1/mat.Norm(ax, math.Inf(1)), x)
		if q := mat.Inner(x, res.Q, x); q > 4*(1+1e-9) {
			t.Fatalf("boundary point of P outside sqrt(d) E: x^T Q x = %g", q)
		}
	}
}
