package run_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/internal/launch"
)

// The interventions panel in headless chromium during a lockstep run with episodes in flight
// (the default): a drop rule filled in and added from the page takes effect at the start of a
// group, the page lists it with that episode, the run's link counters on the page show its
// drops, faults.applied.yaml has it, and its replay (NATS and the fast engine) equals the live run.
func TestInterventionsBrowser(t *testing.T) {
	exe := dpsimtest.Chromium(t)
	const runs = 2000 // long enough for the page to load and send the change (a few seconds)
	out := t.TempDir()
	scn := writeScenario(t, fmt.Sprintf(interventionScenario, runs)+interventionBaseFaults)
	start := time.Now()
	l := startLive(t, "run", scn, "--out", out, "--ui", "--ui-hold", "2m", "--progress=false", "--log-level", "warn")
	url := l.await(t, uiURL, 30*time.Second)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}))
	defer cancel()
	var problems []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			d := e.ExceptionDetails
			msg := fmt.Sprintf("%s:%d: %s", d.URL, d.LineNumber+1, d.Text)
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			problems = append(problems, msg)
		}
	})
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Run(ctx, runtime.Enable(), chromedp.Navigate(url),
		chromedp.WaitVisible("#iv-link-submit", chromedp.ByID),
		chromedp.SendKeys("#iv-link-name", "cut", chromedp.ByID),
		chromedp.SendKeys("#iv-link-from", "agent.1", chromedp.ByID),
		chromedp.SendKeys("#iv-link-to", "agent.2", chromedp.ByID),
		chromedp.SendKeys("#iv-link-drop", "1", chromedp.ByID),
		chromedp.Click("#iv-link-submit", chromedp.ByID)))

	type view struct {
		Sent    int    `json:"sent"`
		Applied int    `json:"applied"`
		Error   string `json:"error"`
		Episode int    `json:"episode"`
		Ended   bool   `json:"ended"`
		Dropped int    `json:"dropped"`
		Table   string `json:"table"`
	}
	const js = `(() => { const iv = window.dpsimInterventions, l = window.dpsimLive, s = l.state || {};
		const c = (iv.state && iv.state.interventions[0]) || {};
		const link = (s.links || []).find((x) => x.link === "agent.1->agent.2") || {};
		return {sent: iv.sent, applied: iv.applied, error: iv.error, episode: c.applied ? c.episode : -1, ended: l.ended,
			dropped: link.dropped || 0, table: document.getElementById("iv-applied").textContent}; })()`
	views, ok := dpsimtest.PollPage(t, ctx, js, func(v view) bool {
		require.Empty(t, v.Error, "the page's change was refused")
		return v.Ended && v.Applied == 1 && v.Dropped > 0
	})
	v := views[len(views)-1]
	if !ok {
		t.Fatalf("the page did not show the applied change and its drops: %+v\n%s", v, l.stderr.String())
	}
	t.Logf("the change took effect at episode %d; the run ended after %v", v.Episode, time.Since(start).Round(time.Millisecond))
	require.Equal(t, 1, v.Sent)
	require.Positive(t, v.Episode)
	require.Zero(t, v.Episode%launch.DefaultInflight, "the first episode of a group of the default size")
	in := readInflight(t, out)
	require.Equal(t, launch.DefaultInflight, in.Used, "--ui leaves --inflight as it is")
	require.Equal(t, 20*(runs-v.Episode), v.Dropped, "every message of agent.1->agent.2 from episode %d on", v.Episode)
	require.Contains(t, v.Table, "add link")
	require.Empty(t, problems, "the page threw")
	applied, err := os.ReadFile(filepath.Join(out, "faults.applied.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(applied), "name: cut")
	require.Contains(t, string(applied), fmt.Sprintf("episode: %d", v.Episode))
	require.True(t, strings.Contains(string(applied), "from: agent.1"), string(applied))

	require.NoError(t, l.cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 0, l.exit(t, 30*time.Second), l.stderr.String())

	// The replay of faults.applied.yaml equals the live run the page changed: metrics, link
	// counters and the traced episodes, over NATS and with the fast engine.
	replay := replayScenario(t, runs, out)
	live := readSummary(t, out)
	ltrace, err := os.ReadFile(filepath.Join(out, "trace.jsonl"))
	require.NoError(t, err)
	for _, engine := range []string{"nats", "fast"} {
		dir := t.TempDir()
		code, _, stderr := runDpsim(t, 60*time.Second, "run", replay, "--engine", engine, "--out", dir, "--log-level", "warn", "--progress=false")
		require.Equal(t, 0, code, stderr)
		require.JSONEq(t, string(live.Metrics), string(readSummary(t, dir).Metrics), "%s replay: metrics and link counters", engine)
		tr, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
		require.NoError(t, err)
		require.True(t, bytes.Equal(ltrace, tr), "%s replay: the trace differs", engine)
	}
}
