package dynamics

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/rng"
)

// smallDimCases are vehicle-shaped systems (nx = 2, nu = 1, ny = 1) whose written-out steps
// must equal the loops bit for bit: the paper's vehicle, random entries, and entries with
// zeros of both signs (where a sum that does not start from 0 would give -0 for +0).
func smallDimCases(t *testing.T) map[string][3]*mat.Dense {
	veh, rnd := vehicle(t), randomLTI(t, 11, 2, 1, 1)
	negZero := math.Copysign(0, -1)
	return map[string][3]*mat.Dense{
		"vehicle": {veh.A, veh.B, veh.C},
		"random":  {rnd.A, rnd.B, rnd.C},
		"signed zeros": {
			mat.NewDense(2, 2, []float64{negZero, 0, 0, negZero}),
			mat.NewDense(2, 1, []float64{negZero, 0}),
			mat.NewDense(1, 2, []float64{negZero, negZero}),
		},
	}
}

// The written-out vehicle step of the observer-controller (eq. (24)) equals the general loop bit
// for bit, step after step, for the tabulated reference and beyond the table.
func TestObserverControllerVehicleStepMatchesLoop(t *testing.T) {
	K, L := paperGains()
	negZero := math.Copysign(0, -1)
	refs := map[string]Reference{
		"tanh": TanhReference{}, "zero": nil, "constant -0": ConstantReference{V: []float64{negZero, negZero}},
	}
	for name, m := range smallDimCases(t) {
		for rname, ref := range refs {
			t.Run(name+"/"+rname, func(t *testing.T) {
				sys, err := NewLTI(m[0], m[1], m[2])
				require.NoError(t, err)
				fast, err := NewObserverController(sys, K, L, ref, []float64{0.3, negZero})
				require.NoError(t, err)
				loop, err := NewObserverController(sys, K, L, ref, []float64{0.3, negZero})
				require.NoError(t, err)
				require.True(t, fast.vehicle)
				loop.vehicle = false
				r := rng.New(5, rng.Label("yhat"))
				yhat, uf, ul := make([]float64, 1), make([]float64, 1), make([]float64, 1)
				for ep := 0; ep < 2; ep++ { // the second episode reads the reference from the table
					fast.Reset(nil)
					loop.Reset(nil)
					for k := 0; k < 300; k++ {
						step := k
						if k >= 250 {
							step = refTabSteps + k // beyond the table: At every time
						}
						yhat[0] = r.NormFloat64()
						if k%7 == 0 {
							yhat[0] = negZero
						}
						fast.Step(step, yhat, uf)
						loop.stepAny(loopRef(loop, step), yhat, ul)
						require.Equal(t, math.Float64bits(ul[0]), math.Float64bits(uf[0]), "episode %d step %d: u", ep, step)
						for i := range 2 {
							require.Equal(t, math.Float64bits(loop.xhat[i]), math.Float64bits(fast.xhat[i]),
								"episode %d step %d: xhat[%d]", ep, step, i)
						}
					}
				}
			})
		}
	}
}

// loopRef is x_r(t) straight from the reference, without the table.
func loopRef(c *ObserverController, t int) []float64 {
	c.ref.At(t, c.r)
	return c.r
}

// The reference table gives the reference's own values whatever order the steps are asked in.
func TestReferenceTableOrderFree(t *testing.T) {
	sys := vehicle(t)
	K, L := paperGains()
	c, err := NewObserverController(sys, K, L, TanhReference{}, nil)
	require.NoError(t, err)
	want := make([]float64, 2)
	for _, step := range []int{5, 0, 1, 2, 1, 0, 3, 40, 4, 5, 6, refTabSteps + 3, 7} {
		TanhReference{}.At(step, want)
		got := c.refAt(step)
		require.Equal(t, math.Float64bits(want[0]), math.Float64bits(got[0]), "step %d", step)
		require.Equal(t, math.Float64bits(want[1]), math.Float64bits(got[1]), "step %d", step)
	}
	require.Len(t, c.refTab, 8*2, "steps 0..7 tabulated in order, the others computed")
}

// The written-out vehicle step of the plant (eq. (16)) equals the loop bit for bit.
func TestPlantVehicleStepMatchesLoop(t *testing.T) {
	for name, m := range smallDimCases(t) {
		t.Run(name, func(t *testing.T) {
			sys, err := NewLTI(m[0], m[1], m[2])
			require.NoError(t, err)
			p := NewPlant(sys, []float64{1.5, math.Copysign(0, -1)})
			want := []float64{1.5, math.Copysign(0, -1)}
			r := rng.New(6, rng.Label("u"))
			u := make([]float64, 1)
			for k := 0; k < 200; k++ {
				u[0] = r.NormFloat64()
				if k%5 == 0 {
					u[0] = math.Copysign(0, -1)
				}
				next := make([]float64, 2)
				for i := range 2 {
					var acc float64
					for j := range 2 {
						acc += m[0].At(i, j) * want[j]
					}
					acc += m[1].At(i, 0) * u[0]
					next[i] = acc
				}
				want = next
				p.Step(u)
				for i := range 2 {
					require.Equal(t, math.Float64bits(want[i]), math.Float64bits(p.State()[i]), "step %d: x[%d]", k, i)
				}
			}
		})
	}
}
