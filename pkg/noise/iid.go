package noise

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// IIDStream draws fresh noise every step: gamma_k(t) ~ N(0, scale^2) or Laplace(0, scale), independent
// over components k and steps t (Lambda = scale I_m, docs/math.md section 4). iid-calibrated and iid-naive
// are both IIDStreams; they differ only in the scale the caller computes (whole-trajectory vs
// single-release calibration).
type IIDStream struct {
	m     int
	scale float64
	dist  privacy.Mechanism
	rnd   *rand.Rand
	t     int
}

// NewIID returns an i.i.d. stream of dimension m >= 1 and scale >= 0 (standard deviation for
// Gaussian, b for Laplace: variance 2 scale^2).
func NewIID(m int, scale float64, dist privacy.Mechanism) (*IIDStream, error) {
	if _, err := sampler(dist); err != nil {
		return nil, err
	}
	if m < 1 {
		return nil, fmt.Errorf("noise: iid: dimension must be >= 1, got %d", m)
	}
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale < 0 {
		return nil, fmt.Errorf("noise: iid: scale must be finite and >= 0, got %v", scale)
	}
	return &IIDStream{m: m, scale: scale, dist: dist}, nil
}

// Reset keeps rnd for the per-step draws and sets t = 0. Nothing is drawn once.
func (s *IIDStream) Reset(rnd *rand.Rand) {
	s.rnd = rnd
	s.t = 0
}

// Next writes m fresh draws into dst. It panics if len(dst) != Dim() or Reset was never called.
func (s *IIDStream) Next(dst []float64) {
	if s.rnd == nil {
		panic("noise: IIDStream.Next called before Reset")
	}
	if len(dst) != s.m {
		panic("noise: IIDStream.Next: len(dst) != Dim()")
	}
	if s.dist == privacy.Laplace {
		for i := range dst {
			dst[i] = SampleLaplace(s.rnd, s.scale)
		}
	} else {
		for i := range dst {
			dst[i] = s.scale * s.rnd.NormFloat64()
		}
	}
	s.t++
}

// Dim returns m.
func (s *IIDStream) Dim() int { return s.m }

// Step returns t, the index the next call to Next writes.
func (s *IIDStream) Step() int { return s.t }

// Eta returns nil: an i.i.d. stream draws nothing once per episode.
func (s *IIDStream) Eta() []float64 { return nil }

// Scale returns the scale (Gaussian standard deviation or Laplace b).
func (s *IIDStream) Scale() float64 { return s.scale }

// Mechanism returns the per-step law.
func (s *IIDStream) Mechanism() privacy.Mechanism { return s.dist }

// Describe returns a one-line description.
func (s *IIDStream) Describe() string {
	if s.dist == privacy.Laplace {
		return fmt.Sprintf("iid laplace: gamma(t) ~ Laplace(0, %g)^%d fresh each step (variance %g)", s.scale, s.m, 2*s.scale*s.scale)
	}
	return fmt.Sprintf("iid gaussian: gamma(t) ~ N(0, %g^2)^%d fresh each step", s.scale, s.m)
}

// NoneStream adds no noise: gamma(t) = 0.
type NoneStream struct {
	m, t int
}

// NewNone returns the zero stream of dimension m >= 1.
func NewNone(m int) (*NoneStream, error) {
	if m < 1 {
		return nil, fmt.Errorf("noise: none: dimension must be >= 1, got %d", m)
	}
	return &NoneStream{m: m}, nil
}

// Reset sets t = 0; rnd is not used and may be nil.
func (s *NoneStream) Reset(*rand.Rand) { s.t = 0 }

// Next writes zeros. It panics if len(dst) != Dim().
func (s *NoneStream) Next(dst []float64) {
	if len(dst) != s.m {
		panic("noise: NoneStream.Next: len(dst) != Dim()")
	}
	clear(dst)
	s.t++
}

// Dim returns m.
func (s *NoneStream) Dim() int { return s.m }

// Step returns t.
func (s *NoneStream) Step() int { return s.t }

// Eta returns nil.
func (s *NoneStream) Eta() []float64 { return nil }

// Describe returns a one-line description.
func (s *NoneStream) Describe() string { return fmt.Sprintf("none: gamma(t) = 0 (m=%d)", s.m) }
