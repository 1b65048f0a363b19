package audit

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// oneRunSim plays the one-run game without a system: m canaries with fair bits, each scored by the
// most powerful test of its bit (score(b) = b - 1/2 plus noise: the noise is N(0, 1/mu^2) for a
// mechanism exactly mu-GDP, Laplace(1/eps) for one exactly eps-DP: the Laplace mechanism with
// sensitivity 1), k guesses of 1 on the highest scores and k of 0 on the lowest. It returns v, the
// right guesses.
func oneRunSim(r *rand.Rand, m, k int, noise func() float64) int {
	bits := make([]int, m)
	scores := make([]float64, m)
	order := make([]int, m)
	for i := range bits {
		bits[i] = int(r.Uint64() >> 63)
		scores[i] = float64(bits[i]) - 0.5 + noise()
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return scores[order[a]] < scores[order[b]] })
	v := 0
	for j := 0; j < k; j++ {
		if bits[order[j]] == 0 {
			v++
		}
		if bits[order[m-1-j]] == 1 {
			v++
		}
	}
	return v
}

// The f-DP one-run bound is sound: mechanisms EXACTLY at their claim (mu-GDP Gaussian at (1, 1e-5),
// and pure eps = 1 Laplace), played 400 times each with the guess rule's k, exceed the claimed eps in
// at most the 5% the confidence allows (checked at a one-sided 99.9% binomial limit: at most 36 of
// 400), while the bound is informative (its mean a sizeable part of eps) and an under-calibrated
// mechanism (twice the claimed mu or eps) is flagged in most runs. Seeds fixed.
func TestOneRunFDPSound(t *testing.T) {
	const m, runs, eps, delta, conf = 1000, 400, 1.0, 1e-5, 0.95
	mu, err := privacy.KappaInverse(eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	laplace := func(r *rand.Rand, b float64) float64 {
		if r.Uint64()>>63 == 1 {
			return b * r.ExpFloat64()
		}
		return -b * r.ExpFloat64()
	}
	for _, c := range []struct {
		name      string
		mech      privacy.Mechanism
		delta     float64
		noise     func(r *rand.Rand, scale float64) float64
		scale     float64 // at the claim
		meanAbove float64 // the sound runs' mean eps_lb must reach this
	}{
		{"gaussian", privacy.Gaussian, delta, func(r *rand.Rand, s float64) float64 { return s * r.NormFloat64() }, 1 / mu, 0.25},
		{"laplace", privacy.Laplace, 0, laplace, 1 / eps, 0.6},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, _ := OneRunGuesses(m, c.mech, eps, c.delta, conf)
			for _, under := range []bool{false, true} {
				scale := c.scale
				if under {
					scale /= 3 // the mechanism leaks three times the claim's mu (or eps)
				}
				r := rand.New(rand.NewPCG(77, 5))
				above, sum := 0, 0.0
				for range runs {
					v := oneRunSim(r, m, k, func() float64 { return c.noise(r, scale) })
					e := OneRunFDPEpsilonLB(c.mech, m, 2*k, v, c.delta, conf)
					sum += e
					if e > eps {
						above++
					}
				}
				t.Logf("%s (under-calibrated %v): k=%d, eps_lb > eps in %d of %d runs, mean eps_lb %.3f", c.name, under, k, above, runs, sum/runs)
				switch {
				case !under && above > 36:
					t.Errorf("sound: %d of %d runs exceed the claim: more than the 5%% the confidence allows", above, runs)
				case !under && sum/runs < c.meanAbove:
					t.Errorf("sound: mean eps_lb %.3f, want >= %g (the bound is informative)", sum/runs, c.meanAbove)
				case under && above < runs/2:
					t.Errorf("under-calibrated: flagged in %d of %d runs, want most", above, runs)
				}
			}
		})
	}
}

// The bound's defining property, checked directly: the claim at eps_lb is rejected and the claim just
// above it is not; bigger claims are rejected less (monotone in eps), more right guesses reject more.
func TestOneRunFDPEpsilonLB(t *testing.T) {
	const m, delta, conf = 1000, 1e-5, 0.95
	for _, c := range []struct {
		mech privacy.Mechanism
		r, v int
	}{
		{privacy.Gaussian, 100, 80}, {privacy.Gaussian, 380, 227}, {privacy.Gaussian, 20, 20},
		{privacy.Laplace, 200, 146}, {privacy.Laplace, 730, 530},
	} {
		e := OneRunFDPEpsilonLB(c.mech, m, c.r, c.v, delta, conf)
		if !(e > 0) {
			t.Fatalf("%s r=%d v=%d: eps_lb %g, want > 0", c.mech, c.r, c.v, e)
		}
		inv := func(eps float64) fbarInverse {
			if c.mech == privacy.Laplace {
				return pureFbarInverse(eps)
			}
			mu, err := privacy.KappaInverse(eps, delta)
			if err != nil {
				t.Fatal(err)
			}
			return gdpFbarInverse(mu)
		}
		if !OneRunFDPRejects(inv(e), m, c.r, c.v, 1-conf) {
			t.Errorf("%s r=%d v=%d: the claim at eps_lb %g is not rejected", c.mech, c.r, c.v, e)
		}
		if OneRunFDPRejects(inv(e+1e-4), m, c.r, c.v, 1-conf) {
			t.Errorf("%s r=%d v=%d: the claim just above eps_lb %g is rejected", c.mech, c.r, c.v, e)
		}
		if more := OneRunFDPEpsilonLB(c.mech, m, c.r, min(c.r, c.v+5), delta, conf); c.v+5 <= c.r && !(more > e) {
			t.Errorf("%s r=%d: 5 more right guesses give %g, not more than %g", c.mech, c.r, more, e)
		}
	}
	// half right is no evidence at all; invalid input is none either
	for _, c := range [][3]int{{1000, 200, 100}, {1000, 200, 201}, {100, 200, 150}, {0, 0, 0}} {
		if e := OneRunFDPEpsilonLB(privacy.Gaussian, c[0], c[1], c[2], delta, conf); e != 0 {
			t.Errorf("m=%d r=%d v=%d: eps_lb %g, want 0", c[0], c[1], c[2], e)
		}
	}
}

// fbar^-1 of each claim inverts fbar = 1 - f, with f the claim's trade-off function written out by
// its definition (mu-GDP: Phi(Phi^-1(1 - x) - mu); pure eps: max(0, 1 - e^eps x, e^-eps (1 - x))).
func TestFbarInverse(t *testing.T) {
	for _, c := range []struct {
		name string
		inv  fbarInverse
		f    func(x float64) float64
	}{
		{"gdp 0.7", gdpFbarInverse(0.7), func(x float64) float64 { return privacy.Phi(privacy.PhiInv(1-x) - 0.7) }},
		{"pure 1", pureFbarInverse(1), func(x float64) float64 {
			return math.Max(0, math.Max(1-math.E*x, (1-x)/math.E))
		}},
	} {
		for _, y := range []float64{1e-6, 0.01, 0.2, 0.5, 0.73, 0.99} {
			x := c.inv(y)
			if got := 1 - c.f(x); math.Abs(got-y) > 1e-9 {
				t.Errorf("%s: fbar(fbar^-1(%g)) = %g", c.name, y, got)
			}
		}
	}
}
