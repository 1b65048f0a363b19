package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/dynamics"
)

// A TraceSink receives every traced episode once, in episode order, whatever the number of
// workers, with exactly the records KeepTraces returns; the engine then keeps none itself.
func TestTraceSinkOrderedAndEqual(t *testing.T) {
	for _, name := range []string{"cloud-vehicle", "consensus-laplace"} {
		t.Run(name, func(t *testing.T) {
			_, p := loadPlan(t, name)
			res, kept := runFast(t, p, 3, FastOptions{Runs: 60, KeepTraces: true, TraceEpisodes: 9, Workers: 1})
			var got Traces
			next := 0
			res4, tr4, err := RunFast(context.Background(), p, 3, FastOptions{Runs: 60, TraceEpisodes: 9, Workers: 4,
				TraceSink: func(tr *Traces) error {
					recs := len(tr.Control) + len(tr.Consensus)
					require.Equal(t, p.Steps+1, recs, "one call per episode, steps 0..T")
					ep := -1
					if len(tr.Control) > 0 {
						ep = tr.Control[0].Episode
					} else {
						ep = tr.Consensus[0].Episode
					}
					require.Equal(t, next, ep, "episodes in order")
					next++
					got.Control = append(got.Control, tr.Control...)
					got.Consensus = append(got.Consensus, tr.Consensus...)
					return nil
				}})
			require.NoError(t, err)
			require.Nil(t, tr4, "with a sink and no KeepTraces nothing is accumulated")
			require.Equal(t, 9, next)
			require.Equal(t, kept, &got)
			require.Equal(t, res, withoutLinks(res4))
		})
	}
}

// A sink error stops the run and is returned.
func TestTraceSinkError(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	boom := errors.New("disk full")
	calls := 0
	res, _, err := RunFast(context.Background(), p, 1, FastOptions{Runs: 5000, Workers: 2, TraceSink: func(*Traces) error {
		calls++
		if calls == 3 {
			return boom
		}
		return nil
	}})
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "trace")
	require.Equal(t, 3, calls, "no call after the error")
	require.Less(t, res.Runs, 5000, "the run stopped")
}

// Memory does not grow with the runs: streaming every episode's records through a sink (what
// `dpsim run --engine fast --trace-episodes -1` does) keeps the live heap flat. The records
// of 8000 vehicle episodes are about 250 MB when kept.
func TestRunFastMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("8000 episodes")
	}
	_, p := loadPlan(t, "cloud-vehicle")
	runtime.GC()
	base := liveHeap()
	var peak uint64
	eps := 0
	_, tr, err := RunFast(context.Background(), p, 1, FastOptions{Runs: 8000, TraceSink: func(tr *Traces) error {
		eps++
		if eps%500 == 0 {
			runtime.GC()
			peak = max(peak, liveHeap())
		}
		return nil
	}})
	require.NoError(t, err)
	require.Nil(t, tr)
	require.Equal(t, 8000, eps, "every episode streamed")
	growth := int64(peak) - int64(base)
	require.Less(t, growth, int64(16<<20), "live heap grew by %d MB over 8000 episodes", growth>>20)
}

// Accumulator.Results clamps the lower 95% limit of the nonnegative quantities at 0 (a normal
// interval mean - 1.96 SE can go below 0 with few runs); the signed ones keep theirs.
func TestResultsClampNonnegative(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	acc, err := NewAccumulator(p, 1)
	require.NoError(t, err)
	_, tr := runFast(t, p, 1, FastOptions{Runs: 3, KeepTraces: true})
	for i := range tr.Control {
		require.NoError(t, acc.AddControl(&tr.Control[i]))
	}
	raw := acc.results() // before the clamp
	negative := 0
	for _, s := range raw.Control.TrackingSqError {
		for _, lo := range s.Lo {
			if lo < 0 {
				negative++
			}
		}
	}
	require.Positive(t, negative, "3 runs: the raw intervals of some mean squares go below 0")
	res := acc.Results()
	for i, s := range res.Control.TrackingSqError {
		for k, lo := range s.Lo {
			require.GreaterOrEqual(t, lo, 0.0, "tracking_sq_error[%d] step %d", i, k)
			require.Equal(t, raw.Control.TrackingSqError[i].Hi[k], s.Hi[k])
			require.Equal(t, raw.Control.TrackingSqError[i].Mean[k], s.Mean[k])
		}
	}
	for _, st := range res.Control.FinalSqError {
		require.GreaterOrEqual(t, st.Lo, 0.0)
	}
	for _, lo := range res.Control.EveSqError.Lo {
		require.GreaterOrEqual(t, lo, 0.0)
	}
	signed := 0
	for _, lo := range res.Control.TrackingError[0].Lo {
		if lo < 0 {
			signed++
		}
	}
	require.Positive(t, signed, "tracking errors are signed: their intervals are not clamped")
	fr, _ := runFast(t, p, 1, FastOptions{Runs: 3})
	require.Equal(t, res, fr, "RunFast reports the Accumulator's Results")
}

// splitControl splits engine records into the plant's, cloud's and eavesdropper's partial ones.
func splitControl(steps int, recs []ControlRecord) (plant, cloud, eve []ControlRecord) {
	for _, r := range recs {
		plant = append(plant, ControlRecord{Episode: r.Episode, Step: r.Step, X: r.X, Yhat: r.Yhat})
		if r.Step < steps {
			cloud = append(cloud, ControlRecord{Episode: r.Episode, Step: r.Step, U: r.U, Xhat: r.Xhat})
			eve = append(eve, ControlRecord{Episode: r.Episode, Step: r.Step, EveX0: r.EveX0})
		}
	}
	return plant, cloud, eve
}

func readerOf[R Record](t testing.TB, recs []R) *TraceReader[R] {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteTrace(&buf, recs))
	return NewTraceReader[R](&buf)
}

// Merging the role streams episode by episode gives the records of the in-memory merge.
func TestMergeControlStreams(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	_, tr := runFast(t, p, 8, FastOptions{Runs: 5, KeepTraces: true})
	plant, cloud, eve := splitControl(p.Steps, tr.Control)
	// The cloud misses step 3 of episode 1; the eavesdropper ran only episodes 0..3.
	cloud = append(append([]ControlRecord(nil), cloud[:p.Steps+3]...), cloud[p.Steps+4:]...)
	eve = eve[:4*p.Steps]
	want, wantMissing, err := MergeControl(p.Steps, p.Reference, plant, cloud, eve)
	require.NoError(t, err)
	var got []ControlRecord
	var missing []Missing
	calls := 0
	err = MergeControlStreams(p.Steps, p.Reference, readerOf(t, plant), readerOf(t, cloud), readerOf(t, eve), func(recs []ControlRecord, ms []Missing) error {
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
	require.Contains(t, missing, Missing{1, 3, RoleCloud.String(), -1})
	require.Contains(t, missing, Missing{4, 0, RoleEavesdropper.String(), -1})

	// A stream out of episode order, or with a bad line, is an error naming its role; the
	// records before it and the other streams are still merged.
	bad := append(append([]ControlRecord(nil), cloud[2*p.Steps:3*p.Steps]...), cloud[:p.Steps]...)
	n := 0
	err = MergeControlStreams(p.Steps, p.Reference, readerOf(t, plant), readerOf(t, bad), nil, func(recs []ControlRecord, _ []Missing) error {
		n += len(recs)
		return nil
	})
	require.ErrorContains(t, err, "cloud")
	require.ErrorContains(t, err, "not ordered by episode")
	require.Equal(t, len(plant), n, "every plant episode merged")

	var buf bytes.Buffer
	require.NoError(t, WriteTrace(&buf, plant[:2*(p.Steps+1)]))
	buf.WriteString("{broken\n")
	n = 0
	err = MergeControlStreams(p.Steps, p.Reference, NewTraceReader[ControlRecord](&buf), readerOf(t, cloud), nil, func(recs []ControlRecord, _ []Missing) error {
		n++
		return nil
	})
	require.ErrorContains(t, err, "plant")
	require.ErrorContains(t, err, fmt.Sprintf("line %d", 2*(p.Steps+1)+1))
	require.Equal(t, 5, n, "the cloud's episodes are still merged")

	// fn's error stops the merge.
	stop := errors.New("stop")
	err = MergeControlStreams(p.Steps, nil, readerOf(t, plant), readerOf(t, cloud), nil, func([]ControlRecord, []Missing) error { return stop })
	require.ErrorIs(t, err, stop)
}

func TestMergeConsensusStreams(t *testing.T) {
	_, p := loadPlan(t, "consensus-gaussian")
	n, T := p.Graph.N, p.Steps
	res, tr := runFast(t, p, 8, FastOptions{Runs: 3, KeepTraces: true})
	// Two agent hosts (0..4, 5..n-1) and the eavesdropper, each writing episode by episode.
	var hosts [2][]AgentRecord
	var eve []ConsensusRecord
	for _, r := range tr.Consensus {
		for i := 0; i < n; i++ {
			a := AgentRecord{Episode: r.Episode, Step: r.Step, Agent: i, X: r.X[i]}
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
			eve = append(eve, ConsensusRecord{Episode: r.Episode, Step: r.Step, EveX0: r.EveX0})
		}
	}
	collect := func(agents [][]AgentRecord, eve []ConsensusRecord) ([]ConsensusRecord, []Missing, error) {
		var got []ConsensusRecord
		var missing []Missing
		var rs []*TraceReader[AgentRecord]
		for _, a := range agents {
			rs = append(rs, readerOf(t, a))
		}
		var er *TraceReader[ConsensusRecord]
		if eve != nil {
			er = readerOf(t, eve)
		}
		next := 0
		err := MergeConsensusStreams(n, T, rs, []string{"agents-0-4", "agents-5-9"}, er, func(r *ConsensusRecord, ms []Missing) error {
			if want := (ConsensusRecord{Episode: next / (T + 1), Step: next % (T + 1)}); r.Episode != want.Episode || r.Step != want.Step {
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
	agg, err := AggregateConsensus(p, 8, got)
	require.NoError(t, err)
	require.Equal(t, res, agg)

	// Agents of one stream out of step order within an episode (agent 7 runs three steps
	// behind its host's other agents, as unbatched agents sharing a process may): the same
	// records.
	var lagged []AgentRecord
	var behind []AgentRecord
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
	got, missing, err = collect([][]AgentRecord{hosts[0], lagged}, eve)
	require.NoError(t, err)
	require.Empty(t, missing)
	require.Equal(t, tr.Consensus, got)

	// The eavesdropper misses step 4 of episode 1, agent 2 step 6 of episode 2: named, and the
	// rest as before.
	var eveGap []ConsensusRecord
	for _, r := range eve {
		if r.Episode != 1 || r.Step != 4 {
			eveGap = append(eveGap, r)
		}
	}
	var agentGap []AgentRecord
	for _, a := range hosts[0] {
		if a.Episode != 2 || a.Step != 6 || a.Agent != 2 {
			agentGap = append(agentGap, a)
		}
	}
	got, missing, err = collect([][]AgentRecord{agentGap, hosts[1]}, eveGap)
	require.NoError(t, err)
	require.Equal(t, []Missing{{1, 4, RoleEavesdropper.String(), -1}, {2, 6, RoleAgent.String(), 2}}, missing)
	require.Len(t, got, len(tr.Consensus))
	require.Nil(t, got[(T+1)+4].EveX0)
	require.Nil(t, got[2*(T+1)+6].X)
	require.Equal(t, tr.Consensus[2*(T+1)+7], got[2*(T+1)+7])

	// A duplicate is an error; a stream out of episode order an error naming it, the rest merged.
	_, _, err = collect([][]AgentRecord{append(slices.Clone(hosts[0]), hosts[0][len(hosts[0])-1]), hosts[1]}, eve)
	require.ErrorContains(t, err, "twice")
	perEp := len(hosts[0]) / 3
	swapped := append(slices.Clone(hosts[0][perEp:2*perEp]), hosts[0][:perEp]...)
	got, missing, err = collect([][]AgentRecord{swapped, hosts[1]}, nil)
	require.ErrorContains(t, err, "agents-0-4")
	require.ErrorContains(t, err, "not ordered by episode")
	require.Len(t, got, 3*(T+1), "episodes 0..2 of the other stream are merged")
	require.NotEmpty(t, missing)
}

// The consensus merge holds a few steps, not an episode: 1,000 agents over 400 steps in two
// streams written step by step (an episode's records would be ~20 MB).
func TestMergeConsensusStreamsMemoryFlat(t *testing.T) {
	const n, T, eps = 1000, 400, 2
	gen := func(lo, hi int) *TraceReader[AgentRecord] {
		pr, pw := io.Pipe()
		go func() {
			tw := NewTraceWriter[AgentRecord](pw)
			y := 0.5
			for ep := 0; ep < eps; ep++ {
				for s := 0; s <= T; s++ {
					for i := lo; i < hi; i++ {
						r := AgentRecord{Episode: ep, Step: s, Agent: i, X: float64(i)}
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
		return NewTraceReader[AgentRecord](pr)
	}
	runtime.GC()
	base := liveHeap()
	var peak uint64
	calls := 0
	err := MergeConsensusStreams(n, T, []*TraceReader[AgentRecord]{gen(0, n/2), gen(n/2, n)}, nil, nil, func(r *ConsensusRecord, ms []Missing) error {
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
		tw := NewTraceWriter[ControlRecord](pw)
		x, u := []float64{0.5}, []float64{-0.25}
		for ep := 0; ep < eps; ep++ {
			for t := 0; t <= steps; t++ {
				r := ControlRecord{Episode: ep, Step: t}
				switch {
				case role == RolePlant.String():
					r.X = x
					if t < steps {
						r.Yhat = x
					}
				case t == steps:
					continue
				case role == RoleCloud.String():
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
	err := MergeControlStreams(steps, dynamics.ZeroReference{N: 1},
		NewTraceReader[ControlRecord](genStream(eps, steps, RolePlant.String())),
		NewTraceReader[ControlRecord](genStream(eps, steps, RoleCloud.String())),
		NewTraceReader[ControlRecord](genStream(eps, steps, RoleEavesdropper.String())),
		func(recs []ControlRecord, ms []Missing) error {
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
	r := NewTraceReader[ControlRecord](strings.NewReader("\n" + `{"episode":0,"step":0}` + "\n" + `{"episode":1,"step":0}` + "\n"))
	ep, ok := r.Peek()
	require.True(t, ok)
	require.Equal(t, 0, ep)
	recs, err := r.ReadEpisode(0, nil)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	recs, err = r.ReadEpisode(1, recs[:0])
	require.NoError(t, err)
	require.Equal(t, []ControlRecord{{Episode: 1}}, recs)
	_, err = r.Read()
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, r.Err())
	_, ok = r.Peek()
	require.False(t, ok)

	r = NewTraceReader[ControlRecord](strings.NewReader(`{"episode":0,"step":0,"nope":1}`))
	_, err = r.Read()
	require.ErrorContains(t, err, "line 1")
	require.Error(t, r.Err())
}

func TestMissingErrorN(t *testing.T) {
	ms := []Missing{{0, 1, RolePlant.String(), -1}, {0, 2, RolePlant.String(), -1}}
	require.ErrorContains(t, MissingErrorN(ms, 2000), "and 1998 more")
	require.NoError(t, MissingErrorN(nil, 0))
	require.EqualError(t, MissingError(ms), "sim: missing record pieces: [episode 0 step 1: plant episode 0 step 2: plant]")
}

// liveHeap is the bytes of allocated heap objects (call runtime.GC first for the live ones).
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
