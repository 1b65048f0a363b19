package engine

import (
	"context"
	"runtime"
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
	s, err := newNetSim(p, 1, acc, nil, sim.Hosts{Size: 1})
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
	benchConsensusEpisodes(b, planOf(b, largeConsensus(b, 100, steps)), sim.Hosts{Size: 1})
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
		b.Run(bc.name, func(b *testing.B) { benchConsensusEpisodes(b, p, sim.NewHosts(p, bc.size)) })
	}
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		res, _, err := Run(context.Background(), p, sim.NewSeeds(1), Options{Runs: b.N, AgentsPerHost: 2500})
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
func benchConsensusEpisodes(b *testing.B, p *plan.Plan, hs sim.Hosts) {
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
// same scenario without faults, in alternating rounds of one run (target: ratio >= 0.7).
//
//	go test ./pkg/sim -run '^$' -bench FastDrop10 -benchtime 5x
func BenchmarkFastDrop10(b *testing.B) {
	for _, name := range []string{"cloud-vehicle", "consensus-gaussian"} {
		b.Run(name, func(b *testing.B) {
			clean := withFaults(b, name, 2000)
			lossy := withFaults(b, name, 2000, scenario.LinkFault{Drop: 0.1})
			pc, pl := planOf(b, clean), planOf(b, lossy)
			var tc, tl time.Duration
			for i := 0; i < b.N; i++ {
				for _, r := range []struct {
					p *plan.Plan
					d *time.Duration
				}{{pc, &tc}, {pl, &tl}} {
					start := time.Now()
					if _, _, err := Run(context.Background(), r.p, sim.NewSeeds(1), Options{Workers: 1}); err != nil {
						b.Fatal(err)
					}
					*r.d += time.Since(start)
				}
			}
			steps := float64(b.N * 2000 * pc.Steps)
			b.ReportMetric(steps/tc.Seconds(), "clean-steps/s")
			b.ReportMetric(steps/tl.Seconds(), "drop10-steps/s")
			b.ReportMetric(tc.Seconds()/tl.Seconds(), "ratio")
		})
	}
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
