package estimate

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/rng"
)

// The written-out vehicle update of Observe (nx = 2, nu = 1, ny = 1) leaves the normal
// equations, C A^t, xu(t) and the estimate equal to the loops' bit for bit: for the vehicle, a
// random system, and entries with zeros of both signs and zero rows of C A^t (the skipped
// terms), with missing outputs and a missing last input.
func TestControlVehicleObserveMatchesLoop(t *testing.T) {
	r := rng.New(12, rng.Label("small-dim"))
	negZero := math.Copysign(0, -1)
	cases := map[string][3]*mat.Dense{
		"vehicle":       {vehA, vehB, vehC},
		"random":        {randDense(r, 2, 2, 1), randDense(r, 2, 1, 1), randDense(r, 1, 2, 1)},
		"zero column":   {mat.NewDense(2, 2, []float64{1, 0, 0, 1}), mat.NewDense(2, 1, []float64{negZero, 1}), mat.NewDense(1, 2, []float64{0, 2})},
		"nilpotent, -0": {mat.NewDense(2, 2, []float64{0, 1, 0, negZero}), mat.NewDense(2, 1, []float64{0.5, negZero}), mat.NewDense(1, 2, []float64{1, negZero})},
	}
	const T = 120
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			fast, err := NewControlEstimator(m[0], m[1], m[2], T)
			if err != nil {
				t.Fatal(err)
			}
			loop, _ := NewControlEstimator(m[0], m[1], m[2], T)
			if !fast.vehicle {
				t.Fatal("a 2x1x1 system takes the written-out path")
			}
			loop.vehicle = false
			y, u := make([]float64, 1), make([]float64, 1)
			for ep := 0; ep < 2; ep++ {
				fast.Reset()
				loop.Reset()
				for step := 0; step < T; step++ {
					y[0], u[0] = r.NormFloat64(), r.NormFloat64()
					yv, uv := y, u
					switch {
					case step%9 == 4:
						yv = nil // not received: no rows
					case step%11 == 0:
						y[0] = negZero
					case step == T-1:
						uv = nil // the last input not yet known
					}
					if err := fast.Observe(step, yv, uv); err != nil {
						t.Fatal(err)
					}
					if err := loop.Observe(step, yv, uv); err != nil {
						t.Fatal(err)
					}
					for what, pair := range map[string][2][]float64{
						"G": {loop.g, fast.g}, "rhs": {loop.rhs, fast.rhs}, "C A^t": {loop.h, fast.h}, "xu": {loop.xu, fast.xu},
					} {
						for i := range pair[0] {
							if math.Float64bits(pair[0][i]) != math.Float64bits(pair[1][i]) {
								t.Fatalf("episode %d step %d: %s[%d]: loop %v, written out %v", ep, step, what, i, pair[0][i], pair[1][i])
							}
						}
					}
				}
				wantX, gotX := make([]float64, 2), make([]float64, 2)
				okL, okF := loop.Estimate(wantX), fast.Estimate(gotX)
				if okL != okF || math.Float64bits(wantX[0]) != math.Float64bits(gotX[0]) || math.Float64bits(wantX[1]) != math.Float64bits(gotX[1]) {
					t.Fatalf("episode %d: estimate: loop %v %v, written out %v %v", ep, okL, wantX, okF, gotX)
				}
				if fast.Steps() != loop.Steps() || fast.inputs != loop.inputs {
					t.Fatalf("episode %d: steps %d/%d, inputs %d/%d", ep, fast.Steps(), loop.Steps(), fast.inputs, loop.inputs)
				}
			}
		})
	}
}

// finite finds the first NaN or infinity, and nothing in finite values (zeros of both signs,
// the extremes, subnormals).
func TestFiniteFindsNonFinite(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want int
	}{
		{nil, -1},
		{[]float64{0, math.Copysign(0, -1), math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 1}, -1},
		{[]float64{1, math.NaN()}, 1},
		{[]float64{math.Inf(1), 0}, 0},
		{[]float64{2, 3, math.Inf(-1)}, 2},
	} {
		if got := finite(c.v); got != c.want {
			t.Errorf("finite(%v) = %d, want %d", c.v, got, c.want)
		}
	}
}
