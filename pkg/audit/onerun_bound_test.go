package audit

import (
	"math"
	"testing"
)

// pvalueDirect recomputes Steinke et al.'s p-value by another route: the binomial pmf by the
// multiplicative recurrence P[k+1] = P[k] (r-k)/(k+1) q/(1-q) from (1-q)^r (no Lgamma, no incomplete
// beta), the tail by summing it, and alpha by its definition.
func pvalueDirect(m, r, v int, eps, delta float64) float64 {
	q := math.Exp(eps) / (1 + math.Exp(eps))
	pmf := make([]float64, r+1)
	pmf[0] = math.Pow(1-q, float64(r))
	for k := 0; k < r; k++ {
		pmf[k+1] = pmf[k] * float64(r-k) / float64(k+1) * q / (1 - q)
	}
	tail := 0.0
	for k := v; k <= r; k++ {
		tail += pmf[k]
	}
	alpha := 0.0
	for i := 1; i <= v; i++ {
		s := 0.0
		for k := v - i; k < v; k++ {
			s += pmf[k]
		}
		alpha = math.Max(alpha, s/float64(i))
	}
	return math.Min(tail+2*float64(m)*delta*alpha, 1)
}

func TestOneRunPValueMatchesDirectSum(t *testing.T) {
	for _, c := range []struct {
		m, r, v    int
		eps, delta float64
	}{
		{1000, 100, 80, 0.5, 1e-5}, {1000, 200, 140, 1, 1e-6}, {1000, 40, 40, 2, 0},
		{1000, 500, 300, 0.3, 1e-5}, {100, 10, 3, 0, 1e-3}, {1000, 60, 45, 0.8, 1e-2},
	} {
		got, want := OneRunPValue(c.m, c.r, c.v, c.eps, c.delta), pvalueDirect(c.m, c.r, c.v, c.eps, c.delta)
		if math.Abs(got-want) > 1e-9*math.Max(1, want) && math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: p-value %.12g, direct sum %.12g", c, got, want)
		}
	}
}

func TestOneRunEpsilonLB(t *testing.T) {
	const m, conf, delta = 1000, 0.95, 1e-5
	// all r guesses correct: the bound grows with r; half correct: nothing.
	if e := OneRunEpsilonLB(m, 100, 50, delta, conf); e != 0 {
		t.Errorf("chance accuracy: eps_lb %g, want 0", e)
	}
	prev := 0.0
	for _, r := range []int{10, 50, 100, 200} {
		e := OneRunEpsilonLB(m, r, r, delta, conf)
		if !(e > prev) {
			t.Errorf("r = v = %d: eps_lb %g not above %g", r, e, prev)
		}
		prev = e
	}
	// the defining property, by the independent route: rejected just below, not just above.
	for _, c := range [][2]int{{200, 160}, {100, 85}, {300, 200}} {
		e := OneRunEpsilonLB(m, c[0], c[1], delta, conf)
		if e <= 0 {
			t.Fatalf("r=%d v=%d: eps_lb %g", c[0], c[1], e)
		}
		if p := pvalueDirect(m, c[0], c[1], e, delta); !(p < 1-conf) {
			t.Errorf("r=%d v=%d: p-value at eps_lb %g is %g, want < %g", c[0], c[1], e, p, 1-conf)
		}
		if p := pvalueDirect(m, c[0], c[1], e+1e-4, delta); !(p >= 1-conf) {
			t.Errorf("r=%d v=%d: p-value just above eps_lb %g is %g, want >= %g", c[0], c[1], e, p, 1-conf)
		}
	}
}
