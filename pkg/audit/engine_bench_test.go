package audit

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time (to report figures that do not depend on how many
// other jobs share the machine's cores).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFastEngineVehicle: the fast engine on the vehicle loop (T = 100), every core; one
// iteration plays 10^4 trial pairs (2 x 10^4 episodes: challenger, plant, cloud, eavesdropper,
// both scores, recording). Reports trial pairs per second and the projected time of 10^6 pairs
// (target: < 30 s on the project's 2-core machine). The machine is shared: cpu_s/1e6pairs/2cores
// (process CPU time halved) is the time on two idle cores, s/1e6pairs the wall time as measured.
func BenchmarkFastEngineVehicle(b *testing.B) {
	g := newGame(b, loadPlan(b, "audit-vehicle-structured"), GameOptions{})
	const pairs = 10000
	b.ReportAllocs()
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := PlayFast(context.Background(), g, FastOptions{Trials: pairs, Seed: uint64(n + 1)}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	rate := float64(n*pairs) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "pairs/s")
	b.ReportMetric(1e6/rate, "s/1e6pairs")
	// CPU seconds per 10^6 pairs over 2 cores: the wall time on an otherwise idle 2-core machine.
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(n*pairs)*1e6/2, "cpu_s/1e6pairs/2cores")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*2*pairs*100), "ns/step")
}

// BenchmarkAuditVehicleStructuredFull is demonstration 1 at full size: 10^6 trials per value of the
// secret bit (2 x 10^6 episodes of T = 100) and the analysis of both scores. It fails unless the
// verdict is consistent and the Gaussian-DP bound reaches 0.9 eps; it reports the bounds and the
// time. Run with: go test -run - -bench AuditVehicleStructuredFull -benchtime 1x ./pkg/audit
func BenchmarkAuditVehicleStructuredFull(b *testing.B) {
	p := loadPlan(b, "audit-vehicle-structured")
	g := newGame(b, p, GameOptions{})
	n := p.Scenario.Audit.Trials
	if n != 1000000 {
		b.Fatalf("the scenario's audit.trials is %d, want 10^6", n)
	}
	for b.Loop() {
		out, err := PlayFast(context.Background(), g, FastOptions{Trials: n, Seed: p.Scenario.Seed})
		if err != nil {
			b.Fatal(err)
		}
		r, err := g.Analyze(out, ReportOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if r.Verdict != Consistent || r.EpsilonLBGDP < 0.9*r.EpsilonClaimed {
			b.Fatalf("verdict %s, eps_lb_gdp %.4f: want consistent and >= 0.9 eps", r.Verdict, r.EpsilonLBGDP)
		}
		b.ReportMetric(r.EpsilonLBGDP, "eps_lb_gdp")
		b.ReportMetric(r.EpsilonLBCP, "eps_lb_cp")
		b.ReportMetric(r.MuGDP, "mu_gdp")
		b.ReportMetric(out.Elapsed.Seconds(), "engine_s")
	}
}

// BenchmarkFastEngineScaling: does PlayFast use every core without slowing each one down? Rounds
// alternate one worker and two workers over the same 10^4 trial pairs of the vehicle and report
// the process CPU time per episode of each (medians of the rounds) and their ratio cpu-ratio =
// two workers / one worker: 1 when the workers share nothing (no false sharing, lock or GC work
// per episode), so that two idle cores play twice as fast. The CPU time does not depend on how
// many other jobs share the machine; wall-speedup (one worker's wall time / two workers') does.
func BenchmarkFastEngineScaling(b *testing.B) {
	g := newGame(b, loadPlan(b, "audit-vehicle-structured"), GameOptions{})
	const pairs, rounds = 10000, 3
	play := func(workers int) (cpuNs, wallNs float64) {
		c0, t0 := cpuTime(), time.Now()
		if _, err := PlayFast(context.Background(), g, FastOptions{Trials: pairs, Seed: 7, Workers: workers}); err != nil {
			b.Fatal(err)
		}
		return float64((cpuTime() - c0).Nanoseconds()) / (2 * pairs), float64(time.Since(t0).Nanoseconds()) / (2 * pairs)
	}
	play(2) // warm-up
	var cpu1, cpu2, wall1, wall2 []float64
	for b.Loop() {
		for range rounds {
			c, w := play(1)
			cpu1, wall1 = append(cpu1, c), append(wall1, w)
			c, w = play(2)
			cpu2, wall2 = append(cpu2, c), append(wall2, w)
		}
	}
	b.ReportMetric(roundMedian(cpu1), "cpu-ns/ep-1w")
	b.ReportMetric(roundMedian(cpu2), "cpu-ns/ep-2w")
	b.ReportMetric(roundMedian(cpu2)/roundMedian(cpu1), "cpu-ratio")
	b.ReportMetric(roundMedian(wall1)/roundMedian(wall2), "wall-speedup")
}
