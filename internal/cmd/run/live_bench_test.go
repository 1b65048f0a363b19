package run_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

// livePage is one headless chromium tab the live-view benchmarks point at each --ui run.
type livePage struct {
	ctx    context.Context
	cancel func()
}

// openLivePage starts headless chromium with a blank tab (the benchmarks skip without it).
func openLivePage(b *testing.B) *livePage {
	exe := dpsimtest.Chromium(b)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}))
	require.NoError(b, chromedp.Run(ctx, chromedp.Navigate("about:blank")))
	p := &livePage{ctx: ctx, cancel: func() { cancelTab(); cancelAlloc() }}
	b.Cleanup(p.cancel)
	return p
}

// events returns how many state events the page drew, and whether it saw the run's end.
func (p *livePage) events(b *testing.B) (int, bool) {
	var v struct {
		Events int  `json:"events"`
		Ended  bool `json:"ended"`
	}
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	require.NoError(b, chromedp.Run(ctx, chromedp.Evaluate(`({events: window.dpsimLive ? window.dpsimLive.events : 0, ended: window.dpsimLive ? window.dpsimLive.ended : false})`, &v)))
	return v.Events, v.Ended
}

// liveBenchRun is one `dpsim run` of the vehicle for the live-view benchmarks.
type liveBenchRun struct {
	plantStepsPerSec float64 // the plant's steps / its wall time inside episodes
	missed           float64 // realtime: steps that missed their deadline (summary.json timing.missed)
	overruns         float64
	jitterP99        float64 // seconds, the worst process's
	pageEvents       int     // the state events the page drew (with --ui)
}

// runLiveBench runs the vehicle with args; with page, under --ui with the page loaded as soon
// as the URL is printed (before the processes are ready), and it waits for the page to show
// the run's end.
func runLiveBench(b *testing.B, page *livePage, args ...string) liveBenchRun {
	dir := b.TempDir()
	args = append([]string{"run", scenarioPath("cloud-vehicle"), "--out", dir, "--log-level", "warn", "--progress=false"}, args...)
	if page != nil {
		args = append(args, "--ui", "--ui-hold", "1m")
	}
	l := startLive(b, args...)
	var out liveBenchRun
	if page != nil {
		url := l.await(b, uiURL, 30*time.Second)
		ctx, cancel := context.WithTimeout(page.ctx, 20*time.Second)
		require.NoError(b, chromedp.Run(ctx, chromedp.Navigate(url)))
		cancel()
		deadline := time.Now().Add(10 * time.Minute)
		for {
			n, ended := page.events(b)
			if ended {
				out.pageEvents = n
				break
			}
			require.True(b, time.Now().Before(deadline), "the page did not show the run's end")
			time.Sleep(200 * time.Millisecond)
		}
		require.NoError(b, l.cmd.Process.Signal(syscall.SIGINT)) // ends --ui-hold
	}
	require.Equal(b, 0, l.exit(b, 10*time.Minute), l.stderr.String())
	sum := readSummary(b, dir)
	out.plantStepsPerSec = sum.proc(b, "plant-0").StepsPerSec
	if v, ok := sum.Timing["missed"].(float64); ok {
		out.missed = v
	}
	if v, ok := sum.Timing["overruns"].(float64); ok {
		out.overruns = v
	}
	if v, ok := sum.Timing["jitter_p99_max_ns"].(float64); ok {
		out.jitterP99 = v / 1e9
	}
	return out
}

// BenchmarkLiveUILockstep measures what the live view costs a lockstep run: the vehicle over
// NATS (plant, cloud and eavesdropper processes, the launcher's embedded server, the default
// episodes in flight) playing b.N episodes without --ui, with --ui and a real page open
// (headless chromium drawing every state event), and without again (A B A), in 3 rounds so
// both see the same machine load. Reported: each side's plant steps/s (median); ratio = with /
// the mean of the two without, per round (median; min-ratio and max-ratio its range; target
// >= 0.9); aa-ratio the second without over the first (the noise of the machine: an identical
// run's ratio), with its range; and the page's events.
//
//	go test ./internal/cmd/run -run '^$' -bench LiveUILockstep -benchtime 4000x
func BenchmarkLiveUILockstep(b *testing.B) {
	page := openLivePage(b)
	const rounds = 3
	var without, with, ratio, aa, events []float64
	b.ResetTimer()
	for r := range rounds {
		common := []string{"--runs", fmt.Sprint(b.N), "--seed", fmt.Sprint(r + 1)}
		a1 := runLiveBench(b, nil, common...)
		u := runLiveBench(b, page, common...)
		a2 := runLiveBench(b, nil, common...)
		require.Positive(b, u.pageEvents, "the page drew nothing")
		plain := (a1.plantStepsPerSec + a2.plantStepsPerSec) / 2
		without, with = append(without, plain), append(with, u.plantStepsPerSec)
		ratio, aa = append(ratio, u.plantStepsPerSec/plain), append(aa, a2.plantStepsPerSec/a1.plantStepsPerSec)
		events = append(events, float64(u.pageEvents))
	}
	b.ReportMetric(median(without), "plain-steps/s")
	b.ReportMetric(median(with), "ui-steps/s")
	b.ReportMetric(median(ratio), "ratio")
	b.ReportMetric(minOf(ratio), "min-ratio")
	b.ReportMetric(maxOf(ratio), "max-ratio")
	b.ReportMetric(minOf(aa), "aa-min-ratio")
	b.ReportMetric(maxOf(aa), "aa-max-ratio")
	b.ReportMetric(median(events), "page-events")
}

// BenchmarkLiveUIRealtime measures what the live view costs a realtime run at Ts = 10 ms: the
// vehicle over NATS playing b.N episodes of 100 ticks without --ui and with --ui and a real
// page open, alternately in 3 rounds. Reported: the deadlines missed and the steps begun late
// (overruns) on each side, summed over the rounds (target: with the page no more than
// without), and each side's worst p99 jitter.
//
//	go test ./internal/cmd/run -run '^$' -bench LiveUIRealtime -benchtime 10x
func BenchmarkLiveUIRealtime(b *testing.B) {
	page := openLivePage(b)
	const rounds = 3
	var missed, overruns, jitter [2]float64
	b.ResetTimer()
	for r := range rounds {
		common := []string{"--runs", fmt.Sprint(b.N), "--seed", fmt.Sprint(r + 1), "--mode", "realtime", "--period", "10ms"}
		for k, pg := range []*livePage{nil, page} {
			res := runLiveBench(b, pg, common...)
			b.Logf("round %d, page %v: missed %v, overruns %v, jitter p99 %.2f ms", r, pg != nil, res.missed, res.overruns, 1e3*res.jitterP99)
			missed[k] += res.missed
			overruns[k] += res.overruns
			jitter[k] = max(jitter[k], res.jitterP99)
		}
	}
	b.ReportMetric(missed[0], "plain-missed")
	b.ReportMetric(missed[1], "ui-missed")
	b.ReportMetric(overruns[0], "plain-overruns")
	b.ReportMetric(overruns[1], "ui-overruns")
	b.ReportMetric(jitter[0]*1e3, "plain-jitter-p99-ms")
	b.ReportMetric(jitter[1]*1e3, "ui-jitter-p99-ms")
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
