package audit

import (
	"math"
	"math/rand/v2"
	"sync"
)

// The images of the float samplers (docs/math.md section 6.3, docs/protocol.md section 12.2).
//
// Gaussian: Go's ziggurat rand.NormFloat64 draws u = Uint64(), j = int32(u), i = u>>32 & 0x7F and
// returns x = float64(j) * float64(wn[i]) unless the base strip's tail (i = 0, |j| >= kn[0]) is
// taken: every other return - the fast path, over 99% of calls, and the wedges - is such a
// product. The 128 widths wn[i] and kn[0] are read from math/rand/v2 itself at first use, through
// a Source that feeds it chosen words, so the image follows the toolchain's sampler; a
// self-check (most real draws must lie in it) turns the Gaussian lattice test off otherwise.
//
// Laplace (pkg/noise SampleLaplace): U = Float64() = k 2^-53, k in [1, 2^53); ln(2U) for U < 1/2,
// -ln(2(1-U)) otherwise: 2^53 - 1 values.

// zigguratTable holds what the lattice test needs of the ziggurat.
type zigguratTable struct {
	ok  bool
	wn  [128]float64
	inv [128]float64 // 1/wn[i]
	kn0 int64        // |j| < kn0 on the base strip
}

var (
	zigOnce sync.Once
	zig     zigguratTable
)

// feedSource is a rand.Source returning the given words, then zeros.
type feedSource struct {
	words []uint64
	k     int
}

func (f *feedSource) Uint64() uint64 {
	if f.k < len(f.words) {
		f.k++
		return f.words[f.k-1]
	}
	return 0
}

// normFor returns NormFloat64 of the ziggurat fed u first (then zeros).
func normFor(u uint64) float64 {
	src := &feedSource{words: []uint64{u}}
	return rand.New(src).NormFloat64()
}

// ziggurat returns the table (read once).
func ziggurat() *zigguratTable {
	zigOnce.Do(func() {
		t := &zig
		for i := range t.wn {
			// j = 1 on strip i: x = wn[i] (the fast path, or the wedge, which a zero Float64 accepts)
			w := normFor(uint64(i)<<32 | 1)
			if !(w > 0 && w*(1<<31) < 8) {
				return
			}
			t.wn[i], t.inv[i] = w, 1/w
		}
		// kn[0]: the first |j| of the base strip that leaves the fast path (the tail, fed zeros,
		// returns +Inf)
		lo, hi := int64(1), int64(1)<<31 // fast at lo, not at hi
		if normFor(1) != t.wn[0] {
			return
		}
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if normFor(uint64(mid)) == float64(int32(mid))*t.wn[0] {
				lo = mid
			} else {
				hi = mid
			}
		}
		t.kn0 = hi
		// self-check: real draws lie in the image
		r := rand.New(rand.NewPCG(1, 2))
		in := 0
		const n = 400
		for k := 0; k < n; k++ {
			e := r.NormFloat64()
			if t.contains(e, e) {
				in++
			}
		}
		t.ok = in >= n*95/100
	})
	return &zig
}

// contains reports whether some float64(j) * wn[i] (j an int32; |j| < kn0 on strip 0) lies in
// [el, eh].
func (t *zigguratTable) contains(el, eh float64) bool {
	for i, w := range t.wn {
		jmin, jmax := int64(math.MinInt32), int64(math.MaxInt32)
		if i == 0 {
			jmin, jmax = -(t.kn0 - 1), t.kn0-1
		}
		if float64(jmax)*w < el || float64(jmin)*w > eh {
			continue
		}
		q := el * t.inv[i]
		j := int64(math.Floor(q))
		j = min(max(j, jmin), jmax)
		for j < jmax && float64(int32(j))*w < el {
			j++
		}
		for j > jmin && float64(int32(j-1))*w >= el {
			j--
		}
		if v := float64(int32(j)) * w; v >= el && v <= eh {
			return true
		}
	}
	return false
}

// normalImage reports whether NormFloat64 can return a value in [el, eh] on its product path.
func normalImage(el, eh float64) bool {
	t := ziggurat()
	return t.ok && t.contains(el, eh)
}

// laplaceMaxCandidates bounds the grid points tried around an interval of the Laplace image:
// wider intervals (the image is dense there) count as in it.
const laplaceMaxCandidates = 64

// laplaceImage reports whether the inverse-CDF unit Laplace can return a value in [el, eh].
func laplaceImage(el, eh float64) bool {
	const two52, two53 = 1 << 52, 1 << 53
	// negative values: ln(2U), U = k 2^-53 < 1/2, k = 2^52 e^v
	if el < 0 {
		h := math.Min(eh, 0)
		klo := int64(math.Floor(two52*math.Exp(el))) - 2
		khi := int64(math.Ceil(two52*math.Exp(h))) + 2
		klo, khi = max(klo, 1), min(khi, two52-1)
		if khi-klo > laplaceMaxCandidates {
			return true
		}
		for k := klo; k <= khi; k++ {
			u := float64(k) / two53
			if v := math.Log(2 * u); v >= el && v <= eh {
				return true
			}
		}
	}
	// non-negative values: -ln(2(1-U)), U = k 2^-53 >= 1/2, m = 2^53 - k = 2^52 e^-v
	if eh >= 0 {
		l := math.Max(el, 0)
		mlo := int64(math.Floor(two52*math.Exp(-eh))) - 2
		mhi := int64(math.Ceil(two52*math.Exp(-l))) + 2
		mlo, mhi = max(mlo, 1), min(mhi, two52)
		if mhi-mlo > laplaceMaxCandidates {
			return true
		}
		for m := mlo; m <= mhi; m++ {
			u := float64(two53-m) / two53
			if v := -1 * math.Log(2*(1-u)); v >= el && v <= eh {
				return true
			}
		}
	}
	return false
}
