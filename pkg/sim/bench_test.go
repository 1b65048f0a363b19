package sim

import (
	"context"
	"testing"
)

// One cloud-vehicle episode (T = 100): plant, cloud and eavesdropper cores plus the per-step
// accumulation, as a fast-engine worker runs it.
func BenchmarkFastVehicleEpisode(b *testing.B) {
	_, p := loadPlan(b, "cloud-vehicle")
	acc, err := NewAccumulator(p, 1)
	if err != nil {
		b.Fatal(err)
	}
	s, err := newNetSim(p, 1, acc, nil)
	if err != nil {
		b.Fatal(err)
	}
	e := acc.newEpisode(0)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.reset(i)
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
		if _, _, err := RunFast(context.Background(), p, 1, FastOptions{Runs: 500}); err != nil {
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
	s := largeConsensus(b, 100, steps)
	p := planOf(b, s)
	acc, err := NewAccumulator(p, 1)
	if err != nil {
		b.Fatal(err)
	}
	ns, err := newNetSim(p, 1, acc, nil)
	if err != nil {
		b.Fatal(err)
	}
	e := acc.newEpisode(0)
	b.ReportAllocs()
	b.ResetTimer()
	for ep := 0; ep < b.N; ep++ {
		e.reset(ep)
		if _, err := ns.run(context.Background(), ep, e, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*steps)/b.Elapsed().Seconds(), "steps/s")
}
