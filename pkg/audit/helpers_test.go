package audit

import (
	"math"
	"testing"

	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
)

// gaussTrials plays n trials per side of the game against scores N(0,1) (x) and N(mu,1) (x'): the LLR of
// a Gaussian mechanism with pair distance mu is an affine function of such a score, so its trade-off
// curve is exactly mu-GDP. Trials alternate bits (n with x, n with x').
func gaussTrials(seed uint64, n int, mu float64) *Trials {
	r := rng.New(seed, rng.Label("audit-test-gauss"))
	t := NewTrials(n)
	for i := 0; i < n; i++ {
		t.AddTrial(uint64(2*i), 0, r.NormFloat64())
		t.AddTrial(uint64(2*i+1), 1, mu+r.NormFloat64())
	}
	return t
}

// laplaceTrials plays n trials per side against a 1-D Laplace mechanism with scale 1 and shift eps
// (pure eps-DP, tight), scored by the optimal LaplaceLLR.
func laplaceTrials(seed uint64, n int, eps float64) *Trials {
	r := rng.New(seed, rng.Label("audit-test-laplace"))
	t := NewTrials(n)
	m0, m1 := []float64{0}, []float64{eps}
	o := []float64{0}
	lap := func() float64 {
		u := r.Float64() - 0.5
		return -math.Copysign(math.Log1p(-2*math.Abs(u)), u)
	}
	for i := 0; i < n; i++ {
		o[0] = lap()
		t.AddTrial(uint64(2*i), 0, LaplaceLLR(o, m0, m1, 1))
		o[0] = eps + lap()
		t.AddTrial(uint64(2*i+1), 1, LaplaceLLR(o, m0, m1, 1))
	}
	return t
}

func mustMu(t testing.TB, eps, delta float64) float64 {
	t.Helper()
	mu, err := privacy.KappaInverse(eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	return mu
}
