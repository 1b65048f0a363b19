package sim

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// The role cores use exactly the contract's random stream paths: the plant's noise of episode e is
// plan.NewNoise reset with rng.New(seed, Label("plant"), 0, e), agent i's with
// rng.New(seed, Label("agent"), i, e).
func TestStreamPathsAreTheContract(t *testing.T) {
	const seed, ep = 99, 7
	_, p := loadPlan(t, "cloud-vehicle-fullstate") // 2-dimensional structured noise: a real check
	plant, err := NewPlantNode(p, seed)
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
		a, err := NewAgentNode(pc, seed, i)
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
	plant, err := NewPlantNode(p, 1)
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
	_, err := NewPlantNode(pc, 1)
	require.ErrorContains(t, err, "cloud-control")
	_, err = NewCloudNode(pc)
	require.ErrorContains(t, err, "cloud-control")
	_, err = NewAgentNode(pv, 1, 0)
	require.ErrorContains(t, err, "consensus")
	_, err = NewAgentNode(pc, 1, 10)
	require.ErrorContains(t, err, "out of range")
	_, err = NewPlantNode(nil, 1)
	require.Error(t, err)
	_, err = NewEavesdropperNode(nil)
	require.Error(t, err)

	a, err := NewAgentNode(pc, 1, 0)
	require.NoError(t, err)
	require.NoError(t, a.Begin(0, 1))
	require.Equal(t, []int{1, 9}, a.Neighbors()) // paper10: node 1 - nodes 2 and 10, ascending
	require.ErrorContains(t, a.Update(a.Emit(), []float64{1}), "2")
	require.ErrorContains(t, a.Begin(0, nan()), "not finite")

	eve, err := NewEavesdropperNode(pv)
	require.NoError(t, err)
	eve.Begin(0)
	require.ErrorContains(t, eve.observeConsensus(0, make([]float64, 10), make([]bool, 10)), "cloud-control")
	require.ErrorContains(t, eve.observeControl(1, []float64{0}, []float64{0}), "out of order")
	require.ErrorContains(t, eve.observeControl(0, []float64{0, 1}, []float64{0}), "want 1")
	require.NoError(t, eve.observeControl(0, []float64{1}, []float64{0}))
	require.Equal(t, 1, eve.Steps())
	require.False(t, eve.EstimateX0(make([]float64, 2)), "one scalar output cannot identify two states")
}

// An episode's allocations do not grow with its steps: the cores, the network and the
// accumulation allocate nothing per step (only the plant's noise source, once per episode;
// agents reseed the one they keep: at 10,000 agents that was 20,000 allocations an episode).
func TestStepsDoNotAllocate(t *testing.T) {
	episodeAllocs := func(s *scenario.Scenario, steps int) float64 {
		s = s.Clone()
		s.Steps = steps
		p := planOf(t, s)
		acc, err := NewAccumulator(p, 1)
		require.NoError(t, err)
		ns, err := newNetSim(p, 1, acc, nil, Hosts{Size: 1})
		require.NoError(t, err)
		e := acc.newEpisode(0)
		ep := 0
		run := func() {
			e.reset(ep)
			if _, err := ns.run(context.Background(), ep, e, false); err != nil {
				panic(err)
			}
			ep++
		}
		run()
		return testing.AllocsPerRun(5, run)
	}
	for _, name := range []string{"cloud-vehicle", "consensus-gaussian"} {
		s := load(t, name).Expand()[0]
		short, long := episodeAllocs(s, 50), episodeAllocs(s, 500)
		require.Equal(t, short, long, "%s: allocations per episode grow with the steps", name)
		require.Less(t, long, 100.0, name)
		if name == "consensus-gaussian" {
			require.Zero(t, long, "agents allocate nothing per episode")
		}
	}
}

// The distributed agents reproduce dynamics.ConsensusNetwork's arithmetic bit for bit, and the
// network sum is preserved.
func TestAgentsMatchNetwork(t *testing.T) {
	_, p := loadPlan(t, "consensus-gaussian")
	res, tr := runFast(t, p, 5, FastOptions{Runs: 3, KeepTraces: true})
	require.Equal(t, 3, res.Runs)
	n := p.Graph.N
	for ep := 0; ep < 3; ep++ {
		recs := tr.Consensus[ep*(p.Steps+1) : (ep+1)*(p.Steps+1)]
		gamma := make([]float64, n)
		for i := range gamma { // the agents' offsets, drawn from the contract paths
			ns, err := p.NewNoise()
			require.NoError(t, err)
			ns.Reset(rng.New(5, rng.Label("agent"), uint64(i), uint64(ep)))
			ns.Next(gamma[i : i+1])
		}
		net := newNetwork(t, p, recs[0].X)
		x, y := make([]float64, n), make([]float64, n)
		for step, r := range recs {
			net.State(x)
			require.Equal(t, r.X, x, "episode %d step %d", ep, step)
			if step == p.Steps {
				break
			}
			net.Outputs(gamma, y)
			require.Equal(t, r.Y, y)
			net.Step(y)
		}
	}
}
