package plan

import "github.com/dpsim/dpsim/pkg/noise"

// PaperVehicle reports whether the plant is the paper's vehicle: x = (p, v), A = [1 a; 0 1]
// with a > 0 (the sampling period), C = [1 0] (Section 5).
func (p *Plan) PaperVehicle() bool {
	if p == nil || p.System == nil {
		return false
	}
	A, C := p.System.A, p.System.C
	ar, ac := A.Dims()
	cr, cc := C.Dims()
	return ar == 2 && ac == 2 && cr == 1 && cc == 2 && A.At(0, 0) == 1 && A.At(1, 0) == 0 && A.At(1, 1) == 1 &&
		A.At(0, 1) > 0 && C.At(0, 0) == 1 && C.At(0, 1) == 0
}

// ConstantOffset reports whether the noise is a constant offset gamma(t) = gamma(0): structured
// noise whose private model is A_m = I (the paper's position-private vehicle, every consensus
// agent; docs/math.md section 5).
func (p *Plan) ConstantOffset() bool {
	if p == nil || p.Noise != noise.Structured || p.ModelA == nil {
		return false
	}
	n, m := p.ModelA.Dims()
	if n != m {
		return false
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			if p.ModelA.At(i, j) != want {
				return false
			}
		}
	}
	return true
}
