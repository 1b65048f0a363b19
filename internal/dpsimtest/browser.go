package dpsimtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Chromium returns the path of a Chromium (or Chrome) on PATH. Without one the test fails in CI
// (.ci/run installs Debian's chromium) and is skipped elsewhere, saying why.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: .ci/run installs Debian's chromium for the browser tests")
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the browser tests need it")
	return ""
}

// Browser starts headless Chromium exe with one tab and returns its context (valid for 90 s and
// until the test ends) and what the page reported as an error so far: exceptions thrown,
// console.error calls and error log entries (a failed load among them). Log and runtime events
// are enabled before it returns; navigate with chromedp.Run(ctx, chromedp.Navigate(url)).
func Browser(t testing.TB, exe string) (context.Context, func() []string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	var mu sync.Mutex
	var problems []string
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {})) // quiet: events of newer Chromium this cdproto cannot decode
	t.Cleanup(cancel)
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
	t.Cleanup(cancel)
	if err := chromedp.Run(ctx, log.Enable(), runtime.Enable()); err != nil {
		t.Fatalf("chromium %s: %v", exe, err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
}

// PollPage evaluates the expression js in the page every 100 ms and collects its values (each
// decoded into a fresh T) until until holds for one of them (ok, that one last) or ctx ends
// (not ok, with what was seen so far). until runs on the test's goroutine and may fail it.
func PollPage[T any](t testing.TB, ctx context.Context, js string, until func(T) bool) (views []T, ok bool) {
	t.Helper()
	for {
		var v T
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(js, &v)))
		views = append(views, v)
		if until(v) {
			return views, true
		}
		select {
		case <-ctx.Done():
			return views, false
		case <-time.After(100 * time.Millisecond):
		}
	}
}
