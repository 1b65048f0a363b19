package privacy

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mathext"
)

// This file implements kappa (eq. (7) of the journal paper), its inverse in y, and the inverse in eps
// used by the auditor, together with the normal-distribution helpers they need.
//
// Numerical method. With A = eps/y - y/2 and B = eps/y + y/2 (so a = y/2 - eps/y = -A and
// b = -y/2 - eps/y = -B), eq. (7) reads kappa = Q(A) - e^eps Q(B), where Q(x) = Phi(-x) is the upper tail.
// Since B^2/2 - A^2/2 = eps, e^eps phi(B) = phi(A) exactly, and with the Mills ratio R(x) = Q(x)/phi(x):
//
//	kappa(eps, y) = phi(A) * (R(A) - R(B)) = phi(A) * integral_A^B g(x) dx,   g(x) = 1 - x R(x) = -R'(x) > 0.
//
// The factor phi(A) carries the whole exponential range (it is taken in log space, so nothing underflows
// while kappa >= 1e-300), and the remaining factor is computed without catastrophic cancellation:
//   - y <= 1: the integral by 4- to 8-point Gauss-Legendre (g is entire, the interval has width y <= 1), which
//     removes the cancellation between R(A) and R(B) (relative size y/(eps/y) when y is small);
//   - y > 1 and A > 0: the difference R(A) - R(B), which loses at most a factor (eps/y + y/2)/y;
//   - A <= 0 (kappa > 0.2): kappa = 1 - c with c = Q(|A|) + phi(A) R(B), no cancellation.
// R(x) = sqrt(pi/2) erfcx(x/sqrt2) with erfcx(z) = e^{z^2} erfc(z) accurate to a few ulps (see erfcx), and
// g(x) by its asymptotic series for x >= 20.

const (
	nrmLnSqrt2Pi  = 0.91893853320467274178032973640561764 // log(sqrt(2 pi))
	nrmInvSqrt2Pi = 0.39894228040143267793994605993438187 // 1/sqrt(2 pi)
	nrmSqrtPiBy2  = 1.25331413731550025120788264240552263 // sqrt(pi/2)
	nrmInvSqrtPi  = 0.56418958354775628694807945156077259 // 1/sqrt(pi)

	// kappaQuadMax is the largest y for which kappa is computed by quadrature of g over [A, B].
	kappaQuadMax = 1.0
	// millsAsymptotic is the x above which g(x) = 1 - x R(x) is summed from its asymptotic series.
	millsAsymptotic = 20.0
)

// Gauss-Legendre rules on [-1, 1] (positive nodes and their weights). The node count grows with the
// interval width y: against a 12-point rule (and against 50-digit references) the relative error stays
// below 1e-14 for y <= 0.1 with 4 nodes, y <= 0.5 with 6 and y <= 1 with 8.
var (
	glNodes4 = [][2]float64{
		{0.86113631159405257522, 0.34785484513745385737},
		{0.3399810435848562648, 0.65214515486254614263},
	}
	glNodes6 = [][2]float64{
		{0.93246951420315202781, 0.17132449237917034504},
		{0.66120938646626451366, 0.36076157304813860757},
		{0.23861918608319690863, 0.46791393457269104739},
	}
	glNodes8 = [][2]float64{
		{0.96028985649753623168, 0.10122853629037625915},
		{0.79666647741362673959, 0.22238103445337447054},
		{0.52553240991632898582, 0.31370664587788728734},
		{0.18343464249564980494, 0.36268378337836198297},
	}
)

// Phi is the standard normal cumulative distribution function.
func Phi(x float64) float64 {
	return 0.5 * math.Erfc(-x/math.Sqrt2)
}

// LogPhi returns log(Phi(x)), accurate in both tails: for very negative x it uses
// log Phi(x) = -x^2/2 - log sqrt(2 pi) + log R(-x) with R the Mills ratio, so it never underflows;
// for large positive x it uses log1p(-Q(x)).
func LogPhi(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return math.NaN()
	case x > 0:
		return math.Log1p(-0.5 * math.Erfc(x/math.Sqrt2))
	case x > -5:
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	case math.IsInf(x, -1):
		return math.Inf(-1)
	default:
		return -0.5*x*x - nrmLnSqrt2Pi + math.Log(millsRatio(-x))
	}
}

// PhiInv is the standard normal quantile function, Phi(PhiInv(p)) = p for p in (0, 1). It starts from
// Wichura's AS241 rational approximation (gonum mathext.NormalQuantile, accurate in both tails) and polishes
// it with one Halley step on the exact Phi. It returns -Inf at 0, +Inf at 1 and NaN outside [0, 1].
func PhiInv(p float64) float64 {
	switch {
	case math.IsNaN(p) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	}
	x := mathext.NormalQuantile(p)
	// Halley step on Phi(x) - p in the tail where the residual is relative-accurate.
	var r float64
	if x < 0 {
		r = Phi(x) - p
	} else {
		r = (1 - p) - 0.5*math.Erfc(x/math.Sqrt2) // Phi(x) - p = (1-p) - Q(x), 1-p exact for p >= 1/2
	}
	d := nrmInvSqrt2Pi * math.Exp(-0.5*x*x)
	if d > 0 && !math.IsInf(r, 0) {
		t := r / d
		x -= t / (1 + 0.5*x*t)
	}
	return x
}

// erfcx returns e^{z^2} erfc(z), relative error a few ulps for z >= -1.25 (and moderately below).
// On [1.25, 28) it uses the rational approximation of fdlibm's s_erf.c (as in Go's math.Erfc, which
// computes erfc(z) = exp(-z^2 - 0.5625 + R/S)/z there), so that erfcx = exp(R/S - 0.5625)/z costs a single
// exponential; above 28 its asymptotic series; below 1.25, e^{z^2} math.Erfc(z).
func erfcx(z float64) float64 {
	switch {
	case z < -1.25:
		// e^{z^2} = e^{hi^2} e^{(z-hi)(z+hi)} with hi^2 exact (hi keeps 20 mantissa bits).
		hi := math.Float64frombits(math.Float64bits(z) & 0xffffffff00000000)
		return math.Erfc(z) * math.Exp(hi*hi) * math.Exp((z-hi)*(z+hi))
	case z < 1.25:
		return math.Erfc(z) * math.Exp(z*z)
	case z < 28:
		s := 1 / (z * z)
		var r, q float64
		if z < 1/0.35 {
			r = erfcxRA0 + s*(erfcxRA1+s*(erfcxRA2+s*(erfcxRA3+s*(erfcxRA4+s*(erfcxRA5+s*(erfcxRA6+s*erfcxRA7))))))
			q = 1 + s*(erfcxSA1+s*(erfcxSA2+s*(erfcxSA3+s*(erfcxSA4+s*(erfcxSA5+s*(erfcxSA6+s*(erfcxSA7+s*erfcxSA8)))))))
		} else {
			r = erfcxRB0 + s*(erfcxRB1+s*(erfcxRB2+s*(erfcxRB3+s*(erfcxRB4+s*(erfcxRB5+s*erfcxRB6)))))
			q = 1 + s*(erfcxSB1+s*(erfcxSB2+s*(erfcxSB3+s*(erfcxSB4+s*(erfcxSB5+s*(erfcxSB6+s*erfcxSB7))))))
		}
		return math.Exp(r/q-0.5625) / z
	}
	// Asymptotic series: erfcx(z) = 1/(z sqrt(pi)) * sum_k (-1)^k (2k-1)!! / (2 z^2)^k.
	v := 1 / (2 * z * z)
	sum, term := 1.0, 1.0
	for k := 1; k < 40; k++ {
		term *= -float64(2*k-1) * v
		sum += term
		if math.Abs(term) < 1e-17 {
			break
		}
	}
	return nrmInvSqrtPi * sum / z
}

// Coefficients of erfc on [1.25, 1/0.35) (RA/SA) and [1/0.35, 28) (RB/SB), from FreeBSD's
// /usr/src/lib/msun/src/s_erf.c via Go's math/erf.go, which carry this notice:
//
//	Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
//
//	Developed at SunPro, a Sun Microsystems, Inc. business.
//	Permission to use, copy, modify, and distribute this
//	software is freely granted, provided that this notice
//	is preserved.
const (
	erfcxRA0 = -9.86494403484714822705e-03
	erfcxRA1 = -6.93858572707181764372e-01
	erfcxRA2 = -1.05586262253232909814e+01
	erfcxRA3 = -6.23753324503260060396e+01
	erfcxRA4 = -1.62396669462573470355e+02
	erfcxRA5 = -1.84605092906711035994e+02
	erfcxRA6 = -8.12874355063065934246e+01
	erfcxRA7 = -9.81432934416914548592e+00
	erfcxSA1 = 1.96512716674392571292e+01
	erfcxSA2 = 1.37657754143519042600e+02
	erfcxSA3 = 4.34565877475229228821e+02
	erfcxSA4 = 6.45387271733267880336e+02
	erfcxSA5 = 4.29008140027567833386e+02
	erfcxSA6 = 1.08635005541779435134e+02
	erfcxSA7 = 6.57024977031928170135e+00
	erfcxSA8 = -6.04244152148580987438e-02
	erfcxRB0 = -9.86494292470009928597e-03
	erfcxRB1 = -7.99283237680523006574e-01
	erfcxRB2 = -1.77579549177547519889e+01
	erfcxRB3 = -1.60636384855821916062e+02
	erfcxRB4 = -6.37566443368389627722e+02
	erfcxRB5 = -1.02509513161107724954e+03
	erfcxRB6 = -4.83519191608651397019e+02
	erfcxSB1 = 3.03380607434824582924e+01
	erfcxSB2 = 3.25792512996573918826e+02
	erfcxSB3 = 1.53672958608443695994e+03
	erfcxSB4 = 3.19985821950859553908e+03
	erfcxSB5 = 2.55305040643316442583e+03
	erfcxSB6 = 4.74528541206955367215e+02
	erfcxSB7 = -2.24409524465858183362e+01
)

// millsRatio returns R(x) = Q(x)/phi(x) = (1-Phi(x))/phi(x) (+Inf when phi(x) underflows for x << 0).
func millsRatio(x float64) float64 {
	return nrmSqrtPiBy2 * erfcx(x/math.Sqrt2)
}

// millsGap returns g(x) = 1 - x R(x) = -R'(x) > 0: the integrand of kappa's Mills representation.
func millsGap(x float64) float64 {
	if x < millsAsymptotic {
		return 1 - x*millsRatio(x)
	}
	// g(x) = sum_{k>=1} (-1)^{k+1} (2k-1)!! / x^{2k}.
	v := 1 / (x * x)
	sum, term := 0.0, 1.0
	for k := 1; k < 60; k++ {
		term *= float64(2*k-1) * v
		if k%2 == 1 {
			sum += term
		} else {
			sum -= term
		}
		if term < 1e-17*sum {
			break
		}
	}
	return sum
}

// kappaParts evaluates kappa(eps, y) in one of two forms:
//
//	upper == false: kappa = exp(logPre) * s   (logPre = log phi(A), s > 0),
//	upper == true:  kappa = 1 - c             (A <= 0, c = Q(|A|) + phi(A) R(B) in [0, 0.8)).
//
// It also returns rb = R(B), used by the eps-derivative. Inputs must satisfy eps >= 0, 0 < y < Inf.
func kappaParts(eps, y float64) (logPre, s float64, upper bool, c, rb float64) {
	h := 0.5 * y
	u := eps / y
	A := u - h
	B := u + h
	rb = millsRatio(B)
	if y <= kappaQuadMax {
		nodes := glNodes8
		switch {
		case y <= 0.1:
			nodes = glNodes4
		case y <= 0.5:
			nodes = glNodes6
		}
		var sum float64
		for _, nw := range nodes {
			sum += nw[1] * (millsGap(u-h*nw[0]) + millsGap(u+h*nw[0]))
		}
		return -0.5*A*A - nrmLnSqrt2Pi, h * sum, false, 0, rb
	}
	if A > 0 {
		return -0.5*A*A - nrmLnSqrt2Pi, millsRatio(A) - rb, false, 0, rb
	}
	phiA := nrmInvSqrt2Pi * math.Exp(-0.5*A*A)
	return 0, 0, true, 0.5*math.Erfc(-A/math.Sqrt2) + phiA*rb, rb
}

// Kappa is eq. (7) of the journal paper (Balle & Wang's analytic Gaussian mechanism):
//
//	kappa(eps, y) = Phi(y/2 - eps/y) - e^eps Phi(-y/2 - eps/y).
//
// A Gaussian mechanism whose L2 sensitivity in noise units is y (y = mu*Delta_N/sigma) is (eps, delta)-DP
// iff kappa(eps, y) <= delta (Theorem 1, eq. (9)). Kappa is strictly increasing in y (d kappa/dy =
// phi(y/2 - eps/y)) and strictly decreasing in eps (d kappa/d eps = -e^eps Phi(-y/2 - eps/y)).
//
// It is evaluated without cancellation or underflow (see the file comment). Against 80-digit references
// (eps in [0, 50], kappa >= 1e-300) the relative error is about 1e-15 for moderate values and grows like
// A^2 * 1e-16 with A = eps/y - y/2, the rounding of A itself: at most 2e-13, near kappa = 1e-250.
// Kappa(eps, 0) = 0, Kappa(eps, +Inf) = 1; negative or NaN arguments give NaN.
func Kappa(eps, y float64) float64 {
	switch {
	case math.IsNaN(eps) || math.IsNaN(y) || eps < 0 || y < 0:
		return math.NaN()
	case y == 0 || math.IsInf(eps, 1):
		return 0
	case math.IsInf(y, 1):
		return 1
	}
	logPre, s, upper, c, _ := kappaParts(eps, y)
	if upper {
		return 1 - c
	}
	if s <= 0 {
		return 0
	}
	if logPre > -700 {
		return math.Exp(logPre) * s
	}
	return math.Exp(logPre + math.Log(s))
}

// LogKappa returns log(Kappa(eps, y)) without underflow (finite far below kappa = 1e-300).
func LogKappa(eps, y float64) float64 {
	switch {
	case math.IsNaN(eps) || math.IsNaN(y) || eps < 0 || y < 0:
		return math.NaN()
	case y == 0 || math.IsInf(eps, 1):
		return math.Inf(-1)
	case math.IsInf(y, 1):
		return 0
	}
	lk, _, _ := logKappaDerivs(eps, y)
	return lk
}

// logKappaDerivs returns log kappa and its partial derivatives in y and in eps.
func logKappaDerivs(eps, y float64) (lk, dy, deps float64) {
	logPre, s, upper, c, rb := kappaParts(eps, y)
	if upper {
		k := 1 - c
		A := eps/y - 0.5*y
		phiA := nrmInvSqrt2Pi * math.Exp(-0.5*A*A)
		return math.Log1p(-c), phiA / k, -phiA * rb / k
	}
	if s <= 0 {
		return math.Inf(-1), math.Inf(1), math.Inf(-1)
	}
	// kappa = phi(A) s: d kappa/dy = phi(A), d kappa/d eps = -phi(A) R(B).
	return logPre + math.Log(s), 1 / s, -rb / s
}

// calCheckDelta validates delta in (0, 1).
func calCheckDelta(delta float64) error {
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return fmt.Errorf("delta = %v: must lie in (0, 1)", delta)
	}
	return nil
}

// calCheckEpsilon validates a finite eps >= 0.
func calCheckEpsilon(eps float64) error {
	if math.IsNaN(eps) || eps < 0 || math.IsInf(eps, 0) {
		return fmt.Errorf("epsilon = %v: must be finite and >= 0", eps)
	}
	return nil
}

// KappaInverse returns kappa_eps^{-1}(delta): the y* > 0 with Kappa(eps, y*) = delta (Theorem 1, eq. (9):
// the mechanism is (eps, delta)-DP iff mu*Delta_N <= y* in noise units). The returned value is rounded so
// that Kappa(eps, y*) <= delta holds as computed, and is within a few 1e-15 (relative) of the exact root.
//
// Accepted inputs: eps >= 0 finite, delta in (0, 1). Accuracy is tested for eps in [1e-4, 50] and delta in
// [1e-12, 0.5], and eps = 0 (closed form y* = 2 sqrt(2) erfinv(delta)) and eps down to the smallest
// float64 round-trip as well. Method: log kappa is concave in y (phi(y/2 - eps/y) is log-concave on y > 0,
// and kappa is its integral from 0), so Newton's method on log kappa(eps, y) = log delta, started at the
// larger of the paper's closed-form bound and the eps = 0 solution (both below the root up to rounding),
// increases monotonically to y*; a start that rounding put above the root is stepped below it by the
// first (concave) Newton step. The derivative d log kappa/dy = phi(A)/kappa is available in closed form;
// a bracket of evaluated signs guards every step. Cost: a few microseconds.
func KappaInverse(eps, delta float64) (float64, error) {
	if err := calCheckEpsilon(eps); err != nil {
		return 0, fmt.Errorf("kappa inverse: %w", err)
	}
	if err := calCheckDelta(delta); err != nil {
		return 0, fmt.Errorf("kappa inverse: %w", err)
	}
	ld := math.Log(delta)
	// Starting point: the larger of two lower bounds of y* in exact arithmetic. The paper's bound solves
	// Phi(y/2 - eps/y) = delta (kappa's first term alone); y0 solves kappa(0, y) = delta, and kappa
	// decreases in eps. kappa(0, y) = 2 Phi(y/2) - 1 = erf(y/(2 sqrt 2)), so y0 = 2 sqrt(2) erfinv(delta),
	// relative-accurate for every delta (the form -2 PhiInv(0.5 - delta/2) loses ~3e-11 to cancellation).
	// Rounding can still put the start a few ulps above the root (eps ~ 0, where y0 is the root), so
	// the start is not trusted as a bracket end: the bracket [lo, hi] only takes points whose sign of
	// f = log kappa - log delta has been evaluated, starting from [0, +Inf) (kappa(eps, 0) = 0 < delta).
	y := paperBoundY(eps, PhiInv(delta))
	if y0 := 2 * math.Sqrt2 * math.Erfinv(delta); y0 > y {
		y = y0
	}
	if !(y > 0) || math.IsInf(y, 0) {
		return 0, fmt.Errorf("kappa inverse: no starting point for epsilon = %v, delta = %v", eps, delta)
	}
	lo, hi := 0.0, math.Inf(1)
	converged := false
	for it := 0; it < 200; it++ {
		f, dy := kappaInverseResidual(eps, y, delta, ld)
		if f == 0 {
			converged = true
			break
		}
		if f < 0 {
			lo = math.Max(lo, y)
		} else {
			hi = math.Min(hi, y)
		}
		yn := y - f/dy
		if math.Abs(yn-y) <= 1e-15*y {
			y = yn
			converged = true
			break
		}
		if !(yn > lo && yn < hi) {
			// Safeguard (only reachable through rounding): bisect, or expand when no upper bound is known.
			if math.IsInf(hi, 1) {
				yn = 2 * y
			} else {
				yn = 0.5 * (lo + hi)
			}
			if yn == lo || yn == hi {
				converged = true
				break
			}
		}
		y = yn
	}
	if !converged {
		return 0, fmt.Errorf("kappa inverse: no convergence for epsilon = %v, delta = %v", eps, delta)
	}
	// Round down so that the defining inequality holds as computed: ulp by ulp (the root is resolved to a
	// few ulps), then, should that not suffice, by relative steps 2^-46, 2^-45, ... (never expected).
	for i := 0; i < 64 && Kappa(eps, y) > delta; i++ {
		y = math.Nextafter(y, 0)
	}
	for k := -46; k < 0 && Kappa(eps, y) > delta; k++ {
		y -= math.Ldexp(y, k)
	}
	if Kappa(eps, y) > delta {
		return 0, fmt.Errorf("kappa inverse: could not round y* = %v to kappa <= delta for epsilon = %v, delta = %v", y, eps, delta)
	}
	return y, nil
}

// kappaInverseResidual returns f = log(kappa(eps, y)/delta) and df/dy for KappaInverse's Newton iteration
// (ld = log delta). Where kappa = phi(A) s it forms log(s/delta) + log phi(A) instead of
// log s + log phi(A) - log delta: for tiny delta and small eps (kappa(eps, y) ~ y/sqrt(2 pi), phi(A) ~ 1),
// log delta ~ -690 carries an absolute rounding of ~1e-13, which would limit y* to ~1e-13 relative.
func kappaInverseResidual(eps, y, delta, ld float64) (f, dy float64) {
	logPre, s, upper, c, _ := kappaParts(eps, y)
	if upper {
		A := eps/y - 0.5*y
		phiA := nrmInvSqrt2Pi * math.Exp(-0.5*A*A)
		return math.Log1p(-c) - ld, phiA / (1 - c)
	}
	if s <= 0 {
		return math.Inf(-1), math.Inf(1)
	}
	if r := s / delta; r >= 0x1p-1000 && r <= 0x1p1000 {
		return logPre + math.Log(r), 1 / s
	}
	return logPre + math.Log(s) - ld, 1 / s
}

// paperBoundY is the y solving Phi(y/2 - eps/y) = delta for z = PhiInv(delta): y = z + sqrt(z^2 + 2 eps)
// (written without cancellation). The papers' closed-form sigma is mu*Delta/paperBoundY.
func paperBoundY(eps, z float64) float64 {
	r := math.Sqrt(z*z + 2*eps)
	if z >= 0 {
		return z + r
	}
	return 2 * eps / (r - z)
}

// EpsilonForGDP converts mu-Gaussian differential privacy into (eps, delta): it returns the eps >= 0 with
// Kappa(eps, muGDP) = delta (docs/math.md section 6; mu-GDP is (eps, delta)-DP for all eps with
// kappa(eps, mu) <= delta, Dong, Roth & Su 2019, Cor. 2.13). Kappa decreases in eps, so the answer is 0 when
// Kappa(0, muGDP) <= delta already, and also when muGDP <= 0 (no distinguishing power). The result is
// rounded up so that Kappa(eps, muGDP) <= delta holds as computed.
func EpsilonForGDP(muGDP, delta float64) (float64, error) {
	if err := calCheckDelta(delta); err != nil {
		return 0, fmt.Errorf("epsilon for GDP: %w", err)
	}
	if math.IsNaN(muGDP) || math.IsInf(muGDP, 1) {
		return 0, fmt.Errorf("epsilon for GDP: mu_gdp = %v: must be finite", muGDP)
	}
	if muGDP <= 0 || Kappa(0, muGDP) <= delta {
		return 0, nil
	}
	ld := math.Log(delta)
	// Upper bound: kappa(eps, mu) < Phi(mu/2 - eps/mu) = delta at eps = mu (mu/2 - PhiInv(delta)).
	lo, hi := 0.0, muGDP*(0.5*muGDP-PhiInv(delta))
	if !(hi > 0) || math.IsInf(hi, 1) {
		return 0, fmt.Errorf("epsilon for GDP: no bracket for mu_gdp = %v, delta = %v", muGDP, delta)
	}
	eps := hi
	converged := false
	for it := 0; it < 200; it++ {
		lk, _, de := logKappaDerivs(eps, muGDP)
		f := lk - ld
		if f == 0 {
			converged = true
			break
		}
		if f > 0 {
			lo = math.Max(lo, eps)
		} else {
			hi = math.Min(hi, eps)
		}
		en := eps - f/de
		if math.Abs(en-eps) <= 1e-15*eps {
			eps = en
			converged = true
			break
		}
		if !(en > lo && en < hi) {
			en = 0.5 * (lo + hi)
			if en == lo || en == hi {
				converged = true
				break
			}
		}
		eps = en
	}
	if !converged {
		return 0, fmt.Errorf("epsilon for GDP: no convergence for mu_gdp = %v, delta = %v", muGDP, delta)
	}
	for i := 0; i < 64 && Kappa(eps, muGDP) > delta; i++ {
		eps = math.Nextafter(eps, math.Inf(1))
	}
	return eps, nil
}
