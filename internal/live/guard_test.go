package live

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeIntervener records the changes it is asked for.
type fakeIntervener struct {
	mu   sync.Mutex
	done []string
	by   []Requester
}

func (f *fakeIntervener) State() any { return map[string]any{"enabled": true} }

func (f *fakeIntervener) Do(op, target, name string, body map[string]any, by Requester) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = append(f.done, op+" "+target+" "+name)
	f.by = append(f.by, by)
	return map[string]any{"op": op, "target": target, "name": name}, nil
}

func (f *fakeIntervener) changes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.done...)
}

// guarded starts a run's live view with the interventions API on loopback.
func guarded(t *testing.T) (*Server, *fakeIntervener) {
	t.Helper()
	h := NewHub(Info{Scenario: "s", Kind: "cloud-control", Runs: 10, Points: []PointInfo{{Name: "s", Steps: 10}}}, time.Now())
	srv, err := Serve("127.0.0.1:0", h)
	require.NoError(t, err)
	t.Cleanup(func() {
		h.Finish("ok", "")
		_ = srv.Close()
	})
	iv := &fakeIntervener{}
	srv.HandleInterventions(iv)
	return srv, iv
}

// req is one request to a guarded server: a method, a path and what it carries.
type req struct {
	method, path string
	token        string // how: "query", "bearer", "cookie", "wrong" or "" (none)
	host         string // the Host header ("": the server's)
	origin       string
	ctype        string
	body         string
	fetchSite    string // Sec-Fetch-Site
}

// do sends r to srv (redirects not followed) and returns the status and the body.
func do(t *testing.T, srv *Server, r req) (int, string, http.Header) {
	t.Helper()
	u, err := url.Parse(srv.URL())
	require.NoError(t, err)
	u.Path = r.path
	tok := srv.Token()
	if r.token == "wrong" {
		tok = strings.Repeat("0", len(tok))
	}
	if r.token == "query" || r.token == "wrong" {
		u.RawQuery = "token=" + tok
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, u.String(), body)
	require.NoError(t, err)
	switch r.token {
	case "bearer":
		hr.Header.Set("Authorization", "Bearer "+tok)
	case "cookie":
		hr.AddCookie(&http.Cookie{Name: srv.guard.cookie, Value: tok})
	}
	if r.host != "" {
		hr.Host = r.host
	}
	if r.origin != "" {
		hr.Header.Set("Origin", r.origin)
	}
	if r.ctype != "" {
		hr.Header.Set("Content-Type", r.ctype)
	}
	if r.fetchSite != "" {
		hr.Header.Set("Sec-Fetch-Site", r.fetchSite)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Do(hr.WithContext(ctx))
	require.NoError(t, err)
	defer resp.Body.Close()
	if r.path == "/events" && resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "", resp.Header // a stream: its first event is enough
	}
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header
}

// apiRoutes are every route of a run's live view that needs the token, with a request that
// would be accepted with it.
var apiRoutes = []req{
	{method: "GET", path: "/"},
	{method: "GET", path: "/index.html"},
	{method: "GET", path: "/api/state"},
	{method: "GET", path: "/events"},
	{method: "GET", path: "/metrics"},
	{method: "GET", path: "/api/faults"},
	{method: "POST", path: "/api/faults/links", ctype: "application/json", body: `{"from":"plant.0","to":"cloud.0","drop":1}`},
	{method: "PUT", path: "/api/faults/links/base", ctype: "application/json", body: `{"drop":0.5}`},
	{method: "DELETE", path: "/api/faults/links/base", ctype: "application/json"},
	{method: "POST", path: "/api/faults/partitions", ctype: "application/json", body: `{"agents":[1]}`},
	{method: "PUT", path: "/api/faults/partitions/p", ctype: "application/json", body: `{"agents":[2]}`},
	{method: "DELETE", path: "/api/faults/partitions/p", ctype: "application/json"},
	{method: "POST", path: "/api/procs/cloud-0/crash", ctype: "application/json", body: `{}`},
}

// TestGuardToken: every route but the page's scripts and style sheet answers 401 without the
// token or with a wrong one, and is served with it as ?token=, Authorization: Bearer or the
// cookie; nothing is changed without it.
func TestGuardToken(t *testing.T) {
	srv, iv := guarded(t)
	for _, rt := range apiRoutes {
		for _, how := range []string{"", "wrong"} {
			r := rt
			r.token = how
			code, body, hdr := do(t, srv, r)
			require.Equal(t, http.StatusUnauthorized, code, "%s %s token %q: %s", r.method, r.path, how, body)
			require.NotContains(t, body, `"scenario"`, "no state without the token")
			if r.path != "/" && r.path != "/index.html" {
				require.Contains(t, hdr.Get("Content-Type"), "application/json")
				require.Contains(t, body, "token required")
			}
		}
	}
	require.Empty(t, iv.changes(), "a change was made without the token")

	for _, how := range []string{"query", "bearer", "cookie"} {
		for _, rt := range apiRoutes {
			r := rt
			r.token = how
			code, body, _ := do(t, srv, r)
			want := http.StatusOK
			switch {
			case r.method != "GET":
				want = http.StatusAccepted
			case r.path == "/index.html":
				want = http.StatusMovedPermanently // the file server's own redirect to /, past the guard
			}
			require.Equal(t, want, code, "%s %s token as %s: %s", r.method, r.path, how, body)
		}
	}
	require.Len(t, iv.changes(), 3*7, "every change with the token")

	// The scripts and the style sheet hold no state: served without the token.
	for _, p := range []string{"/app.js", "/common.js", "/interventions.js", "/style.css"} {
		code, _, _ := do(t, srv, req{method: "GET", path: p})
		require.Equal(t, http.StatusOK, code, p)
	}
	code, _, _ := do(t, srv, req{method: "POST", path: "/app.js", ctype: "application/json"})
	require.Equal(t, http.StatusUnauthorized, code, "only GET and HEAD are free")
}

// TestGuardPageCookie: the page opened with ?token= sets the HttpOnly SameSite=Strict cookie
// that the page's own requests carry; a browser's navigation is sent on to the page without the
// token.
func TestGuardPageCookie(t *testing.T) {
	srv, _ := guarded(t)
	code, body, hdr := do(t, srv, req{method: "GET", path: "/", token: "query"})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "<html")
	c, err := http.ParseSetCookie(hdr.Get("Set-Cookie"))
	require.NoError(t, err)
	require.Equal(t, srv.Token(), c.Value)
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	require.Equal(t, "/", c.Path)
	require.Equal(t, "DENY", hdr.Get("X-Frame-Options"), "no framing of the page")

	u := srv.TokenURL()
	require.True(t, strings.HasPrefix(u, srv.URL()+"?token="), u)
	require.Len(t, srv.Token(), 2*TokenBytes)
	hr, err := http.NewRequest("GET", u, nil)
	require.NoError(t, err)
	hr.Header.Set("Sec-Fetch-Mode", "navigate")
	hr.Header.Set("Sec-Fetch-Site", "none")
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(hr)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/", resp.Header.Get("Location"), "the token leaves the address bar")
	require.NotEmpty(t, resp.Header.Get("Set-Cookie"))
}

// TestGuardRefuses: with the token, a request is still refused when its Host is not the
// server's (DNS rebinding: 403), it comes from another origin (403), or it changes something
// without Content-Type: application/json (415: an HTML form, a no-cors fetch); nothing changes.
func TestGuardRefuses(t *testing.T) {
	srv, iv := guarded(t)
	_, port, err := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(srv.URL(), "http://"), "/"))
	require.NoError(t, err)
	self := "http://127.0.0.1:" + port
	other := "http://127.0.0.1:1" // another port of the same host: same site, another origin
	link := `{"name":"ads","from":"plant.0","to":"cloud.0","drop":1}`
	cases := []struct {
		name string
		r    req
		code int
		why  string
	}{
		{"rebinding Host, GET state", req{method: "GET", path: "/api/state", host: "attacker.example:" + port}, 403, "Host"},
		{"rebinding Host, page", req{method: "GET", path: "/", host: "attacker.example:" + port}, 403, "Host"},
		{"rebinding Host, events", req{method: "GET", path: "/events", host: "attacker.example:" + port}, 403, "Host"},
		{"Host of another port", req{method: "GET", path: "/api/state", host: "127.0.0.1:1"}, 403, "Host"},
		{"rebinding Host, POST", req{method: "POST", path: "/api/faults/links", host: "attacker.example:" + port, ctype: "application/json", body: link}, 403, "Host"},
		{"text/plain POST (no-cors fetch)", req{method: "POST", path: "/api/faults/links", ctype: "text/plain", body: link}, 415, "Content-Type"},
		{"text/plain POST from another origin", req{method: "POST", path: "/api/faults/links", origin: other, ctype: "text/plain;charset=UTF-8", body: link, fetchSite: "same-site"}, 403, "Origin"},
		{"form POST", req{method: "POST", path: "/api/procs/cloud-0/crash", ctype: "application/x-www-form-urlencoded"}, 415, "Content-Type"},
		{"multipart form POST", req{method: "POST", path: "/api/procs/cloud-0/crash", ctype: "multipart/form-data; boundary=x", body: "--x--"}, 415, "Content-Type"},
		{"bodiless POST", req{method: "POST", path: "/api/procs/cloud-0/crash"}, 415, "Content-Type"},
		{"DELETE without JSON", req{method: "DELETE", path: "/api/faults/links/base"}, 415, "Content-Type"},
		{"cross-origin JSON POST", req{method: "POST", path: "/api/faults/links", origin: other, ctype: "application/json", body: link}, 403, "Origin"},
		{"null Origin POST", req{method: "POST", path: "/api/faults/links", origin: "null", ctype: "application/json", body: link}, 403, "Origin"},
		{"cross-site POST without Origin", req{method: "POST", path: "/api/faults/links", ctype: "application/json", body: link, fetchSite: "cross-site"}, 403, "Sec-Fetch-Site"},
		{"cross-origin GET state", req{method: "GET", path: "/api/state", origin: other}, 403, "Origin"},
		{"cross-site GET events", req{method: "GET", path: "/events", fetchSite: "cross-site"}, 403, "Sec-Fetch-Site"},
		{"CORS preflight", req{method: "OPTIONS", path: "/api/faults/links", origin: other}, 403, "Origin"},
	}
	for _, c := range cases {
		for _, how := range []string{"cookie", "bearer"} {
			r := c.r
			r.token = how
			code, body, _ := do(t, srv, r)
			require.Equal(t, c.code, code, "%s (token as %s): %s", c.name, how, body)
			require.Contains(t, body, `"error"`, c.name)
			require.Contains(t, body, c.why, c.name)
		}
	}
	require.Empty(t, iv.changes(), "a refused request changed the run")

	// The same-origin page's request is taken, with who sent it.
	code, body, _ := do(t, srv, req{method: "POST", path: "/api/faults/links", token: "cookie", origin: self, ctype: "application/json; charset=utf-8",
		body: link, fetchSite: "same-origin"})
	require.Equal(t, http.StatusAccepted, code, body)
	code, body, _ = do(t, srv, req{method: "GET", path: "/api/state", token: "cookie", host: "localhost:" + port})
	require.Equal(t, http.StatusOK, code, "localhost names a loopback server: %s", body)
	require.Equal(t, []string{"add link "}, iv.changes())
	require.Equal(t, self, iv.by[0].Origin)
	require.Equal(t, "Go-http-client/1.1", iv.by[0].UserAgent)
	require.True(t, strings.HasPrefix(iv.by[0].RemoteAddr, "127.0.0.1:"), iv.by[0].RemoteAddr)
}

// TestGuardHosts: the Host headers a server takes, by the address it listens on.
func TestGuardHosts(t *testing.T) {
	addr := func(s string) net.Addr { a, err := net.ResolveTCPAddr("tcp", s); require.NoError(t, err); return a }
	cases := []struct {
		listen   string
		ok, fail []string
	}{
		{"127.0.0.1:8123", []string{"127.0.0.1:8123", "localhost:8123", "LOCALHOST:8123", "[::1]:8123"},
			[]string{"127.0.0.1", "127.0.0.1:8124", "evil.example:8123", "192.168.1.2:8123", ""}},
		{"[::1]:8123", []string{"[::1]:8123", "localhost:8123"}, []string{"evil.example:8123", "[::1]:80"}},
		{"192.168.1.2:8123", []string{"192.168.1.2:8123"}, []string{"localhost:8123", "evil.example:8123", "10.0.0.1:8123"}},
		{"0.0.0.0:8123", []string{"192.168.1.2:8123", "10.0.0.1:8123", "[fe80::1]:8123", "localhost:8123"},
			[]string{"evil.example:8123", "192.168.1.2:8124", "192.168.1.2"}},
		{"127.0.0.1:80", []string{"127.0.0.1", "localhost", "127.0.0.1:80"}, []string{"evil.example"}},
	}
	for _, c := range cases {
		g, err := newGuard(addr(c.listen))
		require.NoError(t, err)
		for _, h := range c.ok {
			require.True(t, g.hostOK(h), "%s: Host %q", c.listen, h)
		}
		for _, h := range c.fail {
			require.False(t, g.hostOK(h), "%s: Host %q", c.listen, h)
		}
	}
	g1, err := newGuard(addr("127.0.0.1:8123"))
	require.NoError(t, err)
	g2, err := newGuard(addr("127.0.0.1:8123"))
	require.NoError(t, err)
	require.NotEqual(t, g1.token, g2.token, "a token per server")
	require.Equal(t, "dpsim_token_8123", g1.cookie, "a cookie per port: a host's cookies are shared by its ports")
}

// TestPublicAddr: an address other than loopback needs the opt-in, and is warned about.
func TestPublicAddr(t *testing.T) {
	for _, a := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:0", "127.1.2.3:0"} {
		w, err := PublicAddr(a, "--ui-public", false)
		require.NoError(t, err, a)
		require.Empty(t, w, a)
	}
	for _, a := range []string{"0.0.0.0:0", "[::]:0", "192.168.1.2:8080", "myhost:8080"} {
		_, err := PublicAddr(a, "--ui-public", false)
		require.ErrorContains(t, err, "--ui-public", a)
		w, err := PublicAddr(a, "--ui-public", true)
		require.NoError(t, err, a)
		require.Contains(t, w, "warning", a)
	}
}

// TestViewServerGuard: dpsim view's server (the true state of a finished run) needs the token
// and refuses a rebinding Host too.
func TestViewServerGuard(t *testing.T) {
	srv, err := ServeView("127.0.0.1:0", &View{state: []byte(`{"scenario":"s"}`)})
	require.NoError(t, err)
	defer srv.Close()
	get := func(u, host string) int {
		hr, err := http.NewRequest("GET", u, nil)
		require.NoError(t, err)
		if host != "" {
			hr.Host = host
		}
		resp, err := http.DefaultClient.Do(hr)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 401, get(srv.URL()+"api/state", ""))
	require.Equal(t, 401, get(srv.URL()+"api/episode?point=0&episode=0", ""))
	require.Equal(t, 401, get(srv.URL()+"out/x.png", ""))
	require.Equal(t, 200, get(srv.URL()+"api/state?token="+srv.Token(), ""))
	require.Equal(t, 403, get(srv.URL()+"api/state?token="+srv.Token(), "evil.example"))
	require.Equal(t, 200, get(srv.TokenURL(), ""))
}
