package john

import (
	"testing"
)

// benchN, benchD: the size of the benchmark targets.
const benchN, benchD = 100_000, 50

// BenchmarkIteration: one exact iteration (Gram, Cholesky, leverages: O(n d^2)) against one
// fast iteration (Algorithm 1: sampling, s x d sketch: O(n d s + N d^2)) at n = 1e5, d = 50,
// xi = 0.1 (s = 10). Target: fast at least 5x faster; compare the ns/op (wall) and the
// cpu-ns/op (process CPU time, robust to other load) of the two sub-benchmarks.
func BenchmarkIteration(b *testing.B) {
	a := randomPolytope(benchN, benchD, 1)
	for _, m := range []Method{Exact, Fast, DP} {
		b.Run(string(m), func(b *testing.B) {
			s, err := NewSolver(a, Config{Method: m, Xi: 0.1, Seed: 1, NoiseScale: 0.2, MaxIter: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			// Warm up past the first iterations (buffers grown, weights concentrating).
			for k := 0; k < 3; k++ {
				if err := s.Step(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for b.Loop() {
				if err := s.Step(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkToleranceFast: wall time from the start to an output verified at
// max_i h_i <= 1.1 (xi = 0.1) at n = 1e5, d = 50. fast checks the averaged iterate exactly
// every 25 iterations (each check costs about one exact iteration, included); exact, for
// reference, verifies its last iterate for free every iteration. Reported: iterations,
// max_h and cpu-s (process CPU seconds).
func BenchmarkToleranceFast(b *testing.B) {
	a := randomPolytope(benchN, benchD, 1)
	for _, cfg := range []Config{
		{Method: Fast, CheckEvery: 25, MaxIter: 5000},
		{Method: Exact},
	} {
		b.Run(string(cfg.Method), func(b *testing.B) {
			cfg.Xi, cfg.Seed = 0.1, 1
			var res *Result
			cpu0 := processCPU()
			for b.Loop() {
				var err error
				if res, err = Solve(a, cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if !res.Converged {
				b.Fatalf("not converged: max h %g", res.MaxLeverage)
			}
			b.ReportMetric(float64(res.Iterations), "iterations")
			b.ReportMetric(res.MaxLeverage, "max_h")
			b.ReportMetric((processCPU()-cpu0).Seconds()/float64(b.N), "cpu-s")
		})
	}
}
