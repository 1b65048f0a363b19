package engine

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/stretchr/testify/require"
)

// A TraceSink receives every traced episode once, in episode order, whatever the number of
// workers, with exactly the records KeepTraces returns; the engine then keeps none itself.
func TestTraceSinkOrderedAndEqual(t *testing.T) {
	for _, name := range []string{"cloud-vehicle", "consensus-laplace"} {
		t.Run(name, func(t *testing.T) {
			_, p := loadPlan(t, name)
			res, kept := runFast(t, p, 3, Options{Runs: 60, KeepTraces: true, TraceEpisodes: trace.FirstEpisodes(9), Workers: 1})
			var got trace.Traces
			next := 0
			res4, tr4, err := Run(context.Background(), p, sim.NewSeeds(3), Options{Runs: 60, TraceEpisodes: trace.FirstEpisodes(9), Workers: 4,
				TraceSink: func(tr *trace.Traces) error {
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
	res, _, err := Run(context.Background(), p, sim.NewSeeds(1), Options{Runs: 5000, Workers: 2, TraceSink: func(*trace.Traces) error {
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
	_, tr, err := Run(context.Background(), p, sim.NewSeeds(1), Options{Runs: 8000, TraceSink: func(tr *trace.Traces) error {
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

// liveHeap is the bytes of allocated heap objects (call runtime.GC first for the live ones).
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
