package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

// attackPage is a page of another origin (another port of 127.0.0.1: the same site, so the
// browser sends the live view's SameSite=Strict cookie with its requests) that tries what issue
// 33 did: a no-cors text/plain fetch adding a link rule, a JSON fetch (CORS preflight), HTML
// forms (a text/plain one shaped as JSON, a bodiless one crashing a process) and reads of
// /api/state, with and without CORS.
const attackPage = `<!doctype html><html><body>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe>
<form id="plain" method="POST" enctype="text/plain" target="sink1" action="%[1]sapi/faults/links">
<input name='{"name":"form","from":"agent.1","to":"agent.2","drop":1,"x":"' value='"}'></form>
<form id="crash" method="POST" target="sink2" action="%[1]sapi/procs/agent-3/crash"></form>
<script>
window.attack = (async () => {
  const base = %[2]q, out = {};
  const rule = '{"name":"ads","from":"agent.1","to":"agent.2","drop":1}';
  try {
    const r = await fetch(base + "api/faults/links", {method: "POST", mode: "no-cors", credentials: "include",
      headers: {"Content-Type": "text/plain"}, body: rule});
    out.nocors = r.type;
  } catch (e) { out.nocors = "error " + e; }
  try {
    const r = await fetch(base + "api/faults/links", {method: "POST", credentials: "include",
      headers: {"Content-Type": "application/json"}, body: rule});
    out.json = "read " + r.status + " " + await r.text();
  } catch (e) { out.json = "error " + e; }
  try {
    const r = await fetch(base + "api/state", {credentials: "include"});
    out.read = "read " + r.status + " " + await r.text();
  } catch (e) { out.read = "error " + e; }
  try {
    const r = await fetch(base + "api/state", {mode: "no-cors", credentials: "include"});
    out.opaque = r.type + " " + (await r.text()).length;
  } catch (e) { out.opaque = "error " + e; }
  document.getElementById("plain").submit();
  document.getElementById("crash").submit();
  return out;
})();
</script></body></html>`

// rebindPage is what a page of a site whose name was rebound to 127.0.0.1 runs on the live
// view's port: a same-origin read of /api/state, for it.
const rebindJS = `(async () => { try { const r = await fetch("/api/state"); return r.status + " " + await r.text(); }
	catch (e) { return "error " + e; } })()`

// TestLiveUIAttackBrowser: in headless chromium, with the live view's page open (its cookie
// set), a page of another origin cannot change the run nor read its state, and a page on a
// rebound name is refused; the real page then makes a change, which summary.json records with
// its origin and user agent, and the run ends "intervened", not "ok".
func TestLiveUIAttackBrowser(t *testing.T) {
	exe := dpsimtest.Chromium(t)
	const runs = 8000 // long enough for both pages to load and act (a few seconds)
	out := t.TempDir()
	scn := writeScenario(t, fmt.Sprintf(interventionScenario, runs))
	l := startLive(t, "run", scn, "--out", out, "--ui", "--ui-hold", "2m", "--progress=false", "--log-level", "warn")
	pageURL := l.await(t, uiURL, 30*time.Second)
	u, err := url.Parse(pageURL)
	require.NoError(t, err)
	base := "http://" + u.Host + "/"
	_, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)

	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, attackPage, base, base)
	}))
	defer attacker.Close()
	require.NotEqual(t, attacker.URL+"/", base)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("host-resolver-rules", "MAP rebound.test 127.0.0.1")) // DNS rebinding, without a DNS server
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}))
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	// The real page, opened with the token: the cookie is set and the address bar loses it.
	var loc string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(pageURL), chromedp.WaitVisible("#iv-link-submit", chromedp.ByID),
		chromedp.Location(&loc)))
	require.Equal(t, base, loc, "the token left the address bar")

	// The attacker's page in another tab of the same browser; every answer to it is recorded.
	actx2, cancel2 := chromedp.NewContext(ctx)
	defer cancel2()
	var mu sync.Mutex
	methods := map[network.RequestID]string{}
	type answer struct{ method, url string }
	answers := map[answer][]int64{}
	chromedp.ListenTarget(actx2, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			methods[e.RequestID] = e.Request.Method
		case *network.EventResponseReceived:
			if strings.HasPrefix(e.Response.URL, base) {
				k := answer{methods[e.RequestID], strings.TrimPrefix(e.Response.URL, base)}
				answers[k] = append(answers[k], e.Response.Status)
			}
		}
	})
	var res struct{ Nocors, JSON, Read, Opaque string }
	require.NoError(t, chromedp.Run(actx2, network.Enable(), chromedp.Navigate(attacker.URL+"/"),
		chromedp.Evaluate(`window.attack`, &res, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })))
	t.Logf("the attacker's page saw: %+v", res)
	require.Equal(t, "opaque", res.Nocors, "the no-cors fetch is sent, its answer unreadable")
	require.True(t, strings.HasPrefix(res.JSON, "error "), "a JSON fetch from another origin fails: %s", res.JSON)
	require.True(t, strings.HasPrefix(res.Read, "error "), "the state is not readable from another origin: %s", res.Read)
	require.Equal(t, "opaque 0", res.Opaque, "nor through no-cors")
	// The requests that reached the server were refused: the text/plain fetch and the two forms.
	refused := func(method, path string) bool {
		mu.Lock()
		defer mu.Unlock()
		st := answers[answer{method, path}]
		for _, s := range st {
			require.Contains(t, []int64{401, 403, 415}, s, "%s %s answered %v", method, path, st)
		}
		return len(st) > 0
	}
	deadline := time.Now().Add(30 * time.Second)
	for !(refused("POST", "api/faults/links") && refused("POST", "api/procs/agent-3/crash")) {
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("the attacker's posts got no answer: %v", answers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	refused("GET", "api/state")
	mu.Lock()
	t.Logf("answers to the attacker's page: %v", answers)
	mu.Unlock()

	// A page of a name rebound to 127.0.0.1, on the live view's own port: refused by its Host.
	rctx, cancel3 := chromedp.NewContext(ctx)
	defer cancel3()
	var body, read string
	require.NoError(t, chromedp.Run(rctx, chromedp.Navigate("http://rebound.test:"+port+"/"), chromedp.Text("body", &body, chromedp.ByQuery),
		chromedp.Evaluate(rebindJS, &read, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })))
	require.Contains(t, body, "is not this server's address")
	require.True(t, strings.HasPrefix(read, "403 "), "a rebound page reads nothing: %s", read)
	require.NotContains(t, read, `"scenario"`)

	// Nothing changed, and the run still takes changes (the attack came while it could).
	iv := ivStateOf(t, pageURL)
	require.Empty(t, iv.Interventions, "the attack changed the run")
	require.GreaterOrEqual(t, iv.NextEpisode, 0, "the run ended before the attack: make it longer")

	// The real page makes a change (in front again: a page in the background draws nothing).
	cancel2()
	cancel3()
	require.NoError(t, chromedp.Run(ctx, page.BringToFront(),
		chromedp.SendKeys("#iv-link-name", "cut", chromedp.ByID),
		chromedp.SendKeys("#iv-link-from", "agent.1", chromedp.ByID),
		chromedp.SendKeys("#iv-link-to", "agent.2", chromedp.ByID),
		chromedp.SendKeys("#iv-link-drop", "1", chromedp.ByID),
		chromedp.Click("#iv-link-submit", chromedp.ByID)))
	type view struct {
		Applied int    `json:"applied"`
		Error   string `json:"error"`
		Ended   bool   `json:"ended"`
		Status  string `json:"status"`
	}
	const js = `(() => { const iv = window.dpsimInterventions, l = window.dpsimLive, s = l.state || {};
		return {applied: iv.applied, error: iv.error, ended: l.ended, status: s.status || ""}; })()`
	views, ok := dpsimtest.PollPage(t, ctx, js, func(v view) bool {
		require.Empty(t, v.Error, "the page's change was refused")
		return v.Ended && v.Applied == 1
	})
	if !ok {
		t.Fatalf("the page did not show its change applied and the run's end: %+v\n%s", views[len(views)-1], l.stderr.String())
	}
	require.Equal(t, "intervened", views[len(views)-1].Status, "the page's status")
	require.NoError(t, l.cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 0, l.exit(t, 30*time.Second), l.stderr.String())
	// The terminal's final status says so, and names who.
	require.Regexp(t, `status +intervened: 1 live intervention\(s\) through the live view`, l.stdout.String())
	require.Regexp(t, `intervention +add link cut .* from episode \d+ step 0, asked at .* by 127\.0\.0\.1:\d+ \(Origin `+
		regexp.QuoteMeta(strings.TrimSuffix(base, "/"))+`, User-Agent ".*Chrome`, l.stdout.String())

	// summary.json: the one change, with who made it; the status says so.
	var sum struct {
		Status        string `json:"status"`
		Interventions struct {
			Applied int `json:"applied"`
			List    []struct {
				Op, Target, Name string
				At               time.Time      `json:"at"`
				Body             map[string]any `json:"body"`
				RemoteAddr       string         `json:"remote_addr"`
				UserAgent        string         `json:"user_agent"`
				Origin           string         `json:"origin"`
			} `json:"list"`
		} `json:"interventions"`
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &sum))
	require.Equal(t, "intervened", sum.Status)
	require.Equal(t, 1, sum.Interventions.Applied)
	require.Len(t, sum.Interventions.List, 1, "only the real page's change")
	c := sum.Interventions.List[0]
	require.Equal(t, "add", c.Op)
	require.Equal(t, "cut", c.Name)
	require.Equal(t, strings.TrimSuffix(base, "/"), c.Origin, "the page's own origin")
	require.Contains(t, c.UserAgent, "Chrome")
	require.True(t, strings.HasPrefix(c.RemoteAddr, "127.0.0.1:"), c.RemoteAddr)
	require.False(t, c.At.IsZero())
	require.Equal(t, float64(1), c.Body["drop"])
	require.NotContains(t, string(data), u.Query().Get("token"), "the token is not written down")
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "**Status: intervened**")
	require.Contains(t, string(md), "Origin "+strings.TrimSuffix(base, "/"))
	require.NotContains(t, string(md), u.Query().Get("token"))
}
