package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
)

// BenchmarkSamplerCost is the fast engine's time with the secure sampler over its time with the
// float sampler (docs/math.md section 10; target <= 1.3): the same scenario and seed, whole
// runs on one worker, measured alternately back to back; it reports the median ratio and its
// range over the rounds. Run with: go test -run - -bench SamplerCost -benchtime 7x ./pkg/engine
func BenchmarkSamplerCost(b *testing.B) {
	const runs = 500
	for _, name := range []string{"consensus-gaussian", "consensus-laplace", "cloud-vehicle"} {
		b.Run(name, func(b *testing.B) {
			s, ps := dpsimtest.LoadPlanSampler(b, name, noise.SamplerSecure)
			_, pf := dpsimtest.LoadPlanSampler(b, name, noise.SamplerFloat)
			timeRun := func(p *plan.Plan) float64 {
				start := time.Now()
				if _, _, err := Run(context.Background(), p, sim.NewSeeds(1), Options{Runs: runs, Workers: 1}); err != nil {
					b.Fatal(err)
				}
				return time.Since(start).Seconds()
			}
			timeRun(ps) // warm-up
			timeRun(pf)
			var ratio []float64
			var sec, flt float64
			for i := 0; i < max(b.N, 5); i++ {
				var ts, tf float64
				if i%2 == 0 { // alternate which goes first
					ts, tf = timeRun(ps), timeRun(pf)
				} else {
					tf, ts = timeRun(pf), timeRun(ps)
				}
				sec, flt = sec+ts, flt+tf
				ratio = append(ratio, ts/tf)
			}
			slices.Sort(ratio)
			steps := float64(runs * s.Steps)
			b.ReportMetric(steps*float64(len(ratio))/sec, "secure-steps/s")
			b.ReportMetric(steps*float64(len(ratio))/flt, "float-steps/s")
			b.ReportMetric(ratio[len(ratio)/2], "ratio")
			b.ReportMetric(ratio[0], "ratio-min")
			b.ReportMetric(ratio[len(ratio)-1], "ratio-max")
		})
	}
}
