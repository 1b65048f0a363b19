package audit

import (
	"math"
	"testing"

	"github.com/dpsim/dpsim/pkg/rng"
	"gonum.org/v1/gonum/stat/distuv"
)

// References computed with mpmath (40 digits) by bisection of P(Bin(n, p) <= k) = alpha.
func TestClopperPearsonUpperKnown(t *testing.T) {
	cases := []struct {
		k, n  int
		alpha float64
		want  float64
	}{
		{0, 100, 0.05, 0.029513049607039933962},
		{5, 100, 0.025, 0.11283491110546276512},
		{50, 1000, 1e-4, 0.080610568390574313866},
		{3, 1000000, 1e-5, 0.000018665650615579326804},
		{999, 1000, 0.01, 0.99998994971465095475},
		{1, 2, 0.3, 0.83666002653407555461},
		{20, 100000, 0.0125, 0.00032578786288500656575},
		{7, 7, 0.05, 1},
	}
	for _, c := range cases {
		got := ClopperPearsonUpper(c.k, c.n, c.alpha)
		if math.Abs(got-c.want) > 1e-10*c.want {
			t.Errorf("upper(%d, %d, %g) = %.17g, want %.17g (rel err %.2g)", c.k, c.n, c.alpha, got, c.want, math.Abs(got-c.want)/c.want)
		}
		// Symmetry: lower(n-k) = 1 - upper(k).
		if lo := ClopperPearsonLower(c.n-c.k, c.n, c.alpha); math.Abs(lo-(1-c.want)) > 1e-12 {
			t.Errorf("lower(%d, %d, %g) = %.17g, want %.17g", c.n-c.k, c.n, c.alpha, lo, 1-c.want)
		}
	}
}

// Zero successes: the upper bound is 1 - alpha^(1/n) exactly, and equals the (1-alpha) quantile of
// Beta(1, n) computed independently by gonum's distuv.
func TestClopperPearsonZeroSuccesses(t *testing.T) {
	for _, n := range []int{1, 10, 1000, 1000000} {
		for _, alpha := range []float64{0.05, 0.025, 1e-4} {
			got := ClopperPearsonUpper(0, n, alpha)
			want := 1 - math.Pow(alpha, 1/float64(n))
			if math.Abs(got-want) > 1e-9*want {
				t.Errorf("n=%d alpha=%g: %.17g, want 1-alpha^(1/n) = %.17g", n, alpha, got, want)
			}
			beta := distuv.Beta{Alpha: 1, Beta: float64(n)}.Quantile(1 - alpha)
			if math.Abs(got-beta) > 1e-7*want {
				t.Errorf("n=%d alpha=%g: %.17g, Beta(1,n) quantile %.17g", n, alpha, got, beta)
			}
			if lo := ClopperPearsonLower(0, n, alpha); lo != 0 {
				t.Errorf("lower(0, %d) = %g, want 0", n, lo)
			}
		}
	}
}

// binomTail is P(Bin(n, p) <= k) (upper = false) or P(Bin(n, p) >= k) (upper = true) by log-space
// summation of the pmf over the tail itself, independent of the incomplete beta function.
func binomTail(k, n int, p float64, upper bool) float64 {
	lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
	lpmf := func(i int) float64 {
		return lg(float64(n+1)) - lg(float64(i+1)) - lg(float64(n-i+1)) + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p)
	}
	lo, hi := 0, k
	if upper {
		lo, hi = k, n
	}
	// The pmf is unimodal; its largest term on [lo, hi] is at the mode clamped to the range.
	top := min(hi, max(lo, int(math.Floor(float64(n+1)*p))))
	m := lpmf(top)
	var s float64
	for i := top; i >= lo; i-- {
		v := lpmf(i) - m
		if v < -60 {
			break
		}
		s += math.Exp(v)
	}
	for i := top + 1; i <= hi; i++ {
		v := lpmf(i) - m
		if v < -60 {
			break
		}
		s += math.Exp(v)
	}
	return s * math.Exp(m)
}

// The defining equation P(Bin(n, up) <= k) = alpha, checked by a direct binomial sum, across the range
// the auditor uses (n up to 10^6, Bonferroni-sized alpha).
func TestClopperPearsonDefinition(t *testing.T) {
	r := rng.New(7, rng.Label("cp-def"))
	for it := 0; it < 40; it++ {
		n := []int{50, 1000, 100000, 1000000}[it%4]
		k := r.IntN(n)
		if it%5 == 0 {
			k = r.IntN(min(n, 30)) // tails
		}
		alpha := []float64{0.05, 0.025, 1e-4, 1e-6}[(it/4)%4]
		up := ClopperPearsonUpper(k, n, alpha)
		if got := binomTail(k, n, up, false); math.Abs(got-alpha) > 1e-7*alpha {
			t.Errorf("k=%d n=%d alpha=%g: up=%.17g gives P(Bin<=k)=%.12g", k, n, alpha, up, got)
		}
		lo := ClopperPearsonLower(k, n, alpha)
		if k > 0 {
			// P(Bin(n, lo) >= k) = alpha.
			if got := binomTail(k, n, lo, true); math.Abs(got-alpha) > 1e-7*alpha {
				t.Errorf("k=%d n=%d alpha=%g: lo=%.17g gives P(Bin>=k)=%.12g", k, n, alpha, lo, got)
			}
		}
		if !(lo < float64(k)/float64(n)+1e-15 && float64(k)/float64(n) < up) {
			t.Errorf("k=%d n=%d: %g < %g < %g violated", k, n, lo, float64(k)/float64(n), up)
		}
	}
}

// Coverage by simulation: the true p exceeds the 95% upper bound in at most 5% of experiments (plus a
// 3-sigma Monte Carlo margin over 4000 repetitions).
func TestClopperPearsonCoverage(t *testing.T) {
	r := rng.New(3, rng.Label("cp-coverage"))
	const reps, n, alpha = 4000, 200, 0.05
	for _, p := range []float64{0.01, 0.03, 0.2, 0.5} {
		miss := 0
		for i := 0; i < reps; i++ {
			k := 0
			for j := 0; j < n; j++ {
				if r.Float64() < p {
					k++
				}
			}
			if p > ClopperPearsonUpper(k, n, alpha) {
				miss++
			}
		}
		limit := alpha + 3*math.Sqrt(alpha*(1-alpha)/reps)
		if rate := float64(miss) / reps; rate > limit {
			t.Errorf("p=%g: coverage failure rate %.4f > %.4f", p, rate, limit)
		}
	}
}

func TestClopperPearsonInvalid(t *testing.T) {
	for _, c := range []struct {
		k, n  int
		alpha float64
	}{{-1, 10, 0.05}, {11, 10, 0.05}, {0, 0, 0.05}, {1, 10, 0}, {1, 10, 1}, {1, 10, math.NaN()}} {
		if v := ClopperPearsonUpper(c.k, c.n, c.alpha); !math.IsNaN(v) {
			t.Errorf("upper(%d, %d, %g) = %g, want NaN", c.k, c.n, c.alpha, v)
		}
		if v := ClopperPearsonLower(c.k, c.n, c.alpha); !math.IsNaN(v) {
			t.Errorf("lower(%d, %d, %g) = %g, want NaN", c.k, c.n, c.alpha, v)
		}
	}
}
