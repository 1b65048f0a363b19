package noise

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
)

const testSeed = 20240611

var (
	vehA   = mat.NewDense(2, 2, []float64{1, 0.1, 0, 1})
	vehC   = mat.NewDense(1, 2, []float64{1, 0})
	scalar = mat.NewDense(1, 1, []float64{1})
)

func randDense(r *rand.Rand, rows, cols int, scale float64) *mat.Dense {
	d := mat.NewDense(rows, cols, nil)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			d.Set(i, j, scale*r.NormFloat64())
		}
	}
	return d
}

func mustStructured(t testing.TB, A, C, S *mat.Dense, dist privacy.Mechanism) *StructuredStream {
	t.Helper()
	s, err := NewStructured(A, C, S, dist)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewStructuredErrors(t *testing.T) {
	nan := mat.NewDense(1, 1, []float64{math.NaN()})
	cases := []struct {
		name    string
		A, C, S *mat.Dense
		dist    privacy.Mechanism
		want    string
	}{
		{"nil A", nil, vehC, vehA, privacy.Gaussian, "A_m is nil"},
		{"nil C", vehA, nil, vehA, privacy.Gaussian, "C_m is nil"},
		{"nil S", vehA, vehC, nil, privacy.Gaussian, "S is nil"},
		{"empty S", vehA, vehC, &mat.Dense{}, privacy.Gaussian, "S is empty"},
		{"non-square A", mat.NewDense(2, 3, nil), vehC, vehA, privacy.Gaussian, "A_m must be square, got 2x3"},
		{"C columns", vehA, mat.NewDense(1, 3, nil), vehA, privacy.Gaussian, "C_m needs 2 columns"},
		{"S rows", vehA, vehC, mat.NewDense(3, 2, nil), privacy.Gaussian, "S needs 2 rows"},
		{"NaN", scalar, scalar, nan, privacy.Gaussian, "S[0][0] = NaN is not finite"},
		{"bad dist", vehA, vehC, vehA, privacy.Mechanism("cauchy"), `unknown distribution "cauchy"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewStructured(c.A, c.C, c.S, c.dist)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestOtherConstructorErrors(t *testing.T) {
	cases := []struct {
		name string
		fn   func() error
		want string
	}{
		{"iid m=0", func() error { _, err := NewIID(0, 1, privacy.Gaussian); return err }, "dimension must be >= 1"},
		{"iid negative", func() error { _, err := NewIID(1, -1, privacy.Gaussian); return err }, "scale must be finite and >= 0"},
		{"iid inf", func() error { _, err := NewIID(1, math.Inf(1), privacy.Laplace); return err }, "scale must be finite"},
		{"iid dist", func() error { _, err := NewIID(1, 1, ""); return err }, "unknown distribution"},
		{"none m=0", func() error { _, err := NewNone(0); return err }, "dimension must be >= 1"},
		{"offset NaN", func() error { _, err := NewOffset(math.NaN(), privacy.Gaussian); return err }, "sigma must be finite"},
		{"offset dist", func() error { _, err := NewOffset(1, "x"); return err }, "unknown distribution"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.fn()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// allStreams builds one stream of every design, fresh each call.
func allStreams(t testing.TB) map[string]Auditable {
	t.Helper()
	r := rng.New(testSeed, rng.Label("matrices"))
	S := randDense(r, 2, 2, 1)
	out := map[string]Auditable{
		"structured-gaussian": mustStructured(t, vehA, vehC, S, privacy.Gaussian),
		"structured-laplace":  mustStructured(t, vehA, vehC, S, privacy.Laplace),
	}
	var err error
	if out["offset"], err = NewOffset(2.5, privacy.Gaussian); err != nil {
		t.Fatal(err)
	}
	if out["iid-gaussian"], err = NewIID(3, 1.5, privacy.Gaussian); err != nil {
		t.Fatal(err)
	}
	if out["iid-laplace"], err = NewIID(3, 1.5, privacy.Laplace); err != nil {
		t.Fatal(err)
	}
	if out["none"], err = NewNone(2); err != nil {
		t.Fatal(err)
	}
	return out
}

func run(s Auditable, r *rand.Rand, steps int) []float64 {
	s.Reset(r)
	out := make([]float64, 0, steps*s.Dim())
	buf := make([]float64, s.Dim())
	for i := 0; i < steps; i++ {
		s.Next(buf)
		out = append(out, buf...)
	}
	return out
}

func TestReproducibleAndPathDependent(t *testing.T) {
	for name, s := range allStreams(t) {
		t.Run(name, func(t *testing.T) {
			a := run(s, rng.New(testSeed, rng.Label("plant"), 7), 50)
			b := run(s, rng.New(testSeed, rng.Label("plant"), 7), 50) // same stream object, reset again
			c := run(s, rng.New(testSeed, rng.Label("plant"), 8), 50) // next episode
			d := run(s, rng.New(testSeed+1, rng.Label("plant"), 7), 50)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("same seed and path differ at %d: %v vs %v", i, a[i], b[i])
				}
			}
			if name == "none" {
				for _, v := range a {
					if v != 0 {
						t.Fatalf("none stream emitted %v", v)
					}
				}
				return
			}
			if equal(a, c) || equal(a, d) {
				t.Fatal("different paths or seeds gave identical noise")
			}
		})
	}
}

func equal(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestStructuredMatchesMatrixPowers checks the incremental update against gamma(t) = C_m A_m^t S eta
// computed directly with matrix powers (Theorem 3), t = 0..100.
func TestStructuredMatchesMatrixPowers(t *testing.T) {
	r := rng.New(testSeed, rng.Label("powers"))
	// A random 3x3 scaled to spectral radius below 1.05 so that A^100 stays representable.
	A3 := randDense(r, 3, 3, 0.4)
	cases := []struct {
		name    string
		A, C, S *mat.Dense
		dist    privacy.Mechanism
	}{
		{"position-1x1", scalar, scalar, mat.NewDense(1, 1, []float64{2.5244}), privacy.Gaussian},
		// the scalar path (nz = m = 1) with A_m, C_m not 1 and two draws
		{"decaying-1x1-r2", mat.NewDense(1, 1, []float64{0.93}), mat.NewDense(1, 1, []float64{1.7}), mat.NewDense(1, 2, []float64{0.8, -0.3}), privacy.Laplace},
		{"vehicle-2x2", vehA, vehC, mat.NewDense(2, 2, []float64{1.3, 0, 0.4, 0.7}), privacy.Gaussian},
		{"vehicle-2x2-laplace", vehA, vehC, mat.NewDense(2, 2, []float64{3, 0, 0, 3}), privacy.Laplace},
		{"random-3x3-m2-r2", A3, randDense(r, 2, 3, 1), randDense(r, 3, 2, 1), privacy.Gaussian},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mustStructured(t, c.A, c.C, c.S, c.dist)
			s.Reset(rng.New(testSeed, rng.Label(c.name)))
			eta := mat.NewVecDense(len(s.Eta()), s.Eta())
			m, _ := c.C.Dims()
			got := make([]float64, m)
			var At, want mat.Dense
			var w mat.VecDense
			for step := 0; step <= 100; step++ {
				if s.Step() != step {
					t.Fatalf("Step() = %d, want %d", s.Step(), step)
				}
				if z := s.State(); len(z) != c.A.RawMatrix().Rows {
					t.Fatalf("State() has %d values", len(z))
				}
				s.Next(got)
				At.Pow(c.A, step)
				want.Product(c.C, &At, c.S)
				w.MulVec(&want, eta)
				scale := mat.Norm(c.C, 2) * mat.Norm(&At, 2) * mat.Norm(c.S, 2) * mat.Norm(eta, 2)
				for k := 0; k < m; k++ {
					if d := math.Abs(got[k] - w.AtVec(k)); d > 1e-12*scale {
						t.Fatalf("t=%d k=%d: incremental %v, direct %v (diff %g, scale %g)", step, k, got[k], w.AtVec(k), d, scale)
					}
				}
			}
		})
	}
}

// TestStructuredCovarianceMonteCarlo: over 20000 episodes the sample covariance of gamma(t) equals
// Variance(dist) * C A^t S S' A^t' C' (Sigma = S S'). Each entry is checked within 5 standard errors
// (SE estimated from the products themselves, CLT); two-sided 5 SE has probability 5.7e-7 per entry,
// < 1e-4 for all entries of the test together. Fixed seed, so the test is deterministic.
func TestStructuredCovarianceMonteCarlo(t *testing.T) {
	const n = 20000
	r := rng.New(testSeed, rng.Label("cov-matrices"))
	A := mat.NewDense(2, 2, []float64{0.9, 0.3, -0.2, 0.95})
	C := randDense(r, 2, 2, 1)
	S := mat.NewDense(2, 2, []float64{1.5, 0, -0.6, 0.8})
	times := []int{0, 3, 20}
	for _, dist := range []privacy.Mechanism{privacy.Gaussian, privacy.Laplace} {
		t.Run(string(dist), func(t *testing.T) {
			s := mustStructured(t, A, C, S, dist)
			// sums[ti] of gamma_j and gamma_j gamma_k, and of (gamma_j gamma_k)^2 for the SE.
			type acc struct {
				m1     [2]float64
				m2, m4 [2][2]float64
			}
			accs := make([]acc, len(times))
			g := make([]float64, 2)
			for ep := 0; ep < n; ep++ {
				s.Reset(rng.New(testSeed, rng.Label("cov"), uint64(ep)))
				ti := 0
				for step := 0; step <= times[len(times)-1]; step++ {
					s.Next(g)
					if step != times[ti] {
						continue
					}
					a := &accs[ti]
					for j := 0; j < 2; j++ {
						a.m1[j] += g[j]
						for k := 0; k < 2; k++ {
							p := g[j] * g[k]
							a.m2[j][k] += p
							a.m4[j][k] += p * p
						}
					}
					ti++
				}
			}
			var At, L, want mat.Dense
			for ti, step := range times {
				At.Pow(A, step)
				L.Product(C, &At, S)
				want.Mul(&L, L.T())
				want.Scale(Variance(dist), &want)
				a := accs[ti]
				for j := 0; j < 2; j++ {
					mean := a.m1[j] / n
					if se := math.Sqrt(want.At(j, j) / n); math.Abs(mean) > 5*se {
						t.Errorf("t=%d: mean of gamma_%d = %g, beyond 5 SE = %g", step, j, mean, 5*se)
					}
					for k := 0; k < 2; k++ {
						cov := a.m2[j][k] / n // mean is 0 by construction
						se := math.Sqrt((a.m4[j][k]/n - cov*cov) / n)
						if math.Abs(cov-want.At(j, k)) > 5*se {
							t.Errorf("t=%d: cov[%d][%d] = %g, theory %g, beyond 5 SE = %g", step, j, k, cov, want.At(j, k), 5*se)
						}
					}
				}
			}
		})
	}
}

// TestLaplaceMoments: Laplace(0, b) has mean 0, E|X| = b, variance 2 b^2 (Var X^2 = 20 b^4) and
// P(|X| > b ln 10) = 0.1. 200000 draws, each moment within 5 SE.
func TestLaplaceMoments(t *testing.T) {
	const n = 200000
	const b = 1.7
	r := rng.New(testSeed, rng.Label("laplace"))
	var s1, s2, sa float64
	tail := 0
	for i := 0; i < n; i++ {
		x := SampleLaplace(r, b)
		if math.IsInf(x, 0) || math.IsNaN(x) {
			t.Fatalf("draw %d not finite: %v", i, x)
		}
		s1 += x
		s2 += x * x
		sa += math.Abs(x)
		if math.Abs(x) > b*math.Ln10 {
			tail++
		}
	}
	checks := []struct {
		name          string
		got, want, se float64
	}{
		{"mean", s1 / n, 0, math.Sqrt(2 * b * b / n)},
		{"variance 2b^2", s2 / n, 2 * b * b, math.Sqrt(20 * b * b * b * b / n)},
		{"E|X| = b", sa / n, b, math.Sqrt(b * b / n)},
		{"P(|X| > b ln10)", float64(tail) / n, 0.1, math.Sqrt(0.09 / n)},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 5*c.se {
			t.Errorf("%s: got %g, want %g within 5 SE = %g", c.name, c.got, c.want, 5*c.se)
		}
	}
	if Variance(privacy.Laplace) != 2 || Variance(privacy.Gaussian) != 1 {
		t.Error("Variance of unit draws must be 2 (Laplace) and 1 (Gaussian)")
	}
}

// TestIIDIndependentAcrossSteps: lag-1 and cross-component sample correlations within 5/sqrt(n),
// per-component variance scale^2 (Gaussian) or 2 scale^2 (Laplace) within 5 SE.
func TestIIDIndependentAcrossSteps(t *testing.T) {
	const n = 100000
	const scale = 0.8
	for _, dist := range []privacy.Mechanism{privacy.Gaussian, privacy.Laplace} {
		t.Run(string(dist), func(t *testing.T) {
			s, err := NewIID(2, scale, dist)
			if err != nil {
				t.Fatal(err)
			}
			s.Reset(rng.New(testSeed, rng.Label("iid"), rng.Label(string(dist))))
			prev := make([]float64, 2)
			cur := make([]float64, 2)
			var lag, cross, sq [2]float64
			s.Next(prev)
			for i := 0; i < n; i++ {
				s.Next(cur)
				for k := 0; k < 2; k++ {
					lag[k] += cur[k] * prev[k]
					sq[k] += cur[k] * cur[k]
				}
				cross[0] += cur[0] * cur[1]
				cur, prev = prev, cur
			}
			v := Variance(dist) * scale * scale
			kurt := 3.0
			if dist == privacy.Laplace {
				kurt = 6
			}
			for k := 0; k < 2; k++ {
				if rho := lag[k] / sq[k]; math.Abs(rho) > 5/math.Sqrt(n) {
					t.Errorf("component %d: lag-1 correlation %g beyond 5/sqrt(n) = %g", k, rho, 5/math.Sqrt(n))
				}
				se := v * math.Sqrt((kurt-1)/n)
				if got := sq[k] / n; math.Abs(got-v) > 5*se {
					t.Errorf("component %d: variance %g, want %g within 5 SE = %g", k, got, v, 5*se)
				}
			}
			if rho := cross[0] / math.Sqrt(sq[0]*sq[1]); math.Abs(rho) > 5/math.Sqrt(n) {
				t.Errorf("cross-component correlation %g beyond 5/sqrt(n)", rho)
			}
			if s.Step() != n+1 || s.Eta() != nil {
				t.Errorf("Step() = %d, Eta() = %v", s.Step(), s.Eta())
			}
		})
	}
}

// TestOffsetConstant: the consensus offset is sigma*eta at every step (Section 6).
func TestOffsetConstant(t *testing.T) {
	for _, dist := range []privacy.Mechanism{privacy.Gaussian, privacy.Laplace} {
		s, err := NewOffset(3.25, dist)
		if err != nil {
			t.Fatal(err)
		}
		s.Reset(rng.New(testSeed, rng.Label("agent"), 4))
		eta := s.Eta()
		if len(eta) != 1 || eta[0] == 0 {
			t.Fatalf("Eta() = %v", eta)
		}
		g := make([]float64, 1)
		for step := 0; step < 1000; step++ {
			s.Next(g)
			if g[0] != 3.25*eta[0] {
				t.Fatalf("%s step %d: gamma = %v, want sigma*eta = %v", dist, step, g[0], 3.25*eta[0])
			}
		}
	}
}

// TestStreamsIndependent: etas drawn on different rng paths are uncorrelated over 20000 episodes.
func TestStreamsIndependent(t *testing.T) {
	const n = 20000
	a, _ := NewOffset(1, privacy.Gaussian)
	b, _ := NewOffset(1, privacy.Gaussian)
	var sab, saa, sbb float64
	for ep := 0; ep < n; ep++ {
		a.Reset(rng.New(testSeed, rng.Label("agent"), 0, uint64(ep)))
		b.Reset(rng.New(testSeed, rng.Label("agent"), 1, uint64(ep)))
		x, y := a.Eta()[0], b.Eta()[0]
		sab += x * y
		saa += x * x
		sbb += y * y
	}
	if rho := sab / math.Sqrt(saa*sbb); math.Abs(rho) > 5/math.Sqrt(n) {
		t.Errorf("correlation between agents' etas %g beyond 5/sqrt(n) = %g", rho, 5/math.Sqrt(n))
	}
}

func TestAllocationFree(t *testing.T) {
	for name, s := range allStreams(t) {
		r := rng.New(testSeed, rng.Label("allocs"))
		dst := make([]float64, s.Dim())
		s.Reset(r)
		if a := testing.AllocsPerRun(1000, func() { s.Next(dst) }); a != 0 {
			t.Errorf("%s: Next allocates %v per call", name, a)
		}
		if a := testing.AllocsPerRun(1000, func() { s.Reset(r) }); a != 0 {
			t.Errorf("%s: Reset allocates %v per call", name, a)
		}
	}
}

func TestMisusePanics(t *testing.T) {
	for name, s := range allStreams(t) {
		if name != "none" {
			mustPanic(t, name+" before Reset", func() { s.Next(make([]float64, s.Dim())) })
		}
		s.Reset(rng.New(1))
		mustPanic(t, name+" wrong dst", func() { s.Next(make([]float64, s.Dim()+1)) })
	}
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}

func TestDescribe(t *testing.T) {
	want := map[string]string{
		"structured-gaussian": "eta ~ N(0,1)^2 drawn once",
		"structured-laplace":  "eta ~ Laplace(0,1)^2 drawn once",
		"offset":              "N(0,1)^1",
		"iid-gaussian":        "N(0, 1.5^2)^3 fresh each step",
		"iid-laplace":         "variance 4.5",
		"none":                "gamma(t) = 0",
	}
	for name, s := range allStreams(t) {
		if d := s.Describe(); !strings.Contains(d, want[name]) {
			t.Errorf("%s: Describe() = %q, want it to contain %q", name, d, want[name])
		}
	}
}

// BenchmarkStructuredStep: one structured-noise step (target < 100 ns, 0 allocs).
func BenchmarkStructuredStep(b *testing.B) {
	cases := []struct {
		name    string
		A, C, S *mat.Dense
	}{
		{"position-1x1", scalar, scalar, mat.NewDense(1, 1, []float64{2.5244})},
		{"vehicle-2x2", vehA, vehC, mat.NewDense(2, 2, []float64{1.3, 0, 0.4, 0.7})},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := mustStructured(b, c.A, c.C, c.S, privacy.Gaussian)
			s.Reset(rng.New(testSeed))
			dst := make([]float64, s.Dim())
			b.ReportAllocs()
			for b.Loop() {
				s.Next(dst) // z grows at most linearly in t for these models: no overflow
			}
		})
	}
}

func BenchmarkIIDStep(b *testing.B) {
	for _, dist := range []privacy.Mechanism{privacy.Gaussian, privacy.Laplace} {
		b.Run(string(dist), func(b *testing.B) {
			s, _ := NewIID(1, 1, dist)
			s.Reset(rng.New(testSeed))
			dst := make([]float64, 1)
			b.ReportAllocs()
			for b.Loop() {
				s.Next(dst)
			}
		})
	}
}
