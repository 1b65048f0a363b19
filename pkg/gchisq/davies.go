package gchisq

import (
	"fmt"
	"math"
)

// This file is Davies' algorithm AS 155 (Applied Statistics 29 (1980) 323-333), re-implemented from the
// published description and its reference C translation (qfc.c), with two changes that do not alter the
// mathematics: the per-term sums use the series acceleration of powsum.go for small terms, and the
// evaluation reports errors instead of jumping out. Function names follow the paper: errbd (Chernoff
// bound of the tails), ctff (cut-off points), truncation (bound of the truncation error), findu
// (truncation point), integrate (trapezoidal rule), cfe (coefficient of the convergence-factor error).

// log28 is Davies' constant log(2)/8 (to the 4 digits the algorithm uses).
const log28 = 0.0866

// maxBoundEvals caps the calls of errbd, truncation and cfe in one evaluation (Davies counts them
// against the same limit as the integration terms; a separate, smaller cap keeps a hopeless search
// for the cut-off points short).
const maxBoundEvals = 20000

// daviesAbort is the panic value used to leave the computation when a limit is exceeded; it never
// escapes run.
type daviesAbort struct{ fault int }

type daviesState struct {
	d          *Dist
	sigsq, c   float64
	intl, ersm float64
	count, lim int
	fail       bool
}

func exp1(x float64) float64 {
	if x < -50 {
		return 0
	}
	return math.Exp(x)
}

// log1mx returns log(1+x) - x accurately (Davies' log1(x, FALSE)).
func log1mx(x float64) float64 {
	if !(math.Abs(x) <= 0.1) {
		return math.Log1p(x) - x
	}
	// log(1+x) = 2 atanh(y), y = x/(2+x); 2y - x = -x^2/(2+x).
	y := x / (2 + x)
	term := 2 * y * y * y
	y2 := y * y
	s := -x * y
	k := 3.0
	for {
		s1 := s + term/k
		if s1 == s {
			return s
		}
		s = s1
		k += 2
		term *= y2
	}
}

// logProd accumulates sum_j k_j log(1 + y_j): terms with k_j == 1 are multiplied into a product
// with a separately tracked binary exponent (one logarithm per abscissa instead of one per term),
// the others are summed directly. The product's rounding error is a few ulps of each factor, i.e.
// an absolute error of order 1e-16 per term in the logarithm.
type logProd struct {
	prod float64
	exp  int
	sum  float64
}

func (l *logProd) reset() { l.prod, l.exp, l.sum = 1, 0, 0 }

func (l *logProd) add(k, y float64) {
	if k != 1 || y > 1e100 {
		l.sum += k * math.Log1p(y)
		return
	}
	l.prod *= 1 + y
	if l.prod > 1e150 {
		f, e := math.Frexp(l.prod)
		l.prod = f
		l.exp += e
	}
}

func (l *logProd) log() float64 {
	return l.sum + math.Log(l.prod) + float64(l.exp)*math.Ln2
}

func (s *daviesState) counter() {
	s.count++
	if s.count > s.lim || s.count > maxBoundEvals {
		panic(daviesAbort{fault: 4})
	}
}

// errbd bounds the tail probability with the moment generating function at u; it returns the bound
// and the cut-off point.
func (s *daviesState) errbd(u float64) (bound, cx float64) {
	s.counter()
	d := s.d
	xconst := u * s.sigsq
	sum1 := u * xconst
	t := 2 * u
	m, ti := d.ps.split(t)
	var lp logProd
	lp.reset()
	for j := m - 1; j >= 0; j-- {
		x := t * d.w[j]
		y := 1 - x
		xconst += d.w[j] * (d.nc[j]/y + d.k[j]) / y
		r := x / y
		if math.Abs(x) <= 0.1 {
			sum1 += d.nc[j]*r*r + d.k[j]*(x*x/y+log1mx(-x))
		} else {
			// k (x^2/y + x) + k log(1 - x), the logarithms multiplied together
			sum1 += d.nc[j]*r*r + d.k[j]*(x*x/y+x)
			lp.add(d.k[j], -x)
		}
	}
	sum1 += lp.log()
	xc, s1 := d.ps.errbdSums(ti, t)
	xconst += xc
	sum1 += s1
	return exp1(-0.5 * sum1), xconst
}

// ctff finds a cut-off c2 with P(Q > c2) < accx if *upn > 0, P(Q < c2) < accx otherwise.
func (s *daviesState) ctff(accx float64, upn *float64) float64 {
	d := s.d
	u2 := *upn
	u1 := 0.0
	c1 := d.mean
	rb := 2 * d.lmin
	if u2 > 0 {
		rb = 2 * d.lmax
	}
	var c2 float64
	for {
		u := u2 / (1 + u2*rb)
		var b float64
		b, c2 = s.errbd(u)
		if b <= accx {
			break
		}
		u1 = u2
		c1 = c2
		u2 *= 2
		if math.IsInf(u2, 0) {
			panic(daviesAbort{fault: 4})
		}
	}
	for (c1-d.mean)/(c2-d.mean) < 0.9 {
		u := (u1 + u2) / 2
		b, xc := s.errbd(u / (1 + u*rb))
		if b > accx {
			u1 = u
			c1 = xc
		} else {
			u2 = u
			c2 = xc
		}
	}
	*upn = u2
	return c2
}

// truncation bounds the integration error due to truncation at u.
func (s *daviesState) truncation(u, tausq float64) float64 {
	s.counter()
	d := s.d
	var sum1, prod2, prod3, cnt float64
	sum2 := (s.sigsq + tausq) * u * u
	prod1 := 2 * sum2
	t := 2 * u
	m, ti := d.ps.split(t)
	var l1, l2, l3 logProd
	l1.reset()
	l2.reset()
	l3.reset()
	for j := 0; j < m; j++ {
		x := t * d.w[j]
		x *= x
		sum1 += d.nc[j] * x / (1 + x)
		if x > 1 {
			l2.add(d.k[j], x-1) // k log(x)
			l3.add(d.k[j], x)   // k log(1+x)
			cnt += d.k[j]
		} else {
			l1.add(d.k[j], x)
		}
	}
	prod1 += l1.log()
	prod2 += l2.log()
	prod3 += l3.log()
	klog, lfrac := d.ps.evenSums(ti, t)
	prod1 += klog
	sum1 += lfrac
	sum1 *= 0.5
	prod2 += prod1
	prod3 += prod1
	x := exp1(-sum1-0.25*prod2) / math.Pi
	y := exp1(-sum1-0.25*prod3) / math.Pi
	err1 := 1.0
	if cnt != 0 {
		err1 = x * 2 / cnt
	}
	err2 := 1.0
	if prod3 > 1 {
		err2 = 2.5 * y
	}
	if err2 < err1 {
		err1 = err2
	}
	x = 0.5 * sum2
	err2 = 1.0
	if x > y {
		err2 = y / x
	}
	return math.Min(err1, err2)
}

// findu finds u such that truncation(u) < accx and truncation(u/1.2) > accx, starting from ut.
func (s *daviesState) findu(ut, accx float64) float64 {
	u := ut / 4
	if s.truncation(u, 0) > accx {
		for u = ut; s.truncation(u, 0) > accx; u = ut {
			ut *= 4
		}
	} else {
		ut = u
		for u = u / 4; s.truncation(u, 0) <= accx; u /= 4 {
			ut = u
		}
	}
	for _, div := range [...]float64{2, 1.4, 1.2, 1.1} {
		u = ut / div
		if s.truncation(u, 0) <= accx {
			ut = u
		}
	}
	return ut
}

// integrate carries out the trapezoidal integration with nterm+1 terms at step interv; if !mainx the
// integrand is multiplied by 1 - exp(-tausq u^2 / 2).
func (s *daviesState) integrate(nterm int, interv, tausq float64, mainx bool) {
	d := s.d
	inpi := interv / math.Pi
	for kk := nterm; kk >= 0; kk-- {
		u := (float64(kk) + 0.5) * interv
		sum1 := -2 * u * s.c
		sum2 := math.Abs(sum1)
		sum3 := -0.5 * s.sigsq * u * u
		t := 2 * u
		m, ti := d.ps.split(t)
		var lp logProd
		lp.reset()
		for j := m - 1; j >= 0; j-- {
			x := t * d.w[j]
			y := x * x
			lp.add(d.k[j], y)
			y = d.nc[j] * x / (1 + y)
			z := d.k[j]*math.Atan(x) + y
			sum1 += z
			sum2 += math.Abs(z)
			sum3 -= 0.5 * x * y
		}
		sum3 -= 0.25 * lp.log()
		zs, za := d.ps.oddSums(ti, t)
		klog, lfrac := d.ps.evenSums(ti, t)
		sum1 += zs
		sum2 += za
		sum3 -= 0.25*klog + 0.5*lfrac
		x := inpi * exp1(sum3) / u
		if !mainx {
			x *= -math.Expm1(-0.5 * tausq * u * u)
		}
		s.intl += math.Sin(0.5*sum1) * x
		s.ersm += 0.5 * sum2 * x
	}
}

// cfe is the coefficient of tausq in the error when the convergence factor exp(-tausq u^2/2) is used
// and the distribution function is evaluated at x.
func (s *daviesState) cfe(x float64) float64 {
	s.counter()
	d := s.d
	axl := math.Abs(x)
	sxl := -1.0
	if x > 0 {
		sxl = 1
	}
	sum1 := 0.0
	for j := len(d.w) - 1; j >= 0; j-- {
		if d.w[j]*sxl > 0 {
			lj := d.absw[j]
			axl1 := axl - lj*(d.k[j]+d.nc[j])
			axl2 := lj / log28
			if axl1 > axl2 {
				axl = axl1
			} else {
				if axl > axl2 {
					axl = axl2
				}
				sum1 = (axl - axl1) / lj
				for kk := j - 1; kk >= 0; kk-- {
					sum1 += d.k[kk] + d.nc[kk]
				}
				break
			}
		}
	}
	if sum1 > 100 {
		s.fail = true
		return 1
	}
	return math.Pow(2, sum1/4) / (math.Pi * axl * axl)
}

// compute runs Davies' algorithm at c with error bound acc and returns P(Q <= c) and P(Q > c)
// (computed as 0.5 -/+ the integral, so the small one keeps its absolute accuracy).
func (s *daviesState) compute(d *Dist, c, acc float64) (cdf, surv float64, tr Trace, err error) {
	*s = daviesState{d: d, c: c, lim: d.lim, sigsq: d.sigma * d.sigma}
	tr.Accuracy = acc
	tr.Method = MethodDavies
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(daviesAbort)
			if !ok {
				panic(r)
			}
			tr.Cycles = s.count
			cdf, surv = math.NaN(), math.NaN()
			err = fmt.Errorf("%w (evaluating at %v, %d bound evaluations, fault %d)", ErrNoParams, c, s.count, a.fault)
		}
	}()
	if d.force == forceImhof {
		if cdf, surv, ok := s.imhof(c, acc, &tr); ok {
			return cdf, surv, tr, nil
		}
		return math.NaN(), math.NaN(), tr, fmt.Errorf("%w: Imhof refinement did not converge at %v", ErrAccuracy, c)
	}
	acc1 := acc
	xlim := float64(s.lim)
	sd := d.sd
	almx := math.Max(d.lmax, -d.lmin)
	utx := 16 / sd
	up := 4.5 / sd
	un := -up
	utx = s.findu(utx, 0.5*acc1)
	if c != 0 && almx > 0.07*sd {
		tausq := 0.25 * acc1 / s.cfe(c)
		if s.fail {
			s.fail = false
		} else if s.truncation(utx, tausq) < 0.2*acc1 {
			s.sigsq += tausq
			utx = s.findu(utx, 0.25*acc1)
			tr.ConvergenceSD = math.Sqrt(tausq)
		}
	}
	tr.Truncation = utx
	acc1 *= 0.5
	var intv, xnt float64
	for {
		d1 := s.ctff(acc1, &up) - c
		if d1 < 0 {
			tr.Cycles = s.count
			return 1, 0, tr, nil
		}
		d2 := c - s.ctff(acc1, &un)
		if d2 < 0 {
			tr.Cycles = s.count
			return 0, 1, tr, nil
		}
		intv = 2 * math.Pi / math.Max(d1, d2)
		xnt = utx / intv
		xntm := 3 / math.Sqrt(acc1)
		if !(xnt > xntm*1.5) {
			break
		}
		if xntm > daviesBudget && d.force != forceDavies {
			if cdf, surv, ok := s.imhof(c, acc, &tr); ok {
				return cdf, surv, tr, nil
			}
		}
		// auxiliary integration with a convergence factor
		if xntm > xlim {
			tr.Cycles = s.count
			return math.NaN(), math.NaN(), tr, fmt.Errorf("%w: %.0f auxiliary terms needed at %v, limit %d", ErrAccuracy, xntm, c, s.lim)
		}
		ntm := int(math.Floor(xntm + 0.5))
		intv1 := utx / float64(ntm)
		x := 2 * math.Pi / intv1
		if x <= math.Abs(c) {
			break
		}
		tausq := 0.33 * acc1 / (1.1 * (s.cfe(c-x) + s.cfe(c+x)))
		if s.fail {
			break
		}
		acc1 *= 0.67
		s.integrate(ntm, intv1, tausq, false)
		xlim -= xntm
		s.sigsq += tausq
		tr.Integrations++
		tr.Terms += ntm + 1
		utx = s.findu(utx, 0.25*acc1)
		acc1 *= 0.75
	}
	tr.Interval = intv
	if xnt > daviesBudget && d.force != forceDavies {
		if cdf, surv, ok := s.imhof(c, acc, &tr); ok {
			return cdf, surv, tr, nil
		}
	}
	if xnt > xlim {
		tr.Cycles = s.count
		return math.NaN(), math.NaN(), tr, fmt.Errorf("%w: %.0f terms needed at %v, limit %d", ErrAccuracy, xnt, c, s.lim)
	}
	nt := int(math.Floor(xnt + 0.5))
	s.integrate(nt, intv, 0, true)
	tr.Integrations++
	tr.Terms += nt + 1
	tr.AbsSum = s.ersm
	tr.Cycles = s.count
	// round-off test (allowing for radix 8 or 16 machines)
	x := s.ersm + acc/10
	for _, r := range [...]float64{1, 2, 4, 8} {
		if r*x == r*s.ersm {
			tr.RoundOff = true
		}
	}
	return 0.5 - s.intl, 0.5 + s.intl, tr, nil
}

// imhof evaluates P(Q <= c) by Imhof's integral (imhof.go) with error tolerance acc; ok is false when
// the double-exponential refinement did not reach it, and Davies' algorithm then continues.
func (s *daviesState) imhof(c, acc float64, tr *Trace) (cdf, surv float64, ok bool) {
	j, errEst, evals, ok := s.d.imhofIntegral(c, math.Pi*acc)
	if !ok {
		return 0, 0, false
	}
	tr.Method = MethodImhof
	tr.ErrorEstimate = errEst / math.Pi
	tr.Terms = evals
	tr.Integrations = 1
	tr.Cycles = s.count
	return 0.5 - j/math.Pi, 0.5 + j/math.Pi, true
}

func (s *daviesState) run(d *Dist, c, acc float64) (float64, Trace, error) {
	cdf, _, tr, err := s.compute(d, c, acc)
	return cdf, tr, err
}

func (s *daviesState) runUpper(d *Dist, c, acc float64) (float64, Trace, error) {
	_, surv, tr, err := s.compute(d, c, acc)
	return surv, tr, err
}
