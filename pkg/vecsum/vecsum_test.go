package vecsum

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
)

func newRand(name string) *rand.Rand { return rng.New(42, rng.Label(name)) }

// normalRows draws n rows of N(mu, diag(sigma^2)).
func normalRows(r *rand.Rand, n int, mu, sigma []float64) []float64 {
	d := len(mu)
	x := make([]float64, n*d)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			x[i*d+j] = mu[j] + sigma[j]*r.NormFloat64()
		}
	}
	return x
}

// TestSigmaOptCalibration: sigma_opt satisfies eq. (2) and 0.999 sigma_opt does not; it is below the
// classic calibration sqrt(2 ln(1.25/delta))/eps (Theorem 1) for eps < 1.
func TestSigmaOptCalibration(t *testing.T) {
	for _, eps := range []float64{0.05, 0.5, 1, 4} {
		for _, delta := range []float64{1e-3, 1e-6, 1e-10} {
			s, err := SigmaOpt(eps, delta)
			require.NoError(t, err)
			require.LessOrEqual(t, privacy.Kappa(eps, 1/s), delta, "eps %v delta %v", eps, delta)
			require.Greater(t, privacy.Kappa(eps, 1/(0.999*s)), delta, "eps %v delta %v", eps, delta)
			if eps < 1 {
				require.Less(t, s, math.Sqrt(2*math.Log(1.25/delta))/eps)
			}
		}
	}
	for _, bad := range [][2]float64{{0, 1e-5}, {-1, 1e-5}, {1, 0}, {1, 1}, {math.NaN(), 1e-5}} {
		_, err := SigmaOpt(bad[0], bad[1])
		require.ErrorIs(t, err, ErrInput)
	}
}

func TestPlanBox(t *testing.T) {
	lo := []float64{0, -1, 10, 0}
	hi := []float64{1, 1, 18, 0.5}
	so, _ := SigmaOpt(1, 1e-6)
	g, err := PlanBox(MethodGaussian, lo, hi, 1, 1e-6)
	require.NoError(t, err)
	e, err := PlanBox(MethodElliptical, lo, hi, 1, 1e-6)
	require.NoError(t, err)
	w := []float64{1, 2, 8, 0.5}
	l1, l2 := 11.5, math.Sqrt(1+4+64+0.25)
	for j := range w {
		require.InDelta(t, l2*so, g.NoiseSigmas[j], 1e-12)                 // Algorithm 1
		require.InDelta(t, math.Sqrt(w[j]/l1), e.Scaling[j], 1e-12)        // Theorem 3
		require.InDelta(t, so*math.Sqrt(w[j]*l1), e.NoiseSigmas[j], 1e-12) // sigma_opt Delta_j / b_j
	}
	require.InDelta(t, 4*l2*l2*so*so, g.ExpectedError, 1e-9) // eq. (1)
	require.InDelta(t, so*so*l1*l1, e.ExpectedError, 1e-9)   // eq. (6)
	require.InDelta(t, g.ExpectedError/e.ExpectedError, e.GainOverGaussian, 1e-9)
	require.GreaterOrEqual(t, e.GainOverGaussian, 1.0)
	require.LessOrEqual(t, e.GainOverGaussian, 4.0)
	// the elliptical scaling is optimal: any other unit vector b gives a larger error
	r := newRand("box-opt")
	for k := 0; k < 200; k++ {
		b := make([]float64, 4)
		nb := 0.0
		for j := range b {
			b[j] = e.Scaling[j] * math.Exp(0.3*r.NormFloat64())
			nb += b[j] * b[j]
		}
		err := 0.0
		for j := range b {
			b[j] /= math.Sqrt(nb)
			err += so * so * w[j] * w[j] / (b[j] * b[j])
		}
		require.GreaterOrEqual(t, err, e.ExpectedError*(1-1e-12))
	}
	// equal widths: no gain
	eq, err := PlanBox(MethodElliptical, []float64{0, 0, 0}, []float64{2, 2, 2}, 1, 1e-6)
	require.NoError(t, err)
	require.InDelta(t, 1, eq.GainOverGaussian, 1e-12)
	_, err = PlanBox(MethodElliptical, []float64{0, 1}, []float64{1, 1}, 1, 1e-6)
	require.ErrorContains(t, err, "dimension 1")
	_, err = PlanBox(MethodNormal, lo, hi, 1, 1e-6)
	require.ErrorIs(t, err, ErrInput)
}

// TestBoxSum: clamping is counted, and the released noise has the planned variance (the mean of
// ||out - clamped sum||^2 over K releases is within 5 standard errors of ExpectedError).
func TestBoxSum(t *testing.T) {
	p, err := PlanBox(MethodElliptical, []float64{0, 0}, []float64{1, 4}, 1, 1e-5)
	require.NoError(t, err)
	x := []float64{0.5, 1, 2, 3, -1, 5, 0.2, 0.2}
	r := newRand("box-sum")
	const K = 4000
	s, s2 := 0.0, 0.0
	for k := 0; k < K; k++ {
		res, err := p.Sum(x, r, nil)
		require.NoError(t, err)
		require.Equal(t, 2, res.ClampedRows)
		// summed clamping differences: x (2-1) + (-1-0) = 0, y (5-4) = 1
		require.InDelta(t, 1, res.ClampError, 1e-12)
		require.InDeltaSlice(t, []float64{1.7, 9.2}, res.TrueSum, 1e-12)
		e0, e1 := res.Sum[0]-1.7, res.Sum[1]-8.2
		v := e0*e0 + e1*e1
		s += v
		s2 += v * v
	}
	mean := s / K
	se := math.Sqrt((s2/K - mean*mean) / K)
	require.InDelta(t, p.ExpectedError, mean, 5*se)
	_, err = p.Sum([]float64{1, math.NaN()}, r, nil)
	require.ErrorContains(t, err, "row 1, column 2")
}

// TestLemma41: b_j = 1/sqrt(sigma_j sum sigma) satisfies the constraint (10) and minimises the noise
// error (9) among all scalings satisfying it.
func TestLemma41(t *testing.T) {
	r := newRand("lemma41")
	for trial := 0; trial < 20; trial++ {
		d := 2 + r.IntN(20)
		s := make([]float64, d)
		for j := range s {
			s[j] = math.Exp(2 * r.NormFloat64())
		}
		b := LemmaScaling(s)
		c, obj := 0.0, 0.0
		for j := range b {
			c += b[j] * b[j] * s[j] * s[j]
			obj += 1 / (b[j] * b[j])
		}
		require.InDelta(t, 1, c, 1e-12)
		for k := 0; k < 50; k++ {
			bb := make([]float64, d)
			cc := 0.0
			for j := range bb {
				bb[j] = b[j] * math.Exp(0.2*r.NormFloat64())
				cc += bb[j] * bb[j] * s[j] * s[j]
			}
			o := 0.0
			for j := range bb {
				bb[j] /= math.Sqrt(cc)
				o += 1 / (bb[j] * bb[j])
			}
			require.GreaterOrEqual(t, o, obj*(1-1e-12))
		}
	}
}

func TestClipRadiiClosedForms(t *testing.T) {
	// equal sigmas: C^2 = q/d and C_n^2 = sigma^2 q with q the chi^2_d upper quantile; gain 1
	for _, d := range []int{1, 5, 100} {
		s := make([]float64, d)
		for j := range s {
			s[j] = 3
		}
		r, err := ClipRadii(s, 1e-4)
		require.NoError(t, err)
		q := distuv.ChiSquared{K: float64(d)}.Quantile(1 - 1e-4)
		require.InEpsilon(t, math.Sqrt(q/float64(d)), r.Scaled, 1e-7)
		require.InEpsilon(t, 3*math.Sqrt(q), r.Unscaled, 1e-7)
		require.InDelta(t, 1, r.Gain, 1e-6)
	}
	// one dominant dimension: gain -> d
	r, err := ClipRadii([]float64{1, 1e-9, 1e-9, 1e-9}, 1e-3)
	require.NoError(t, err)
	require.InDelta(t, 4, r.Gain, 1e-6)
	// invariance: scaling all sigmas leaves C and the gain unchanged and scales C_n
	a, err := ClipRadii([]float64{1, 0.5, 0.1}, 0.01)
	require.NoError(t, err)
	b, err := ClipRadii([]float64{10, 5, 1}, 0.01)
	require.NoError(t, err)
	require.InEpsilon(t, a.Scaled, b.Scaled, 1e-9)
	require.InEpsilon(t, a.Gain, b.Gain, 1e-9)
	require.InEpsilon(t, 10*a.Unscaled, b.Unscaled, 1e-9)
	_, err = ClipRadii([]float64{1, 0}, 0.01)
	require.ErrorContains(t, err, "sigma[1]")
	_, err = ClipRadii([]float64{1}, 1)
	require.ErrorIs(t, err, ErrInput)
}

// TestBernsteinBound: where Lemma 4.2 applies (ln n <= sum sigma^2 / (18 sigma_max^2)) its radius
// and Theorem 4's error bound are upper bounds of the exact values.
func TestBernsteinBound(t *testing.T) {
	checked := 0
	for _, d := range []int{100, 1000} {
		for _, a := range []float64{0.01, 0.1, 0.3} {
			for _, n := range []int{100, 10000} {
				p, err := PlanNormal(ZipfSigmas(d, a), n, 1, 1e-6, 0)
				require.NoError(t, err)
				if math.IsNaN(p.BoundClipRadius) {
					continue
				}
				checked++
				require.LessOrEqual(t, p.ClipRadius, p.BoundClipRadius, "d %d a %v n %d", d, a, n)
				require.LessOrEqual(t, p.ExpectedError, p.BoundError)
			}
		}
	}
	require.Greater(t, checked, 4)
}

// TestClipProbability: simulated scaled rows exceed C with frequency p_C (5 standard errors), and the
// importance-sampling estimate of Pr[||x~|| > C] at p_C = 1e-6 is within 5% of 1e-6.
func TestClipProbability(t *testing.T) {
	sig := []float64{2, 1, 0.5, 0.1, 0.01}
	mu := []float64{1, -2, 3, 0, 100}
	p, err := PlanNormal(sig, 200000, 1, 1e-6, 0.01)
	require.NoError(t, err)
	r := newRand("clip-prob")
	x := normalRows(r, p.N, mu, sig)
	res, err := p.Sum(x, mu, r)
	require.NoError(t, err)
	se := math.Sqrt(0.01 * 0.99 * float64(p.N))
	require.InDelta(t, 0.01*float64(p.N), float64(res.ClippedRows), 5*se)
	// rare event
	q, err := PlanNormal(sig, 1_000_000, 1, 1e-6, 0)
	require.NoError(t, err)
	ce, err := EstimateClipError(q.Sigmas, q.Scaling, q.ClipRadius, q.N, 20000, newRand("clip-is"))
	require.NoError(t, err)
	// plain Monte Carlo would have relative standard error 1/sqrt(20000 * 1e-6) ~ 7
	require.Less(t, ce.ClipProbStdErr, 0.05e-6)
	require.InDelta(t, 1e-6, ce.ClipProb, 5*ce.ClipProbStdErr)
}

// TestClipErrorEstimator: the tilted importance-sampling estimate of E||e||^2 agrees with plain Monte
// Carlo (where clipping is frequent enough to see) within 5 combined standard errors.
func TestClipErrorEstimator(t *testing.T) {
	sig := []float64{3, 1, 0.2}
	for _, scaled := range []bool{true, false} {
		var b []float64
		if scaled {
			b = LemmaScaling(sig)
		}
		r, err := ClipRadii(sig, 0.05)
		require.NoError(t, err)
		c := r.Unscaled
		if scaled {
			c = r.Scaled
		}
		is, err := EstimateClipError(sig, b, c, 1, 40000, newRand("is"))
		require.NoError(t, err)
		// plain Monte Carlo
		src := newRand("plain")
		const m = 200000
		s1, s2, hits := 0.0, 0.0, 0
		for k := 0; k < m; k++ {
			z := make([]float64, 3)
			nrm := 0.0
			for j := range z {
				bj := 1.0
				if scaled {
					bj = b[j]
				}
				z[j] = bj * sig[j] * src.NormFloat64()
				nrm += z[j] * z[j]
			}
			if nrm <= c*c {
				continue
			}
			hits++
			f := 1 - c/math.Sqrt(nrm)
			e2 := 0.0
			for j := range z {
				bj := 1.0
				if scaled {
					bj = b[j]
				}
				e2 += (f * z[j] / bj) * (f * z[j] / bj)
			}
			s1 += e2
			s2 += e2 * e2
		}
		pm := s1 / m
		pse := math.Sqrt((s2/m - pm*pm) / m)
		require.InDelta(t, pm, is.PerRow, 5*math.Hypot(pse, is.StdErr), "scaled=%v", scaled)
		require.InDelta(t, 0.05, float64(hits)/m, 5*math.Sqrt(0.05*0.95/m))
		require.InDelta(t, 0.05, is.ClipProb, 5*is.ClipProbStdErr)
	}
}

// TestAlgorithm3: end to end on simulated data - noise variance as planned, the clipped-row count as
// expected, the realised clipping error consistent with the estimate, and the identity
// sum = true sum - clipping correction.
func TestAlgorithm3(t *testing.T) {
	sig := []float64{4, 1, 0.25, 0.05}
	mu := []float64{10, -3, 0.5, 7}
	n := 2000
	plan, err := PlanNormal(sig, n, 0.8, 1e-6, 0.05)
	require.NoError(t, err)
	for j, b := range plan.Scaling {
		require.InDelta(t, 2*plan.ClipRadius*plan.SigmaOpt/b, plan.NoiseSigmas[j], 1e-12)
	}
	ce, err := EstimateClipError(sig, plan.Scaling, plan.ClipRadius, n, 20000, newRand("a3-ce"))
	require.NoError(t, err)
	r := newRand("a3")
	const R = 300
	var clipSum, clipSum2, clipped float64
	for rep := 0; rep < R; rep++ {
		x := normalRows(r, n, mu, sig)
		acc, err := plan.NewAccumulator(mu)
		require.NoError(t, err)
		require.NoError(t, acc.Add(x[:n*2]))
		require.NoError(t, acc.Add(x[n*2:]))
		res, err := acc.Release(r)
		require.NoError(t, err)
		clipSum += res.ClipError
		clipSum2 += res.ClipError * res.ClipError
		clipped += float64(res.ClippedRows)
	}
	// clipped rows: Binomial(n R, p_C)
	require.InDelta(t, 0.05*float64(n*R), clipped, 5*math.Sqrt(0.05*0.95*float64(n*R)))
	m := clipSum / R
	se := math.Sqrt((clipSum2/R - m*m) / R)
	require.InDelta(t, ce.Expected, m, 5*math.Hypot(se, ce.StdErr))
	// noise: repeated releases of one accumulation
	x := normalRows(r, n, mu, sig)
	acc, err := plan.NewAccumulator(mu)
	require.NoError(t, err)
	require.NoError(t, acc.Add(x))
	res0, err := acc.Release(r)
	require.NoError(t, err)
	clippedSum := make([]float64, len(sig))
	for j := range clippedSum {
		clippedSum[j] = acc.sum[j]
	}
	// without clipping correction the clipped sum is the true sum
	diff := 0.0
	for j := range sig {
		diff += (res0.TrueSum[j] - clippedSum[j]) * (res0.TrueSum[j] - clippedSum[j])
	}
	require.InDelta(t, res0.ClipError, diff, 1e-9*(1+diff))
	const K = 4000
	s, s2 := 0.0, 0.0
	for k := 0; k < K; k++ {
		res, err := acc.Release(r)
		require.NoError(t, err)
		v := 0.0
		for j := range sig {
			v += (res.Sum[j] - clippedSum[j]) * (res.Sum[j] - clippedSum[j])
		}
		s += v
		s2 += v * v
	}
	mean := s / K
	require.InDelta(t, plan.ExpectedError, mean, 5*math.Sqrt((s2/K-mean*mean)/K))
	// wrong n is refused
	acc2, _ := plan.NewAccumulator(mu)
	require.NoError(t, acc2.Add(x[:8]))
	_, err = acc2.Release(r)
	require.ErrorContains(t, err, "plan is for n = 2000")
}

func TestAlgorithm3Errors(t *testing.T) {
	plan, err := PlanNormal([]float64{1, 2}, 3, 1, 1e-6, 0)
	require.NoError(t, err)
	_, err = plan.Sum([]float64{1, 2, 3, math.Inf(1), 5, 6}, []float64{0, 0}, newRand("e"))
	require.ErrorContains(t, err, "row 2, column 2")
	_, err = plan.Sum([]float64{1, 2, 3}, []float64{0, 0}, newRand("e"))
	require.ErrorIs(t, err, ErrInput)
	_, err = plan.NewAccumulator([]float64{0})
	require.ErrorContains(t, err, "mean has 1 values")
	_, err = PlanNormal([]float64{1, -1}, 10, 1, 1e-6, 0)
	require.ErrorContains(t, err, "sigma[1]")
	_, err = PlanNormal([]float64{1}, 0, 1, 1e-6, 0)
	require.ErrorIs(t, err, ErrInput)
}

func TestAccumulatorAllocationFree(t *testing.T) {
	sig := []float64{1, 2, 3, 4, 5, 6, 7}
	plan, err := PlanNormal(sig, 1000, 1, 1e-6, 0.2)
	require.NoError(t, err)
	x := normalRows(newRand("alloc"), 1000, make([]float64, 7), sig)
	acc, err := plan.NewAccumulator(make([]float64, 7))
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(10, func() { _ = acc.Add(x) })
	require.Zero(t, allocs)
}

// TestPlanNormal: gain in [1, d] and equal to the error ratio; the noise error formula (24).
func TestPlanNormal(t *testing.T) {
	sig := ZipfSigmas(50, 1)
	p, err := PlanNormal(sig, 1000, 1, 1e-6, 0)
	require.NoError(t, err)
	require.InDelta(t, 1e-3, p.ClipProb, 1e-15)
	sum := 0.0
	for _, s := range sig {
		sum += s
	}
	require.InEpsilon(t, 4*p.SigmaOpt*p.SigmaOpt*p.ClipRadius*p.ClipRadius*sum*sum, p.ExpectedError, 1e-12)
	en := 0.0
	for _, ns := range p.NoiseSigmas {
		en += ns * ns
	}
	require.InEpsilon(t, p.ExpectedError, en, 1e-12)
	require.InEpsilon(t, 50*p.NoiseSigmaUnscaled*p.NoiseSigmaUnscaled, p.ExpectedErrorUnscaled, 1e-12)
	require.InEpsilon(t, p.ExpectedErrorUnscaled/p.ExpectedError, p.Gain, 1e-12)
	require.Greater(t, p.Gain, 1.0)
	require.Less(t, p.Gain, 50.0)
}

// TestGainTable: the thesis figure's claims - gain in [1, d], increasing in the skew alpha, 1 at
// alpha -> 0 and d at alpha -> infinity.
func TestGainTable(t *testing.T) {
	ds := []int{10, 100, 1000}
	ns := []int{100, 1000000}
	alphas := LogGrid(1e-2, 1e2, 13)
	if testing.Short() {
		ds = []int{10, 100}
	}
	rows, err := GainTable(ds, ns, alphas, 0, 1)
	require.NoError(t, err)
	require.Len(t, rows, len(ds)*len(ns)*len(alphas))
	for i, r := range rows {
		require.GreaterOrEqual(t, r.Gain, 1-1e-9, "%+v", r)
		require.LessOrEqual(t, r.Gain, float64(r.D)*(1+1e-9), "%+v", r)
		if r.Alpha > alphas[0] {
			require.GreaterOrEqual(t, r.Gain, rows[i-1].Gain*(1-1e-9), "%+v after %+v", r, rows[i-1])
		} else {
			require.Less(t, r.Gain, 1.001)
		}
		if r.Alpha == 100 {
			require.InEpsilon(t, float64(r.D), r.Gain, 1e-6)
		}
	}
}

func TestPrivateMean(t *testing.T) {
	sig := []float64{1, 0.1, 5}
	mu := []float64{3, -50, 1000}
	x := normalRows(newRand("pm-data"), 20000, mu, sig)
	est, err := PrivateMean(x, sig, 1, 1e-6, newRand("pm"))
	require.NoError(t, err)
	for j := range mu {
		require.InDelta(t, mu[j], est.Coarse[j], 4*sig[j], "coarse %d", j)
		require.InDelta(t, mu[j], est.Mean[j], 5*math.Sqrt(est.Variance[j]), "mean %d", j)
	}
	// too little data for the budget
	_, err = PrivateMean(x[:30], sig, 0.1, 1e-6, newRand("pm"))
	require.ErrorContains(t, err, "pass the mean explicitly")
}

func TestZipfAndGrid(t *testing.T) {
	s := ZipfSigmas(4, 1)
	require.InDeltaSlice(t, []float64{12.0 / 25, 6.0 / 25, 4.0 / 25, 3.0 / 25}, s, 1e-15)
	g := LogGrid(0.01, 100, 5)
	require.InDeltaSlice(t, []float64{0.01, 0.1, 1, 10, 100}, g, 1e-12)
}

func TestWriteGainPlot(t *testing.T) {
	rows, err := GainTable([]int{10, 100}, []int{100, 1000}, LogGrid(0.01, 100, 5), 0, 1)
	require.NoError(t, err)
	var png, svg bytes.Buffer
	require.NoError(t, WriteGainPlot(&png, rows, "png"))
	require.NoError(t, WriteGainPlot(&svg, rows, "svg"))
	require.True(t, bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")))
	require.Contains(t, svg.String(), "<svg")
	require.True(t, errors.Is(WriteGainPlot(&svg, rows, "gif"), ErrInput))

	// the house style, on the figure 'dpsim vecsum figure' draws by default (three panels)
	rows, err = GainTable([]int{10, 100, 1000}, []int{100, 1000, 1000000}, LogGrid(0.01, 100, 9), 0, 1)
	require.NoError(t, err)
	f, err := GainFigure(rows)
	require.NoError(t, err)
	require.NoError(t, f.Check())
}

// BenchmarkSum compares Algorithm 3 (centre, scale, norm, clip test, sum) with a plain column sum of
// the same n = 10^6, d = 10 rows (target: normal within 2x of plain).
func BenchmarkSum(b *testing.B) {
	const n, d = 1_000_000, 10
	sig := ZipfSigmas(d, 1)
	mu := make([]float64, d)
	x := normalRows(newRand("bench"), n, mu, sig)
	plan, err := PlanNormal(sig, n, 1, 1e-6, 0)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]float64, d)
	b.Run("plain", func(b *testing.B) {
		b.SetBytes(int64(8 * len(x)))
		for i := 0; i < b.N; i++ {
			PlainSum(x, out)
		}
	})
	b.Run("normal", func(b *testing.B) {
		b.SetBytes(int64(8 * len(x)))
		b.ReportAllocs()
		r := newRand("bench-noise")
		for i := 0; i < b.N; i++ {
			if _, err := plan.Sum(x, mu, r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
