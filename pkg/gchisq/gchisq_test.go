package gchisq

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsim/dpsim/pkg/rng"
)

// ---------------------------------------------------------------------------------------------
// Independent reference values.

// ncx2CDF is the non-central chi-square CDF as a Poisson mixture of central CDFs (exact series).
func ncx2CDF(x, k, lambda float64) float64 {
	if x <= 0 {
		return 0
	}
	if lambda == 0 {
		return distuv.ChiSquared{K: k}.CDF(x)
	}
	h := lambda / 2
	sum := 0.0
	pj := math.Exp(-h)
	for j := 0; j < 400; j++ {
		sum += pj * distuv.ChiSquared{K: k + 2*float64(j)}.CDF(x)
		pj *= h / float64(j+1)
		if j > int(h) && pj < 1e-20 {
			break
		}
	}
	return sum
}

// ncx2PDF is the non-central chi-square density as a Poisson mixture.
func ncx2PDF(x, k, lambda float64) float64 {
	if x <= 0 {
		return 0
	}
	if lambda == 0 {
		return distuv.ChiSquared{K: k}.Prob(x)
	}
	h := lambda / 2
	sum := 0.0
	pj := math.Exp(-h)
	for j := 0; j < 400; j++ {
		sum += pj * distuv.ChiSquared{K: k + 2*float64(j)}.Prob(x)
		pj *= h / float64(j+1)
		if j > int(h) && pj < 1e-20 {
			break
		}
	}
	return sum
}

var glX, glW = func() ([]float64, []float64) {
	x, w := make([]float64, 160), make([]float64, 160)
	quad.Legendre{}.FixedLocations(x, w, 0, math.Pi/2)
	return x, w
}()

// convCDF is P(sum_j w_j chi^2(k_j, l_j) <= x) for positive weights by nested numerical convolution,
// F_{A+R}(x) = int_0^x f_A(t) F_R(x - t) dt, with t = x sin^2(phi), which removes the t^{-1/2}
// singularity of f_A at 0 and the (x-t)^{1/2} behaviour of F_R at t = x; 160-point Gauss-Legendre.
func convCDF(terms []Term, x float64) float64 {
	if x <= 0 {
		return 0
	}
	a := terms[0]
	if len(terms) == 1 {
		return ncx2CDF(x/a.Weight, a.DF, a.NonCentrality)
	}
	sum := 0.0
	for i, phi := range glX {
		s, c := math.Sincos(phi)
		t := x * s * s
		fa := ncx2PDF(t/a.Weight, a.DF, a.NonCentrality) / a.Weight
		sum += glW[i] * fa * 2 * x * s * c * convCDF(terms[1:], x*c*c)
	}
	return sum
}

// davies1980 is R. B. Davies' 21-case test table of AS 155 (the values shipped with the chi2comb C
// library's tests, which are qfc outputs at accuracy 1e-4 and limit 1000): weights, degrees of
// freedom, non-centralities, evaluation point and P(Q <= c).
var davies1980 = []struct {
	w, k, nc []float64
	c, p     float64
}{
	{[]float64{6, 3, 1}, []float64{1, 1, 1}, []float64{0, 0, 0}, 1, 0.054212946675253226303},
	{[]float64{6, 3, 1}, []float64{1, 1, 1}, []float64{0, 0, 0}, 7, 0.49355520181330159168},
	{[]float64{6, 3, 1}, []float64{1, 1, 1}, []float64{0, 0, 0}, 20, 0.8760272280402326972},
	{[]float64{6, 3, 1}, []float64{2, 2, 2}, []float64{0, 0, 0}, 2, 0.0064348332078802972234},
	{[]float64{6, 3, 1}, []float64{2, 2, 2}, []float64{0, 0, 0}, 20, 0.60020819879723130708},
	{[]float64{6, 3, 1}, []float64{2, 2, 2}, []float64{0, 0, 0}, 60, 0.98389684789412334975},
	{[]float64{6, 3, 1}, []float64{6, 4, 2}, []float64{0, 0, 0}, 10, 0.002697179606063082602},
	{[]float64{6, 3, 1}, []float64{6, 4, 2}, []float64{0, 0, 0}, 50, 0.56475302904079760502},
	{[]float64{6, 3, 1}, []float64{6, 4, 2}, []float64{0, 0, 0}, 120, 0.99122881453974709398},
	{[]float64{7, 3}, []float64{6, 2}, []float64{6, 2}, 20, 0.0061246216052206481351},
	{[]float64{7, 3}, []float64{6, 2}, []float64{6, 2}, 100, 0.5913392182262962038},
	{[]float64{7, 3}, []float64{6, 2}, []float64{6, 2}, 200, 0.97791384613661402891},
	{[]float64{7, 3}, []float64{1, 1}, []float64{6, 2}, 10, 0.045126148881611038988},
	{[]float64{7, 3}, []float64{1, 1}, []float64{6, 2}, 60, 0.59243135753281106481},
	{[]float64{7, 3}, []float64{1, 1}, []float64{6, 2}, 150, 0.97764841290122861395},
	{[]float64{7, 3, 7, 3}, []float64{6, 2, 1, 1}, []float64{6, 2, 6, 2}, 70, 0.043679499423862400143},
	{[]float64{7, 3, 7, 3}, []float64{6, 2, 1, 1}, []float64{6, 2, 6, 2}, 160, 0.58476547524879196605},
	{[]float64{7, 3, 7, 3}, []float64{6, 2, 1, 1}, []float64{6, 2, 6, 2}, 260, 0.95377443935266215114},
	{[]float64{7, 3, -7, -3}, []float64{6, 2, 1, 1}, []float64{6, 2, 6, 2}, -40, 0.078208009100773745459},
	{[]float64{7, 3, -7, -3}, []float64{6, 2, 1, 1}, []float64{6, 2, 6, 2}, 40, 0.52210759195266853716},
	{[]float64{7, 3, -7, -3}, []float64{6, 2, 1, 1}, []float64{6, 2, 6, 2}, 140, 0.96037034711779101226},
}

func tableTerms(i int) []Term {
	c := davies1980[i]
	t := make([]Term, len(c.w))
	for j := range c.w {
		t[j] = Term{c.w[j], c.k[j], c.nc[j]}
	}
	return t
}

// ---------------------------------------------------------------------------------------------

// TestDaviesTableExactSettings: with Davies' own settings (acc 1e-4, lim 1000) the implementation
// reproduces the published qfc outputs to 1e-9 - the algorithm is the same, step for step.
func TestDaviesTableExactSettings(t *testing.T) {
	for i, c := range davies1980 {
		d, err := New(tableTerms(i), 0, WithAccuracy(1e-4), WithLimit(1000))
		require.NoError(t, err)
		p, tr, err := d.CDFTrace(c.c, 1e-4)
		require.NoError(t, err, "case %d", i+1)
		require.Equal(t, MethodDavies, tr.Method)
		require.InDelta(t, c.p, p, 1e-9, "case %d", i+1)
	}
}

// TestDaviesTableAccurate: at the default accuracy (1e-10) the values agree with the table within
// the table's own accuracy (1e-4); the central positive cases 1-9 and the non-central two-term cases
// 10-15 are also checked to 1e-9 against the independent convolution.
func TestDaviesTableAccurate(t *testing.T) {
	maxDiff := 0.0
	for i, c := range davies1980 {
		d, err := New(tableTerms(i), 0)
		require.NoError(t, err)
		p, err := d.CDF(c.c)
		require.NoError(t, err, "case %d", i+1)
		require.InDelta(t, c.p, p, 1e-4, "case %d", i+1)
		maxDiff = math.Max(maxDiff, math.Abs(p-c.p))
		if i < 15 {
			ref := convCDF(tableTerms(i), c.c)
			require.InDelta(t, ref, p, 1e-9, "case %d vs convolution", i+1)
		}
	}
	t.Logf("max |default accuracy - published 1e-4 table| = %.2e", maxDiff)
}

// TestHypoexponential: sum of w_j chi^2_2 (exponentials with means 2 w_j) has the closed form
// P(Q > x) = sum_j exp(-x/theta_j) prod_{i != j} theta_j/(theta_j - theta_i), theta = 2w.
func TestHypoexponential(t *testing.T) {
	for _, w := range [][]float64{{6, 3, 1}, {1, 0.5}, {2, 0.7, 0.3, 0.05}} {
		terms := make([]Term, len(w))
		for j := range w {
			terms[j] = Term{Weight: w[j], DF: 2}
		}
		d, err := New(terms, 0)
		require.NoError(t, err)
		for _, x := range []float64{0.01, 0.5, 2, 7, 20, 60, 150} {
			s := 0.0
			for j := range w {
				p := 1.0
				for i := range w {
					if i != j {
						p *= w[j] / (w[j] - w[i])
					}
				}
				s += math.Exp(-x/(2*w[j])) * p
			}
			got, err := d.CDF(x)
			require.NoError(t, err)
			require.InDelta(t, 1-s, got, 1e-9, "w=%v x=%v", w, x)
			sv, err := d.Survival(x)
			require.NoError(t, err)
			require.InDelta(t, s, sv, 1e-9, "survival w=%v x=%v", w, x)
		}
	}
}

// TestEqualWeights: equal weights give w chi^2 with sum k_j degrees of freedom.
func TestEqualWeights(t *testing.T) {
	for _, tc := range []struct {
		n  int
		w  float64
		df float64
	}{{1, 1, 1}, {3, 2.5, 1}, {10, 0.1, 2}, {50, 1, 1}, {1000, 0.001, 1}, {4, 1, 3.5}} {
		terms := make([]Term, tc.n)
		for j := range terms {
			terms[j] = Term{Weight: tc.w, DF: tc.df}
		}
		d, err := New(terms, 0)
		require.NoError(t, err)
		ref := distuv.ChiSquared{K: float64(tc.n) * tc.df}
		for _, p := range []float64{1e-6, 0.01, 0.3, 0.5, 0.9, 0.999, 1 - 1e-6} {
			x := tc.w * ref.Quantile(p)
			got, err := d.CDF(x)
			require.NoError(t, err)
			require.InDelta(t, ref.CDF(x/tc.w), got, 1e-9, "%+v p=%v", tc, p)
		}
	}
}

// TestTwoWeightsConvolution: two and three distinct weights (one degree of freedom each, the
// vector-sum case) against the independent numerical convolution.
func TestTwoWeightsConvolution(t *testing.T) {
	cases := [][]Term{
		{{1, 1, 0}, {0.25, 1, 0}},
		{{0.9, 1, 0}, {0.1, 1, 0}},
		{{1, 1, 0}, {1e-3, 1, 0}},
		{{5, 1, 0}, {2, 3, 0}},
		{{1, 1, 0}, {0.5, 1, 0}, {0.2, 1, 0}},
		{{2, 1, 1.5}, {0.3, 2, 0}},
	}
	for _, terms := range cases {
		d, err := New(terms, 0)
		require.NoError(t, err)
		for _, p := range []float64{1e-4, 0.05, 0.5, 0.95, 0.9999} {
			x, err := d.Quantile(p)
			require.NoError(t, err)
			got, err := d.CDF(x)
			require.NoError(t, err)
			require.InDelta(t, convCDF(terms, x), got, 1e-9, "%v x=%v", terms, x)
			require.InDelta(t, p, got, 1e-9, "quantile round trip %v", terms)
		}
	}
}

// TestNormalTerm: chi2comb's high-accuracy test (non-central terms plus a normal term):
// P(0.4 chi^2_1(1.3) + 1.1 chi^2_3(2.9) + 0.41 Z > 2) = 0.9183206009070191.
func TestNormalTerm(t *testing.T) {
	d, err := New([]Term{{0.4, 1, 1.3}, {1.1, 3, 2.9}}, 0.41)
	require.NoError(t, err)
	s, err := d.Survival(2)
	require.NoError(t, err)
	require.InDelta(t, 0.9183206009070191, s, 1e-9)
	// a pure normal: Q = 2 Z
	n, err := New(nil, 2)
	require.NoError(t, err)
	for _, x := range []float64{-5, -1, 0, 0.3, 4} {
		p, err := n.CDF(x)
		require.NoError(t, err)
		require.InDelta(t, distuv.Normal{Mu: 0, Sigma: 2}.CDF(x), p, 1e-9, "x=%v", x)
	}
}

// TestMethodsAgree: Davies (rigorous bound) and Imhof/DE (refinement estimate) agree to 2e-10 on
// every table case and on random mixed-sign, non-central configurations with a normal term.
func TestMethodsAgree(t *testing.T) {
	r := rng.New(7, rng.Label("gchisq-methods"))
	var configs [][]Term
	var sigmas []float64
	for i := range davies1980 {
		configs = append(configs, tableTerms(i))
		sigmas = append(sigmas, 0)
	}
	for i := 0; i < 12; i++ {
		n := 1 + r.IntN(8)
		terms := make([]Term, n)
		for j := range terms {
			w := math.Exp(3 * r.NormFloat64())
			if r.IntN(4) == 0 {
				w = -w
			}
			terms[j] = Term{Weight: w, DF: float64(1 + r.IntN(3))}
			if r.IntN(3) == 0 {
				terms[j].NonCentrality = 3 * r.Float64()
			}
		}
		configs = append(configs, terms)
		sig := 0.0
		if i%3 == 0 {
			sig = 0.5 * r.Float64()
		}
		sigmas = append(sigmas, sig)
	}
	for i, terms := range configs {
		dd, err := New(terms, sigmas[i], WithAccuracy(1e-9))
		require.NoError(t, err)
		di, err := New(terms, sigmas[i], WithAccuracy(1e-10))
		require.NoError(t, err)
		dd.force, di.force = forceDavies, forceImhof
		for _, z := range []float64{-2, -0.5, 0.3, 1.5, 3} {
			x := dd.Mean() + z*math.Sqrt(dd.Variance())
			pd, trd, err := dd.CDFTrace(x, 1e-9)
			require.NoError(t, err, "config %d", i)
			require.Equal(t, MethodDavies, trd.Method)
			pi, tri, err := di.CDFTrace(x, 1e-10)
			require.NoError(t, err, "config %d", i)
			require.Equal(t, MethodImhof, tri.Method)
			require.InDelta(t, pd, pi, 1.2e-9, "config %d %v sigma %v x %v", i, terms, sigmas[i], x)
		}
	}
}

// TestMonteCarlo: fixed-seed simulation, |p_mc - p| <= 5 standard errors (two-sided false alarm
// probability below 6e-7 per comparison).
func TestMonteCarlo(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 40000
	}
	cases := []struct {
		terms []Term
		sigma float64
	}{
		{[]Term{{7, 6, 6}, {3, 2, 2}, {-7, 1, 6}, {-3, 1, 2}}, 0},
		{[]Term{{1, 1, 0}, {0.3, 1, 0}, {0.01, 1, 0}}, 0},
		{[]Term{{0.4, 1, 1.3}, {1.1, 3, 2.9}}, 0.41},
	}
	r := rng.New(2024, rng.Label("gchisq-mc"))
	for ci, c := range cases {
		d, err := New(c.terms, c.sigma)
		require.NoError(t, err)
		xs := []float64{d.Mean() - math.Sqrt(d.Variance()), d.Mean(), d.Mean() + 2*math.Sqrt(d.Variance())}
		counts := make([]int, len(xs))
		for s := 0; s < n; s++ {
			q := c.sigma * r.NormFloat64()
			for _, tm := range c.terms {
				v := 0.0
				for k := 0; k < int(tm.DF); k++ {
					z := r.NormFloat64()
					if k == 0 {
						z += math.Sqrt(tm.NonCentrality)
					}
					v += z * z
				}
				q += tm.Weight * v
			}
			for i, x := range xs {
				if q <= x {
					counts[i]++
				}
			}
		}
		for i, x := range xs {
			p, err := d.CDF(x)
			require.NoError(t, err)
			pmc := float64(counts[i]) / float64(n)
			se := math.Sqrt(p * (1 - p) / float64(n))
			require.InDelta(t, p, pmc, 5*se, "case %d x=%v", ci, x)
		}
	}
}

func TestQuantiles(t *testing.T) {
	// chi^2_1: the upper 1e-6 point (distuv agrees to relative 1e-9)
	d, err := NewWeighted([]float64{1})
	require.NoError(t, err)
	x, err := d.UpperQuantile(1e-6)
	require.NoError(t, err)
	require.InEpsilon(t, distuv.ChiSquared{K: 1}.Quantile(1-1e-6), x, 1e-8)
	// Zipf-like weights: the upper quantile's survival probability matches to relative 1e-3
	w := make([]float64, 200)
	for i := range w {
		w[i] = 1 / float64((i+1)*(i+1))
	}
	d, err = NewWeighted(w)
	require.NoError(t, err)
	for _, q := range []float64{0.5, 1e-2, 1e-6, 1e-9} {
		x, err := d.UpperQuantile(q)
		require.NoError(t, err)
		var st daviesState
		_, s, _, err := st.compute(d, x, 1e-14)
		require.NoError(t, err)
		require.InEpsilon(t, q, s, 1e-3, "q=%v", q)
		if q >= 1e-6 {
			p, err := d.Quantile(1 - q)
			require.NoError(t, err)
			require.InEpsilon(t, x, p, 1e-9)
		}
	}
	// monotone in p
	prev := math.Inf(-1)
	for _, p := range []float64{1e-8, 1e-3, 0.2, 0.5, 0.8, 0.999} {
		x, err := d.Quantile(p)
		require.NoError(t, err)
		require.Greater(t, x, prev)
		prev = x
	}
}

func TestLargeD(t *testing.T) {
	// d = 10^4 Zipf-type weights: the CDF at the mean is between the normal approximation's 0.5 and 1,
	// both methods agree, and the equal-weight limit is exact.
	w := make([]float64, 10000)
	for i := range w {
		w[i] = 1 / float64(i+1)
	}
	d, err := NewWeighted(w)
	require.NoError(t, err)
	p, err := d.CDF(d.Mean())
	require.NoError(t, err)
	di, err := NewWeighted(w)
	require.NoError(t, err)
	di.force = forceImhof
	pi, err := di.CDF(d.Mean())
	require.NoError(t, err)
	require.InDelta(t, p, pi, 2e-10)
	require.Greater(t, p, 0.5)
}

func TestInvalid(t *testing.T) {
	for _, tc := range []struct {
		terms []Term
		sigma float64
		msg   string
	}{
		{[]Term{{math.NaN(), 1, 0}}, 0, "term 0: weight"},
		{[]Term{{1, 1, 0}, {1, -1, 0}}, 0, "term 1: degrees of freedom"},
		{[]Term{{1, 1, -2}}, 0, "term 0: non-centrality"},
		{[]Term{{1, 1, 0}}, -1, "sigma"},
		{[]Term{{0, 1, 0}}, 0, "identically zero"},
		{[]Term{{1, 0, 2}}, 0, "atom at 0"},
	} {
		_, err := New(tc.terms, tc.sigma)
		require.Error(t, err)
		require.True(t, errors.Is(err, ErrInvalid))
		require.Contains(t, err.Error(), tc.msg)
	}
	d, err := NewWeighted([]float64{1, 2})
	require.NoError(t, err)
	_, err = d.CDF(math.NaN())
	require.ErrorIs(t, err, ErrInvalid)
	_, err = d.Quantile(1)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = d.UpperQuantile(0)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New([]Term{{1, 1, 0}}, 0, WithAccuracy(1e-20))
	require.ErrorIs(t, err, ErrInvalid)
	p, err := d.CDF(math.Inf(1))
	require.NoError(t, err)
	require.Equal(t, 1.0, p)
	// positive weights: P(Q <= 0) = 0 exactly, far tails clamp into [0, 1]
	p, err = d.CDF(-1)
	require.NoError(t, err)
	require.Equal(t, 0.0, p)
	p, err = d.CDF(1e6)
	require.NoError(t, err)
	require.Equal(t, 1.0, p)
}

func TestCDFDoesNotAllocate(t *testing.T) {
	w := make([]float64, 100)
	for i := range w {
		w[i] = 1 / float64(i+1)
	}
	d, err := NewWeighted(w)
	require.NoError(t, err)
	for _, x := range []float64{0.5, d.Mean(), 20} {
		allocs := testing.AllocsPerRun(5, func() { _, _ = d.CDF(x) })
		require.Zero(t, allocs, "x=%v", x)
	}
	d.force = forceImhof
	allocs := testing.AllocsPerRun(5, func() { _, _ = d.CDF(d.Mean()) })
	require.Zero(t, allocs)
}

// zipfWeights returns the squared Zipf standard deviations sigma_i = i^-a / sum_j j^-a (scaled ==
// false: weights sigma_i^2, the unscaled data) or sigma_i / sum sigma (scaled == true: (b_i sigma_i)^2
// after Lemma 4.1's scaling).
func zipfWeights(d int, a float64, scaled bool) []float64 {
	s := make([]float64, d)
	tot := 0.0
	for i := range s {
		s[i] = math.Pow(float64(i+1), -a)
		tot += s[i]
	}
	for i := range s {
		s[i] /= tot
		if !scaled {
			s[i] *= s[i]
		}
	}
	return s
}

func BenchmarkCDF(b *testing.B) {
	for _, a := range []float64{0.1, 1, 3} {
		for _, scaled := range []bool{false, true} {
			w := zipfWeights(1000, a, scaled)
			d, err := NewWeighted(w)
			if err != nil {
				b.Fatal(err)
			}
			x := d.Mean() + math.Sqrt(d.Variance())
			b.Run(fmt.Sprintf("d=1000/zipf=%v/scaled=%v", a, scaled), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := d.CDF(x); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("d=1000/zipf=%v/scaled=%v/with-New", a, scaled), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					d, err := NewWeighted(w)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := d.CDF(x); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkQuantile(b *testing.B) {
	for _, a := range []float64{0.1, 1, 3} {
		for _, scaled := range []bool{false, true} {
			d, err := NewWeighted(zipfWeights(1000, a, scaled))
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("d=1000/zipf=%v/scaled=%v/upper=1e-6", a, scaled), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := d.UpperQuantile(1e-6); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
