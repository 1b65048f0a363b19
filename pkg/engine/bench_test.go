package engine

import (
	"context"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// One cloud-vehicle episode (T = 100): plant, cloud and eavesdropper cores plus the per-step
// accumulation, as a fast-engine worker runs it.
func BenchmarkFastVehicleEpisode(b *testing.B) {
	_, p := loadPlan(b, "cloud-vehicle")
	acc, err := metrics.NewAccumulator(p, 1)
	if err != nil {
		b.Fatal(err)
	}
	s, err := newNetSim(p, 1, acc, nil, sim.Blocks{Size: 1})
	if err != nil {
		b.Fatal(err)
	}
	e := acc.NewEpisode(0)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Reset(i)
		if _, err := s.run(ctx, i, e, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
	b.ReportMetric(float64(b.N*p.Steps)/b.Elapsed().Seconds(), "steps/s")
}

// The whole fast engine on cloud-vehicle: 500 episodes with aggregation, all cores.
func BenchmarkRunFastVehicle500(b *testing.B) {
	_, p := loadPlan(b, "cloud-vehicle")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := Run(context.Background(), p, sim.NewSeeds(1), Options{Runs: 500}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(500*b.N)/b.Elapsed().Seconds(), "episodes/s")
}

// Consensus with 100 agents on a random 4-regular graph: whole episodes of 1000 steps (every
// agent emits, the eavesdropper observes, every agent updates, the records are accumulated),
// reported per network step.
func BenchmarkFastConsensus(b *testing.B) {
	const steps = 1000
	benchConsensusEpisodes(b, planOf(b, largeConsensus(b, 100, steps)), sim.Blocks{Size: 1})
}

// Consensus with 10,000 agents on a random 4-regular graph (target: >= 2,000 network steps/s):
// whole episodes of 50 steps, reported per network step; the agents as 4 blocks of 2,500 (one
// message per block per step, as 4 NATS processes with --agents-per-process 2500), as one
// block, and, for comparison, every agent a core of its own - each on one worker. "engine" is
// the fast engine as `dpsim run --engine fast --agents-per-process 2500` runs it: Run with
// one worker per core (GOMAXPROCS), b.N episodes, the metrics.Results folded.
func BenchmarkFastConsensus10000(b *testing.B) {
	p := planOf(b, largeConsensus(b, 10000, 50))
	for _, bc := range []struct {
		name string
		size int
	}{{"hosts=4", 2500}, {"hosts=1", 10000}, {"per-agent", 1}} {
		b.Run(bc.name, func(b *testing.B) { benchConsensusEpisodes(b, p, sim.NewBlocks(p, bc.size)) })
	}
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		res, _, err := Run(context.Background(), p, sim.NewSeeds(1), Options{Runs: b.N, AgentsPerBlock: 2500})
		if err != nil {
			b.Fatal(err)
		}
		if res.Runs != b.N {
			b.Fatalf("%d runs folded, want %d", res.Runs, b.N)
		}
		b.ReportMetric(float64(b.N*p.Steps)/b.Elapsed().Seconds(), "steps/s")
		b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "workers")
	})
}

// benchConsensusEpisodes runs b.N episodes of p on one fast-engine worker with the agents in
// the blocks of hs and reports network steps per second.
func benchConsensusEpisodes(b *testing.B, p *plan.Plan, hs sim.Blocks) {
	acc, err := metrics.NewAccumulator(p, 1)
	if err != nil {
		b.Fatal(err)
	}
	ns, err := newNetSim(p, 1, acc, nil, hs)
	if err != nil {
		b.Fatal(err)
	}
	e := acc.NewEpisode(0)
	b.ReportAllocs()
	b.ResetTimer()
	for ep := 0; ep < b.N; ep++ {
		e.Reset(ep)
		if _, err := ns.run(context.Background(), ep, e, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*p.Steps)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkFastDrop10 compares the fast engine with a 10 % drop on every link against the
// same scenario without faults (target: ratio >= 0.7). Rounds alternate a clean and a lossy
// run of 500 episodes on one worker, back to back, so that the load of a shared machine hits
// both; the figures are the medians over the rounds (at least 5): ratio is the median of the
// rounds' lossy/clean speed ratios in wall time, cpu-ratio the same in process CPU time (less
// sensitive to other jobs taking the cores).
//
//	go test ./pkg/engine -run '^$' -bench FastDrop10 -benchtime 9x
func BenchmarkFastDrop10(b *testing.B) {
	const runs = 500
	for _, name := range []string{"cloud-vehicle", "consensus-gaussian"} {
		b.Run(name, func(b *testing.B) {
			pc, pl := planOf(b, withFaults(b, name, runs)), planOf(b, withFaults(b, name, runs, scenario.LinkFault{Drop: 0.1}))
			timeRun := func(p *plan.Plan) (wall, cpu float64) {
				start, cpu0 := time.Now(), cpuTime()
				if _, _, err := Run(context.Background(), p, sim.NewSeeds(1), Options{Workers: 1}); err != nil {
					b.Fatal(err)
				}
				return time.Since(start).Seconds(), (cpuTime() - cpu0).Seconds()
			}
			timeRun(pc) // warm-up
			timeRun(pl)
			var clean, lossy, ratio, cpuRatio []float64
			for i := 0; i < max(b.N, 5); i++ {
				tc, cc := timeRun(pc)
				tl, cl := timeRun(pl)
				clean, lossy = append(clean, tc), append(lossy, tl)
				ratio, cpuRatio = append(ratio, tc/tl), append(cpuRatio, cc/cl)
			}
			steps := float64(runs * pc.Steps)
			b.ReportMetric(steps/median(clean), "clean-steps/s")
			b.ReportMetric(steps/median(lossy), "drop10-steps/s")
			b.ReportMetric(median(ratio), "ratio")
			b.ReportMetric(median(cpuRatio), "cpu-ratio")
		})
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// median is the middle value of v (v is reordered).
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// BenchmarkFastInjectorIdle measures what the injector costs when a rule is configured but
// does nothing (every message still asks Decide) against no rule at all (a clear outbox
// broadcasts without asking): the ratio of their speeds.
func BenchmarkFastInjectorIdle(b *testing.B) {
	clean := withFaults(b, "cloud-vehicle", 2000)
	idle := withFaults(b, "cloud-vehicle", 2000, scenario.LinkFault{Drop: 0})
	pc, pi := planOf(b, clean), planOf(b, idle)
	var tc, ti time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, _, err := Run(context.Background(), pc, sim.NewSeeds(1), Options{Workers: 1}); err != nil {
			b.Fatal(err)
		}
		tc += time.Since(start)
		start = time.Now()
		if _, _, err := Run(context.Background(), pi, sim.NewSeeds(1), Options{Workers: 1}); err != nil {
			b.Fatal(err)
		}
		ti += time.Since(start)
	}
	b.ReportMetric(tc.Seconds()/ti.Seconds(), "ratio")
}
