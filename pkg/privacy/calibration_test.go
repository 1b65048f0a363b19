package privacy

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestGaussianSigmaPaperBound reproduces the papers' sigma (journal Sections 5.3 and 6.3: eps = 1, 0.1, 0.01,
// delta = 1e-2, mu = 1, Delta = 1) with the closed-form bound, to 1e-4.
func TestGaussianSigmaPaperBound(t *testing.T) {
	for _, tc := range []struct{ eps, want float64 }{{1, 2.5244}, {0.1, 23.4765}, {0.01, 232.8495}} {
		got, err := GaussianSigma(PaperBound, tc.eps, 1e-2, 1, 1)
		if err != nil {
			t.Fatalf("GaussianSigma(paper-bound, %g): %v", tc.eps, err)
		}
		if math.Abs(got-tc.want) > 1e-4 {
			t.Errorf("paper-bound sigma(eps=%g) = %.6f, paper prints %.4f", tc.eps, got, tc.want)
		}
	}
}

// TestGaussianSigmaTightReference: the tight sigma is 1/kappa_eps^{-1}(delta), checked against mpmath roots.
func TestGaussianSigmaTightReference(t *testing.T) {
	for _, tc := range []struct{ eps, delta, y float64 }{
		{1, 0.01, 0.532516648502950769761503},
		{0.01, 0.01, 0.03609993297514670629367891},
		{0.1, 0.01, 0.1048017753725444622195711},
	} {
		got, err := GaussianSigma(Tight, tc.eps, tc.delta, 2, 1.5)
		if err != nil {
			t.Fatal(err)
		}
		if want := 3 / tc.y; relErr(got, want) > 1e-13 {
			t.Errorf("tight sigma(eps=%g, delta=%g, mu*Delta=3) = %.17g, want %.17g", tc.eps, tc.delta, got, want)
		}
	}
}

// TestGaussianSigmaSatisfiesDefinition is the calibration acceptance test: for every calibration and every grid
// point where it applies, the sigma returned satisfies the defining inequality kappa(eps, mu*Delta/sigma) <= delta
// (Theorem 1, eq. (9)); for the tight calibration 0.999*sigma does not (it is the least such sigma).
func TestGaussianSigmaSatisfiesDefinition(t *testing.T) {
	scales := []struct{ mu, sens float64 }{{1, 1}, {0.3, 2.5}, {4, 0.01}}
	for _, cal := range Calibrations {
		for _, eps := range gridEps {
			for _, delta := range gridDelta {
				for _, sc := range scales {
					name := fmt.Sprintf("%s/eps=%g/delta=%g/mu=%g/Delta=%g", cal, eps, delta, sc.mu, sc.sens)
					sigma, err := GaussianSigma(cal, eps, delta, sc.mu, sc.sens)
					if cal == Classic && eps >= 1 {
						if err == nil {
							t.Errorf("%s: classic accepted eps >= 1 (sigma = %g)", name, sigma)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					if !(sigma > 0) || math.IsInf(sigma, 0) {
						t.Errorf("%s: sigma = %v", name, sigma)
						continue
					}
					if !GaussianSatisfies(eps, delta, sc.mu, sc.sens, sigma) {
						t.Errorf("%s: sigma = %.17g violates kappa <= delta: kappa = %.17g", name, sigma,
							Kappa(eps, sc.mu*sc.sens/sigma))
					}
					if cal == Tight && GaussianSatisfies(eps, delta, sc.mu, sc.sens, 0.999*sigma) {
						t.Errorf("%s: 0.999 sigma = %.17g still satisfies kappa <= delta: not tight", name, 0.999*sigma)
					}
				}
			}
		}
	}
}

// TestTightBelowOtherCalibrations: the exact inverse needs strictly less noise than the paper's bound (and than
// the classic formula where that applies), and the paper-bound / tight ratio grows as eps shrinks.
func TestTightBelowOtherCalibrations(t *testing.T) {
	for _, delta := range gridDelta {
		prevRatio := 0.0
		for i := len(gridEps) - 1; i >= 0; i-- { // eps decreasing
			eps := gridEps[i]
			tight, err1 := GaussianSigma(Tight, eps, delta, 1, 1)
			paper, err2 := GaussianSigma(PaperBound, eps, delta, 1, 1)
			if err1 != nil || err2 != nil {
				t.Fatalf("eps=%g delta=%g: %v %v", eps, delta, err1, err2)
			}
			if !(tight < paper) {
				t.Errorf("eps=%g delta=%g: tight %.10g not below paper-bound %.10g", eps, delta, tight, paper)
			}
			ratio := paper / tight
			if ratio <= prevRatio {
				t.Errorf("eps=%g delta=%g: paper/tight ratio %.6g did not grow (was %.6g at the larger eps)", eps, delta, ratio, prevRatio)
			}
			prevRatio = ratio
			if eps < 1 {
				classic, err := GaussianSigma(Classic, eps, delta, 1, 1)
				if err != nil {
					t.Fatal(err)
				}
				if !(tight < classic) {
					t.Errorf("eps=%g delta=%g: tight %.10g not below classic %.10g", eps, delta, tight, classic)
				}
			}
		}
	}
	// The papers' setting: the gap is about 1.3x at eps = 1 and about 8x at eps = 0.01.
	r1 := mustSigma(t, PaperBound, 1) / mustSigma(t, Tight, 1)
	r001 := mustSigma(t, PaperBound, 0.01) / mustSigma(t, Tight, 0.01)
	if r1 < 1.2 || r1 > 1.5 || r001 < 7 || r001 > 10 {
		t.Errorf("paper/tight ratios at delta = 1e-2: eps=1 %.4f, eps=0.01 %.4f", r1, r001)
	}
}

func mustSigma(t *testing.T, cal Calibration, eps float64) float64 {
	t.Helper()
	s, err := GaussianSigma(cal, eps, 1e-2, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGaussianSigmaScaling: sigma is linear in mu*Delta for every calibration.
func TestGaussianSigmaScaling(t *testing.T) {
	for _, cal := range Calibrations {
		base, err := GaussianSigma(cal, 0.5, 1e-5, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := GaussianSigma(cal, 0.5, 1e-5, 3, 7)
		if err != nil {
			t.Fatal(err)
		}
		if relErr(got, 21*base) > 1e-14 {
			t.Errorf("%s: sigma(mu=3, Delta=7) = %.17g, want 21 * %.17g", cal, got, base)
		}
	}
}

func TestGaussianSigmaErrors(t *testing.T) {
	tests := []struct {
		cal                  Calibration
		eps, delta, mu, sens float64
		mention              string
	}{
		{Classic, 1, 1e-2, 1, 1, "epsilon = 1"},
		{Classic, 2.5, 1e-2, 1, 1, "epsilon = 2.5"},
		{Classic, 0, 1e-2, 1, 1, "epsilon = 0"},
		{Tight, -1, 1e-2, 1, 1, "epsilon = -1"},
		{Tight, math.NaN(), 1e-2, 1, 1, "epsilon = NaN"},
		{Tight, 1, 0, 1, 1, "delta = 0"},
		{PaperBound, 1, 1.2, 1, 1, "delta = 1.2"},
		{Tight, 1, 1e-2, 0, 1, "mu = 0"},
		{Tight, 1, 1e-2, -2, 1, "mu = -2"},
		{Tight, 1, 1e-2, 1, -3, "sensitivity = -3"},
		{Tight, 1, 1e-2, 1, math.Inf(1), "sensitivity = +Inf"},
		{Tight, 1, 1e-2, 1, 0, "sensitivity = 0"},
		{Tight, 1, 1e-2, 1, math.NaN(), "sensitivity = NaN"},
		{PaperBound, 0, 1e-2, 1, 1, "epsilon = 0"},
		{Calibration("loose"), 1, 1e-2, 1, 1, `"loose"`},
	}
	for _, tc := range tests {
		_, err := GaussianSigma(tc.cal, tc.eps, tc.delta, tc.mu, tc.sens)
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("GaussianSigma(%s, %v, %v, %v, %v) error = %v, want one mentioning %q",
				tc.cal, tc.eps, tc.delta, tc.mu, tc.sens, err, tc.mention)
		}
	}
	// The classic refusal explains itself.
	_, err := GaussianSigma(Classic, 1, 1e-2, 1, 1)
	if err == nil || !strings.Contains(err.Error(), "only valid for 0 < epsilon < 1") {
		t.Errorf("classic eps=1 error = %v", err)
	}
}

// TestGaussianSigmaZeroSensitivity: a zero sensitivity has no noise scale (the release does not depend on
// the private data); it is refused instead of returning sigma = 0, which made callers print NaN ratios.
func TestGaussianSigmaZeroSensitivity(t *testing.T) {
	for _, cal := range Calibrations {
		s, err := GaussianSigma(cal, 0.5, 1e-3, 1, 0)
		if err == nil || !strings.Contains(err.Error(), "sensitivity = 0: must be finite and > 0") {
			t.Errorf("%s: zero sensitivity gave sigma = %v, %v; want an error naming sensitivity = 0", cal, s, err)
		}
	}
	if b, err := LaplaceScale(0.5, 1, 0); err == nil || !strings.Contains(err.Error(), "sensitivity = 0: must be finite and > 0") {
		t.Errorf("LaplaceScale with zero sensitivity = %v, %v; want an error naming sensitivity = 0", b, err)
	}
	// GaussianSatisfies keeps its mathematical answer: with no sensitivity any sigma >= 0 is private.
	if !GaussianSatisfies(0.5, 1e-3, 1, 0, 0) {
		t.Error("GaussianSatisfies(sensitivity 0, sigma 0) = false")
	}
}

// TestCalibrationNonFinite: noise scales that overflow float64 (eps -> 0, mu*Delta -> Inf) and products that
// underflow to 0 are errors naming the cause, never a returned +Inf or 0.
func TestCalibrationNonFinite(t *testing.T) {
	gauss := []struct {
		cal                  Calibration
		eps, delta, mu, sens float64
		mention              string
	}{
		{PaperBound, 5e-324, 1e-2, 1, 1, "overflows float64"},
		{Classic, 5e-324, 1e-2, 1, 1, "overflows float64"},
		{PaperBound, 1e-310, 1e-6, 1, 1, "overflows float64"},
		{Tight, 0, 1e-300, 1e10, 1, "overflows float64"},
		{Tight, 1, 1e-2, 10, 1e308, "mu*sensitivity = 10 * 1e+308 overflows float64"},
		{PaperBound, 1, 1e-2, 1e300, 1e10, "mu*sensitivity = 1e+300 * 1e+10 overflows"},
		{Tight, 1, 1e-2, 1e-200, 1e-200, "mu*sensitivity = 1e-200 * 1e-200 underflows to 0"},
	}
	for _, tc := range gauss {
		s, err := GaussianSigma(tc.cal, tc.eps, tc.delta, tc.mu, tc.sens)
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("GaussianSigma(%s, %v, %v, %v, %v) = %v, %v; want an error mentioning %q", tc.cal, tc.eps, tc.delta, tc.mu, tc.sens, s, err, tc.mention)
		}
	}
	laplace := []struct {
		eps, mu, sens float64
		mention       string
	}{
		{1e-320, 1, 1, "b = mu*sensitivity/y = 1/1e-320 overflows float64"},
		{5e-324, 1, 1, "overflows float64"},
		{1, 10, 1e308, "mu*sensitivity = 10 * 1e+308 overflows float64"},
		{1e304, 1e-10, 1e-10, "underflows to 0"},
	}
	for _, tc := range laplace {
		b, err := LaplaceScale(tc.eps, tc.mu, tc.sens)
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("LaplaceScale(%v, %v, %v) = %v, %v; want an error mentioning %q", tc.eps, tc.mu, tc.sens, b, err, tc.mention)
		}
	}
	// Near the edge, what is returned is finite and positive and satisfies the definition.
	for _, cal := range Calibrations {
		eps := 1e-300
		if cal == Tight {
			eps = 0
		}
		s, err := GaussianSigma(cal, eps, 1e-6, 1, 1e-5)
		if err != nil {
			t.Errorf("%s: %v", cal, err)
			continue
		}
		if math.IsInf(s, 0) || !(s > 0) || !GaussianSatisfies(eps, 1e-6, 1, 1e-5, s) {
			t.Errorf("%s eps=%g: sigma = %v", cal, eps, s)
		}
	}
}

func TestGaussianSatisfies(t *testing.T) {
	tests := []struct {
		name                        string
		eps, delta, mu, sens, sigma float64
		want                        bool
	}{
		{"paper sigma eps=1", 1, 1e-2, 1, 1, 2.5244, true},
		{"tight sigma eps=1", 1, 1e-2, 1, 1, 1 / 0.532516648502950769761503 * (1 + 1e-12), true},
		{"slightly below tight", 1, 1e-2, 1, 1, 1 / 0.532516648502950769761503 * (1 - 1e-9), false},
		{"zero sigma", 1, 1e-2, 1, 1, 0, false},
		{"infinite sigma", 1, 1e-2, 1, 1, math.Inf(1), true},
		{"zero sensitivity", 1, 1e-2, 1, 0, 0, true},
		{"delta = 0", 1, 0, 1, 1, 1e6, false},
		{"negative sigma", 1, 1e-2, 1, 1, -3, false},
		{"NaN sigma", 1, 1e-2, 1, 1, math.NaN(), false},
		{"negative eps", -1, 1e-2, 1, 1, 10, false},
		{"mu = 0", 1, 1e-2, 0, 1, 10, false},
	}
	for _, tc := range tests {
		if got := GaussianSatisfies(tc.eps, tc.delta, tc.mu, tc.sens, tc.sigma); got != tc.want {
			t.Errorf("%s: GaussianSatisfies = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLaplaceScale: b = mu*Delta_L/eps (eq. (14)), and for a scalar query the privacy loss of Laplace(b) noise
// between outputs shifted by mu*Delta, |log p(z) - log p(z - mu*Delta)|, never exceeds eps and reaches it
// (Theorem 2: the condition is necessary and sufficient).
func TestLaplaceScale(t *testing.T) {
	for _, tc := range []struct{ eps, mu, sens float64 }{{1, 1, 1}, {0.1, 1, 1}, {0.01, 2, 0.5}, {3, 0.5, 4}} {
		b, err := LaplaceScale(tc.eps, tc.mu, tc.sens)
		if err != nil {
			t.Fatal(err)
		}
		if want := tc.mu * tc.sens / tc.eps; relErr(b, want) > 1e-15 {
			t.Errorf("LaplaceScale(%g, %g, %g) = %g, want %g", tc.eps, tc.mu, tc.sens, b, want)
		}
		shift := tc.mu * tc.sens
		maxLoss := 0.0
		for z := -5 * shift; z <= 5*shift; z += shift / 64 {
			loss := math.Abs((math.Abs(z-shift) - math.Abs(z)) / b)
			maxLoss = math.Max(maxLoss, loss)
		}
		if maxLoss > tc.eps*(1+1e-12) || maxLoss < tc.eps*(1-1e-12) {
			t.Errorf("eps=%g: Laplace privacy loss max %.15g, want exactly eps", tc.eps, maxLoss)
		}
	}
	for _, tc := range []struct {
		eps, mu, sens float64
		mention       string
	}{
		{0, 1, 1, "epsilon = 0"}, {-1, 1, 1, "epsilon = -1"}, {math.Inf(1), 1, 1, "epsilon = +Inf"},
		{1, 0, 1, "mu = 0"}, {1, 1, -1, "sensitivity = -1"}, {1, 1, math.NaN(), "sensitivity = NaN"},
	} {
		if _, err := LaplaceScale(tc.eps, tc.mu, tc.sens); err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("LaplaceScale(%v, %v, %v) error = %v, want one mentioning %q", tc.eps, tc.mu, tc.sens, err, tc.mention)
		}
	}
}
