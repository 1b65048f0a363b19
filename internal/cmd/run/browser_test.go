package run_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromium finds Debian's chromium (or another Chrome): the browser test skips without one,
// except in CI (CI=true), where .ci/run installs it and its absence is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: .ci/run installs Debian's chromium for the browser test")
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the live view's browser test needs it")
	return ""
}

// pageView is what the page drew (window.dpsimLive) at one moment.
type pageView struct {
	Points  int    `json:"points"`
	Events  int    `json:"events"`
	Ended   bool   `json:"ended"`
	Done    int    `json:"done"`
	Status  string `json:"status"`
	Plots   int    `json:"plots"`
	Canvass int    `json:"canvases"`
}

// TestLiveUIBrowser loads the live view in headless chromium during a realtime run: the page
// logs no error, its plots gain the traced episodes' points while the episodes grow, and it
// shows the run's end.
func TestLiveUIBrowser(t *testing.T) {
	exe := chromium(t)
	out := t.TempDir()
	l := startLive(t, "run", scenarioPath("cloud-vehicle"), "--mode", "realtime", "--period", "10ms", "--runs", "6", "--seed", "3",
		"--out", out, "--ui", "--ui-hold", "2m", "--progress=false")
	url := l.await(t, uiURL, 30*time.Second)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	var mu sync.Mutex
	var problems []string
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {})) // quiet: events of newer Chromium this cdproto cannot decode
	defer cancel()
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			problems = append(problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				problems = append(problems, "console.error: "+strings.Join(args, " "))
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.LevelError {
				problems = append(problems, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		}
	})
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Run(ctx, log.Enable(), runtime.Enable(), chromedp.Navigate(url)))

	const js = `(() => { const l = window.dpsimLive; const s = l.state || {};
		return {points: l.points, events: l.events, ended: l.ended, done: s.episodes_done || 0, status: s.status || "",
			plots: Object.keys(l.plots).length, canvases: document.querySelectorAll(".uplot canvas").length}; })()`
	var views []pageView
	for {
		var v pageView
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(js, &v)))
		views = append(views, v)
		if v.Ended {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the page did not show the run's end: %+v\n%s", views[len(views)-1], l.stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	end := views[len(views)-1]
	require.Equal(t, 6, end.Done)
	require.Equal(t, 101, end.Points, "steps 0..100 of the last traced episode")
	require.Equal(t, 3, end.Plots)
	require.GreaterOrEqual(t, end.Canvass, 3)
	grew, plotted := map[int]bool{}, false
	for _, v := range views[:len(views)-1] {
		if v.Status == "running" {
			grew[v.Done] = true
			plotted = plotted || v.Points > 0
		}
	}
	require.GreaterOrEqual(t, len(grew), 2, "the page saw no episode complete while the run went on: %v", views)
	require.True(t, plotted, "nothing plotted while the run went on")
	mu.Lock()
	require.Empty(t, problems, "the page logged errors")
	mu.Unlock()

	require.NoError(t, l.cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 0, l.exit(t, 30*time.Second), fmt.Sprint(l.stderr.String()))
}
