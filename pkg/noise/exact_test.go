package noise

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// ksStat returns the Kolmogorov-Smirnov distance between the sorted sample xs and the CDF F.
func ksStat(xs []float64, F func(float64) float64) float64 {
	slices.Sort(xs)
	n := float64(len(xs))
	d := 0.0
	for i, x := range xs {
		f := F(x)
		d = math.Max(d, math.Max(f-float64(i)/n, float64(i+1)/n-f))
	}
	return d
}

// The exact samplers' laws: 2 x 10^5 draws from a fixed seed against N(0, 1) and Laplace(0, 1).
// The KS distance is below its 0.1 % critical value 1.95/sqrt(n); the mean, the variance and
// the fourth moment are within 5 standard errors of the law's. (A sample is known to 2^-32 at
// least, far finer than these tests resolve.)
func TestExactSamplerLaws(t *testing.T) {
	const n = 200000
	for _, c := range []struct {
		name            string
		draw            func(*ExactSampler, *Exact)
		cdf             func(float64) float64
		vari, m4, v4var float64
	}{
		{"normal", (*ExactSampler).Normal, func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }, 1, 3, 96},
		{"laplace", (*ExactSampler).Laplace, func(x float64) float64 {
			if x < 0 {
				return 0.5 * math.Exp(x)
			}
			return 1 - 0.5*math.Exp(-x)
		}, 2, 24, 40320 - 576},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewExactSampler(rand.NewChaCha8([32]byte{1, 2, 3}))
			xs := make([]float64, n)
			var e Exact
			var sum, sum2, sum4 float64
			for i := range xs {
				c.draw(s, &e)
				require.GreaterOrEqual(t, e.Digits(), 1, "a sample has its first digit")
				xs[i] = e.Float64()
				sum += xs[i]
				sum2 += xs[i] * xs[i]
				sum4 += xs[i] * xs[i] * xs[i] * xs[i]
			}
			mean, v, m4 := sum/n, sum2/n, sum4/n
			require.Less(t, math.Abs(mean), 5*math.Sqrt(c.vari/n), "mean")
			sdVar := math.Sqrt((c.m4 - c.vari*c.vari) / n)
			require.Less(t, math.Abs(v-c.vari), 5*sdVar, "variance %v", v)
			require.Less(t, math.Abs(m4-c.m4), 5*math.Sqrt(c.v4var/n), "fourth moment %v", m4)
			require.Less(t, ksStat(xs, c.cdf), 1.95/math.Sqrt(n), "KS")
		})
	}
}

// The same digits give the same samples; the sampler does not allocate once warm.
func TestExactSamplerDeterministic(t *testing.T) {
	a := NewExactSampler(rand.NewChaCha8([32]byte{9}))
	b := NewExactSampler(rand.NewChaCha8([32]byte{9}))
	var x, y Exact
	for i := 0; i < 1000; i++ {
		a.Normal(&x)
		b.Normal(&y)
		require.Equal(t, x.Neg, y.Neg)
		require.Equal(t, x.K, y.K)
		require.Equal(t, x.Digits(), y.Digits())
		a.Laplace(&x)
		b.Laplace(&y)
		require.Equal(t, x.Float64(), y.Float64())
	}
	require.Zero(t, testing.AllocsPerRun(1000, func() { a.Normal(&x); a.Laplace(&x) }))
}

// RoundExact's float64 fast path and its exact path agree: over random inputs (the fast path
// must never decide differently from exact arithmetic), and near boundaries, where the exact
// path draws more digits until it decides.
func TestRoundExactPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := NewExactSampler(rand.NewChaCha8([32]byte{4}))
	samples := make([]Exact, 3)
	fastDecided, undecided := 0, 0
	for it := 0; it < 20000; it++ {
		g := math.Ldexp(1, -r.IntN(30)-1)
		ab := []float64{1, r.NormFloat64() * math.Ldexp(1, r.IntN(20)-5), r.NormFloat64(), r.NormFloat64()}
		coef := []float64{r.NormFloat64() * 3, 0, r.NormFloat64()}
		if it%7 == 0 { // put the value on a boundary: the sum of products at (m + 1/2) g exactly
			ab = []float64{1, (math.Floor(r.NormFloat64()*100) + 0.5) * g, 0, 0}
			coef = []float64{g * 0x1p-30, 0, 0}
		}
		for j := range samples {
			s.Normal(&samples[j])
		}
		fast, okFast := roundFast(g, ab, coef, samples)
		exact, okExact, err := roundBig(g, ab, coef, samples)
		require.NoError(t, err)
		if okFast {
			fastDecided++
			require.True(t, okExact, "the exact path decides whatever the fast path decides")
			require.Equal(t, exact, fast, "iteration %d", it)
		}
		if !okExact {
			undecided++
		}
		w, err := s.RoundExact(g, ab, coef, samples)
		require.NoError(t, err)
		require.Zero(t, math.Mod(w, g), "on the grid")
		// the value lies within g/2 of w: check against the samples' refined interval
		v := ab[0]*ab[1] + ab[2]*ab[3]
		for j := range samples {
			v += coef[j] * samples[j].Float64()
		}
		require.InDelta(t, w, v, g/2+1e-9*math.Abs(v)+1e-12, "iteration %d", it)
	}
	require.Greater(t, fastDecided, 15000)
	require.Greater(t, undecided, 500, "the boundary cases exercise refinement")
}

// Granularity is the power of two 2^20 times below the noise scale's leading power of two.
func TestGranularity(t *testing.T) {
	require.Equal(t, math.Ldexp(1, -20), Granularity(1))
	require.Equal(t, math.Ldexp(1, -20), Granularity(1.9))
	require.Equal(t, math.Ldexp(1, -19), Granularity(2))
	require.Equal(t, math.Ldexp(1, -23), Granularity(0.2))
	require.Zero(t, Granularity(0))
	require.Zero(t, Granularity(math.Inf(1)))
}

func BenchmarkExactNormal(b *testing.B) {
	s := NewExactSampler(rand.NewChaCha8([32]byte{1}))
	var e Exact
	for i := 0; i < b.N; i++ {
		s.Normal(&e)
	}
}

func BenchmarkFloatNormal(b *testing.B) {
	r := rand.New(rand.NewChaCha8([32]byte{1}))
	var x float64
	for i := 0; i < b.N; i++ {
		x += r.NormFloat64()
	}
	_ = x
}

func BenchmarkExactLaplace(b *testing.B) {
	s := NewExactSampler(rand.NewChaCha8([32]byte{1}))
	var e Exact
	for i := 0; i < b.N; i++ {
		s.Laplace(&e)
	}
}
