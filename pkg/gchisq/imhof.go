package gchisq

import (
	"math"
)

// Imhof's integral with double-exponential quadrature, used when Davies' trapezoidal rule would need
// more than daviesBudget terms (the integrand decays algebraically when a few chi-square terms with
// few degrees of freedom dominate, and Davies' auxiliary integration then needs 3/sqrt(acc) terms).
//
// With theta0(u) = 1/2 sum_j [k_j atan(2 w_j u) + lambda_j 2 w_j u / (1 + 4 w_j^2 u^2)] and
// A(u) = exp(-sigma^2 u^2/2 - sum_j [k_j/4 log(1 + 4 w_j^2 u^2) + lambda_j/2 (2 w_j u)^2/(1 + 4 w_j^2 u^2)])
// Imhof's formula (Imhof 1961, eq. 3.2, in Davies' frequency scaling) is
//
//	P(Q <= c) = 1/2 - (1/pi) int_0^inf sin(theta0(u) - c u) A(u)/u du
//	          = 1/2 - (1/pi) [ int f1(u) cos(w u) du - sgn(c) int f2(u) sin(w u) du ],  w = |c|,
//
// with the non-oscillating amplitudes f1 = sin(theta0) A/u and f2 = cos(theta0) A/u. Both Fourier-type
// integrals are evaluated with the Ooura-Mori double-exponential formula (T. Ooura, M. Mori, "A robust
// double exponential formula for Fourier-type integrals", J. Comput. Appl. Math. 112 (1999) 229-241),
// whose abscissas approach the zeros of sin(w u) (resp. cos(w u)) double-exponentially, so algebraic
// decay of f costs nothing. The mesh is refined (M = 32, 64, ..., 2048) until two successive results
// agree to a tenth of the requested accuracy; the error estimate is that difference. c = 0 uses the
// exp-sinh rule on the non-oscillating integral.

// daviesBudget is the number of integration terms above which the Imhof/DE path is used.
const daviesBudget = 1000

// amplitude returns theta0(u) and log A(u) (series-accelerated like Davies' integrand).
func (d *Dist) amplitude(u float64) (theta0, logA float64) {
	t := 2 * u
	m, ti := d.ps.split(t)
	sum1 := 0.0
	sum3 := -0.5 * d.sigma * d.sigma * u * u
	var lp logProd
	lp.reset()
	for j := m - 1; j >= 0; j-- {
		x := t * d.w[j]
		y := x * x
		lp.add(d.k[j], y)
		y = d.nc[j] * x / (1 + y)
		sum1 += d.k[j]*math.Atan(x) + y
		sum3 -= 0.5 * x * y
	}
	sum3 -= 0.25 * lp.log()
	zs, _ := d.ps.oddSums(ti, t)
	klog, lfrac := d.ps.evenSums(ti, t)
	sum1 += zs
	sum3 -= 0.25*klog + 0.5*lfrac
	return 0.5 * sum1, sum3
}

// imhofIntegral returns J = int_0^inf sin(theta0(u) - c u) A(u)/u du, so that
// P(Q <= c) = 1/2 - J/pi, with an error estimate for J; ok is false if the refinement did not converge.
func (d *Dist) imhofIntegral(c, tol float64) (j, errEst float64, evals int, ok bool) {
	if c == 0 {
		return d.expSinh(tol)
	}
	w := math.Abs(c)
	sgn := 1.0
	if c < 0 {
		sgn = -1
	}
	prev := math.NaN()
	for M := 32; M <= 2048; M *= 2 {
		i1, i2, n := d.deFourier(w, M)
		evals += n
		cur := i1 - sgn*i2
		if !math.IsNaN(prev) {
			errEst = math.Abs(cur - prev)
			if errEst <= 0.1*tol {
				return cur, errEst, evals, true
			}
		}
		prev = cur
	}
	return prev, errEst, evals, false
}

// deFourier evaluates I1 = int f1(u) cos(w u) du and I2 = int f2(u) sin(w u) du with the Ooura-Mori
// transformation u = M phi(t)/w, phi(t) = t / (1 - exp(-psi(t))),
// psi(t) = 2t + alpha (1 - e^{-t}) + beta (e^t - 1), mesh h = pi/M: sine nodes t = n h, cosine nodes
// t = (n - 1/2) h.
func (d *Dist) deFourier(w float64, M int) (i1, i2 float64, evals int) {
	fm := float64(M)
	h := math.Pi / fm
	const beta = 0.25
	alpha := beta / math.Sqrt(1+fm*math.Log1p(fm)/(4*math.Pi))
	p1 := 2 + alpha + beta // psi'(0)
	p2 := beta - alpha     // psi''(0)
	// node returns phi(t), phi'(t) and the deviation delta = M (phi(t) - t).
	node := func(t float64) (phi, dphi, delta float64, ok bool) {
		if t == 0 {
			phi = 1 / p1
			return phi, (p1*p1 - p2) / (2 * p1 * p1), fm * phi, true
		}
		psi := 2*t + alpha*(-math.Expm1(-t)) + beta*math.Expm1(t)
		if -psi > 700 {
			return 0, 0, 0, false
		}
		dpsi := 2 + alpha*math.Exp(-t) + beta*math.Exp(t)
		e := math.Exp(-psi)
		g := -math.Expm1(-psi) // 1 - e^{-psi}
		phi = t / g
		dphi = (g - t*dpsi*e) / (g * g)
		delta = fm * t * e / g // M (phi - t)
		return phi, dphi, delta, true
	}
	// term evaluates the node at t for the sine (sine == true) or cosine integral; tn = M t / pi is
	// n (sine) or n - 1/2 (cosine).
	term := func(t float64, n int, sine bool) float64 {
		phi, dphi, delta, ok := node(t)
		if !ok || dphi == 0 {
			return 0
		}
		u := fm * phi / w
		if u <= 0 {
			return 0
		}
		evals++
		theta0, logA := d.amplitude(u)
		amp := math.Exp(logA) / u
		var trig float64
		if t > 0 {
			// w u = M phi = M t + delta with M t = n pi (sine) or (n - 1/2) pi (cosine):
			// sin(n pi + delta) = (-1)^n sin(delta); cos((n - 1/2) pi + delta) = (-1)^n sin(delta).
			trig = math.Sin(delta)
			if n%2 != 0 {
				trig = -trig
			}
		} else if sine {
			trig = math.Sin(fm * phi)
		} else {
			trig = math.Cos(fm * phi)
		}
		if sine {
			return math.Cos(theta0) * amp * trig * dphi
		}
		return math.Sin(theta0) * amp * trig * dphi
	}
	const small = 1e-18
	for _, sine := range [...]bool{true, false} {
		sum := 0.0
		off := 0.5
		if sine {
			off = 0
		}
		// positive side (including t = 0 for the sine rule)
		quiet := 0
		start := 0
		if !sine {
			start = 1
		}
		for n := start; n < 100*M; n++ {
			t := (float64(n) - off) * h
			v := term(t, n, sine)
			sum += v
			if math.Abs(v) <= small*(math.Abs(sum)+1e-300) || math.Abs(v) < 1e-300 {
				quiet++
				if quiet >= 3 && t > 1 {
					break
				}
			} else {
				quiet = 0
			}
		}
		// negative side: the abscissas u = M phi(t)/w fall double-exponentially to 0 while phi'(t)
		// vanishes double-exponentially; run until phi' is negligible (the integrands are bounded
		// near u = 0: f1 -> E[Q] and f2 sin(w u) -> w), not until a run of small terms, since for
		// small w the first nodes lie where A(u) has underflowed.
		// |f1| <= B1 = sum_j |w_j| (k_j + lambda_j) and |f2 sin(w u)| <= w bound the neglected terms.
		bound := math.Pi
		if !sine {
			bound = math.Pi * d.absMean / w
		}
		for n := start - 1; n > -100*M; n-- {
			t := (float64(n) - off) * h
			_, dphi, _, ok := node(t)
			if !ok || dphi*bound < 1e-22 {
				break
			}
			sum += term(t, n, sine)
		}
		if sine {
			i2 = math.Pi / w * sum
		} else {
			i1 = math.Pi / w * sum
		}
	}
	return i1, i2, evals
}

// expSinh integrates sin(theta0(u)) A(u)/u over (0, inf) (the c = 0 case) with u = exp(pi/2 sinh t).
func (d *Dist) expSinh(tol float64) (j, errEst float64, evals int, ok bool) {
	f := func(t float64) float64 {
		s := 0.5 * math.Pi * math.Sinh(t)
		if s > 700 || s < -700 {
			return 0
		}
		u := math.Exp(s)
		evals++
		theta0, logA := d.amplitude(u)
		// (sin(theta0) A / u) du, du = u pi/2 cosh t dt
		return math.Sin(theta0) * math.Exp(logA) * 0.5 * math.Pi * math.Cosh(t)
	}
	prev := math.NaN()
	for h := 0.5; h > 1e-3; h /= 2 {
		sum := f(0)
		for _, dir := range [...]float64{1, -1} {
			for n := 1; n < 100000; n++ {
				v := f(dir * float64(n) * h)
				sum += v
				if math.Abs(v) < 1e-18*math.Abs(sum) || math.Abs(v) < 1e-300 {
					if float64(n)*h > 3 {
						break
					}
				}
			}
		}
		cur := sum * h
		if !math.IsNaN(prev) {
			errEst = math.Abs(cur - prev)
			if errEst <= 0.1*tol {
				return cur, errEst, evals, true
			}
		}
		prev = cur
	}
	return prev, errEst, evals, false
}
