package plan

import (
	"fmt"
	"math"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// SamplerInfo states how the plan's noise becomes float64 values and what that costs
// (docs/math.md section 10): `dpsim calibrate --json` and summary.json carry it.
type SamplerInfo struct {
	// Sampler is secure or float.
	Sampler noise.Sampler `json:"sampler"`
	// Granularity is g, the grid the secure sampler rounds the private part of every published
	// value to (0 for float, or without noise).
	Granularity float64 `json:"granularity"`
	// GridToNoise is g over the smallest noise scale of a published coordinate: the rounding
	// error is at most g/2, a fraction GridToNoise/2 of the noise.
	GridToNoise float64 `json:"grid_to_noise,omitempty"`
	// EpsilonCost and DeltaCost are what the sampler adds to the calibrated (eps, delta): 0 for
	// secure (its published values are a post-processing of the real mechanism's output rounded
	// exactly); for float the real-valued guarantee does not hold for the float64 values at all
	// (Infinite is true).
	EpsilonCost float64 `json:"epsilon_cost"`
	DeltaCost   float64 `json:"delta_cost"`
	Infinite    bool    `json:"guarantee_void,omitempty"`
	// Embedding lists the plant's state coordinates that hold the private model's state (cloud
	// control, secure): the plant publishes round_g(x(0)[embedding] + S eta) through public
	// arithmetic.
	Embedding []int `json:"embedding,omitempty"`
	// Note is one sentence for people.
	Note string `json:"note"`
}

// SamplerInfo returns the plan's sampler statement.
func (p *Plan) SamplerInfo() SamplerInfo {
	s := SamplerInfo{Sampler: p.Sampler, Granularity: p.Granularity, Embedding: p.Embedding}
	switch {
	case p.Sampler == noise.SamplerFloat:
		s.Infinite = true
		s.Note = "float: textbook float64 samplers and arithmetic; private in the reals only - an eavesdropper who reads the bits tells adjacent secrets apart (docs/math.md section 10)"
	case p.Granularity == 0:
		s.Note = "secure: no noise to draw"
	default:
		s.GridToNoise = p.Granularity / p.noiseScaleMin()
		s.Note = fmt.Sprintf("secure: exact samplers; every published value is public arithmetic on the real mechanism's output rounded exactly to g = 2^%d, so the calibrated (eps, delta) holds for the float64 values at no cost; rounding error <= g/2 = %.3g of the noise scale",
			exponent2(p.Granularity), s.GridToNoise/2)
	}
	return s
}

func exponent2(g float64) int {
	_, e := math.Frexp(g)
	return e - 1
}

// noiseScaleMin is the smallest noise scale of a published coordinate: the smallest row norm of S
// (structured) or the scale (i.i.d.); 0 without noise.
func (p *Plan) noiseScaleMin() float64 {
	switch p.Noise {
	case noise.Structured:
		if p.NoiseMatrix == nil {
			return 0
		}
		r, c := p.NoiseMatrix.Dims()
		best := math.Inf(1)
		for i := 0; i < r; i++ {
			var s float64
			for j := 0; j < c; j++ {
				s = math.Hypot(s, p.NoiseMatrix.At(i, j))
			}
			best = math.Min(best, s)
		}
		if math.IsInf(best, 1) {
			return 0
		}
		return best
	case noise.IIDCalibrated, noise.IIDNaive:
		return p.Scale
	}
	return 0
}

// resolveSampler sets Sampler, Granularity and Embedding, and refuses what the secure sampler's
// argument (docs/math.md section 10) does not cover: a private model that is not a set of the
// plant's state coordinates, i.i.d. noise whose output map C_m A_m^t is not exact in float64
// over the horizon, and a plant that holds its state through a crash while the private model
// moves.
func (p *Plan) resolveSampler() error {
	s := p.Scenario
	p.Sampler = s.Privacy.Sampler
	if p.Sampler == "" {
		p.Sampler = noise.SamplerSecure
	}
	if p.Sampler != noise.SamplerSecure || p.Noise == noise.None {
		return nil
	}
	scale := p.noiseScaleMin()
	if !(scale > 0) {
		return nil // no noise drawn: nothing to round
	}
	p.Granularity = noise.Granularity(scale)
	if s.Kind != scenario.CloudControl {
		return nil
	}
	emb, err := embedding(p)
	if err != nil {
		return fmt.Errorf("privacy.sampler secure: %w; use privacy.sampler: float to run it with the textbook float64 noise (private in the reals only)", err)
	}
	p.Embedding = emb
	if (p.Noise == noise.IIDCalibrated || p.Noise == noise.IIDNaive) && !exactOutputMap(p.ModelA, p.ModelC, p.Steps) {
		return fmt.Errorf("privacy.sampler secure: i.i.d. noise needs the private model's output map C_m A_m^t exact in float64 for t < %d (the exact rounding takes it as exact; true for the position model A = 1, C = 1), and this model's is not; use noise: structured, or privacy.sampler: float", p.Steps)
	}
	if !isIdentity(p.ModelA) {
		for _, c := range s.Faults.Crashes {
			if c.Proc == "plant.0" {
				return fmt.Errorf("privacy.sampler secure: faults.crashes: the plant holds its state while down, but the private model (A_m not the identity) moves on, so its outputs after the restart are not a function of the rounded release; crash the plant only with a private model A_m = I, or use privacy.sampler: float")
			}
		}
	}
	return nil
}

// embedding finds the plant coordinates q_1 < ... < q_nz holding the private model's state:
// with Q the selection (Q e_k = e_{q_k}), A Q = Q A_m and C Q = C_m exactly (every entry equal
// as float64), so that C A^t x(0) = C_m A_m^t x(0)[q] + C A^t x_np(0) for every t, x_np(0) being
// x(0) with those coordinates set to 0: the plant's output splits into the private model's
// response and a part adjacent initial states share (docs/math.md section 10).
func embedding(p *Plan) ([]int, error) {
	nx, _ := p.System.A.Dims()
	nz, _ := p.ModelA.Dims()
	if nz > nx {
		return nil, fmt.Errorf("the private model has %d states, the plant %d", nz, nx)
	}
	const maxTries = 1 << 16
	q := make([]int, nz)
	tries := 0
	var search func(k, from int) bool
	search = func(k, from int) bool {
		if k == nz {
			tries++
			return embeds(p, q)
		}
		for c := from; c <= nx-(nz-k) && tries < maxTries; c++ {
			q[k] = c
			if search(k+1, c+1) {
				return true
			}
		}
		return false
	}
	if !search(0, 0) {
		return nil, fmt.Errorf("the private model (privacy.model A_m, C_m) is not a set of the plant's state coordinates (no selection Q with A Q = Q A_m and C Q = C_m): the secure sampler rounds the private part of the plant's state exactly and needs it separate from the rest")
	}
	return q, nil
}

// embeds reports whether the selection q satisfies A Q = Q A_m and C Q = C_m exactly.
func embeds(p *Plan, q []int) bool {
	A, C := p.System.A, p.System.C
	nx, _ := A.Dims()
	ny, _ := C.Dims()
	row := make([]int, nx) // plant row -> model row + 1 (0: not selected)
	for k, c := range q {
		row[c] = k + 1
	}
	for k, c := range q {
		for i := 0; i < nx; i++ { // column c of A against Q (column k of A_m)
			want := 0.0
			if row[i] > 0 {
				want = p.ModelA.At(row[i]-1, k)
			}
			if A.At(i, c) != want {
				return false
			}
		}
		for i := 0; i < ny; i++ {
			if C.At(i, c) != p.ModelC.At(i, k) {
				return false
			}
		}
	}
	return true
}

// exactOutputMap reports whether O_t = C_m A_m^t, computed by the recursion O_{t+1} = O_t A_m in
// float64 (sums from 0 left to right), is exact for t < T: every product and sum rounds to
// itself (an FMA residual and a TwoSum error of 0).
func exactOutputMap(Am, Cm interface {
	Dims() (int, int)
	At(i, j int) float64
}, T int) bool {
	nz, _ := Am.Dims()
	m, _ := Cm.Dims()
	if isIdentity(Am) {
		return true
	}
	o := make([]float64, m*nz)
	next := make([]float64, m*nz)
	for i := 0; i < m; i++ {
		for k := 0; k < nz; k++ {
			o[i*nz+k] = Cm.At(i, k)
		}
	}
	for t := 1; t < T; t++ {
		for i := 0; i < m; i++ {
			for k := 0; k < nz; k++ {
				var acc float64
				for l := 0; l < nz; l++ {
					a, b := o[i*nz+l], Am.At(l, k)
					pr := a * b
					if math.FMA(a, b, -pr) != 0 {
						return false
					}
					s := acc + pr
					bb := s - acc
					if (acc-(s-bb))+(pr-bb) != 0 {
						return false
					}
					acc = s
				}
				next[i*nz+k] = acc
			}
		}
		o, next = next, o
	}
	return true
}

func isIdentity(a interface {
	Dims() (int, int)
	At(i, j int) float64
}) bool {
	r, c := a.Dims()
	if r != c {
		return false
	}
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			if a.At(i, j) != want {
				return false
			}
		}
	}
	return true
}
