package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/stretchr/testify/require"
)

// The same seed gives bit-identical metrics.Results and traces whatever the number of workers; another
// seed gives different numbers.
func TestDeterministicAcrossWorkers(t *testing.T) {
	for _, name := range []string{"cloud-vehicle", "consensus-laplace"} {
		t.Run(name, func(t *testing.T) {
			_, p := loadPlan(t, name)
			o := Options{Runs: 120, KeepTraces: true, TraceEpisodes: trace.FirstEpisodes(7)}
			o.Workers = 1
			r1, tr1 := runFast(t, p, 11, o)
			o.Workers = 4
			r4, tr4 := runFast(t, p, 11, o)
			require.Equal(t, r1, r4)
			require.Equal(t, tr1, tr4)
			j1, err := json.Marshal(r1)
			require.NoError(t, err)
			j4, err := json.Marshal(r4)
			require.NoError(t, err)
			require.True(t, bytes.Equal(j1, j4))
			require.Equal(t, 7*(p.Steps+1), len(tr1.Control)+len(tr1.Consensus))

			r2, _ := runFast(t, p, 12, Options{Runs: 120, Workers: 4})
			require.Equal(t, 120, r2.Runs)
			j2, err := json.Marshal(r2)
			require.NoError(t, err)
			require.False(t, bytes.Equal(j1, j2), "a different seed must change the numbers")
		})
	}
}

// Cancelling returns the metrics.Results of the finished episodes with an error wrapping the cause.
func TestRunFastCancel(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, _, err := Run(ctx, p, sim.NewSeeds(1), Options{Runs: 100000, Workers: 2, Progress: func(done, total int) {
		require.Equal(t, 100000, total)
		if done == 50 {
			cancel()
		}
	}})
	require.Error(t, err)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.Contains(t, err.Error(), "of 100000 episodes")
	require.GreaterOrEqual(t, res.Runs, 50)
	require.Less(t, res.Runs, 100000)
	require.Equal(t, res.Runs, res.Control.TrackingSqError[0].N[100])
}

func TestRunFastProgressAndRuns(t *testing.T) {
	_, p := loadPlan(t, "consensus-gaussian")
	calls := 0
	res, tr := runFast(t, p, 1, Options{Runs: 9, Workers: 3, Progress: func(done, total int) {
		calls++
		require.Equal(t, calls, done)
		require.Equal(t, 9, total)
	}})
	require.Equal(t, 9, calls)
	require.Equal(t, 9, res.Runs)
	require.Nil(t, tr)
	_, _, err := Run(context.Background(), p, sim.NewSeeds(1), Options{Runs: -1})
	require.ErrorContains(t, err, "runs -1")
}

// The metrics.Accumulator is the single implementation of the metrics: feeding the engine's traces to it
// in a shuffled order reproduces the engine's metrics.Results bit for bit.
func TestAccumulatorOrderIndependent(t *testing.T) {
	_, pv := loadPlan(t, "cloud-vehicle")
	res, tr := runFast(t, pv, 21, Options{Runs: 40, KeepTraces: true})
	recs := append([]trace.ControlRecord(nil), tr.Control...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	got, err := metrics.AggregateControl(pv, 21, recs)
	require.NoError(t, err)
	require.Equal(t, res, got)

	_, pc := loadPlan(t, "consensus-gaussian")
	resC, trC := runFast(t, pc, 21, Options{Runs: 40, KeepTraces: true})
	crecs := append([]trace.ConsensusRecord(nil), trC.Consensus...)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(crecs), func(i, j int) { crecs[i], crecs[j] = crecs[j], crecs[i] })
	gotC, err := metrics.AggregateConsensus(pc, 21, crecs)
	require.NoError(t, err)
	require.Equal(t, resC, gotC)

	// Without Ref the accumulator computes x_r(t) from the plan: same numbers.
	for i := range recs {
		recs[i].Ref = nil
	}
	got, err = metrics.AggregateControl(pv, 21, recs)
	require.NoError(t, err)
	require.Equal(t, res, got)
}

// The metrics.Results JSON shape is a contract (summary.json "metrics"): the documented keys are there.
func TestResultsJSONShape(t *testing.T) {
	_, pv := loadPlan(t, "cloud-vehicle")
	rv, _ := runFast(t, pv, 1, Options{Runs: 5})
	_, pc := loadPlan(t, "consensus-gaussian")
	rc, _ := runFast(t, pc, 1, Options{Runs: 5})
	keys := func(v any) map[string]any {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	top := []string{"kind", "scenario", "seed", "steps", "runs", "confidence", "mechanism", "noise", "adjacency",
		"epsilon", "delta", "mu", "noise_scale", "noise_variance"}
	mv := keys(rv)
	for _, k := range append(top, "control") {
		require.Contains(t, mv, k)
	}
	require.NotContains(t, mv, "consensus")
	ctl := mv["control"].(map[string]any)
	for _, k := range []string{"tracking_error", "tracking_sq_error", "final_sq_error", "final_abs_error_max", "eve_sq_error"} {
		require.Contains(t, ctl, k)
	}
	series := ctl["eve_sq_error"].(map[string]any)
	for _, k := range []string{"n", "mean", "se", "ci_lo", "ci_hi"} {
		require.Contains(t, series, k)
	}
	mc := keys(rc)
	for _, k := range append(top, "consensus") {
		require.Contains(t, mc, k)
	}
	cons := mc["consensus"].(map[string]any)
	for _, k := range []string{"agents", "alpha", "x_star", "deviation", "sq_deviation", "final_sq_deviation",
		"prop1_bound", "offset_limit", "final_below_bound", "sum_rel_dev_max", "eve_sq_error"} {
		require.Contains(t, cons, k)
	}
	require.Equal(t, "consensus", mc["kind"])
	require.Len(t, cons["sq_deviation"].(map[string]any)["mean"], pc.Steps+1)
	require.Len(t, ctl["tracking_error"], 2)
	require.Equal(t, map[string]any{"epsilon": "1"}, mc["point"])
}

// The distributed agents reproduce dynamics.ConsensusNetwork's arithmetic bit for bit, and the
// network sum is preserved.
func TestAgentsMatchNetwork(t *testing.T) {
	_, p := dpsimtest.LoadPlanSampler(t, "consensus-gaussian", noise.SamplerFloat) // the float path: x + gamma
	res, tr := runFast(t, p, 5, Options{Runs: 3, KeepTraces: true})
	require.Equal(t, 3, res.Runs)
	n := p.Graph.N
	for ep := 0; ep < 3; ep++ {
		recs := tr.Consensus[ep*(p.Steps+1) : (ep+1)*(p.Steps+1)]
		gamma := make([]float64, n)
		for i := range gamma { // the agents' offsets, drawn from the contract paths
			ns, err := p.NewNoise()
			require.NoError(t, err)
			ns.Reset(rng.NewNoise(5, rng.Label("agent"), uint64(i), uint64(ep)))
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

// An episode's allocations do not grow with its steps: the cores, the network and the
// accumulation allocate nothing per step (only the plant's noise source, once per episode;
// agents reseed the one they keep: at 10,000 agents that was 20,000 allocations an episode).
func TestStepsDoNotAllocate(t *testing.T) {
	episodeAllocs := func(s *scenario.Scenario, steps int) float64 {
		s = s.Clone()
		s.Steps = steps
		p := planOf(t, s)
		acc, err := metrics.NewAccumulator(p, 1)
		require.NoError(t, err)
		ns, err := newNetSim(p, 1, acc, nil, sim.Blocks{Size: 1})
		require.NoError(t, err)
		e := acc.NewEpisode(0)
		ep := 0
		run := func() {
			e.Reset(ep)
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

// The engine reports the Accumulator's Results (the clamped ones, see metrics' tests).
func TestRunReportsAccumulatorResults(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	acc, err := metrics.NewAccumulator(p, 1)
	require.NoError(t, err)
	_, tr := runFast(t, p, 1, Options{Runs: 3, KeepTraces: true})
	for i := range tr.Control {
		require.NoError(t, acc.AddControl(&tr.Control[i]))
	}
	res := acc.Results()
	fr, _ := runFast(t, p, 1, Options{Runs: 3})
	require.Equal(t, res, fr, "Run reports the Accumulator's Results")
}
