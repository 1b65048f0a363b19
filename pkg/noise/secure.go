package noise

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/internal/rowmajor"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// SecureStream is the secure sampler's release of the private part of what a plant or an agent
// publishes (docs/math.md section 10, docs/protocol.md section 12.4). With xp the private model's
// initial state (the plant's coordinates Embedding, or an agent's x_i(0)):
//
//   - structured (Algorithm 1): eta_1..eta_r exact once per episode, w = round_g(xp + S eta) exactly,
//     and step t yields C_m A_m^t w by float64 arithmetic on w (z <- A_m z);
//   - i.i.d.: step t yields w_i(t) = round_g((C_m A_m^t xp)_i + scale xi_i(t)), xi exact and fresh.
//
// What it yields is a function of the rounded real mechanism's output alone: the secret enters
// only through round_g(.) of an exactly sampled real value, never through the rounding pattern
// of a float computation, so the published float64 values are exactly as private as the real
// mechanism (post-processing). The caller adds the public, adjacency-invariant part (the plant's
// C x_np(t), an agent's accumulated updates).
type SecureStream struct {
	structured bool
	dist       privacy.Mechanism
	g          float64
	nz, r, m   int
	s          []float64 // S (nz x r), structured
	scale      float64   // i.i.d.
	am, cm     []float64 // A_m (nz x nz), C_m (m x nz)
	identity   bool      // A_m = I: z and O_t never change

	samp     ExactSampler
	eta      []Exact   // structured: the episode's r samples; i.i.d.: the step's one sample
	xp       []float64 // the private initial state
	base     []float64 // structured: w = round_g(xp + S eta)
	z, zw    []float64 // structured: z(t) = A_m^t w and scratch
	o, onext []float64 // i.i.d.: O_t = C_m A_m^t (m x nz) and scratch
	ab, coef []float64 // RoundExact's arguments
	t        int
	ready    bool
}

// NewSecureStructured returns the secure structured stream of Algorithm 1 (S = sqrt(Sigma),
// Gaussian) or 2 (S = b I, Laplace): A_m nz x nz, C_m m x nz, S nz x r, grid g (a power of two).
func NewSecureStructured(Am, Cm, S *mat.Dense, dist privacy.Mechanism, g float64) (*SecureStream, error) {
	ss, err := newSecure(Am, Cm, dist, g)
	if err != nil {
		return nil, err
	}
	sr, r := S.Dims()
	if sr != ss.nz {
		return nil, fmt.Errorf("noise: secure: S is %dx%d, A_m %dx%d", sr, r, ss.nz, ss.nz)
	}
	if ss.s, err = rowmajor.Finite("noise: secure: S", S); err != nil {
		return nil, err
	}
	ss.structured, ss.r = true, r
	ss.eta = make([]Exact, r)
	ss.base, ss.z, ss.zw = make([]float64, ss.nz), make([]float64, ss.nz), make([]float64, ss.nz)
	ss.ab, ss.coef = make([]float64, 2), make([]float64, r)
	return ss, nil
}

// NewSecureIID returns the secure i.i.d. stream: scale is sigma (Gaussian) or b (Laplace).
// The caller has checked that O_t = C_m A_m^t is exact in float64 over the horizon.
func NewSecureIID(Am, Cm *mat.Dense, scale float64, dist privacy.Mechanism, g float64) (*SecureStream, error) {
	ss, err := newSecure(Am, Cm, dist, g)
	if err != nil {
		return nil, err
	}
	if !(scale > 0) {
		return nil, fmt.Errorf("noise: secure: scale %v, want > 0", scale)
	}
	ss.scale = scale
	ss.eta = make([]Exact, 1)
	ss.o, ss.onext = make([]float64, ss.m*ss.nz), make([]float64, ss.m*ss.nz)
	ss.ab, ss.coef = make([]float64, 2*ss.nz), []float64{scale}
	return ss, nil
}

func newSecure(Am, Cm *mat.Dense, dist privacy.Mechanism, g float64) (*SecureStream, error) {
	if _, err := sampler(dist); err != nil {
		return nil, err
	}
	if !(g > 0) {
		return nil, fmt.Errorf("noise: secure: granularity %v, want > 0", g)
	}
	nz, nc := Am.Dims()
	m, cc := Cm.Dims()
	if nz != nc || cc != nz {
		return nil, fmt.Errorf("noise: secure: A_m is %dx%d, C_m %dx%d", nz, nc, m, cc)
	}
	ss := &SecureStream{dist: dist, g: g, nz: nz, m: m, xp: make([]float64, nz)}
	var err error
	if ss.am, err = rowmajor.Finite("noise: secure: A_m", Am); err != nil {
		return nil, err
	}
	if ss.cm, err = rowmajor.Finite("noise: secure: C_m", Cm); err != nil {
		return nil, err
	}
	ss.identity = true
	for i := 0; i < nz; i++ {
		for k := 0; k < nz; k++ {
			if want := b2f(i == k); ss.am[i*nz+k] != want {
				ss.identity = false
			}
		}
	}
	return ss, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// draw draws one exact unit sample of the stream's law into e.
func (s *SecureStream) draw(e *Exact) {
	if s.dist == privacy.Laplace {
		s.samp.Laplace(e)
	} else {
		s.samp.Normal(e)
	}
}

// Reset starts an episode: the digits come from src (the episode's stream), xp is the private
// initial state (len nz). Structured: draws eta and rounds w = round_g(xp + S eta) exactly.
func (s *SecureStream) Reset(src Bits, xp []float64) error {
	if len(xp) != s.nz {
		return fmt.Errorf("noise: secure: private state has %d values, want %d", len(xp), s.nz)
	}
	s.samp.SetSource(src)
	copy(s.xp, xp)
	s.t, s.ready = 0, true
	if !s.structured {
		copy(s.o, s.cm)
		return nil
	}
	for j := range s.eta {
		s.draw(&s.eta[j])
	}
	return s.roundBase()
}

// roundBase sets w_k = round_g(xp_k + sum_j S[k][j] eta_j), k in order, and z(0) = w.
func (s *SecureStream) roundBase() error {
	r := s.r
	for k := 0; k < s.nz; k++ {
		s.ab[0], s.ab[1] = 1, s.xp[k]
		copy(s.coef, s.s[k*r:k*r+r])
		w, err := s.samp.RoundExact(s.g, s.ab, s.coef, s.eta)
		if err != nil {
			return err
		}
		s.base[k] = w
	}
	copy(s.z, s.base)
	return nil
}

// Next writes the private part of step t's release into dst (len m) and advances t: structured
// C_m z(t), then z <- A_m z; i.i.d. round_g(O_t xp + scale xi(t)) per component, in order.
func (s *SecureStream) Next(dst []float64) {
	if !s.ready {
		panic("noise: SecureStream.Next called before Reset")
	}
	if len(dst) != s.m {
		panic("noise: SecureStream.Next: len(dst) != Dim()")
	}
	nz := s.nz
	if s.structured {
		for i := range dst {
			dst[i] = dotRow(s.cm[i*nz:i*nz+nz], s.z)
		}
		s.advance()
		return
	}
	for i := range dst {
		s.draw(&s.eta[0])
		row := s.o[i*nz : i*nz+nz]
		for k, v := range row {
			s.ab[2*k], s.ab[2*k+1] = v, s.xp[k]
		}
		w, err := s.samp.RoundExact(s.g, s.ab, s.coef, s.eta)
		if err != nil {
			panic(err) // exact arithmetic at a precision chosen to be exact: only a bug gets here
		}
		dst[i] = w
	}
	s.advance()
}

// Skip passes step t without a release (the process is down): the i.i.d. samples of the step are
// drawn and not rounded; z or O_t move on.
func (s *SecureStream) Skip() {
	if !s.structured {
		for i := 0; i < s.m; i++ {
			s.draw(&s.eta[0])
		}
	}
	s.advance()
}

// advance moves z (structured) or O_t (i.i.d.) to the next step.
func (s *SecureStream) advance() {
	s.t++
	if s.identity {
		return
	}
	nz := s.nz
	if s.structured {
		for i := range s.zw {
			s.zw[i] = dotRow(s.am[i*nz:i*nz+nz], s.z)
		}
		s.z, s.zw = s.zw, s.z
		return
	}
	for i := 0; i < s.m; i++ {
		for k := 0; k < nz; k++ {
			var acc float64
			for l := 0; l < nz; l++ {
				acc = acc + float64(s.o[i*nz+l]*s.am[l*nz+k])
			}
			s.onext[i*nz+k] = acc
		}
	}
	s.o, s.onext = s.onext, s.o
}

// dotRow is sum_k row[k] v[k] from 0.0, left to right, every product rounded (no fused
// multiply-add: the explicit conversion forbids it), as docs/protocol.md section 12.4 specifies.
func dotRow(row, v []float64) float64 {
	var acc float64
	for k, c := range row {
		acc = acc + float64(c*v[k])
	}
	return acc
}

// Base returns a copy of the episode's rounded release w (structured; nil for i.i.d.): what a
// checkpoint keeps so that a restarted process publishes the same release.
func (s *SecureStream) Base() []float64 {
	if !s.structured || !s.ready {
		return nil
	}
	return append([]float64(nil), s.base...)
}

// SetBase restores a checkpoint's w (structured) and puts the stream at step 0 of it.
func (s *SecureStream) SetBase(w []float64) error {
	if !s.structured {
		return fmt.Errorf("noise: secure i.i.d. stream has no once-drawn release")
	}
	if len(w) != s.nz {
		return fmt.Errorf("noise: secure: release has %d values, want %d", len(w), s.nz)
	}
	copy(s.base, w)
	copy(s.z, w)
	s.t, s.ready = 0, true
	return nil
}

// Eta returns the episode's samples to float64 precision (structured; for reports and tests).
func (s *SecureStream) Eta() []float64 {
	if !s.structured || !s.ready {
		return nil
	}
	out := make([]float64, len(s.eta))
	for j := range s.eta {
		out[j] = s.eta[j].Float64()
	}
	return out
}

// Samples returns the stream's exact samples (a view: structured, the episode's eta; i.i.d.,
// the last step's xi), for tests and cross-language vectors.
func (s *SecureStream) Samples() []Exact { return s.eta }

// Dim returns m, Step the t that Next writes next, Granularity g.
func (s *SecureStream) Dim() int                     { return s.m }
func (s *SecureStream) Step() int                    { return s.t }
func (s *SecureStream) Granularity() float64         { return s.g }
func (s *SecureStream) Structured() bool             { return s.structured }
func (s *SecureStream) Mechanism() privacy.Mechanism { return s.dist }

// Describe returns a one-line description.
func (s *SecureStream) Describe() string {
	if s.structured {
		return fmt.Sprintf("secure structured %s: w = round_g(x_p(0) + S eta) exactly (g = 2^%d), eta ~ %s^%d exact, released as C_m A_m^t w (nz=%d, m=%d)",
			s.dist, exponent(s.g), unitLaw(s.dist), s.r, s.nz, s.m)
	}
	return fmt.Sprintf("secure iid %s: w(t) = round_g(C_m A_m^t x_p(0) + %g xi(t)) exactly (g = 2^%d), xi ~ %s^%d exact and fresh each step",
		s.dist, s.scale, exponent(s.g), unitLaw(s.dist), s.m)
}

// SecureState is a SecureStream's position within an episode, for a checkpoint. The digits'
// generator is the caller's to save (rand.ChaCha8.MarshalBinary): with both, a restarted
// process continues the stream exactly where it stopped.
type SecureState struct {
	T    int       `json:"t"`
	Xp   []float64 `json:"xp"`
	Base []float64 `json:"base,omitempty"` // structured: w
	Z    []float64 `json:"z,omitempty"`    // structured: z(t) = A_m^t w
	O    []float64 `json:"o,omitempty"`    // i.i.d.: O_t
}

// State returns the stream's position (copies); nil before the first Reset.
func (s *SecureStream) State() *SecureState {
	if !s.ready {
		return nil
	}
	st := &SecureState{T: s.t, Xp: append([]float64(nil), s.xp...)}
	if s.structured {
		st.Base, st.Z = append([]float64(nil), s.base...), append([]float64(nil), s.z...)
	} else {
		st.O = append([]float64(nil), s.o...)
	}
	return st
}

// Restore puts the stream at st, reading further digits from src.
func (s *SecureStream) Restore(src Bits, st *SecureState) error {
	if st == nil {
		return fmt.Errorf("noise: secure: no state to restore")
	}
	if len(st.Xp) != s.nz || (s.structured && (len(st.Base) != s.nz || len(st.Z) != s.nz)) || (!s.structured && len(st.O) != s.m*s.nz) {
		return fmt.Errorf("noise: secure: the checkpoint's state does not fit the stream (nz=%d, m=%d)", s.nz, s.m)
	}
	s.samp.SetSource(src)
	copy(s.xp, st.Xp)
	if s.structured {
		copy(s.base, st.Base)
		copy(s.z, st.Z)
	} else {
		copy(s.o, st.O)
	}
	s.t, s.ready = st.T, true
	return nil
}
