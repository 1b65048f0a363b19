package run_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/wire"
)

// pageView is what the page drew (window.dpsimLive) at one moment.
type pageView struct {
	Points  int    `json:"points"`
	Events  int    `json:"events"`
	Ended   bool   `json:"ended"`
	Done    int    `json:"done"`
	Status  string `json:"status"`
	Plots   int    `json:"plots"`
	Canvass int    `json:"canvases"`
	// Track lists the series of the tracking-error plot; Timeline is the timeline chart's
	// (null: not drawn) and TimelineCanvas whether it has its canvas.
	Track          []string                     `json:"track"`
	Aggregate      int                          `json:"aggregate"` // the episodes of the aggregate plotted (0: none)
	Timeline       *struct{ Events, Lanes int } `json:"timeline"`
	TimelineCanvas bool                         `json:"timeline_canvas"`
	// LinkSent is what the live links table showed: the messages sent on plant.0->cloud.0.
	LinkSent int  `json:"link_sent"`
	RSS      bool `json:"rss"` // a process's memory is shown while it runs
	// Stream is how many steps of the episode in progress the page plotted as published.
	Stream int `json:"stream"`
}

// TestLiveUIBrowser loads the live view in headless chromium during a realtime run: the page
// logs no error, its plots gain the traced episodes' points while the episodes grow, the
// tracking-error plot has the paper's limit as a line, the episode in progress is plotted step
// by step as published, the live links table grows episode by episode, the processes' memory shows while they run, the timeline chart is drawn, and it
// shows the run's end. /metrics then holds the lateness histogram of the plant's steps, one
// observation per step the plant's clock paced (summary.json), none earlier than its tick.
func TestLiveUIBrowser(t *testing.T) {
	exe := dpsimtest.Chromium(t)
	out := t.TempDir()
	l := startLive(t, "run", scenarioPath("cloud-vehicle"), "--mode", "realtime", "--period", "10ms", "--runs", "6", "--seed", "3",
		"--out", out, "--ui", "--ui-hold", "2m", "--progress=false")
	url := l.await(t, uiURL, 30*time.Second)

	ctx, problems := dpsimtest.Browser(t, exe)
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(url)))

	const js = `(() => { const l = window.dpsimLive; const s = l.state || {};
		const link = (l.liveLinks || []).find((k) => k.link === "plant.0->cloud.0");
		return {points: l.points, events: l.events, ended: l.ended, done: s.episodes_done || 0, status: s.status || "",
			plots: Object.keys(l.plots).length, canvases: document.querySelectorAll(".uplot canvas").length,
			track: l.plots.track ? l.plots.track.u.series.slice(1).map((x) => x.label) : [],
			aggregate: l.plots.aggregate && s.aggregate ? s.aggregate.runs : 0,
			timeline: l.timeline, timeline_canvas: !!document.querySelector("#timeline-chart .uplot canvas"),
			stream: l.stream, link_sent: link ? link.sent : 0, rss: (s.processes || []).some((p) => !p.finished && p.rss_bytes > 0)}; })()`
	views, ok := dpsimtest.PollPage(t, ctx, js, func(v pageView) bool { return v.Ended })
	if !ok {
		t.Fatalf("the page did not show the run's end: %+v\n%s", views[len(views)-1], l.stderr.String())
	}
	end := views[len(views)-1]
	require.Equal(t, 6, end.Done)
	require.Equal(t, 101, end.Points, "steps 0..100 of the last traced episode")
	require.Equal(t, 6, end.Plots, "the Monte Carlo aggregate, 4 of the latest merged episode, 1 of the episode in progress")
	require.Equal(t, 6, end.Aggregate, "the aggregate over every episode of the run, from its metrics")
	require.GreaterOrEqual(t, end.Canvass, 5, "the plots and the timeline chart")
	require.Equal(t, []string{"||x(t) - x_r(t)||²", "Var(γ) limit"}, end.Track, "the tracking error against the paper's limit")
	require.NotNil(t, end.Timeline, "no timeline chart")
	require.True(t, end.TimelineCanvas)
	require.Equal(t, 7, end.Timeline.Lanes, "crashes, restarts, server, connections, link faults, exits, other")
	require.Zero(t, end.Timeline.Events, "a clean run: nothing on the timeline")
	grew, plotted, sent, rssShown, midway := map[int]bool{}, false, map[int]bool{}, false, 0
	for _, v := range views[:len(views)-1] {
		if v.Status == "running" {
			grew[v.Done] = true
			plotted = plotted || v.Points > 0
			if v.LinkSent > 0 {
				require.Zero(t, v.LinkSent%100, "whole episodes of 100 steps")
				sent[v.LinkSent] = true
			}
			rssShown = rssShown || v.RSS
			if v.Stream > 1 && v.Stream < 101 {
				midway++
			}
		}
	}
	require.Positive(t, midway, "the page never showed an episode in progress step by step")
	require.GreaterOrEqual(t, len(grew), 2, "the page saw no episode complete while the run went on: %v", views)
	require.True(t, plotted, "nothing plotted while the run went on")
	require.GreaterOrEqual(t, len(sent), 2, "the live links did not grow during the point: %v", sent)
	if goruntime.GOOS == "linux" {
		require.True(t, rssShown, "no process memory shown while the run went on")
	}
	// The timeline chart puts each event in its lane (a clean run has none: these are drawn
	// from the final state with a crash, a restart and a server outage added).
	const tljs = `(async () => { const l = window.dpsimLive;
		const ev = (t, e) => ({t_sec: t, point: 0, episode: 1, step: 5, event: e});
		render(Object.assign({}, l.state, {timeline: [ev(0.5, "killed"), ev(0.6, "restarted"), ev(0.7, "nats-server-stopped"), ev(0.9, "reconnected")]}));
		await l.drained();
		const d = l.timelinePlot.data;
		return {events: l.timeline.events, rows: document.querySelectorAll("#timeline tr").length,
			lanes: d.slice(1).map((ys) => ys.filter((y) => y !== null))}; })()`
	var tl struct {
		Events int
		Rows   int
		Lanes  [][]float64
	}
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(tljs, &tl, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })))
	require.Equal(t, 4, tl.Events)
	require.Equal(t, 5, tl.Rows, "the table: its head and the events")
	require.Equal(t, [][]float64{{0}, {1}, {2}, {3}, {}, {}, {}}, tl.Lanes, "crash, restart, server, connections; nothing else")
	require.Empty(t, problems(), "the page logged errors")

	var sum struct {
		Processes []struct {
			Name   string           `json:"name"`
			Timing wire.TimingStats `json:"timing"`
		} `json:"processes"`
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &sum))
	var plantSteps int
	var jitterMean time.Duration
	for _, p := range sum.Processes {
		if p.Name == "plant-0" {
			plantSteps, jitterMean = p.Timing.Jitter.N, p.Timing.Jitter.Mean
		}
	}
	require.Equal(t, 6*100, plantSteps)
	f := dpsimtest.ScrapeMetrics(t, url)["dpsim_step_lateness_seconds"]
	require.NotNil(t, f, "no lateness histogram in realtime")
	var plant *dto.Histogram
	for _, m := range f.Metric {
		if m.Label[0].GetValue() == "plant" {
			plant = m.Histogram
		}
	}
	require.NotNil(t, plant)
	require.Equal(t, uint64(plantSteps), plant.GetSampleCount(), "one per step of the plant")
	// A step's message goes out after the step started: its lateness is at least the jitter.
	require.GreaterOrEqual(t, plant.GetSampleSum(), 0.999*jitterMean.Seconds()*float64(plantSteps))

	require.NoError(t, l.cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 0, l.exit(t, 30*time.Second), fmt.Sprint(l.stderr.String()))
}
