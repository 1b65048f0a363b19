package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/rng"
)

// The role cores use exactly the contract's random stream paths: the plant's noise of episode e is
// plan.NewNoise reset with rng.New(seed, Label("plant"), 0, e), agent i's with
// rng.New(seed, Label("agent"), i, e).
func TestStreamPathsAreTheContract(t *testing.T) {
	const seed, ep = 99, 7
	_, p := loadPlan(t, "cloud-vehicle-fullstate") // 2-dimensional structured noise: a real check
	plant, err := NewPlant(p, seed)
	require.NoError(t, err)
	require.NoError(t, plant.Begin(ep, nil))
	ref, err := p.NewNoise()
	require.NoError(t, err)
	ref.Reset(rng.New(seed, rng.Label("plant"), 0, uint64(ep)))
	yhat, y, g, u := make([]float64, 1), make([]float64, 1), make([]float64, 1), []float64{0.3}
	for t0 := 0; t0 < 20; t0++ {
		x := plant.State()
		y[0] = x[0] // C = [1 0]
		plant.Emit(yhat)
		ref.Next(g)
		require.Equal(t, y[0]+g[0], yhat[0], "t=%d", t0) // bit-identical
		require.Equal(t, g[0], plant.Gamma()[0])
		plant.Apply(u)
	}

	_, pc := loadPlan(t, "consensus-laplace")
	for _, i := range []int{0, 3, 9} {
		a, err := NewAgent(pc, seed, i)
		require.NoError(t, err)
		require.NoError(t, a.Begin(ep, a.X0()))
		ref, err := pc.NewNoise()
		require.NoError(t, err)
		ref.Reset(rng.New(seed, rng.Label("agent"), uint64(i), uint64(ep)))
		ref.Next(g)
		require.Equal(t, a.X0()+g[0], a.Emit())
		require.NotZero(t, g[0])
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
