package privacy

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestGaussianRunEpsilonDefinition: the whole run's eps solves the GDP delta(eps) of mu_k = sqrt(k) mu
// (Dong, Roth & Su 2022, Cor. 2.13, written out here, not through Kappa) at the asked delta to 1e-9 relative.
func TestGaussianRunEpsilonDefinition(t *testing.T) {
	gdpDelta := func(eps, mu float64) float64 {
		return Phi(-eps/mu+mu/2) - math.Exp(eps)*Phi(-eps/mu-mu/2)
	}
	for _, mu := range []float64{0.05, 0.3, 0.53, 1.5} {
		for _, k := range []int{1, 2, 4, 16, 100, 1000} {
			for _, delta := range []float64{1e-2, 1e-5} {
				muRun, eps, err := GaussianRunEpsilon(mu, k, delta)
				if err != nil {
					t.Fatal(err)
				}
				if relErr(muRun, math.Sqrt(float64(k))*mu) > 1e-15 {
					t.Errorf("mu_run = %v, want sqrt(%d) %v", muRun, k, mu)
				}
				if eps == 0 {
					if d := gdpDelta(0, muRun); d > delta {
						t.Errorf("mu=%g k=%d delta=%g: eps_run = 0 but delta(0) = %g", mu, k, delta, d)
					}
					continue
				}
				if d := gdpDelta(eps, muRun); relErr(d, delta) > 1e-9 {
					t.Errorf("mu=%g k=%d delta=%g: delta(eps_run = %v) = %.15g, want %g", mu, k, delta, eps, d, delta)
				}
			}
		}
	}
}

// TestGaussianCompositionNumeric checks sqrt(k) composition against an independent computation: the privacy
// loss of one release of N(y, 1) against N(0, 1) has density N(y^2/2, y^2); the loss of k independent
// releases is its k-fold convolution, computed numerically on a grid, and delta(eps) = E[(1 - e^{eps-L})_+]
// integrated from it must equal kappa(eps, sqrt(k) y) for k = 1, 4, 16.
func TestGaussianCompositionNumeric(t *testing.T) {
	const (
		h    = 0.01
		half = 2500 // grid [-25, 25]
		y    = 0.5
	)
	n := 2*half + 1
	x := func(i int) float64 { return float64(i-half) * h }
	f := make([]float64, n)
	for i := range f {
		z := (x(i) - y*y/2) / y
		f[i] = math.Exp(-z*z/2) / (y * math.Sqrt(2*math.Pi))
	}
	conv := func(a, b []float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			var s float64
			// out(x_i) = h sum_j a(x_j) b(x_i - x_j), x_i - x_j = x(i - j + half)
			for j := range a {
				m := i - j + half
				if m < 0 || m >= n {
					continue
				}
				s += a[j] * b[m]
			}
			out[i] = h * s
		}
		return out
	}
	dens := map[int][]float64{1: f}
	dens[2] = conv(f, f)
	dens[4] = conv(dens[2], dens[2])
	dens[8] = conv(dens[4], dens[4])
	dens[16] = conv(dens[8], dens[8])
	for _, k := range []int{1, 4, 16} {
		d := dens[k]
		for _, eps := range []float64{0.1, 0.5, 1, 2} {
			// Trapezoid rule for g(l) = f(l) (1 - e^{eps-l}) on l > eps (g(eps) = 0, g'(eps) = f(eps)), with
			// the Euler-Maclaurin end correction h^2/12 g'(eps) for the kink at l = eps.
			ie := int(math.Round(eps/h)) + half
			num := h * h / 12 * d[ie]
			for i, v := range d {
				if l := x(i); l > eps {
					w := h
					if i == n-1 {
						w = h / 2
					}
					num += w * v * -math.Expm1(eps-l)
				}
			}
			want := Kappa(eps, math.Sqrt(float64(k))*y)
			if relErr(num, want) > 1e-4 {
				t.Errorf("k=%d eps=%g: numeric delta %.8g, kappa(eps, sqrt(k) y) = %.8g", k, eps, num, want)
			}
			// And the run's eps at that delta is eps itself.
			if _, er, err := GaussianRunEpsilon(y, k, want); err != nil || math.Abs(er-eps) > 1e-9*eps {
				t.Errorf("k=%d: eps_run at delta(%g) = %v (%v)", k, eps, er, err)
			}
		}
	}
}

// TestGaussianEpisodeBudgetRoundTrip: calibrating each episode tightly for the split budget and composing
// returns the asked run budget (within 1e-9, never above), and the per-episode mu is mu_run/sqrt(k).
func TestGaussianEpisodeBudgetRoundTrip(t *testing.T) {
	for _, epsRun := range []float64{0.1, 1, 5} {
		for _, delta := range []float64{1e-2, 1e-6} {
			for _, k := range []int{1, 3, 16, 100, 10000} {
				name := fmt.Sprintf("eps=%g/delta=%g/k=%d", epsRun, delta, k)
				epsEp, deltaEp, muEp, err := GaussianEpisodeBudget(epsRun, delta, k)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				muRun, _ := KappaInverse(epsRun, delta)
				if relErr(muEp*math.Sqrt(float64(k)), muRun) > 1e-14 {
					t.Errorf("%s: mu_episode %v * sqrt(k) != mu_run %v", name, muEp, muRun)
				}
				sigma, err := GaussianSigma(Tight, epsEp, deltaEp, 1, 1)
				if err != nil {
					t.Fatalf("%s: sigma: %v", name, err)
				}
				_, er, err := GaussianRunEpsilon(1/sigma, k, delta)
				if err != nil {
					t.Fatal(err)
				}
				if er > epsRun*(1+1e-14) || relErr(er, epsRun) > 1e-9 {
					t.Errorf("%s: composed eps_run = %.17g, asked %g", name, er, epsRun)
				}
				if deltaEp != delta && epsEp != 0 {
					t.Errorf("%s: delta_episode %g != delta with eps_episode %g > 0", name, deltaEp, epsEp)
				}
			}
		}
	}
}

// kovGrid is Theorem 3.3 of Kairouz, Oh & Viswanath (2015) as printed: at eps_i = (k - 2i) eps0,
// delta_i = sum_{l=0}^{i-1} C(k, l) (e^{(k-l) eps0} - e^{(k-2i+l) eps0}) / (1 + e^{eps0})^k.
func kovGrid(eps0 float64, k, i int) float64 {
	var s float64
	for l := 0; l < i; l++ {
		lc, _ := math.Lgamma(float64(k + 1))
		a, _ := math.Lgamma(float64(l + 1))
		b, _ := math.Lgamma(float64(k - l + 1))
		lb := lc - a - b - float64(k)*math.Log1p(math.Exp(eps0))
		s += math.Exp(lb+float64(k-l)*eps0) - math.Exp(lb+float64(k-2*i+l)*eps0)
	}
	return s
}

// TestKOVDeltaTheorem33: the log-space sum equals the paper's grid formula at every grid point, and a
// direct full sum between grid points.
func TestKOVDeltaTheorem33(t *testing.T) {
	for _, eps0 := range []float64{0.05, 0.5, 1, 3} {
		for _, k := range []int{1, 2, 5, 10, 40} {
			for i := 0; 2*i <= k; i++ {
				eps := float64(k-2*i) * eps0
				got, want := KOVDelta(eps0, k, eps), kovGrid(eps0, k, i)
				if want == 0 && got == 0 {
					continue
				}
				if relErr(got, want) > 1e-11 {
					t.Errorf("eps0=%g k=%d i=%d: delta = %.15g, Theorem 3.3 gives %.15g", eps0, k, i, got, want)
				}
			}
			// Between grid points: the full sum over all l.
			for _, eps := range []float64{0.3 * eps0, 1.7 * eps0, float64(k) * eps0 * 0.6} {
				var want float64
				q := 1 / (1 + math.Exp(eps0))
				for l := 0; l <= k; l++ {
					L := float64(k-2*l) * eps0
					if L <= eps {
						continue
					}
					lc, _ := math.Lgamma(float64(k + 1))
					a, _ := math.Lgamma(float64(l + 1))
					b, _ := math.Lgamma(float64(k - l + 1))
					want += math.Exp(lc-a-b+float64(k-l)*math.Log1p(-q)+float64(l)*math.Log(q)) * -math.Expm1(eps-L)
				}
				if got := KOVDelta(eps0, k, eps); !(want == 0 && got == 0) && relErr(got, want) > 1e-11 {
					t.Errorf("eps0=%g k=%d eps=%g: delta = %.15g, full sum %.15g", eps0, k, eps, got, want)
				}
			}
		}
	}
}

// TestLaplaceRunEpsilon: k = 1 at delta = 0 gives eps; the bound is <= k eps and <= advanced composition,
// increasing in k, and delta(eps_run) equals delta; k = 10^6 stays finite and fast.
func TestLaplaceRunEpsilon(t *testing.T) {
	for _, eps0 := range []float64{0.01, 0.1, 1} {
		if e, _ := LaplaceRunEpsilon(eps0, 1, 0); e != eps0 {
			t.Errorf("k=1 delta=0: %v, want %v", e, eps0)
		}
		if e, _ := LaplaceRunEpsilon(eps0, 7, 0); e != 7*eps0 {
			t.Errorf("k=7 delta=0: %v, want %v", e, 7*eps0)
		}
		for _, delta := range []float64{1e-2, 1e-6} {
			prev := 0.0
			for _, k := range []int{1, 2, 3, 10, 100, 1000, 10000} {
				e, err := LaplaceRunEpsilon(eps0, k, delta)
				if err != nil {
					t.Fatal(err)
				}
				if e > float64(k)*eps0 || e > AdvancedComposition(eps0, k, delta) {
					t.Errorf("eps0=%g k=%d delta=%g: %v above k eps = %v or advanced %v", eps0, k, delta, e, float64(k)*eps0, AdvancedComposition(eps0, k, delta))
				}
				if e < prev {
					t.Errorf("eps0=%g delta=%g: not monotone at k=%d: %v < %v", eps0, delta, k, e, prev)
				}
				prev = e
				if e > 0 {
					if d := KOVDelta(eps0, k, e); d > delta*(1+1e-12) || relErr(d, delta) > 1e-9 {
						t.Errorf("eps0=%g k=%d: delta(eps_run = %v) = %g, want %g", eps0, k, e, d, delta)
					}
				}
			}
		}
	}
	start := time.Now()
	e, err := LaplaceRunEpsilon(0.01, 1_000_000, 1e-6)
	if err != nil || math.IsNaN(e) || math.IsInf(e, 0) || e <= 0 || e > AdvancedComposition(0.01, 1_000_000, 1e-6) {
		t.Errorf("k=1e6: %v (%v), advanced %v", e, err, AdvancedComposition(0.01, 1_000_000, 1e-6))
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("k=1e6 took %v", el)
	}
}

// TestLaplaceEpisodeEpsilon: splitting a run budget and composing gives the budget back, never above.
func TestLaplaceEpisodeEpsilon(t *testing.T) {
	for _, epsRun := range []float64{0.5, 2} {
		for _, delta := range []float64{0, 1e-3} {
			for _, k := range []int{1, 4, 50} {
				e0, err := LaplaceEpisodeEpsilon(epsRun, delta, k)
				if err != nil {
					t.Fatal(err)
				}
				er, _ := LaplaceRunEpsilon(e0, k, delta)
				if er > epsRun || relErr(er, epsRun) > 1e-9 {
					t.Errorf("run=%g delta=%g k=%d: eps0 = %v composes to %v", epsRun, delta, k, e0, er)
				}
				if delta == 0 && relErr(e0, epsRun/float64(k)) > 1e-15 {
					t.Errorf("delta=0: eps0 = %v, want eps/k = %v", e0, epsRun/float64(k))
				}
			}
		}
	}
}

func TestCompositionErrors(t *testing.T) {
	if _, _, err := GaussianRunEpsilon(1, 0, 1e-2); err == nil {
		t.Error("k = 0 accepted")
	}
	if _, err := LaplaceRunEpsilon(1, 3, 1); err == nil {
		t.Error("delta = 1 accepted")
	}
	if _, _, _, err := GaussianEpisodeBudget(1, 0, 3); err == nil {
		t.Error("delta = 0 accepted")
	}
}
