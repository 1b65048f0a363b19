package noise

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/internal/rowmajor"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// StructuredStream is the structured noise of Algorithm 1 (Theorem 3) and Algorithm 2:
//
//	z(0) = S eta,  gamma(t) = C_m z(t),  z(t+1) = A_m z(t),   i.e. gamma(t) = C_m A_m^t S eta,
//
// with eta ~ N(0,1)^r (Gaussian, S = sqrt(Sigma)) or Laplace(0,1)^r (Laplace, S = sigma I, eq. (14))
// drawn once per episode by Reset (docs/math.md section 4). Dimensions: A_m is nz x nz, C_m is m x nz,
// S is nz x r. Matrices are copied at construction; a step costs O(nz^2 + m nz) and never allocates.
type StructuredStream struct {
	// scalar: nz = m = 1 (a consensus agent's offset, Section 6): z(t) lives in z1 and the
	// step is the same arithmetic on a1 = A_m, c1 = C_m without touching the slices - at
	// thousands of agents a step is memory-bound: what Next reads first, in one cache line.
	ready, scalar bool
	m, t          int
	a1, c1, z1    float64

	nz, r     int
	am, cm, s []float64 // row-major copies of A_m, C_m, S
	dist      privacy.Mechanism
	draw      func(*rand.Rand) float64

	eta  []float64 // the episode's draw
	z, w []float64 // z(t) and scratch for A_m z
}

// NewStructured returns the structured stream gamma(t) = Cm Am^t S eta (Algorithm 1, Theorem 3).
// Errors name the offending matrix and dimension; non-finite entries are refused.
func NewStructured(Am, Cm, S *mat.Dense, dist privacy.Mechanism) (*StructuredStream, error) {
	draw, err := sampler(dist)
	if err != nil {
		return nil, err
	}
	for _, x := range []struct {
		name string
		m    *mat.Dense
	}{{"A_m", Am}, {"C_m", Cm}, {"S", S}} {
		if x.m == nil {
			return nil, fmt.Errorf("noise: structured: %s is nil", x.name)
		}
		if r, c := x.m.Dims(); r == 0 || c == 0 {
			return nil, fmt.Errorf("noise: structured: %s is empty (%dx%d)", x.name, r, c)
		}
	}
	nz, nc := Am.Dims()
	if nz != nc {
		return nil, fmt.Errorf("noise: structured: A_m must be square, got %dx%d", nz, nc)
	}
	m, cc := Cm.Dims()
	if cc != nz {
		return nil, fmt.Errorf("noise: structured: C_m is %dx%d but A_m is %dx%d (C_m needs %d columns)", m, cc, nz, nz, nz)
	}
	sr, r := S.Dims()
	if sr != nz {
		return nil, fmt.Errorf("noise: structured: S is %dx%d but A_m is %dx%d (S needs %d rows)", sr, r, nz, nz, nz)
	}
	s := &StructuredStream{
		nz: nz, m: m, r: r, dist: dist, draw: draw,
		eta: make([]float64, r), z: make([]float64, nz), w: make([]float64, nz),
	}
	if s.am, err = rowmajor.Finite("noise: structured: A_m", Am); err != nil {
		return nil, err
	}
	if s.cm, err = rowmajor.Finite("noise: structured: C_m", Cm); err != nil {
		return nil, err
	}
	if s.s, err = rowmajor.Finite("noise: structured: S", S); err != nil {
		return nil, err
	}
	if nz == 1 && m == 1 {
		s.scalar, s.a1, s.c1 = true, s.am[0], s.cm[0]
	}
	return s, nil
}

// NewOffset returns the consensus offset gamma_i(t) = sigma_i eta_i (Section 6, docs/math.md section 5):
// eta_i ~ N(0,1) or Laplace(0,1) drawn once per episode, the same value every step. It is the 1x1
// structured stream A_m = C_m = 1, S = sigma.
func NewOffset(sigma float64, dist privacy.Mechanism) (*StructuredStream, error) {
	if math.IsNaN(sigma) || math.IsInf(sigma, 0) || sigma < 0 {
		return nil, fmt.Errorf("noise: offset: sigma must be finite and >= 0, got %v", sigma)
	}
	one := mat.NewDense(1, 1, []float64{1})
	return NewStructured(one, one, mat.NewDense(1, 1, []float64{sigma}), dist)
}

// Reset draws eta (r values) from rnd, sets z(0) = S eta and t = 0. It does not allocate.
func (s *StructuredStream) Reset(rnd *rand.Rand) {
	for k := range s.eta {
		s.eta[k] = s.draw(rnd)
	}
	s.start()
}

// start sets z(0) = S eta and t = 0 for the draw in s.eta.
func (s *StructuredStream) start() {
	r := s.r
	for i := range s.z {
		row := s.s[i*r : i*r+r]
		var acc float64
		for k, v := range row {
			acc += v * s.eta[k]
		}
		s.z[i] = acc
	}
	s.z1 = s.z[0]
	s.t = 0
	s.ready = true
}

// SetEta replaces the episode's draw by eta (len r, e.g. from a checkpoint): z(0) = S eta and
// t = 0, as Reset after drawing eta. A restarted process that restores its checkpoint uses it
// to continue with the same draw instead of a second, independent one.
func (s *StructuredStream) SetEta(eta []float64) error {
	if len(eta) != s.r {
		return fmt.Errorf("noise: structured: eta has %d values, want %d", len(eta), s.r)
	}
	copy(s.eta, eta)
	s.start()
	return nil
}

// Next writes gamma(t) = C_m z(t) into dst and advances z <- A_m z. It panics if len(dst) != Dim()
// or if Reset was never called (emitting zeros silently would publish unprotected data).
func (s *StructuredStream) Next(dst []float64) {
	if !s.ready {
		panic("noise: StructuredStream.Next called before Reset")
	}
	if len(dst) != s.m {
		panic("noise: StructuredStream.Next: len(dst) != Dim()")
	}
	if s.scalar { // the loops below for nz = m = 1, operation for operation
		var acc float64
		acc += s.c1 * s.z1
		dst[0] = acc
		var w float64
		w += s.a1 * s.z1
		s.z1 = w
		s.t++
		return
	}
	nz := s.nz
	z := s.z[:nz]
	for i := range dst {
		row := s.cm[i*nz : i*nz+nz]
		var acc float64
		for k, v := range row {
			acc += v * z[k]
		}
		dst[i] = acc
	}
	w := s.w[:nz]
	for i := range w {
		row := s.am[i*nz : i*nz+nz]
		var acc float64
		for k, v := range row {
			acc += v * z[k]
		}
		w[i] = acc
	}
	s.z, s.w = w, z
	s.t++
}

// Dim returns m, the length of gamma(t).
func (s *StructuredStream) Dim() int { return s.m }

// Step returns t, the index the next call to Next writes.
func (s *StructuredStream) Step() int { return s.t }

// Eta returns a copy of the episode's eta (length r), or nil before the first Reset.
func (s *StructuredStream) Eta() []float64 {
	if !s.ready {
		return nil
	}
	return append([]float64(nil), s.eta...)
}

// State returns a copy of z(t) = A_m^t S eta, the virtual state perturbation at the current step.
func (s *StructuredStream) State() []float64 {
	if s.scalar {
		return []float64{s.z1}
	}
	return append([]float64(nil), s.z...)
}

// Mechanism returns the law of eta.
func (s *StructuredStream) Mechanism() privacy.Mechanism { return s.dist }

// Describe returns a one-line description.
func (s *StructuredStream) Describe() string {
	return fmt.Sprintf("structured %s: gamma(t) = C_m A_m^t S eta, eta ~ %s^%d drawn once per episode (nz=%d, m=%d)",
		s.dist, unitLaw(s.dist), s.r, s.nz, s.m)
}
