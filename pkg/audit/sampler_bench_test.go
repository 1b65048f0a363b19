package audit

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/noise"
)

// BenchmarkSamplerCost is the audit's fast engine (audit-vehicle-structured, 10^4 trial pairs,
// every core) with the secure sampler over the float sampler (target <= 1.3), measured
// alternately back to back: the median ratio and its range. Run with:
// go test -run - -bench SamplerCost -benchtime 7x ./pkg/audit
func BenchmarkSamplerCost(b *testing.B) {
	const pairs = 10000
	for _, name := range []string{"audit-vehicle-structured", "audit-consensus-gaussian"} {
		b.Run(name, func(b *testing.B) {
			_, ps := dpsimtest.LoadPlanSampler(b, name, noise.SamplerSecure)
			_, pf := dpsimtest.LoadPlanSampler(b, name, noise.SamplerFloat)
			gs, gf := newGame(b, ps, GameOptions{}), newGame(b, pf, GameOptions{})
			timeRun := func(g *Game) float64 {
				start := time.Now()
				if _, err := PlayFast(context.Background(), g, FastOptions{Trials: pairs, Seed: 1}); err != nil {
					b.Fatal(err)
				}
				return time.Since(start).Seconds()
			}
			timeRun(gs)
			timeRun(gf)
			var ratio []float64
			for i := 0; i < max(b.N, 5); i++ {
				var ts, tf float64
				if i%2 == 0 {
					ts, tf = timeRun(gs), timeRun(gf)
				} else {
					tf, ts = timeRun(gf), timeRun(gs)
				}
				ratio = append(ratio, ts/tf)
			}
			slices.Sort(ratio)
			b.ReportMetric(ratio[len(ratio)/2], "ratio")
			b.ReportMetric(ratio[0], "ratio-min")
			b.ReportMetric(ratio[len(ratio)-1], "ratio-max")
		})
	}
}
