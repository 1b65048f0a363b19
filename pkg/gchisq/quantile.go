package gchisq

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Quantile returns the x with P(Q <= x) = p, for p in (0, 1). For p > 1/2 it inverts the survival
// function (UpperQuantile(1-p)), so upper-tail quantiles keep relative accuracy.
func (d *Dist) Quantile(p float64) (float64, error) {
	if math.IsNaN(p) || p <= 0 || p >= 1 {
		return math.NaN(), fmt.Errorf("%w: probability %v must lie in (0, 1)", ErrInvalid, p)
	}
	if p > 0.5 {
		return d.invert(1-p, true)
	}
	return d.invert(p, false)
}

// UpperQuantile returns the x with P(Q > x) = q, for q in (0, 1): the smallest radius^2 whose
// exceedance probability is q. The survival function is evaluated with absolute error
// min(Accuracy(), 1e-3 q) (but not below 1e-14), so q as small as 1e-11 keeps three significant digits.
func (d *Dist) UpperQuantile(q float64) (float64, error) {
	if math.IsNaN(q) || q <= 0 || q >= 1 {
		return math.NaN(), fmt.Errorf("%w: upper-tail probability %v must lie in (0, 1)", ErrInvalid, q)
	}
	if q > 0.5 {
		return d.invert(1-q, false)
	}
	return d.invert(q, true)
}

// startQuantile is the Satterthwaite-Welch approximation: a scaled chi-square a chi^2_nu with the
// mean and variance of Q when all weights are positive, else the normal approximation.
func (d *Dist) startQuantile(p float64, upper bool) float64 {
	if upper {
		p = 1 - p
	}
	if d.lmin >= 0 && d.sigma == 0 && d.mean > 0 {
		a := d.variance / (2 * d.mean)
		nu := 2 * d.mean * d.mean / d.variance
		x := a * distuv.ChiSquared{K: nu}.Quantile(p)
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			return x
		}
	}
	z := distuv.UnitNormal.Quantile(p)
	return d.mean + d.sd*z
}

// invert finds the root of g(x) = P(Q <= x) - p (upper == false) or p - P(Q > x) (upper == true), both
// increasing in x, by bracketing and Brent's method.
func (d *Dist) invert(p float64, upper bool) (float64, error) {
	acc := math.Max(math.Min(d.acc, 1e-3*p), 1e-14)
	var evalErr error
	g := func(x float64) float64 {
		if evalErr != nil {
			return math.NaN()
		}
		var s daviesState
		cdf, surv, _, err := s.compute(d, x, acc)
		if err != nil {
			evalErr = err
			return math.NaN()
		}
		if upper {
			return p - clamp01(surv)
		}
		return clamp01(cdf) - p
	}
	x0 := d.startQuantile(p, upper)
	step := math.Max(0.25*d.sd, 1e-3*math.Abs(x0))
	lo, hi := x0-step, x0+step
	if d.lmin >= 0 && d.sigma == 0 && lo < 0 {
		lo = 0 // Q >= 0: g(0) = -p (or p - 1) < 0
	}
	glo, ghi := g(lo), g(hi)
	for i := 0; glo > 0 && i < 200; i++ {
		hi, ghi = lo, glo
		step *= 2
		lo -= step
		if d.lmin >= 0 && d.sigma == 0 && lo < 0 {
			lo = 0
		}
		glo = g(lo)
	}
	for i := 0; ghi < 0 && i < 200; i++ {
		lo, glo = hi, ghi
		step *= 2
		hi += step
		ghi = g(hi)
	}
	if evalErr != nil {
		return math.NaN(), fmt.Errorf("quantile %v: %w", p, evalErr)
	}
	if glo > 0 || ghi < 0 {
		return math.NaN(), fmt.Errorf("%w: could not bracket the quantile for probability %v", ErrNoParams, p)
	}
	x := brent(g, lo, hi, glo, ghi, 1e-13*(math.Abs(x0)+d.sd))
	if evalErr != nil {
		return math.NaN(), fmt.Errorf("quantile %v: %w", p, evalErr)
	}
	return x, nil
}

// brent is Brent's root finder (zeroin) on [a, b] with f(a) f(b) <= 0.
func brent(f func(float64) float64, a, b, fa, fb, tol float64) float64 {
	if fa == 0 {
		return a
	}
	if fb == 0 {
		return b
	}
	c, fc := a, fa
	dd := b - a
	e := dd
	for it := 0; it < 200; it++ {
		if (fb > 0) == (fc > 0) {
			c, fc = a, fa
			dd = b - a
			e = dd
		}
		if math.Abs(fc) < math.Abs(fb) {
			a, b, c = b, c, b
			fa, fb, fc = fb, fc, fb
		}
		tol1 := 2*2.2e-16*math.Abs(b) + 0.5*tol
		xm := 0.5 * (c - b)
		if math.Abs(xm) <= tol1 || fb == 0 {
			return b
		}
		if math.Abs(e) >= tol1 && math.Abs(fa) > math.Abs(fb) {
			s := fb / fa
			var p, q float64
			if a == c {
				p = 2 * xm * s
				q = 1 - s
			} else {
				q = fa / fc
				r := fb / fc
				p = s * (2*xm*q*(q-r) - (b-a)*(r-1))
				q = (q - 1) * (r - 1) * (s - 1)
			}
			if p > 0 {
				q = -q
			} else {
				p = -p
			}
			if 2*p < math.Min(3*xm*q-math.Abs(tol1*q), math.Abs(e*q)) {
				e = dd
				dd = p / q
			} else {
				dd = xm
				e = dd
			}
		} else {
			dd = xm
			e = dd
		}
		a, fa = b, fb
		if math.Abs(dd) > tol1 {
			b += dd
		} else if xm > 0 {
			b += tol1
		} else {
			b -= tol1
		}
		fb = f(b)
		if math.IsNaN(fb) {
			return math.NaN()
		}
	}
	return b
}
