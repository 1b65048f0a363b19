package privacy

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// The acceptance grid: eps in [1e-4, 50], delta in [1e-12, 0.5].
var (
	gridEps   = []float64{1e-4, 1e-3, 0.01, 0.1, 0.5, 1, 2, 5, 10, 20, 50}
	gridDelta = []float64{1e-12, 1e-9, 1e-6, 1e-3, 1e-2, 0.1, 0.5}
)

func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Abs(want)
}

// TestKappaReference compares Kappa with 80-digit mpmath values of eq. (7) (Phi(a) - e^eps Phi(b) evaluated
// in arbitrary precision), covering the quadrature branch (y <= 1), the difference branch (y > 1, A > 0),
// the upper branch (A <= 0, kappa > 0.2), eps = 0 and values down to 1e-244.
func TestKappaReference(t *testing.T) {
	tests := []struct{ eps, y, want float64 }{
		{0, 0.5, 0.1974126513658474484817},
		{0, 3, 0.866385597462283867991},
		{0.0001, 1e-05, 7.474933991853752733711e-30},
		{0.0001, 2e-05, 1.069286569708404156979e-12},
		{0.0001, 0.01, 0.00393980263863947632973},
		{0.001, 0.001, 0.00008335713212520849354804},
		{0.001, 0.05, 0.01945875385121242454214},
		{0.01, 0.005, 0.00004266620736798584634159},
		{0.01, 0.05, 0.01541966513802507031094},
		{0.1, 0.3, 0.07976985966882025474614},
		{0.5, 0.9, 0.198599392251593909879},
		{1, 0.05, 1.129033227097722284287e-91},
		{1, 0.4, 0.001299898133126807898447},
		{1, 1, 0.1269367375066439458008},
		{1, 1.1, 0.163313193705366957049},
		{1, 2, 0.5098616600546701530762},
		{1, 5, 0.9798516780897751964847},
		{2, 2, 0.3318979987768293935729},
		{5, 3, 0.3193918799058880461573},
		{10, 0.3, 8.37506284594241421566e-244},
		{10, 6, 0.8750744828173139606256},
		{20, 7, 0.6899809719470052226995},
		{50, 1.5, 1.551665165690984572697e-234},
		{50, 9, 0.1230761841399067608827},
		{50, 12, 0.9593829543371338733778},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("eps=%g/y=%g", tc.eps, tc.y), func(t *testing.T) {
			got := Kappa(tc.eps, tc.y)
			// 1e-12 leaves room for the rounding of A = eps/y - y/2 (relative error ~A^2 * 1e-16 in phi(A)).
			if e := relErr(got, tc.want); e > 1e-12 {
				t.Errorf("Kappa(%g, %g) = %.17g, want %.17g (rel err %.2e)", tc.eps, tc.y, got, tc.want, e)
			}
			lk := LogKappa(tc.eps, tc.y)
			if e := math.Abs(lk - math.Log(tc.want)); e > 1e-12*math.Max(1, math.Abs(lk)) {
				t.Errorf("LogKappa(%g, %g) = %.17g, want %.17g", tc.eps, tc.y, lk, math.Log(tc.want))
			}
		})
	}
}

// TestKappaDirectFormula cross-checks against the literal eq. (7) wherever it is numerically safe
// (no underflow, cancellation factor Phi(a)/kappa below 100).
func TestKappaDirectFormula(t *testing.T) {
	n := 0
	for _, eps := range []float64{0, 1e-3, 0.05, 0.3, 1, 2.5, 7, 15, 30} {
		for y := 0.05; y < 60; y *= 1.17 {
			pa := Phi(y/2 - eps/y)
			direct := pa - math.Exp(eps)*Phi(-y/2-eps/y)
			if pa < 1e-200 || direct <= 0 || pa/direct > 100 {
				continue
			}
			n++
			// The literal formula's own error: erfc at |a| carries ~a^2 ulps, e^eps ~eps ulps, times the cancellation.
			a := y/2 - eps/y
			if e := relErr(Kappa(eps, y), direct); e > 4e-16*(4+a*a+eps)*pa/direct+1e-14 {
				t.Errorf("Kappa(%g, %g) = %.17g, direct eq. (7) = %.17g (rel %.2e)", eps, y, Kappa(eps, y), direct, e)
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d comparable points", n)
	}
}

// TestKappaIntegral checks Kappa against its integral form kappa(eps, y) = int_0^y phi(s/2 - eps/s) ds,
// which follows from d kappa/dy = phi(y/2 - eps/y) (the paper's derivative below eq. (7)) and kappa(eps, 0+) = 0.
// The integrand is positive, so this is an independent, cancellation-free evaluation.
func TestKappaIntegral(t *testing.T) {
	for _, eps := range []float64{1e-4, 0.01, 0.3, 1, 4, 20} {
		for _, y := range []float64{0.3 * math.Sqrt(eps), math.Sqrt(eps), math.Sqrt(2 * eps), 1.5 * math.Sqrt(2*eps), 3} {
			f := func(s float64) float64 {
				if s == 0 {
					return 0
				}
				a := s/2 - eps/s
				return math.Exp(-0.5*a*a) * nrmInvSqrt2Pi
			}
			// Geometric panels towards s = 0, where the integrand switches on steeply when eps is small.
			var integral float64
			for hi := y; hi > 1e-14*y; hi *= 0.85 {
				integral += quad.Fixed(f, 0.85*hi, hi, 16, quad.Legendre{}, 0)
			}
			if integral < 1e-250 {
				continue
			}
			if e := relErr(Kappa(eps, y), integral); e > 1e-10 {
				t.Errorf("Kappa(%g, %g) = %.15g, integral = %.15g (rel %.2e)", eps, y, Kappa(eps, y), integral, e)
			}
		}
	}
}

// TestKappaDerivative checks d kappa/dy = phi(y/2 - eps/y) and d kappa/deps = -e^eps Phi(-y/2 - eps/y) by
// central differences.
func TestKappaDerivative(t *testing.T) {
	for _, eps := range []float64{0.01, 0.5, 1, 5} {
		for _, y := range []float64{0.2, 0.7, 1.3, 3, 6} {
			h := 1e-5 * y
			num := (Kappa(eps, y+h) - Kappa(eps, y-h)) / (2 * h)
			a := y/2 - eps/y
			want := nrmInvSqrt2Pi * math.Exp(-0.5*a*a)
			if want > 1e-8 && relErr(num, want) > 1e-6 {
				t.Errorf("d kappa/dy at (%g, %g) = %.10g, want phi(a) = %.10g", eps, y, num, want)
			}
			he := 1e-5 * eps
			numE := (Kappa(eps+he, y) - Kappa(eps-he, y)) / (2 * he)
			wantE := -math.Exp(eps) * Phi(-y/2-eps/y)
			if math.Abs(wantE) > 1e-8 && relErr(numE, wantE) > 1e-6 {
				t.Errorf("d kappa/deps at (%g, %g) = %.10g, want %.10g", eps, y, numE, wantE)
			}
		}
	}
}

// TestKappaMonotone: kappa is strictly increasing in y and strictly decreasing in eps (Section 3.1).
func TestKappaMonotone(t *testing.T) {
	epsGrid := []float64{0, 1e-4, 3e-4, 1e-3, 0.01, 0.05, 0.1, 0.3, 0.5, 1, 2, 5, 10, 20, 50}
	var ys []float64
	for y := 1e-5; y < 200; y *= 1.05 {
		ys = append(ys, y)
	}
	ys = append(ys, 1, math.Nextafter(1, 2), math.Nextafter(1, 0)) // the quadrature / difference switch
	for _, eps := range epsGrid {
		prev, prevY := -1.0, 0.0
		for _, y := range sortedCopy(ys) {
			k := Kappa(eps, y)
			if math.IsNaN(k) || k < 0 || k > 1 {
				t.Fatalf("Kappa(%g, %g) = %v out of [0, 1]", eps, y, k)
			}
			// Non-decreasing between adjacent floats (around the switch at y = 1), strictly increasing on the grid.
			strict := y > prevY*(1+1e-6) && k > 1e-290 && k < 1-1e-12
			if k < prev || (k == prev && strict) {
				t.Errorf("Kappa(%g, .) not increasing at y = %.17g: %.17g after %.17g", eps, y, k, prev)
			}
			prev, prevY = k, y
		}
	}
	for _, y := range []float64{1e-3, 0.05, 0.5, 1, 2, 5, 10, 30} {
		prev := 2.0
		for _, eps := range epsGrid {
			k := Kappa(eps, y)
			if k > prev || (k == prev && k > 1e-290 && k < 1-1e-12) {
				t.Errorf("Kappa(., %g) not decreasing at eps = %g: %.17g after %.17g", y, eps, k, prev)
			}
			prev = k
		}
	}
}

func sortedCopy(v []float64) []float64 {
	out := append([]float64(nil), v...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func TestKappaEdgeCases(t *testing.T) {
	tests := []struct {
		name     string
		eps, y   float64
		want     float64
		wantNaN  bool
		wantLogK float64
	}{
		{name: "y=0", eps: 1, y: 0, want: 0, wantLogK: math.Inf(-1)},
		{name: "y=0 eps=0", eps: 0, y: 0, want: 0, wantLogK: math.Inf(-1)},
		{name: "y=+Inf", eps: 1, y: math.Inf(1), want: 1, wantLogK: 0},
		{name: "eps=+Inf", eps: math.Inf(1), y: 1, want: 0, wantLogK: math.Inf(-1)},
		{name: "negative y", eps: 1, y: -1, wantNaN: true},
		{name: "negative eps", eps: -0.1, y: 1, wantNaN: true},
		{name: "NaN", eps: math.NaN(), y: 1, wantNaN: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, lk := Kappa(tc.eps, tc.y), LogKappa(tc.eps, tc.y)
			if tc.wantNaN {
				if !math.IsNaN(got) || !math.IsNaN(lk) {
					t.Errorf("Kappa = %v, LogKappa = %v, want NaN", got, lk)
				}
				return
			}
			if got != tc.want || lk != tc.wantLogK {
				t.Errorf("Kappa = %v, LogKappa = %v, want %v, %v", got, lk, tc.want, tc.wantLogK)
			}
		})
	}
	// eps = 0: kappa(0, y) = 2 Phi(y/2) - 1.
	for _, y := range []float64{1e-6, 0.01, 0.7, 2, 9} {
		want := math.Erf(y / (2 * math.Sqrt2))
		if e := relErr(Kappa(0, y), want); e > 1e-13 {
			t.Errorf("Kappa(0, %g) = %.17g, want erf(y/(2 sqrt2)) = %.17g", y, Kappa(0, y), want)
		}
	}
	// Far below 1e-300 LogKappa stays finite and ordered while Kappa underflows to 0.
	if lk := LogKappa(50, 0.5); !(lk < -2000) || math.IsInf(lk, 0) {
		t.Errorf("LogKappa(50, 0.5) = %v, want finite < -2000", lk)
	}
	if LogKappa(50, 0.5) >= LogKappa(50, 0.6) {
		t.Errorf("LogKappa not increasing deep in the tail")
	}
}

func TestLogPhi(t *testing.T) {
	tests := []struct{ x, want float64 }{
		{-40, -804.6084420137537881666},
		{-10, -53.23128515051247057835},
		{-5.5, -17.77937635262526051059},
		{-1, -1.841021645009263505771},
		{0, -0.6931471805599453094172},
		{3, -0.001350809964748193798841},
		{10, -7.619853024160526065973e-24},
	}
	for _, tc := range tests {
		if e := relErr(LogPhi(tc.x), tc.want); e > 1e-14 {
			t.Errorf("LogPhi(%g) = %.17g, want %.17g (rel %.2e)", tc.x, LogPhi(tc.x), tc.want, e)
		}
	}
	if !math.IsInf(LogPhi(math.Inf(-1)), -1) || !math.IsNaN(LogPhi(math.NaN())) {
		t.Errorf("LogPhi edge cases wrong")
	}
}

// TestPhiInv checks the quantile at the tail probabilities the calibrations use (delta down to 1e-12).
func TestPhiInv(t *testing.T) {
	tests := []struct{ p, want float64 }{
		{1e-12, -7.03448382530113192981},
		{1e-6, -4.753424308822898948194},
		{0.01, -2.326347874040841100886},
		{0.25, -0.6744897501960817432022},
		{0.5, 0},
		{0.75, 0.6744897501960817432022},
	}
	for _, tc := range tests {
		got := PhiInv(tc.p)
		if math.Abs(got-tc.want) > 2e-15*math.Max(1, math.Abs(tc.want)) {
			t.Errorf("PhiInv(%g) = %.17g, want %.17g", tc.p, got, tc.want)
		}
	}
	for _, p := range []float64{1e-300, 1e-100, 1e-20, 1e-12, 1e-3, 0.3} {
		if e := relErr(Phi(PhiInv(p)), p); e > 1e-13 {
			t.Errorf("Phi(PhiInv(%g)) rel err %.2e", p, e)
		}
	}
	if !math.IsInf(PhiInv(0), -1) || !math.IsInf(PhiInv(1), 1) || !math.IsNaN(PhiInv(-0.1)) || !math.IsNaN(PhiInv(1.5)) {
		t.Errorf("PhiInv edge cases wrong")
	}
}

// TestKappaInverseRoundTrip: over the whole acceptance grid, Kappa(eps, KappaInverse(eps, delta)) = delta to
// 1e-9 relative, never above delta (the defining inequality (9) holds at y*), and y* is the boundary:
// Kappa(eps, y*(1 + 1e-9)) > delta.
func TestKappaInverseRoundTrip(t *testing.T) {
	for _, eps := range gridEps {
		for _, delta := range gridDelta {
			y, err := KappaInverse(eps, delta)
			if err != nil {
				t.Errorf("KappaInverse(%g, %g): %v", eps, delta, err)
				continue
			}
			k := Kappa(eps, y)
			if math.Abs(k-delta) > 1e-9*delta {
				t.Errorf("Kappa(%g, KappaInverse = %.17g) = %.17g, want %g (rel %.2e)", eps, y, k, delta, relErr(k, delta))
			}
			if k > delta {
				t.Errorf("Kappa(%g, y*) = %.17g exceeds delta = %g", eps, k, delta)
			}
			if up := Kappa(eps, y*(1+1e-9)); up <= delta {
				t.Errorf("Kappa(%g, y*(1+1e-9)) = %.17g <= delta = %g: y* not the boundary", eps, up, delta)
			}
		}
	}
}

// TestKappaInverseReference compares y* with 60-digit mpmath roots of eq. (7) found by bisection.
func TestKappaInverseReference(t *testing.T) {
	tests := []struct{ eps, delta, want float64 }{
		{0.0001, 1e-12, 0.00001995198272223250613661548},
		{0.01, 0.01, 0.03609993297514670629367891},
		{0.1, 0.01, 0.1048017753725444622195711},
		{0.5, 0.1, 0.6425546346359055792584476},
		{1, 1e-12, 0.1524896512459812839807915},
		{1, 0.01, 0.532516648502950769761503},
		{50, 1e-12, 5.243551361855375483550252},
		{50, 0.5, 10.0991898109768807084179},
	}
	for _, tc := range tests {
		got, err := KappaInverse(tc.eps, tc.delta)
		if err != nil {
			t.Fatalf("KappaInverse(%g, %g): %v", tc.eps, tc.delta, err)
		}
		if e := relErr(got, tc.want); e > 1e-13 {
			t.Errorf("KappaInverse(%g, %g) = %.17g, want %.17g (rel %.2e)", tc.eps, tc.delta, got, tc.want, e)
		}
	}
}

// TestKappaInverseOutsideGrid: accepted inputs outside the acceptance grid still round-trip, including
// eps ~ 0, where the root is y* = 2 sqrt(2) erfinv(delta) (kappa(0, y) = erf(y/(2 sqrt 2))) and a
// starting point computed as -2 PhiInv(0.5 - delta/2) (cancellation, ~3e-11 relative) used to land above
// the root and stall Newton (regression: "could not round y* = 2.5066e-06 to kappa <= delta").
func TestKappaInverseOutsideGrid(t *testing.T) {
	cases := []struct{ eps, delta float64 }{
		{0, 1e-12}, {0, 0.3}, {1e-8, 1e-6}, {100, 1e-6}, {1000, 1e-3}, {1, 1e-100}, {1, 0.9}, {0.1, 0.999},
		{0, 0.5}, {0, 0.9}, {5e-324, 1e-6}, {1e-300, 1e-300},
	}
	for _, eps := range []float64{0, 1e-300, 1e-12} {
		for _, delta := range []float64{1e-6, 1e-8, 1e-10, 1e-12} {
			cases = append(cases, struct{ eps, delta float64 }{eps, delta})
		}
	}
	for _, tc := range cases {
		y, err := KappaInverse(tc.eps, tc.delta)
		if err != nil {
			t.Errorf("KappaInverse(%g, %g): %v", tc.eps, tc.delta, err)
			continue
		}
		if k := Kappa(tc.eps, y); k > tc.delta || relErr(k, tc.delta) > 1e-9 {
			t.Errorf("KappaInverse(%g, %g) = %g gives kappa %.17g", tc.eps, tc.delta, y, k)
		}
		// closed form at eps = 0; it also holds when eps is negligible next to y* (eps/y* < 1e-20)
		if want := 2 * math.Sqrt2 * math.Erfinv(tc.delta); tc.eps <= 1e-20*want {
			if relErr(y, want) > 1e-13 {
				t.Errorf("KappaInverse(%g, %g) = %.17g, want 2 sqrt(2) erfinv(delta) = %.17g (rel %.2e)", tc.eps, tc.delta, y, want, relErr(y, want))
			}
		}
	}
}

// TestKappaInverseWideScan: every accepted (eps, delta) of a wide log grid (eps from 0 and the smallest
// float64 to 1000, delta from 1e-300 to 1 - 1e-300 on both sides of 1/2) has a root that satisfies the
// defining inequality and is tight: kappa(eps, y*(1 + 1e-13)) > delta (for delta < 1/2, eps < 100, where
// kappa moves by more than its rounding over 1e-13 relative). Regression for tiny delta at eps ~ 0, where
// Newton on log kappa - log delta stalled at the ~1e-13 absolute rounding of log delta ~ -690.
func TestKappaInverseWideScan(t *testing.T) {
	fails := 0
	report := func(format string, args ...any) {
		if fails++; fails <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, eps := range []float64{0, 5e-324, 1e-300, 1e-100, 1e-20, 1e-14, 1e-10, 1e-6, 1e-4, 0.01, 0.3, 1, 5, 20, 50, 100, 1000} {
		for le := -300.0; le <= -0.001; le += 0.37 {
			for _, d := range []float64{math.Pow(10, le), 1 - math.Pow(10, le)} {
				if !(d > 0 && d < 1) {
					continue
				}
				y, err := KappaInverse(eps, d)
				if err != nil {
					report("KappaInverse(%g, %g): %v", eps, d, err)
					continue
				}
				if k := Kappa(eps, y); k > d || relErr(k, d) > 1e-9 {
					report("KappaInverse(%g, %g) = %g: kappa = %.17g", eps, d, y, k)
				}
				if up := Kappa(eps, y*(1+1e-13)); up <= d && eps < 100 && d < 0.5 {
					report("KappaInverse(%g, %g) = %.17g is not the boundary: kappa(y*(1+1e-13)) = %.17g <= delta", eps, d, y, up)
				}
			}
		}
	}
	if fails > 0 {
		t.Errorf("%d failures", fails)
	}
}

func TestKappaInverseErrors(t *testing.T) {
	tests := []struct {
		eps, delta float64
		mention    string
	}{
		{-1, 0.01, "epsilon = -1"},
		{math.NaN(), 0.01, "epsilon = NaN"},
		{math.Inf(1), 0.01, "epsilon = +Inf"},
		{1, 0, "delta = 0"},
		{1, 1, "delta = 1"},
		{1, -0.5, "delta = -0.5"},
		{1, math.NaN(), "delta = NaN"},
	}
	for _, tc := range tests {
		_, err := KappaInverse(tc.eps, tc.delta)
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("KappaInverse(%v, %v) error = %v, want one mentioning %q", tc.eps, tc.delta, err, tc.mention)
		}
	}
}

// TestEpsilonForGDP compares with 60-digit mpmath roots of kappa(eps, mu) = delta and round-trips a grid.
func TestEpsilonForGDP(t *testing.T) {
	ref := []struct{ mu, delta, want float64 }{
		{1, 1e-05, 4.377178095681224608554},
		{0.5, 0.01, 0.9194576350492667647394},
		{3, 1e-06, 18.16344575907847482647},
		{0.1, 0.01, 0.09270756622567846094164},
		{10, 1e-12, 119.5884087123133597413},
		{0.02, 0.001, 0.02523174914995876523914},
	}
	for _, tc := range ref {
		got, err := EpsilonForGDP(tc.mu, tc.delta)
		if err != nil {
			t.Fatalf("EpsilonForGDP(%g, %g): %v", tc.mu, tc.delta, err)
		}
		if e := relErr(got, tc.want); e > 1e-12 {
			t.Errorf("EpsilonForGDP(%g, %g) = %.17g, want %.17g (rel %.2e)", tc.mu, tc.delta, got, tc.want, e)
		}
	}
	for _, mu := range []float64{1e-3, 0.05, 0.3, 1, 2, 5, 10, 30} {
		for _, delta := range gridDelta {
			eps, err := EpsilonForGDP(mu, delta)
			if err != nil {
				t.Errorf("EpsilonForGDP(%g, %g): %v", mu, delta, err)
				continue
			}
			if Kappa(0, mu) <= delta {
				if eps != 0 {
					t.Errorf("EpsilonForGDP(%g, %g) = %g, want 0 (kappa(0, mu) = %g <= delta)", mu, delta, eps, Kappa(0, mu))
				}
				continue
			}
			k := Kappa(eps, mu)
			if k > delta || relErr(k, delta) > 1e-9 {
				t.Errorf("Kappa(EpsilonForGDP(%g, %g) = %.17g, mu) = %.17g, want delta", mu, delta, eps, k)
			}
			// Consistency with the inverse in y: mu is kappa_eps^{-1}(delta).
			if y, err := KappaInverse(eps, delta); err != nil || relErr(y, mu) > 1e-8 {
				t.Errorf("KappaInverse(EpsilonForGDP(%g, %g)) = %.17g (%v), want mu", mu, delta, y, err)
			}
		}
	}
	for _, mu := range []float64{0, -1, 0.001} {
		if eps, err := EpsilonForGDP(mu, 0.01); err != nil || eps != 0 {
			t.Errorf("EpsilonForGDP(%g, 0.01) = %v, %v; want 0, nil", mu, eps, err)
		}
	}
	for _, tc := range []struct {
		mu, delta float64
		mention   string
	}{
		{math.NaN(), 0.01, "mu_gdp = NaN"}, {math.Inf(1), 0.01, "mu_gdp = +Inf"}, {1, 0, "delta = 0"}, {1, 1.5, "delta = 1.5"},
	} {
		if _, err := EpsilonForGDP(tc.mu, tc.delta); err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("EpsilonForGDP(%v, %v) error = %v, want one mentioning %q", tc.mu, tc.delta, err, tc.mention)
		}
	}
}

func TestKappaAllocationFree(t *testing.T) {
	var sink float64
	allocs := testing.AllocsPerRun(100, func() {
		sink += Kappa(0.3, 0.7) + Kappa(1, 3) + LogKappa(1, 0.01)
		y, _ := KappaInverse(0.5, 1e-6)
		e, _ := EpsilonForGDP(1, 1e-5)
		sink += y + e
	})
	if allocs != 0 {
		t.Errorf("Kappa/KappaInverse/EpsilonForGDP allocate %v times per call", allocs)
	}
	_ = sink
}

// BenchmarkKappaInverse measures one KappaInverse call, cycling through the 77 points of the acceptance
// grid (eps in [1e-4, 50] x delta in [1e-12, 0.5]); the target is < 20 us per call.
func BenchmarkKappaInverse(b *testing.B) {
	type pt struct{ eps, delta float64 }
	var pts []pt
	for _, e := range gridEps {
		for _, d := range gridDelta {
			pts = append(pts, pt{e, d})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var sink float64
	for i := 0; i < b.N; i++ {
		p := pts[i%len(pts)]
		y, err := KappaInverse(p.eps, p.delta)
		if err != nil {
			b.Fatal(err)
		}
		sink += y
	}
	_ = sink
}

// BenchmarkKappaInverseSmallEps is one of the slower grid points (eps = 1e-4, delta = 1e-12: every Newton
// step evaluates kappa by quadrature).
func BenchmarkKappaInverseSmallEps(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := KappaInverse(1e-4, 1e-12); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKappa(b *testing.B) {
	b.ReportAllocs()
	var sink float64
	for i := 0; i < b.N; i++ {
		sink += Kappa(0.01, 0.05+float64(i%7)*0.2)
	}
	_ = sink
}
