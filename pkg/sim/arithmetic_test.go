package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/rng"
)

// The role cores use exactly the contract's random stream paths (docs/protocol.md section 12):
// the plant's noise of episode e reads ChaCha8 keyed by rng.NoiseKey(seed, Label("plant"), 0, e),
// agent i's rng.NoiseKey(seed, Label("agent"), i, e). Float sampler: yhat = C x + the float
// stream's gamma; secure sampler: yhat = C x_np + the secure release of x(0)'s private part.
func TestStreamPathsAreTheContract(t *testing.T) {
	const seed, ep = 99, 7
	key := func(path ...uint64) *rand.ChaCha8 { return rand.NewChaCha8(rng.NoiseKey(seed, path...)) }
	yhat, y, g, u := make([]float64, 1), make([]float64, 1), make([]float64, 1), []float64{0.3}
	for _, sampler := range noise.Samplers {
		// 2-dimensional structured noise (a real check), and the position model
		for _, name := range []string{"cloud-vehicle-fullstate", "cloud-vehicle"} {
			_, p := loadPlanSampler(t, name, sampler)
			plant, err := NewPlant(p, seed)
			require.NoError(t, err)
			require.NoError(t, plant.Begin(ep, nil))
			x0 := slices.Clone(plant.State())
			var ref noise.Stream
			var sec *noise.SecureStream
			if sampler == noise.SamplerFloat {
				ref, err = p.NewNoise()
				require.NoError(t, err)
				ref.Reset(rand.New(key(rng.Label("plant"), 0, uint64(ep))))
			} else {
				sec, err = p.NewSecureNoise()
				require.NoError(t, err)
				xp := make([]float64, len(p.Embedding))
				for k, q := range p.Embedding {
					xp[k] = x0[q]
				}
				require.NoError(t, sec.Reset(key(rng.Label("plant"), 0, uint64(ep)), xp))
			}
			np := slices.Clone(x0)
			for _, q := range p.Embedding {
				np[q] = 0
			}
			for t0 := 0; t0 < 20; t0++ {
				x := plant.State()
				plant.Emit(yhat)
				if ref != nil {
					y[0] = x[0] // C = [1 0]
					ref.Next(g)
					require.Equal(t, y[0]+g[0], yhat[0], "%s %s t=%d", sampler, name, t0) // bit-identical
				} else {
					sec.Next(g)
					require.Equal(t, np[0]+g[0], yhat[0], "%s %s t=%d", sampler, name, t0)
					require.Zero(t, math.Mod(sec.Base()[0], p.Granularity), "the release is on the grid")
					np[0], np[1] = np[0]+float64(0.1*np[1])+float64(0.005*u[0]), np[1]+float64(0.1*u[0]) // A x_np + B u, the vehicle
				}
				plant.Apply(u)
			}
		}

		_, pc := loadPlanSampler(t, "consensus-laplace", sampler)
		for _, i := range []int{0, 3, 9} {
			a, err := NewAgent(pc, seed, i)
			require.NoError(t, err)
			require.NoError(t, a.Begin(ep, a.X0()))
			if sampler == noise.SamplerFloat {
				ref, err := pc.NewNoise()
				require.NoError(t, err)
				ref.Reset(rand.New(key(rng.Label("agent"), uint64(i), uint64(ep))))
				ref.Next(g)
				require.Equal(t, a.X0()+g[0], a.Emit())
			} else {
				sec, err := pc.NewSecureNoise()
				require.NoError(t, err)
				require.NoError(t, sec.Reset(key(rng.Label("agent"), uint64(i), uint64(ep)), []float64{a.X0()}))
				sec.Next(g)
				require.Equal(t, g[0], a.Emit(), "y_i(0) = w + 0")
			}
			require.NotZero(t, g[0])
		}
	}
}

// Begin with an explicit x0 (the auditor's challenger) starts the plant there; bad x0 are errors.
func TestPlantBeginX0(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	plant, err := NewPlant(p, 1)
	require.NoError(t, err)
	require.NoError(t, plant.Begin(0, []float64{-3, 1.5}))
	require.Equal(t, []float64{-3, 1.5}, plant.State())
	require.NoError(t, plant.Begin(1, nil))
	require.Equal(t, []float64{0, 0}, plant.State())
	require.ErrorContains(t, plant.Begin(2, []float64{1}), "want nx=2")
	require.ErrorContains(t, plant.Begin(2, []float64{1, nan()}), "not finite")
	require.ErrorContains(t, plant.Begin(-1, nil), "negative")
}

func nan() float64 { var z float64; return z / z }

func TestRoleConstructorsRefuseTheWrongKind(t *testing.T) {
	_, pc := loadPlan(t, "consensus-gaussian")
	_, pv := loadPlan(t, "cloud-vehicle")
	_, err := NewPlant(pc, 1)
	require.ErrorContains(t, err, "cloud-control")
	_, err = NewController(pc)
	require.ErrorContains(t, err, "cloud-control")
	_, err = NewAgent(pv, 1, 0)
	require.ErrorContains(t, err, "consensus")
	_, err = NewAgent(pc, 1, 10)
	require.ErrorContains(t, err, "out of range")
	_, err = NewPlant(nil, 1)
	require.Error(t, err)
	_, err = NewEstimator(nil)
	require.Error(t, err)

	a, err := NewAgent(pc, 1, 0)
	require.NoError(t, err)
	require.NoError(t, a.Begin(0, 1))
	require.Equal(t, []int{1, 9}, a.Neighbors()) // paper10: node 1 - nodes 2 and 10, ascending
	require.ErrorContains(t, a.Update(a.Emit(), []float64{1}), "2")
	require.ErrorContains(t, a.Begin(0, nan()), "not finite")

	eve, err := NewEstimator(pv)
	require.NoError(t, err)
	eve.Begin(0)
	require.ErrorContains(t, eve.observeConsensus(0, make([]float64, 10), make([]bool, 10)), "cloud-control")
	require.ErrorContains(t, eve.observeControl(1, []float64{0}, []float64{0}), "out of order")
	require.ErrorContains(t, eve.observeControl(0, []float64{0, 1}, []float64{0}), "want 1")
	require.NoError(t, eve.observeControl(0, []float64{1}, []float64{0}))
	require.Equal(t, 1, eve.Steps())
	require.False(t, eve.EstimateX0(make([]float64, 2)), "one scalar output cannot identify two states")
}
