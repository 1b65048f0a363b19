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
	require.ErrorContains(t, eve.ObserveConsensus(0, make([]float64, 10)), "cloud-control")
	require.ErrorContains(t, eve.ObserveYhat(1, []float64{0}), "out of order")
	require.ErrorContains(t, eve.ObserveYhat(0, []float64{0, 1}), "want 1")
	require.NoError(t, eve.ObserveU(0, []float64{0})) // u(t) before yhat(t) is fine
	require.ErrorContains(t, eve.ObserveU(0, []float64{0}), "twice")
	require.NoError(t, eve.ObserveYhat(0, []float64{1}))
	require.Equal(t, 1, eve.Steps())
	require.False(t, eve.EstimateX0(make([]float64, 2)), "one scalar output cannot identify two states")
}

// One control step and one consensus step allocate nothing.
func TestStepsDoNotAllocate(t *testing.T) {
	_, pv := loadPlan(t, "cloud-vehicle")
	acc, err := NewAccumulator(pv, 1)
	require.NoError(t, err)
	cs, err := newControlSim(pv, 1, acc)
	require.NoError(t, err)
	e := acc.newEpisode(0)
	for _, kind := range []string{"structured", "iid"} {
		if kind == "iid" {
			s := load(t, "cloud-vehicle").Expand()[0]
			s.Privacy.Noise = "iid-naive"
			pv = planOf(t, s)
			acc, err = NewAccumulator(pv, 1)
			require.NoError(t, err)
			cs, err = newControlSim(pv, 1, acc)
			require.NoError(t, err)
			e = acc.newEpisode(0)
		}
		require.NoError(t, cs.begin(0))
		step := 0
		allocs := testing.AllocsPerRun(90, func() {
			r, err := cs.step(0, step)
			if err != nil {
				panic(err)
			}
			if err := acc.putControl(e, r); err != nil {
				panic(err)
			}
			step++
		})
		require.Zero(t, allocs, "control step (%s noise)", kind)
	}

	_, pc := loadPlan(t, "consensus-gaussian")
	acc, err = NewAccumulator(pc, 1)
	require.NoError(t, err)
	ns, err := newConsensusSim(pc, 1, acc)
	require.NoError(t, err)
	e = acc.newEpisode(0)
	require.NoError(t, ns.begin(0))
	step := 0
	allocs := testing.AllocsPerRun(25, func() {
		r, err := ns.step(0, step)
		if err != nil {
			panic(err)
		}
		if err := acc.putConsensus(e, r); err != nil {
			panic(err)
		}
		step++
	})
	require.Zero(t, allocs, "consensus step")
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
