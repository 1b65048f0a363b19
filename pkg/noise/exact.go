package noise

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

// Bits is a source of uniform 64-bit words: a stream's generator (rand.ChaCha8 keyed by
// rng.NoiseKey, or a rand.Rand over it). The exact samplers read base-2^32 digits from it, the
// high half of each word (docs/protocol.md section 12.1).
type Bits interface {
	Uint64() uint64
}

// urand is a uniform real in (0, 1) drawn lazily: 0.d_1 d_2 ... in base 2^32, each digit drawn
// when a comparison first needs it. The first digits live in head, so a sampler that reuses its
// urands does not allocate.
type urand struct {
	n    int
	head [6]uint32
	tail []uint32
}

func (u *urand) reset() { u.n, u.tail = 0, u.tail[:0] }

func (u *urand) at(j int) uint32 {
	if j < len(u.head) {
		return u.head[j]
	}
	return u.tail[j-len(u.head)]
}

func (u *urand) push(d uint32) {
	if u.n < len(u.head) {
		u.head[u.n] = d
	} else {
		u.tail = append(u.tail, d)
	}
	u.n++
}

// copyFrom makes u a copy of v (its digits; the tail is copied, not shared).
func (u *urand) copyFrom(v *urand) {
	u.n, u.head = v.n, v.head
	u.tail = append(u.tail[:0], v.tail...)
}

// Exact is a real sample drawn exactly: (-1)^Neg (K + x) with x a uniform whose digits drawn so
// far are known. Its value lies in the open interval (-1)^Neg (K + (X, X + 2^(-32 j))), X the
// value of the j digits drawn.
type Exact struct {
	Neg bool
	K   uint32
	x   urand
}

// Digits returns the number of digits of the fraction drawn so far.
func (e *Exact) Digits() int { return e.x.n }

// Digit returns digit j (0-based) of the fraction; j < Digits().
func (e *Exact) Digit(j int) uint32 { return e.x.at(j) }

// Float64 returns the sample's value to float64 precision from its first digits (for reports
// and tests: the exact value is not a float64).
func (e *Exact) Float64() float64 {
	v := float64(e.K)
	scale := 1.0 / (1 << 32)
	for j := 0; j < e.x.n && j < 3; j++ {
		v += float64(e.x.at(j)) * scale
		scale /= 1 << 32
	}
	v += scale / 2 // the middle of what is left
	if e.Neg {
		return -v
	}
	return v
}

// CopyFrom makes e a copy of f.
func (e *Exact) CopyFrom(f *Exact) {
	e.Neg, e.K = f.Neg, f.K
	e.x.copyFrom(&f.x)
}

// ExactSampler draws exact standard normal and Laplace samples from a stream of digits
// (docs/protocol.md section 12.3, docs/math.md section 10): Karney's Algorithm N for the normal
// (C. F. F. Karney, "Sampling exactly from the normal distribution", ACM TOMS 42(1), 2016) and von
// Neumann's exponential for the Laplace. Only comparisons of digits and uniform integers are
// used - no floating point - so a sample's law is exactly N(0, 1) or Laplace(0, 1), and another
// program that reads the same digits draws the same samples. It does not allocate once warm.
type ExactSampler struct {
	src     Bits
	a, b, c urand // scratch uniforms
}

// NewExactSampler returns a sampler reading src.
func NewExactSampler(src Bits) *ExactSampler { return &ExactSampler{src: src} }

// SetSource makes the sampler read src from now on.
func (s *ExactSampler) SetSource(src Bits) { s.src = src }

func (s *ExactSampler) digit() uint32 { return uint32(s.src.Uint64() >> 32) }

// get returns digit j of u, drawing the digits up to j first.
func (s *ExactSampler) get(u *urand, j int) uint32 {
	for u.n <= j {
		u.push(s.digit())
	}
	return u.at(j)
}

// less reports x < y, drawing at each position x's digit before y's.
func (s *ExactSampler) less(x, y *urand) bool {
	for j := 0; ; j++ {
		a := s.get(x, j)
		b := s.get(y, j)
		if a != b {
			return a < b
		}
	}
}

// choose returns a uniform integer in [0, m), 1 <= m < 2^32, by rejection.
func (s *ExactSampler) choose(m uint32) uint32 {
	limit := (uint64(1) << 32) / uint64(m) * uint64(m)
	for {
		if d := s.digit(); uint64(d) < limit {
			return d % m
		}
	}
}

// bit returns the top bit of a fresh digit.
func (s *ExactSampler) bit() bool { return s.digit()>>31 == 1 }

// h is true with probability exp(-1/2) (von Neumann: the longest run 1/2 > U_1 > U_2 > ... has
// even length).
func (s *ExactSampler) h() bool {
	p, q := &s.a, &s.b
	p.reset()
	if s.get(p, 0) >= 1<<31 {
		return true
	}
	for {
		q.reset()
		if !s.less(q, p) {
			return false
		}
		p.reset()
		if !s.less(p, q) {
			return true
		}
	}
}

// bk is true with probability exp(-x(x+2k)/(2k+2)) (Karney's generalised von Neumann: the longest
// run x > U_1 > U_2 > ... whose V_i < (x+2k)/(2k+2) all hold has even length).
func (s *ExactSampler) bk(k uint32, x *urand) bool {
	bufs := [2]*urand{&s.a, &s.b}
	prev, i, n := x, 0, 0
	m := 2*k + 2
	for {
		u := bufs[i]
		u.reset()
		if !s.less(u, prev) {
			break
		}
		c := s.choose(m)
		if c == m-1 {
			break
		}
		if c == m-2 {
			v := &s.c
			v.reset()
			if !s.less(v, x) {
				break
			}
		}
		n++
		prev, i = u, i^1
	}
	return n%2 == 0
}

// expx is true with probability exp(-x) (von Neumann).
func (s *ExactSampler) expx(x *urand) bool {
	bufs := [2]*urand{&s.a, &s.b}
	prev, i, n := x, 0, 0
	for {
		u := bufs[i]
		u.reset()
		if !s.less(u, prev) {
			break
		}
		n++
		prev, i = u, i^1
	}
	return n%2 == 0
}

// Normal draws an exact standard normal into e (Karney's Algorithm N).
func (s *ExactSampler) Normal(e *Exact) {
	for {
		k := uint32(0)
		for s.h() {
			k++
		}
		ok := true
		for i := uint64(0); i < uint64(k)*uint64(k)-uint64(k); i++ {
			if !s.h() {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		e.x.reset()
		for j := uint32(0); j <= k; j++ {
			if !s.bk(k, &e.x) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		e.Neg, e.K = s.bit(), k
		return
	}
}

// Laplace draws an exact standard Laplace (density exp(-|v|)/2) into e: an exponential's integer
// part counts the rejected uniforms, its fraction is the accepted one (von Neumann).
func (s *ExactSampler) Laplace(e *Exact) {
	k := uint32(0)
	for {
		e.x.reset()
		if s.expx(&e.x) {
			break
		}
		k++
	}
	e.Neg, e.K = s.bit(), k
}

// Skip draws one digit-sized word and throws it away (for tests of alignment).
func (s *ExactSampler) Skip() { s.digit() }

// maxRefine bounds the digits the exact rounding may draw for one value: an undecided interval
// after that many digits has probability about 2^(-32 maxRefine) and means a bug.
const maxRefine = 64

// errUndecided is returned when RoundExact cannot decide (it should never be seen).
var errUndecided = errors.New("noise: exact rounding undecided after 64 refinements")

// RoundExact returns round_g(v) = g floor(v/g + 1/2) of the exact real
//
//	v = sum_i ab[2i] ab[2i+1] + sum_j coef[j] samples[j]
//
// (float64 inputs taken as exact reals, samples exact), drawing more digits of the samples with
// coef[j] != 0, in the order of j, while the interval that holds v contains a rounding boundary
// g (Z + 1/2) (docs/protocol.md section 12.3). g must be a power of two. A float64 interval
// settles almost every call; exact arithmetic (math/big) settles the rest, so the result and the
// digits drawn are those of the exact rule.
func (s *ExactSampler) RoundExact(g float64, ab, coef []float64, samples []Exact) (float64, error) {
	if fr, _ := math.Frexp(g); fr != 0.5 || math.IsInf(g, 0) {
		return 0, fmt.Errorf("noise: granularity %v is not a power of two", g)
	}
	if len(ab)%2 != 0 || len(coef) != len(samples) {
		return 0, fmt.Errorf("noise: exact rounding: %d product values, %d coefficients for %d samples", len(ab), len(coef), len(samples))
	}
	if w, ok := roundFast(g, ab, coef, samples); ok {
		return w, nil
	}
	for r := 0; r < maxRefine; r++ {
		w, ok, err := roundBig(g, ab, coef, samples)
		if err != nil || ok {
			return w, err
		}
		for j := range samples {
			if coef[j] != 0 {
				s.get(&samples[j].x, samples[j].x.n)
			}
		}
	}
	return 0, errUndecided
}

// roundFast decides round_g(v) with float64 interval arithmetic from each sample's first digit:
// the sample lies in (-1)^s (K + [d_1, d_1 + 1] 2^-32), whose midpoint is exact in float64 for
// K < 2^20. The enclosure's radius bounds the rounding of every product and of the sum
// (Higham's gamma_n, doubled) and the samples' half-widths. ok is false when the enclosure
// touches a boundary or a quantity is out of the range where the argument holds; the exact path
// then decides.
func roundFast(g float64, ab, coef []float64, samples []Exact) (float64, bool) {
	const u = 0x1p-53
	var sum, abs, rad float64
	n := 0
	for i := 0; i < len(ab); i += 2 {
		p := ab[i] * ab[i+1]
		sum += p
		abs += math.Abs(p)
		n++
	}
	for j := range samples {
		c := coef[j]
		if c == 0 {
			continue
		}
		e := &samples[j]
		if e.K >= 1<<20 || e.x.n == 0 {
			return 0, false
		}
		mid := float64(e.K) + (float64(e.x.head[0])+0.5)*0x1p-32
		if e.Neg {
			mid = -mid
		}
		p := c * mid
		sum += p
		abs += math.Abs(p)
		rad += math.Abs(c) * 0x1p-33
		n++
	}
	// |fl(sum) - v| <= rad + (n+1) u abs (1 + small): each product's rounding (u |p|) and the
	// sum's (gamma_{n-1} sum |p|); doubled and padded for the rounding of this bound itself and
	// for underflow.
	r := (rad+2*float64(n+1)*u*abs)*(1+0x1p-40) + 0x1p-1000
	q := sum / g
	if math.IsNaN(q) || math.IsInf(r, 0) || math.Abs(q) > 0x1p50 || r > g/4 {
		return 0, false
	}
	m := math.Floor(q + 0.5) // exact: |q| < 2^50
	d := math.Abs(sum - m*g) // exact (Sterbenz), <= g/2
	if d+r < g/2 {           // fl(d + r) < g/2 implies d + r < g/2
		return m * g, true
	}
	return 0, false
}

// exactPrec returns a precision (bits) at which every operation of roundBig is exact: the span
// of binary orders from the largest term's top bit to the lowest bit of any product or sample
// digit, with room for the sums' carries.
func exactPrec(g float64, ab, coef []float64, samples []Exact) uint {
	hiE, loE := math.MinInt, math.MaxInt
	note := func(hi, lo int) {
		hiE, loE = max(hiE, hi), min(loE, lo)
	}
	note(exponent(g)+1, exponent(g)-2) // g/2, added before the floor
	for i := 0; i < len(ab); i += 2 {
		if ab[i] == 0 || ab[i+1] == 0 {
			continue
		}
		_, e1 := math.Frexp(ab[i])
		_, e2 := math.Frexp(ab[i+1])
		note(e1+e2, e1+e2-53-53-1074)
	}
	for j := range samples {
		if coef[j] == 0 {
			continue
		}
		_, ec := math.Frexp(coef[j])
		note(ec+22, ec-53-1074-32*(samples[j].x.n+1))
	}
	if hiE < loE {
		return 64
	}
	return uint(hiE-loE) + 128
}

// roundBig decides round_g(v) exactly: the open interval (lo, hi) that holds v is computed with
// big.Float at a precision where every operation is exact, and the result is g floor(lo/g + 1/2)
// when (lo/g + 1/2, hi/g + 1/2) contains no integer.
func roundBig(g float64, ab, coef []float64, samples []Exact) (float64, bool, error) {
	prec := exactPrec(g, ab, coef, samples) + 64
	nf := func() *big.Float { return new(big.Float).SetPrec(prec) }
	inexact := false
	chk := func(f *big.Float) *big.Float {
		if f.Acc() != big.Exact {
			inexact = true
		}
		return f
	}
	base := nf()
	for i := 0; i < len(ab); i += 2 {
		p := chk(nf().Mul(big.NewFloat(ab[i]), big.NewFloat(ab[i+1])))
		chk(base.Add(base, p))
	}
	lo, hi := nf().Set(base), nf().Set(base)
	for j := range samples {
		c := coef[j]
		if c == 0 {
			continue
		}
		e := &samples[j]
		x := nf().SetUint64(uint64(e.K))
		scale := nf().SetMantExp(big.NewFloat(1), -32)
		for k := 0; k < e.x.n; k++ {
			d := chk(nf().Mul(nf().SetUint64(uint64(e.x.at(k))), scale))
			chk(x.Add(x, d))
			if k+1 < e.x.n {
				scale.SetMantExp(scale, -32)
			}
		}
		y := chk(nf().Add(x, scale)) // the fraction's interval is (x, y)
		if e.Neg {
			x.Neg(x)
			y.Neg(y)
		}
		bc := big.NewFloat(c)
		p1, p2 := chk(nf().Mul(bc, x)), chk(nf().Mul(bc, y))
		if p1.Cmp(p2) > 0 {
			p1, p2 = p2, p1
		}
		chk(lo.Add(lo, p1))
		chk(hi.Add(hi, p2))
	}
	half := big.NewFloat(0.5)
	inv := nf().SetMantExp(big.NewFloat(1), -exponent(g))
	a := chk(nf().Add(chk(nf().Mul(lo, inv)), half))
	b := chk(nf().Add(chk(nf().Mul(hi, inv)), half))
	if inexact {
		return 0, false, errors.New("noise: exact rounding: an operation was not exact (a bug)")
	}
	fa, fb := floorBig(a), ceilBig(b)
	if new(big.Int).Sub(fb, fa).Cmp(big.NewInt(1)) > 0 {
		return 0, false, nil
	}
	m, acc := new(big.Float).SetInt(fa).Float64()
	if acc != big.Exact || math.Abs(m) > 0x1p53 {
		return 0, false, fmt.Errorf("noise: exact rounding: the value is %.3g grid steps (g = %g) from 0, beyond the 2^53 a float64 holds exactly: the private value is too large for its noise scale", m, g)
	}
	return m * g, true, nil
}

// exponent returns e with g = 2^e (g a power of two).
func exponent(g float64) int {
	_, e := math.Frexp(g)
	return e - 1
}

func floorBig(f *big.Float) *big.Int {
	i, acc := f.Int(nil)  // truncates toward zero
	if acc == big.Above { // f < 0 with a fraction: truncation went up
		i.Sub(i, big.NewInt(1))
	}
	return i
}

func ceilBig(f *big.Float) *big.Int {
	i, acc := f.Int(nil)
	if acc == big.Below { // f > 0 with a fraction
		i.Add(i, big.NewInt(1))
	}
	return i
}

// Granularity returns g = 2^(floor(log2 s) - 20) for the smallest noise scale s > 0 of the
// published coordinates (docs/protocol.md section 12.3): the grid is about a millionth of the
// noise, so rounding to it costs no visible utility. It returns 0 for s <= 0 or not finite.
func Granularity(s float64) float64 {
	if !(s > 0) || math.IsInf(s, 0) {
		return 0
	}
	_, e := math.Frexp(s) // s = f 2^e, f in [1/2, 1): floor(log2 s) = e - 1
	return math.Ldexp(1, e-1-20)
}
