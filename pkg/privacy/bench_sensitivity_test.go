package privacy

import (
	"math/rand/v2"
	"testing"

	"github.com/dpsim/dpsim/pkg/rng"

	"gonum.org/v1/gonum/mat"
)

// BenchmarkVehicleManifoldT10000: the full-state vehicle's exact manifold sensitivity at T = 10^4
// (2*10^4 row subsets, ~10^4 distinct circuits, each scanned over 2*10^4 rows). Target < 2 s.
func BenchmarkVehicleManifoldT10000(b *testing.B) {
	A, C := vehicle(0.1)
	want, _ := vehicleManifold(10_000, 0.1, 2)
	b.ReportAllocs()
	for b.Loop() {
		s, err := DynamicsSensitivity(A, C, 10_000, Manifold, 2, 0)
		if err != nil {
			b.Fatal(err)
		}
		if !relClose(s.Value, want, 1e-9) {
			b.Fatalf("value %v, want %v", s.Value, want)
		}
	}
}

// BenchmarkVehicleBlockT10000: the T block index sets of Theorem 3 at T = 10^4.
func BenchmarkVehicleBlockT10000(b *testing.B) {
	A, C := vehicle(0.1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DynamicsSensitivity(A, C, 10_000, Block, 2, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkThreeStateManifoldT200: n_x = 3 needs C(600, 2) ~ 1.8*10^5 row pairs.
func BenchmarkThreeStateManifoldT200(b *testing.B) {
	A := mat.NewDense(3, 3, []float64{1, 0.1, 0.005, 0, 1, 0.1, 0, 0, 1})
	C := mat.NewDense(1, 3, []float64{1, 0, 0})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DynamicsSensitivity(A, C, 200, Manifold, 2, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDesignGaussianVehicleT100: Algorithm 1 with the optimal Sigma (barrier method) for the
// full-state vehicle, manifold constraints, LambdaBar = O_T.
func BenchmarkDesignGaussianVehicleT100(b *testing.B) {
	A, C := vehicle(0.1)
	s, err := DynamicsSensitivity(A, C, 100, Manifold, 2, 0)
	if err != nil {
		b.Fatal(err)
	}
	O := obsMatrix(A, C, 100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DesignGaussian(s, 1, 1e-2, 1, Tight, O); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkManifoldGeneric: the general circuit enumeration on a random n = 40, q = 37 problem
// (k = 3: C(40, 2) = 780 subsets).
func BenchmarkManifoldGeneric(b *testing.B) {
	r := newBenchRand()
	p := Problem{F: randDense(r, 10, 40), D: randDense(r, 37, 40)}
	N, _ := KernelBasis(p.D)
	var fn mat.Dense
	fn.Mul(p.F, N)
	p.LambdaBar = &fn
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ManifoldSensitivity(p, 2, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func newBenchRand() *rand.Rand { return rng.New(1, rng.Label("bench")) }
