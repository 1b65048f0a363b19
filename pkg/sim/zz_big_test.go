package sim

import (
	"context"
	"testing"
)

func BenchmarkZZFastConsensusBig(b *testing.B) {
	const steps = 50
	s := largeConsensus(b, 10000, steps)
	p := planOf(b, s)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := RunFast(context.Background(), p, 1, FastOptions{Runs: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*steps)/b.Elapsed().Seconds(), "steps/s")
}
