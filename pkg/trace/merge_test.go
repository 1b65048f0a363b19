package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/stretchr/testify/require"
)

// trace.Traces round-trip through JSON lines bit for bit; malformed input names the line.
func TestTraceRoundTrip(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	_, tr := runFast(t, p, 4, engine.Options{Runs: 3, KeepTraces: true})
	var buf bytes.Buffer
	require.NoError(t, trace.Write(&buf, tr.Control))
	require.Equal(t, len(tr.Control), strings.Count(buf.String(), "\n"))
	back, err := trace.Read[trace.ControlRecord](&buf)
	require.NoError(t, err)
	require.Equal(t, tr.Control, back)

	_, pc := loadPlan(t, "consensus-gaussian")
	_, trc := runFast(t, pc, 4, engine.Options{Runs: 2, KeepTraces: true})
	buf.Reset()
	require.NoError(t, trace.Write(&buf, trc.Consensus))
	backC, err := trace.Read[trace.ConsensusRecord](&buf)
	require.NoError(t, err)
	require.Equal(t, trc.Consensus, backC)

	for _, c := range []struct{ in, want string }{
		{`{"episode":0,"step":0}` + "\n" + `{"episode":0,"step":1,"bogus":1}`, "line 2"},
		{"\n\n{nope", "line 3"},
		{`{"episode":0,"step":0} {"episode":0}`, "line 1: more than one"},
	} {
		_, err := trace.Read[trace.ControlRecord](strings.NewReader(c.in))
		require.ErrorContains(t, err, c.want)
	}
	err = trace.Write(&buf, []trace.ControlRecord{{X: []float64{nan()}}})
	require.ErrorContains(t, err, "episode 0 step 0")
}

// Splitting the engine's records by role and merging them back gives the same records; a missing
// piece is reported and leaves its episode out of the Results.
func TestMergeControl(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	res, tr := runFast(t, p, 8, engine.Options{Runs: 4, KeepTraces: true})
	var plant, cloud, eve []trace.ControlRecord
	for _, r := range tr.Control {
		plant = append(plant, trace.ControlRecord{Episode: r.Episode, Step: r.Step, X: r.X, Yhat: r.Yhat})
		if r.Step < p.Steps {
			cloud = append(cloud, trace.ControlRecord{Episode: r.Episode, Step: r.Step, U: r.U, Xhat: r.Xhat})
			eve = append(eve, trace.ControlRecord{Episode: r.Episode, Step: r.Step, EveX0: r.EveX0})
		}
	}
	merged, missing, err := trace.MergeControl(p.Steps, p.Reference, plant, cloud, eve)
	require.NoError(t, err)
	require.Empty(t, missing)
	require.NoError(t, trace.MissingError(missing))
	require.Equal(t, tr.Control, merged)

	// Drop the plant's step 17 of episode 2 and the cloud's step 3 of episode 1.
	plant2 := append([]trace.ControlRecord(nil), plant...)
	plant2 = append(plant2[:2*(p.Steps+1)+17], plant2[2*(p.Steps+1)+18:]...)
	cloud2 := append(append([]trace.ControlRecord(nil), cloud[:p.Steps+3]...), cloud[p.Steps+4:]...)
	merged, missing, err = trace.MergeControl(p.Steps, p.Reference, plant2, cloud2, eve)
	require.NoError(t, err)
	require.Equal(t, []trace.Missing{{1, 3, endpoint.Cloud.String(), -1}, {2, 17, endpoint.Plant.String(), -1}}, missing)
	require.ErrorContains(t, trace.MissingError(missing), "episode 2 step 17: plant")
	got, err := metrics.AggregateControl(p, 8, merged)
	require.NoError(t, err)
	require.Equal(t, []int{2}, got.IncompleteEpisodes)
	require.Equal(t, 3, got.Runs)
	require.Equal(t, 4, res.Runs)

	_, _, err = trace.MergeControl(p.Steps, nil, append(plant, plant[0]), cloud, eve)
	require.ErrorContains(t, err, "twice")
}

func TestMergeConsensus(t *testing.T) {
	_, p := loadPlan(t, "consensus-gaussian")
	n, T := p.Graph.N, p.Steps
	res, tr := runFast(t, p, 8, engine.Options{Runs: 3, KeepTraces: true})
	var agents []trace.AgentRecord
	var eve []trace.ConsensusRecord
	for _, r := range tr.Consensus {
		for i := 0; i < n; i++ {
			a := trace.AgentRecord{Episode: r.Episode, Step: r.Step, Agent: i, X: r.X[i]}
			if r.Step < T {
				y := r.Y[i]
				a.Y = &y
			}
			agents = append(agents, a)
		}
		if r.Step < T {
			eve = append(eve, trace.ConsensusRecord{Episode: r.Episode, Step: r.Step, EveX0: r.EveX0})
		}
	}
	// Agent records travel as JSON lines too.
	var buf bytes.Buffer
	require.NoError(t, trace.Write(&buf, agents))
	agents2, err := trace.Read[trace.AgentRecord](&buf)
	require.NoError(t, err)
	require.Equal(t, agents, agents2)

	merged, missing, err := trace.MergeConsensus(n, T, agents2, eve)
	require.NoError(t, err)
	require.Empty(t, missing)
	require.Equal(t, tr.Consensus, merged)
	got, err := metrics.AggregateConsensus(p, 8, merged)
	require.NoError(t, err)
	require.Equal(t, res, got)

	// Agent 4 misses step 5 of episode 0.
	var drop []trace.AgentRecord
	for _, a := range agents {
		if !(a.Episode == 0 && a.Step == 5 && a.Agent == 4) {
			drop = append(drop, a)
		}
	}
	merged, missing, err = trace.MergeConsensus(n, T, drop, eve)
	require.NoError(t, err)
	require.Equal(t, []trace.Missing{{0, 5, endpoint.Agent.String(), 4}}, missing)
	require.Nil(t, merged[5].X)
	got, err = metrics.AggregateConsensus(p, 8, merged)
	require.NoError(t, err)
	require.Equal(t, 2, got.Runs)
	require.Equal(t, []int{0}, got.IncompleteEpisodes)
}

// splitControl splits engine records into the plant's, cloud's and eavesdropper's partial ones.
func splitControl(steps int, recs []trace.ControlRecord) (plant, cloud, eve []trace.ControlRecord) {
	for _, r := range recs {
		plant = append(plant, trace.ControlRecord{Episode: r.Episode, Step: r.Step, X: r.X, Yhat: r.Yhat})
		if r.Step < steps {
			cloud = append(cloud, trace.ControlRecord{Episode: r.Episode, Step: r.Step, U: r.U, Xhat: r.Xhat})
			eve = append(eve, trace.ControlRecord{Episode: r.Episode, Step: r.Step, EveX0: r.EveX0})
		}
	}
	return plant, cloud, eve
}

func readerOf[R trace.Record](t testing.TB, recs []R) *trace.Reader[R] {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, trace.Write(&buf, recs))
	return trace.NewReader[R](&buf)
}

// Merging the role streams episode by episode gives the records of the in-memory merge.
func TestMergeControlStreams(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	_, tr := runFast(t, p, 8, engine.Options{Runs: 5, KeepTraces: true})
	plant, cloud, eve := splitControl(p.Steps, tr.Control)
	// The cloud misses step 3 of episode 1; the eavesdropper ran only episodes 0..3.
	cloud = append(append([]trace.ControlRecord(nil), cloud[:p.Steps+3]...), cloud[p.Steps+4:]...)
	eve = eve[:4*p.Steps]
	want, wantMissing, err := trace.MergeControl(p.Steps, p.Reference, plant, cloud, eve)
	require.NoError(t, err)
	var got []trace.ControlRecord
	var missing []trace.Missing
	calls := 0
	err = trace.MergeControlStreams(p.Steps, p.Reference, readerOf(t, plant), readerOf(t, cloud), readerOf(t, eve), func(recs []trace.ControlRecord, ms []trace.Missing) error {
		calls++
		for _, r := range recs {
			require.Equal(t, recs[0].Episode, r.Episode, "one episode per call")
		}
		got = append(got, recs...)
		missing = append(missing, ms...)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 5, calls)
	require.Equal(t, want, got)
	require.Equal(t, wantMissing, missing)
	require.Contains(t, missing, trace.Missing{1, 3, endpoint.Cloud.String(), -1})
	require.Contains(t, missing, trace.Missing{4, 0, endpoint.Eavesdropper.String(), -1})

	// A stream out of episode order, or with a bad line, is an error naming its role; the
	// records before it and the other streams are still merged.
	bad := append(append([]trace.ControlRecord(nil), cloud[2*p.Steps:3*p.Steps]...), cloud[:p.Steps]...)
	n := 0
	err = trace.MergeControlStreams(p.Steps, p.Reference, readerOf(t, plant), readerOf(t, bad), nil, func(recs []trace.ControlRecord, _ []trace.Missing) error {
		n += len(recs)
		return nil
	})
	require.ErrorContains(t, err, "cloud")
	require.ErrorContains(t, err, "not ordered by episode")
	require.Equal(t, len(plant), n, "every plant episode merged")

	var buf bytes.Buffer
	require.NoError(t, trace.Write(&buf, plant[:2*(p.Steps+1)]))
	buf.WriteString("{broken\n")
	n = 0
	err = trace.MergeControlStreams(p.Steps, p.Reference, trace.NewReader[trace.ControlRecord](&buf), readerOf(t, cloud), nil, func(recs []trace.ControlRecord, _ []trace.Missing) error {
		n++
		return nil
	})
	require.ErrorContains(t, err, "plant")
	require.ErrorContains(t, err, fmt.Sprintf("line %d", 2*(p.Steps+1)+1))
	require.Equal(t, 5, n, "the cloud's episodes are still merged")

	// fn's error stops the merge.
	stop := errors.New("stop")
	err = trace.MergeControlStreams(p.Steps, nil, readerOf(t, plant), readerOf(t, cloud), nil, func([]trace.ControlRecord, []trace.Missing) error { return stop })
	require.ErrorIs(t, err, stop)
}

func TestMergeConsensusStreams(t *testing.T) {
	_, p := loadPlan(t, "consensus-gaussian")
	n, T := p.Graph.N, p.Steps
	res, tr := runFast(t, p, 8, engine.Options{Runs: 3, KeepTraces: true})
	// Two agent hosts (0..4, 5..n-1) and the eavesdropper, each writing episode by episode.
	var hosts [2][]trace.AgentRecord
	var eve []trace.ConsensusRecord
	for _, r := range tr.Consensus {
		for i := 0; i < n; i++ {
			a := trace.AgentRecord{Episode: r.Episode, Step: r.Step, Agent: i, X: r.X[i]}
			if r.Step < T {
				y := r.Y[i]
				a.Y = &y
			}
			h := 0
			if i >= 5 {
				h = 1
			}
			hosts[h] = append(hosts[h], a)
		}
		if r.Step < T {
			eve = append(eve, trace.ConsensusRecord{Episode: r.Episode, Step: r.Step, EveX0: r.EveX0})
		}
	}
	collect := func(agents [][]trace.AgentRecord, eve []trace.ConsensusRecord) ([]trace.ConsensusRecord, []trace.Missing, error) {
		var got []trace.ConsensusRecord
		var missing []trace.Missing
		var rs []*trace.Reader[trace.AgentRecord]
		for _, a := range agents {
			rs = append(rs, readerOf(t, a))
		}
		var er *trace.Reader[trace.ConsensusRecord]
		if eve != nil {
			er = readerOf(t, eve)
		}
		next := 0
		err := trace.MergeConsensusStreams(n, T, rs, []string{"agents-0-4", "agents-5-9"}, er, func(r *trace.ConsensusRecord, ms []trace.Missing) error {
			if want := (trace.ConsensusRecord{Episode: next / (T + 1), Step: next % (T + 1)}); r.Episode != want.Episode || r.Step != want.Step {
				return fmt.Errorf("record episode %d step %d, want %d %d", r.Episode, r.Step, want.Episode, want.Step)
			}
			next++
			got = append(got, r.Clone())
			missing = append(missing, ms...)
			return nil
		})
		return got, missing, err
	}
	got, missing, err := collect(hosts[:], eve)
	require.NoError(t, err)
	require.Empty(t, missing)
	require.Equal(t, tr.Consensus, got)
	agg, err := metrics.AggregateConsensus(p, 8, got)
	require.NoError(t, err)
	require.Equal(t, res, agg)

	// Agents of one stream out of step order within an episode (agent 7 runs three steps
	// behind its host's other agents, as unbatched agents sharing a process may): the same
	// records.
	var lagged []trace.AgentRecord
	var behind []trace.AgentRecord
	for _, a := range hosts[1] {
		if a.Agent != 7 {
			lagged = append(lagged, a)
			continue
		}
		behind = append(behind, a)
		if a.Step >= 3 || a.Step == T {
			for _, b := range behind {
				lagged = append(lagged, b)
			}
			behind = behind[:0]
		}
	}
	lagged = append(lagged, behind...)
	require.Len(t, lagged, len(hosts[1]))
	got, missing, err = collect([][]trace.AgentRecord{hosts[0], lagged}, eve)
	require.NoError(t, err)
	require.Empty(t, missing)
	require.Equal(t, tr.Consensus, got)

	// The eavesdropper misses step 4 of episode 1, agent 2 step 6 of episode 2: named, and the
	// rest as before.
	var eveGap []trace.ConsensusRecord
	for _, r := range eve {
		if r.Episode != 1 || r.Step != 4 {
			eveGap = append(eveGap, r)
		}
	}
	var agentGap []trace.AgentRecord
	for _, a := range hosts[0] {
		if a.Episode != 2 || a.Step != 6 || a.Agent != 2 {
			agentGap = append(agentGap, a)
		}
	}
	got, missing, err = collect([][]trace.AgentRecord{agentGap, hosts[1]}, eveGap)
	require.NoError(t, err)
	require.Equal(t, []trace.Missing{{1, 4, endpoint.Eavesdropper.String(), -1}, {2, 6, endpoint.Agent.String(), 2}}, missing)
	require.Len(t, got, len(tr.Consensus))
	require.Nil(t, got[(T+1)+4].EveX0)
	require.Nil(t, got[2*(T+1)+6].X)
	require.Equal(t, tr.Consensus[2*(T+1)+7], got[2*(T+1)+7])

	// A duplicate is an error; a stream out of episode order an error naming it, the rest merged.
	_, _, err = collect([][]trace.AgentRecord{append(slices.Clone(hosts[0]), hosts[0][len(hosts[0])-1]), hosts[1]}, eve)
	require.ErrorContains(t, err, "twice")
	perEp := len(hosts[0]) / 3
	swapped := append(slices.Clone(hosts[0][perEp:2*perEp]), hosts[0][:perEp]...)
	got, missing, err = collect([][]trace.AgentRecord{swapped, hosts[1]}, nil)
	require.ErrorContains(t, err, "agents-0-4")
	require.ErrorContains(t, err, "not ordered by episode")
	require.Len(t, got, 3*(T+1), "episodes 0..2 of the other stream are merged")
	require.NotEmpty(t, missing)
}

// The consensus merge holds a few steps, not an episode: 1,000 agents over 400 steps in two
// streams written step by step (an episode's records would be ~20 MB).
func TestMergeConsensusStreamsMemoryFlat(t *testing.T) {
	const n, T, eps = 1000, 400, 2
	gen := func(lo, hi int) *trace.Reader[trace.AgentRecord] {
		pr, pw := io.Pipe()
		go func() {
			tw := trace.NewWriter[trace.AgentRecord](pw)
			y := 0.5
			for ep := 0; ep < eps; ep++ {
				for s := 0; s <= T; s++ {
					for i := lo; i < hi; i++ {
						r := trace.AgentRecord{Episode: ep, Step: s, Agent: i, X: float64(i)}
						if s < T {
							r.Y = &y
						}
						if err := tw.Write(&r); err != nil {
							pw.CloseWithError(err)
							return
						}
					}
				}
			}
			pw.CloseWithError(tw.Flush())
		}()
		return trace.NewReader[trace.AgentRecord](pr)
	}
	runtime.GC()
	base := liveHeap()
	var peak uint64
	calls := 0
	err := trace.MergeConsensusStreams(n, T, []*trace.Reader[trace.AgentRecord]{gen(0, n/2), gen(n/2, n)}, nil, nil, func(r *trace.ConsensusRecord, ms []trace.Missing) error {
		if len(ms) > 0 || r.X == nil || r.X[n-1] != n-1 {
			return fmt.Errorf("episode %d step %d: missing %v", r.Episode, r.Step, ms)
		}
		calls++
		if calls%50 == 0 {
			runtime.GC()
			peak = max(peak, liveHeap())
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, eps*(T+1), calls)
	growth := int64(peak) - int64(base)
	require.Less(t, growth, int64(2<<20), "live heap grew by %d KB", growth>>10)
}

// genStream writes the partial records of episodes 0..eps-1 of a synthetic 1-state loop as the
// role processes would, on the fly: the merge must read it in constant memory.
func genStream(eps, steps int, role string) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		tw := trace.NewWriter[trace.ControlRecord](pw)
		x, u := []float64{0.5}, []float64{-0.25}
		for ep := 0; ep < eps; ep++ {
			for t := 0; t <= steps; t++ {
				r := trace.ControlRecord{Episode: ep, Step: t}
				switch {
				case role == endpoint.Plant.String():
					r.X = x
					if t < steps {
						r.Yhat = x
					}
				case t == steps:
					continue
				case role == endpoint.Cloud.String():
					r.U, r.Xhat = u, x
				default:
					r.EveX0 = x
				}
				if err := tw.Write(&r); err != nil {
					pw.CloseWithError(err)
					return
				}
			}
		}
		pw.CloseWithError(tw.Flush())
	}()
	return pr
}

// The stream merge holds one episode at a time: merging 6000 episodes of three roles (the
// size of the whole merged trace grows with the episodes, the live heap does not).
func TestMergeStreamsMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("6000 episodes")
	}
	const eps, steps = 6000, 10
	runtime.GC()
	base := liveHeap()
	var peak uint64
	seen := 0
	err := trace.MergeControlStreams(steps, dynamics.ZeroReference{N: 1},
		trace.NewReader[trace.ControlRecord](genStream(eps, steps, endpoint.Plant.String())),
		trace.NewReader[trace.ControlRecord](genStream(eps, steps, endpoint.Cloud.String())),
		trace.NewReader[trace.ControlRecord](genStream(eps, steps, endpoint.Eavesdropper.String())),
		func(recs []trace.ControlRecord, ms []trace.Missing) error {
			if len(ms) > 0 {
				return fmt.Errorf("missing %v", ms)
			}
			if recs[0].Episode != seen {
				return fmt.Errorf("episode %d, want %d", recs[0].Episode, seen)
			}
			seen++
			if seen%500 == 0 {
				runtime.GC()
				peak = max(peak, liveHeap())
			}
			return nil
		})
	require.NoError(t, err)
	require.Equal(t, eps, seen)
	growth := int64(peak) - int64(base)
	// Reading everything first (what the launcher used to do) holds 6000 x 11 x 3 records.
	require.Less(t, growth, int64(4<<20), "live heap grew by %d KB", growth>>10)
}

func TestTraceReader(t *testing.T) {
	r := trace.NewReader[trace.ControlRecord](strings.NewReader("\n" + `{"episode":0,"step":0}` + "\n" + `{"episode":1,"step":0}` + "\n"))
	ep, ok := r.Peek()
	require.True(t, ok)
	require.Equal(t, 0, ep)
	recs, err := r.ReadEpisode(0, nil)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	recs, err = r.ReadEpisode(1, recs[:0])
	require.NoError(t, err)
	require.Equal(t, []trace.ControlRecord{{Episode: 1}}, recs)
	_, err = r.Read()
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, r.Err())
	_, ok = r.Peek()
	require.False(t, ok)

	r = trace.NewReader[trace.ControlRecord](strings.NewReader(`{"episode":0,"step":0,"nope":1}`))
	_, err = r.Read()
	require.ErrorContains(t, err, "line 1")
	require.Error(t, r.Err())
}

func TestMissingErrorN(t *testing.T) {
	ms := []trace.Missing{{0, 1, endpoint.Plant.String(), -1}, {0, 2, endpoint.Plant.String(), -1}}
	require.ErrorContains(t, trace.MissingErrorN(ms, 2000), "and 1998 more")
	require.NoError(t, trace.MissingErrorN(nil, 0))
	require.EqualError(t, trace.MissingError(ms), "trace: missing record pieces: [episode 0 step 1: plant episode 0 step 2: plant]")
}

// liveHeap is the bytes of allocated heap objects (call runtime.GC first for the live ones).
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
