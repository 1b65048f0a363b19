package gchisq

import "sort"

// Series acceleration for the terms with small |x_j| = |2 u w_j|.
//
// Every per-term function Davies' algorithm sums is analytic in x = t w (t = 2u) near 0:
//
//	atan(x), log(1+x^2), x/(1+x^2), x^2/(1+x^2)   (integrand, truncation bound)
//	w/(1-x), w/(1-x)^2, x^2/(1-x) + log(1-x) + x, x^2/(1-x)^2   (Chernoff tail bound)
//
// so for the terms with |x_j| <= seriesX0 their sum is a power series in t whose coefficients are the
// power sums S_p = sum_j k_j w_j^p and T_p = sum_j lambda_j w_j^p over those terms. With seriesX0 = 1/4
// and powers up to seriesP = 32 the truncation error is below 0.25^32 ~ 5e-20 relative to the terms.
// Terms are sorted by |w| descending, so the small terms at a given t are a suffix; the power sums of
// suffixes are stored at geometrically spaced split positions, and a split uses the first stored
// position at or after the exact one (at most ~8% extra terms evaluated exactly).
const (
	seriesP  = 32
	seriesX0 = 0.25
	stride   = seriesP + 1
)

type powerSums struct {
	absw  []float64
	pos   []int     // stored split positions, increasing, last == len(absw)
	scale []float64 // scale[i] = |w_pos[i]| (the largest |w| of the suffix; 1 for the empty suffix)
	// Normalised power sums (a = scale[i]), so that neither a huge t nor a tiny w over/underflows:
	s  []float64 // s[i*stride+p] = sum_{j >= pos[i]} k_j (w_j/a)^p
	sa []float64 // sum k_j |w_j/a|^p
	t  []float64 // sum lambda_j (w_j/a)^p
	ta []float64 // sum lambda_j |w_j/a|^p
}

func newPowerSums(w, k, nc []float64) powerSums {
	n := len(w)
	var pos []int
	for p := 0; p < n; {
		pos = append(pos, p)
		q := int(float64(p) * 1.08)
		if q <= p {
			q = p + 1
		}
		p = q
	}
	pos = append(pos, n)
	ps := powerSums{
		pos:   pos,
		scale: make([]float64, len(pos)),
		s:     make([]float64, len(pos)*stride),
		sa:    make([]float64, len(pos)*stride),
		t:     make([]float64, len(pos)*stride),
		ta:    make([]float64, len(pos)*stride),
	}
	ps.absw = make([]float64, n)
	for j := range w {
		if w[j] < 0 {
			ps.absw[j] = -w[j]
		} else {
			ps.absw[j] = w[j]
		}
	}
	var s, sa, t, ta [stride]float64
	pi := len(pos) - 1 // pos[pi] == n: empty suffix, zero sums
	ps.scale[pi] = 1
	a := 0.0 // current scale: the largest |w| accumulated so far
	for j := n - 1; j >= 0; j-- {
		// accumulate term j (smallest first, for accuracy), rescaling the sums to a = |w_j|
		if ps.absw[j] > a {
			if a > 0 {
				r, rp := a/ps.absw[j], 1.0
				for p := 0; p <= seriesP; p++ {
					s[p] *= rp
					sa[p] *= rp
					t[p] *= rp
					ta[p] *= rp
					rp *= r
				}
			}
			a = ps.absw[j]
		}
		wp, ap := 1.0, 1.0
		wa := w[j] / a
		aa := ps.absw[j] / a
		for p := 0; p <= seriesP; p++ {
			s[p] += k[j] * wp
			sa[p] += k[j] * ap
			t[p] += nc[j] * wp
			ta[p] += nc[j] * ap
			wp *= wa
			ap *= aa
		}
		for pi > 0 && pos[pi-1] == j {
			pi--
			ps.scale[pi] = a
			copy(ps.s[pi*stride:], s[:])
			copy(ps.sa[pi*stride:], sa[:])
			copy(ps.t[pi*stride:], t[:])
			copy(ps.ta[pi*stride:], ta[:])
		}
	}
	return ps
}

// split returns the number m of leading terms to evaluate exactly and the table index i of the
// suffix sums (pos[i] == m) such that every term j >= m has |t w_j| <= seriesX0.
func (ps *powerSums) split(t float64) (m, i int) {
	if t < 0 {
		t = -t
	}
	n := len(ps.absw)
	// first index whose |w| * t <= x0 (absw is non-increasing)
	j := sort.Search(n, func(i int) bool { return ps.absw[i]*t <= seriesX0 })
	i = sort.SearchInts(ps.pos, j)
	return ps.pos[i], i
}

// oddSums returns, for t > 0 and the suffix table i, sum_j z_j and sum_j |z_j| with
// z_j = k_j atan(t w_j) + lambda_j t w_j / (1 + (t w_j)^2) (the phase of the characteristic function).
func (ps *powerSums) oddSums(i int, t float64) (zs, za float64) {
	if ps.pos[i] == len(ps.absw) {
		return 0, 0 // empty suffix
	}
	t *= ps.scale[i]
	s, sa, tt, ta := ps.s[i*stride:(i+1)*stride], ps.sa[i*stride:(i+1)*stride], ps.t[i*stride:(i+1)*stride], ps.ta[i*stride:(i+1)*stride]
	t2 := t * t
	tp := t
	sign := 1.0
	for p := 1; p < seriesP; p += 2 {
		inv := 1 / float64(p)
		zs += sign * tp * (s[p]*inv + tt[p])
		za += sign * tp * (sa[p]*inv + ta[p])
		tp *= t2
		sign = -sign
	}
	return zs, za
}

// evenSums returns, for the suffix table i, sum_j k_j log(1 + (t w_j)^2) and
// sum_j lambda_j (t w_j)^2 / (1 + (t w_j)^2).
func (ps *powerSums) evenSums(i int, t float64) (klog, lfrac float64) {
	if ps.pos[i] == len(ps.absw) {
		return 0, 0 // empty suffix
	}
	t *= ps.scale[i]
	s, tt := ps.s[i*stride:(i+1)*stride], ps.t[i*stride:(i+1)*stride]
	t2 := t * t
	tp := t2
	sign := 1.0
	for m := 1; 2*m <= seriesP; m++ {
		klog += sign * tp * s[2*m] / float64(m)
		lfrac += sign * tp * tt[2*m]
		tp *= t2
		sign = -sign
	}
	return klog, lfrac
}

// errbdSums returns, for the suffix table i and t = 2u (any sign, |t w_j| <= x0):
//
//	xc = sum_j [lambda_j w_j / (1-x_j)^2 + k_j w_j / (1-x_j)]
//	s1 = sum_j [lambda_j (x_j/(1-x_j))^2 + k_j (x_j^2/(1-x_j) + log(1-x_j) + x_j)]
//
// with x_j = t w_j: the small-term parts of Davies' errbd.
func (ps *powerSums) errbdSums(i int, t float64) (xc, s1 float64) {
	if ps.pos[i] == len(ps.absw) {
		return 0, 0 // empty suffix
	}
	a := ps.scale[i]
	t *= a
	s, tt := ps.s[i*stride:(i+1)*stride], ps.t[i*stride:(i+1)*stride]
	tp := 1.0
	for m := 0; m < seriesP; m++ {
		xc += tp * (float64(m+1)*tt[m+1] + s[m+1])
		if m >= 2 {
			fm := float64(m)
			s1 += tp * ((fm-1)*tt[m] + (1-1/fm)*s[m])
		}
		tp *= t
	}
	fm := float64(seriesP)
	s1 += tp * ((fm-1)*tt[seriesP] + (1-1/fm)*s[seriesP])
	return a * xc, s1
}
