package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The same seed gives bit-identical Results and traces whatever the number of workers; another
// seed gives different numbers.
func TestDeterministicAcrossWorkers(t *testing.T) {
	for _, name := range []string{"cloud-vehicle", "consensus-laplace"} {
		t.Run(name, func(t *testing.T) {
			_, p := loadPlan(t, name)
			o := FastOptions{Runs: 120, KeepTraces: true, TraceEpisodes: 7}
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

			r2, _ := runFast(t, p, 12, FastOptions{Runs: 120, Workers: 4})
			require.Equal(t, 120, r2.Runs)
			j2, err := json.Marshal(r2)
			require.NoError(t, err)
			require.False(t, bytes.Equal(j1, j2), "a different seed must change the numbers")
		})
	}
}

// The Accumulator is the single implementation of the metrics: feeding the engine's traces to it
// in a shuffled order reproduces the engine's Results bit for bit.
func TestAccumulatorOrderIndependent(t *testing.T) {
	_, pv := loadPlan(t, "cloud-vehicle")
	res, tr := runFast(t, pv, 21, FastOptions{Runs: 40, KeepTraces: true})
	recs := append([]ControlRecord(nil), tr.Control...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	got, err := AggregateControl(pv, 21, recs)
	require.NoError(t, err)
	require.Equal(t, res, got)

	_, pc := loadPlan(t, "consensus-gaussian")
	resC, trC := runFast(t, pc, 21, FastOptions{Runs: 40, KeepTraces: true})
	crecs := append([]ConsensusRecord(nil), trC.Consensus...)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(crecs), func(i, j int) { crecs[i], crecs[j] = crecs[j], crecs[i] })
	gotC, err := AggregateConsensus(pc, 21, crecs)
	require.NoError(t, err)
	require.Equal(t, resC, gotC)

	// Without Ref the accumulator computes x_r(t) from the plan: same numbers.
	for i := range recs {
		recs[i].Ref = nil
	}
	got, err = AggregateControl(pv, 21, recs)
	require.NoError(t, err)
	require.Equal(t, res, got)
}

func TestAccumulatorRejectsBadRecords(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	for _, c := range []struct {
		name string
		rec  ControlRecord
		want string
	}{
		{"step beyond T", ControlRecord{Step: 101, X: []float64{0, 0}}, "outside 0..100"},
		{"negative episode", ControlRecord{Episode: -1, X: []float64{0, 0}}, "negative"},
		{"short x", ControlRecord{X: []float64{0}}, "x has 1 values, want 2"},
		{"nan x", ControlRecord{X: []float64{0, nan()}}, "not finite"},
		{"eve at T", ControlRecord{Step: 100, X: []float64{0, 0}, EveX0: []float64{0, 0}}, "final step"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewAccumulator(p, 1)
			require.NoError(t, err)
			require.ErrorContains(t, a.AddControl(&c.rec), c.want)
		})
	}
	a, err := NewAccumulator(p, 1)
	require.NoError(t, err)
	r := ControlRecord{X: []float64{0, 0}}
	require.NoError(t, a.AddControl(&r))
	require.ErrorContains(t, a.AddControl(&r), "twice")
	require.ErrorContains(t, a.AddConsensus(&ConsensusRecord{X: []float64{0}}), "consensus record")
	// A record without X (a missing piece) is ignored; the episode stays incomplete.
	require.NoError(t, a.AddControl(&ControlRecord{Episode: 1, Step: 3}))
	res := a.Results()
	require.Equal(t, 0, res.Runs)
	require.Equal(t, []int{0}, res.IncompleteEpisodes)
}

// Cancelling returns the Results of the finished episodes with an error wrapping the cause.
func TestRunFastCancel(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, _, err := RunFast(ctx, p, 1, FastOptions{Runs: 100000, Workers: 2, Progress: func(done, total int) {
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
	res, tr := runFast(t, p, 1, FastOptions{Runs: 9, Workers: 3, Progress: func(done, total int) {
		calls++
		require.Equal(t, calls, done)
		require.Equal(t, 9, total)
	}})
	require.Equal(t, 9, calls)
	require.Equal(t, 9, res.Runs)
	require.Nil(t, tr)
	_, _, err := RunFast(context.Background(), p, 1, FastOptions{Runs: -1})
	require.ErrorContains(t, err, "runs -1")
}

// Traces round-trip through JSON lines bit for bit; malformed input names the line.
func TestTraceRoundTrip(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	_, tr := runFast(t, p, 4, FastOptions{Runs: 3, KeepTraces: true})
	var buf bytes.Buffer
	require.NoError(t, WriteTrace(&buf, tr.Control))
	require.Equal(t, len(tr.Control), strings.Count(buf.String(), "\n"))
	back, err := ReadTrace[ControlRecord](&buf)
	require.NoError(t, err)
	require.Equal(t, tr.Control, back)

	_, pc := loadPlan(t, "consensus-gaussian")
	_, trc := runFast(t, pc, 4, FastOptions{Runs: 2, KeepTraces: true})
	buf.Reset()
	require.NoError(t, WriteTrace(&buf, trc.Consensus))
	backC, err := ReadTrace[ConsensusRecord](&buf)
	require.NoError(t, err)
	require.Equal(t, trc.Consensus, backC)

	for _, c := range []struct{ in, want string }{
		{`{"episode":0,"step":0}` + "\n" + `{"episode":0,"step":1,"bogus":1}`, "line 2"},
		{"\n\n{nope", "line 3"},
		{`{"episode":0,"step":0} {"episode":0}`, "line 1: more than one"},
	} {
		_, err := ReadTrace[ControlRecord](strings.NewReader(c.in))
		require.ErrorContains(t, err, c.want)
	}
	err = WriteTrace(&buf, []ControlRecord{{X: []float64{nan()}}})
	require.ErrorContains(t, err, "episode 0 step 0")
}

// Splitting the engine's records by role and merging them back gives the same records; a missing
// piece is reported and leaves its episode out of the Results.
func TestMergeControl(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	res, tr := runFast(t, p, 8, FastOptions{Runs: 4, KeepTraces: true})
	var plant, cloud, eve []ControlRecord
	for _, r := range tr.Control {
		plant = append(plant, ControlRecord{Episode: r.Episode, Step: r.Step, X: r.X, Yhat: r.Yhat})
		if r.Step < p.Steps {
			cloud = append(cloud, ControlRecord{Episode: r.Episode, Step: r.Step, U: r.U, Xhat: r.Xhat})
			eve = append(eve, ControlRecord{Episode: r.Episode, Step: r.Step, EveX0: r.EveX0})
		}
	}
	merged, missing, err := MergeControl(p.Steps, p.Reference, plant, cloud, eve)
	require.NoError(t, err)
	require.Empty(t, missing)
	require.NoError(t, MissingError(missing))
	require.Equal(t, tr.Control, merged)

	// Drop the plant's step 17 of episode 2 and the cloud's step 3 of episode 1.
	plant2 := append([]ControlRecord(nil), plant...)
	plant2 = append(plant2[:2*(p.Steps+1)+17], plant2[2*(p.Steps+1)+18:]...)
	cloud2 := append(append([]ControlRecord(nil), cloud[:p.Steps+3]...), cloud[p.Steps+4:]...)
	merged, missing, err = MergeControl(p.Steps, p.Reference, plant2, cloud2, eve)
	require.NoError(t, err)
	require.Equal(t, []Missing{{1, 3, RoleCloud.String(), -1}, {2, 17, RolePlant.String(), -1}}, missing)
	require.ErrorContains(t, MissingError(missing), "episode 2 step 17: plant")
	got, err := AggregateControl(p, 8, merged)
	require.NoError(t, err)
	require.Equal(t, []int{2}, got.IncompleteEpisodes)
	require.Equal(t, 3, got.Runs)
	require.Equal(t, 4, res.Runs)

	_, _, err = MergeControl(p.Steps, nil, append(plant, plant[0]), cloud, eve)
	require.ErrorContains(t, err, "twice")
}

func TestMergeConsensus(t *testing.T) {
	_, p := loadPlan(t, "consensus-gaussian")
	n, T := p.Graph.N, p.Steps
	res, tr := runFast(t, p, 8, FastOptions{Runs: 3, KeepTraces: true})
	var agents []AgentRecord
	var eve []ConsensusRecord
	for _, r := range tr.Consensus {
		for i := 0; i < n; i++ {
			a := AgentRecord{Episode: r.Episode, Step: r.Step, Agent: i, X: r.X[i]}
			if r.Step < T {
				y := r.Y[i]
				a.Y = &y
			}
			agents = append(agents, a)
		}
		if r.Step < T {
			eve = append(eve, ConsensusRecord{Episode: r.Episode, Step: r.Step, EveX0: r.EveX0})
		}
	}
	// Agent records travel as JSON lines too.
	var buf bytes.Buffer
	require.NoError(t, WriteTrace(&buf, agents))
	agents2, err := ReadTrace[AgentRecord](&buf)
	require.NoError(t, err)
	require.Equal(t, agents, agents2)

	merged, missing, err := MergeConsensus(n, T, agents2, eve)
	require.NoError(t, err)
	require.Empty(t, missing)
	require.Equal(t, tr.Consensus, merged)
	got, err := AggregateConsensus(p, 8, merged)
	require.NoError(t, err)
	require.Equal(t, res, got)

	// Agent 4 misses step 5 of episode 0.
	var drop []AgentRecord
	for _, a := range agents {
		if !(a.Episode == 0 && a.Step == 5 && a.Agent == 4) {
			drop = append(drop, a)
		}
	}
	merged, missing, err = MergeConsensus(n, T, drop, eve)
	require.NoError(t, err)
	require.Equal(t, []Missing{{0, 5, RoleAgent.String(), 4}}, missing)
	require.Nil(t, merged[5].X)
	got, err = AggregateConsensus(p, 8, merged)
	require.NoError(t, err)
	require.Equal(t, 2, got.Runs)
	require.Equal(t, []int{0}, got.IncompleteEpisodes)
}

// The Results JSON shape is a contract (summary.json "metrics"): the documented keys are there.
func TestResultsJSONShape(t *testing.T) {
	_, pv := loadPlan(t, "cloud-vehicle")
	rv, _ := runFast(t, pv, 1, FastOptions{Runs: 5})
	_, pc := loadPlan(t, "consensus-gaussian")
	rc, _ := runFast(t, pc, 1, FastOptions{Runs: 5})
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

// With more agents than MaxDeviationAgents, the accumulator keeps the deviation series of
// evenly spaced agents only (first and last among them) - exactly those agents' numbers - and
// max_abs_deviation over every agent: results and memory are O(T), not O(N T).
func TestDeviationTrackedAgents(t *testing.T) {
	require.Equal(t, []int{0, 1, 2}, TrackedAgents(3))
	tr := TrackedAgents(1000)
	require.Len(t, tr, MaxDeviationAgents)
	require.Equal(t, 0, tr[0])
	require.Equal(t, 999, tr[len(tr)-1])
	require.True(t, slices.IsSorted(tr))

	const n, steps, runs = 200, 6, 3
	p := planOf(t, largeConsensus(t, n, steps))
	acc, err := NewAccumulator(p, 1)
	require.NoError(t, err)
	// x_i(t) = i + ep*t: x* = mean of x(0) = (n-1)/2 in every episode.
	xstar := float64(n-1) / 2
	for ep := 0; ep < runs; ep++ {
		for st := 0; st <= steps; st++ {
			x := make([]float64, n)
			for i := range x {
				x[i] = float64(i) + float64(ep*st)
			}
			require.NoError(t, acc.AddConsensus(&ConsensusRecord{Episode: ep, Step: st, X: x}))
		}
	}
	c := acc.Results().Consensus
	require.Equal(t, TrackedAgents(n), c.DeviationAgents)
	require.Len(t, c.Deviation, MaxDeviationAgents)
	for k, i := range c.DeviationAgents {
		for st := 0; st <= steps; st++ {
			// mean over episodes of i + ep*t - x* = i - x* + t (0+1+2)/3
			require.InDelta(t, float64(i)-xstar+float64(st), c.Deviation[k].Mean[st], 1e-9, "agent %d step %d", i, st)
		}
	}
	for st := 0; st <= steps; st++ {
		// max_i |i + ep*t - x*| = x* + ep*t (agent n-1), mean over episodes x* + t
		require.InDelta(t, xstar+float64(st), c.MaxAbsDeviation.Mean[st], 1e-9, "step %d", st)
	}
}
