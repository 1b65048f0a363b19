package live

import (
	"math"

	"github.com/dpsim/dpsim/pkg/trace"
)

// addControl appends the kept step of a cloud-control record.
func (s *Series) addControl(r *trace.ControlRecord) {
	if r.Step == 0 && r.X != nil {
		s.x0 = append([]float64(nil), r.X...)
		s.X0 = s.x0[:min(len(s.x0), MaxComponents)]
	}
	s.T = append(s.T, r.Step)
	s.X = appendComponents(s.X, r.X, len(s.T))
	s.Ref = appendComponents(s.Ref, r.Ref, len(s.T))
	s.EveX0 = appendComponents(s.EveX0, r.EveX0, len(s.T))
	d := distance(r.X, r.Ref)
	s.TrackingError = append(s.TrackingError, d)
	s.SqTrackingError = append(s.SqTrackingError, d*d)
	s.EveError = append(s.EveError, distance(r.EveX0, s.x0))
}

// addConsensus appends the kept step of a consensus record.
func (s *Series) addConsensus(r *trace.ConsensusRecord) {
	if r.Step == 0 && r.X != nil {
		s.x0 = append([]float64(nil), r.X...)
		s.xstar = 0
		for _, v := range r.X {
			s.xstar += v
		}
		s.xstar /= float64(len(r.X))
	}
	s.T = append(s.T, r.Step)
	sq, mx := math.NaN(), math.NaN()
	if r.X != nil && s.x0 != nil {
		sq, mx = 0, 0
		for _, v := range r.X {
			d := v - s.xstar
			sq += d * d
			mx = max(mx, math.Abs(d))
		}
	}
	s.SqDeviation = append(s.SqDeviation, sq)
	s.MaxAbsDeviation = append(s.MaxAbsDeviation, mx)
	s.EveError = append(s.EveError, distance(r.EveX0, s.x0))
}

// appendComponents appends v's first MaxComponents entries to the per-component series cs
// (NaN where v is nil or short), each of which then has n values.
func appendComponents(cs []Floats, v []float64, n int) []Floats {
	for len(cs) < min(len(v), MaxComponents) { // a component seen for the first time
		cs = append(cs, nanFloats(n-1))
	}
	for i := range cs {
		x := math.NaN()
		if i < len(v) {
			x = v[i]
		}
		cs[i] = append(cs[i], x)
	}
	return cs
}

func nanFloats(n int) Floats {
	f := make(Floats, n)
	for i := range f {
		f[i] = math.NaN()
	}
	return f
}

// distance is ||a - b|| (NaN when either is missing or they differ in length).
func distance(a, b []float64) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return math.NaN()
	}
	var s float64
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return math.Sqrt(s)
}
