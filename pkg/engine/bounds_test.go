package engine

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// peakHeap runs f while sampling the live heap (HeapAlloc: reachable objects plus garbage not
// yet collected) every 5 ms, and returns its maximum above the heap before f.
func peakHeap(t *testing.T, f func()) uint64 {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

// checkThinned checks the shape of a per-step series of steps 0..last: at most metrics.MaxSeriesPoints
// elements, the first step 0 and the last one last, evenly spaced in between.
func checkThinned(t *testing.T, name string, s *metrics.Series, last int) {
	t.Helper()
	require.LessOrEqual(t, s.Len(), metrics.MaxSeriesPoints, name)
	require.Len(t, s.Step, s.Len(), name)
	require.Equal(t, 0, s.StepOf(0), name)
	require.Equal(t, last, s.LastStep(), name)
	stride := s.Step[1] - s.Step[0]
	for k := 1; k < s.Len()-1; k++ {
		require.Equal(t, stride, s.Step[k]-s.Step[k-1], "%s: element %d", name, k)
	}
	require.Greater(t, s.Step[s.Len()-1], s.Step[s.Len()-2], name)
}

// TestLongHorizonBounded is the acceptance case: the vehicle with T = 10^6 steps,
// fast engine, one run. Before, it held every step in the results (6.1 GB, a summary.json over
// 512 MB); now its live heap stays within the engine's per-step buffers (documented in
// EstimateCost; about 160 bytes a step) and the results within metrics.MaxSeriesPoints per series.
func TestLongHorizonBounded(t *testing.T) {
	s := load(t, "cloud-vehicle")
	s.Steps = 1_000_000
	p := planOf(t, s)
	start := time.Now()
	var res *metrics.Results
	peak := peakHeap(t, func() {
		var err error
		res, _, err = Run(context.Background(), p, sim.NewSeeds(7), Options{Runs: 1, Workers: 1})
		require.NoError(t, err)
	})
	t.Logf("T = 10^6, one run: %v, peak heap %.1f MiB", time.Since(start).Round(time.Millisecond), float64(peak)/(1<<20))
	const heapBound = 320 << 20 // 88 MiB measured; 807 MiB before the fix
	require.Less(t, peak, uint64(heapBound), "peak live heap of a 10^6-step run")
	c, err := EstimateCost([]*scenario.Scenario{s}, CostOptions{Runs: 1, Workers: 1})
	require.NoError(t, err)
	require.Greater(t, c.MemoryBytes, int64(peak), "the estimate is an upper bound of the heap: %s", c)

	require.Equal(t, 1, res.Runs)
	for i := range res.Control.TrackingSqError {
		checkThinned(t, "tracking_sq_error", &res.Control.TrackingSqError[i], s.Steps)
		checkThinned(t, "tracking_error", &res.Control.TrackingError[i], s.Steps)
	}
	checkThinned(t, "eve_sq_error", &res.Control.EveSqError, s.Steps-1)
	js, err := json.MarshalIndent(res, "", "  ")
	require.NoError(t, err)
	require.Less(t, len(js), 4<<20, "the results' JSON (summary.json holds it twice)")
	require.LessOrEqual(t, int64(len(js)), c.SummaryBytes, "the estimate of summary.json bounds the metrics")
}

// TestThinnedSeriesExact checks a thinned run against the per-step records it came from: the
// kept steps carry the exact statistics of those steps, the per-run aggregates cover every step,
// and the records in any order give the same metrics.Results, bit for bit.
func TestThinnedSeriesExact(t *testing.T) {
	const T, runs = 4321, 3
	s := load(t, "cloud-vehicle")
	s.Steps = T
	p := planOf(t, s)
	res, tr := runFast(t, p, 11, Options{Runs: runs, KeepTraces: true})
	c := res.Control
	checkThinned(t, "tracking_sq_error", &c.TrackingSqError[0], T)
	checkThinned(t, "eve_sq_error", &c.EveSqError, T-1)

	// (x_0 - x_r,0)^2 per run and step, and its time average over every step.
	sq := make([][]float64, runs)
	for r := range sq {
		sq[r] = make([]float64, T+1)
	}
	for _, rec := range tr.Control {
		e := rec.X[0] - rec.Ref[0]
		sq[rec.Episode][rec.Step] = e * e
	}
	ts := &c.TrackingSqError[0]
	for k := 0; k < ts.Len(); k++ {
		var m float64
		for r := range sq {
			m += sq[r][ts.StepOf(k)] / runs
		}
		require.InDelta(t, m, ts.Mean[k], 1e-12*math.Max(1, math.Abs(m)), "step %d", ts.StepOf(k))
	}
	var avg float64
	for r := range sq {
		var a float64
		for _, v := range sq[r] {
			a += v
		}
		avg += a / float64(T+1) / runs
	}
	require.InDelta(t, avg, c.AvgSqError[0].Mean, 1e-12*avg, "time average over every step")

	recs := append([]trace.ControlRecord(nil), tr.Control...)
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	got, err := metrics.AggregateControl(p, 11, recs)
	require.NoError(t, err)
	require.Equal(t, res, got, "records in any order")
}

// TestThinnedConsensus checks the consensus metrics of a thinned run: the sum drift is a
// maximum over every step, and the series keep their shape.
func TestThinnedConsensus(t *testing.T) {
	const T = 3000
	s := load(t, "consensus-gaussian").Expand()[0]
	s.Steps = T
	p := planOf(t, s)
	res, tr := runFast(t, p, 3, Options{Runs: 2, KeepTraces: true})
	c := res.Consensus
	checkThinned(t, "sq_deviation", &c.SqDeviation, T)
	checkThinned(t, "max_abs_deviation", &c.MaxAbsDeviation, T)
	checkThinned(t, "deviation[0]", &c.Deviation[0], T)
	checkThinned(t, "eve_sq_error", &c.EveSqError, T-1)
	var want float64
	sum0 := map[int]float64{}
	for _, r := range tr.Consensus { // step 0 comes first in each episode's records
		var sum, mx float64
		for _, x := range r.X {
			sum += x
			mx = math.Max(mx, math.Abs(x))
		}
		if r.Step == 0 {
			sum0[r.Episode] = sum
		}
		want = math.Max(want, math.Abs(sum-sum0[r.Episode])/math.Max(math.Abs(sum0[r.Episode]), 100))
	}
	require.Equal(t, want, c.SumRelDevMax, "max over every step (scale: |sum x(0)| = 150 > max |x_i(0)| = 100)")

	crecs := append([]trace.ConsensusRecord(nil), tr.Consensus...)
	rand.New(rand.NewPCG(7, 8)).Shuffle(len(crecs), func(i, j int) { crecs[i], crecs[j] = crecs[j], crecs[i] })
	got, err := metrics.AggregateConsensus(p, 3, crecs)
	require.NoError(t, err)
	require.Equal(t, res, got, "records in any order")
}

// ringScenario is a consensus scenario on a ring of n agents for steps steps.
func ringScenario(t *testing.T, n, steps int) *scenario.Scenario {
	t.Helper()
	s := load(t, "consensus-gaussian").Expand()[0]
	s.Network = &scenario.GraphSpec{Name: "ring", N: n, Weight: 0.25}
	s.X0 = make([]float64, n)
	for i := range s.X0 {
		s.X0[i] = float64(i % 100)
	}
	s.Steps = steps
	return s
}

// TestCostRefusesWhatIsTooBig: the 10^5-node ring (once a 595 MB summary.json with an
// entry per link), 10^4 sweep points and 5 x 10^6 consensus steps are refused at the default
// budget with their estimate and the --budget that would confirm them; every shipped
// scenario and the 10^6-step vehicle are accepted.
func TestCostRefusesWhatIsTooBig(t *testing.T) {
	ring := ringScenario(t, 100_000, 30)
	long := load(t, "consensus-gaussian").Expand()[0]
	long.Steps = 5_000_000
	sweep := load(t, "cloud-vehicle-sweep")
	sweep.Sweeps[0].Numbers = make([]float64, 9999/3) // x 3 noise kinds
	for i := range sweep.Sweeps[0].Numbers {
		sweep.Sweeps[0].Numbers[i] = 0.01 * float64(i+1)
	}
	for _, tc := range []struct {
		name   string
		points []*scenario.Scenario
		over   string
	}{
		{"ring of 10^5 nodes", []*scenario.Scenario{ring}, "summary.json bound"},
		{"5e6 consensus steps", []*scenario.Scenario{long}, "memory budget"},
		{"9999 sweep points", sweep.Expand(), "memory budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			c, err := EstimateCost(tc.points, CostOptions{Runs: 1, Workers: 1})
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			// the estimate builds no plan: a plan of any of these would allocate gigabytes
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<20), "the estimate builds no plan")
			err = CheckCost(c, 0)
			require.ErrorContains(t, err, "estimated cost memory ~")
			require.ErrorContains(t, err, tc.over)
			require.ErrorContains(t, err, "confirm with --budget ")
			need := err.Error()[strings.LastIndex(err.Error(), "--budget ")+len("--budget "):]
			b, perr := ParseBytes(strings.ReplaceAll(need, " ", ""))
			require.NoError(t, perr)
			require.NoError(t, CheckCost(c, b), "the --budget the message names confirms the run")
		})
	}
	veh := load(t, "cloud-vehicle")
	veh.Steps = 1_000_000
	c, err := EstimateCost([]*scenario.Scenario{veh}, CostOptions{Runs: 1})
	require.NoError(t, err)
	require.NoError(t, CheckCost(c, 0), "10^6 steps of the vehicle: %s", c)
	traced, err := EstimateCost([]*scenario.Scenario{veh}, CostOptions{Runs: 1, Traced: 100})
	require.NoError(t, err)
	require.NoError(t, CheckCost(traced, 0), "10^6 steps of the vehicle, traced: %s", traced)
	// the traced episode's 10^6 records (measured: 840 MB above the untraced run's peak)
	require.Greater(t, traced.MemoryBytes-c.MemoryBytes, int64(840e6), "the estimate counts the traced episode's records: %s", traced)
	veh.Steps = 10_000_000 // once accepted: it passed 3 GB
	c, err = EstimateCost([]*scenario.Scenario{veh}, CostOptions{Runs: 1, Traced: 100})
	require.NoError(t, err)
	require.ErrorContains(t, CheckCost(c, 0), "confirm with --budget ", "10^7 traced steps of the vehicle: %s", c)

	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		s, err := scenario.Load(f)
		require.NoError(t, err)
		c, err := EstimateCost(s.Expand(), CostOptions{Runs: s.Runs, Traced: 100})
		require.NoError(t, err)
		require.NoError(t, CheckCost(c, 0), "%s: %s", f, c)
	}
}

func TestParseFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"1024", 1024}, {"2e9", 2_000_000_000}, {"512MiB", 512 << 20}, {"4GiB", 4 << 30},
		{"1.5 GiB", 3 << 29}, {"2GB", 2_000_000_000}, {"10kb", 10_000}, {"100 B", 100}, {"3gib", 3 << 30},
	} {
		got, err := ParseBytes(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{"", "GiB", "-1GiB", "1 parsec", "NaN", "1e30"} {
		_, err := ParseBytes(bad)
		require.Error(t, err, bad)
	}
	for _, tc := range []struct {
		in   int64
		want string
	}{{512, "512 B"}, {1536, "1.5 KiB"}, {20 << 20, "20 MiB"}, {2 << 30, "2 GiB"}, {1288490189, "1.2 GiB"}} {
		require.Equal(t, tc.want, FormatBytes(tc.in))
		back, err := ParseBytes(strings.ReplaceAll(tc.want, " ", ""))
		require.NoError(t, err)
		require.InDelta(t, float64(tc.in), float64(back), 0.05*float64(tc.in))
	}
}

// TestAuditCostAcceptsShippedScenarios: every shipped scenario's audit (its audit.trials, else
// 10^5 trials, on every core) is within the default budget, so the shared estimate refuses
// only what is really big.
func TestAuditCostAcceptsShippedScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		s, err := scenario.Load(f)
		require.NoError(t, err)
		trials := 100_000
		if s.Audit != nil && s.Audit.Trials > 0 {
			trials = s.Audit.Trials
		}
		for _, wire := range []bool{false, true} {
			c, err := EstimateAuditCost(s.Expand(), AuditCostOptions{Trials: trials, Wire: wire})
			require.NoError(t, err)
			require.NoError(t, CheckCost(c, 0), "%s (wire %v): %s", f, wire, c)
		}
	}
}
