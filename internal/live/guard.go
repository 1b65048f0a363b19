package live

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// Access to the live view (the run's, the audit's and dpsim view's servers): every server
// draws a random token (TokenBytes from crypto/rand) and prints its page's URL with it,
// http://HOST:PORT/?token=T. Nothing is served without it but the page's scripts and style
// sheet (no state in them):
//
//   - the token is accepted as ?token=T, as "Authorization: Bearer T", or as the cookie
//     dpsim_token_PORT (HttpOnly, SameSite=Strict, Path=/) the server sets when a page is
//     loaded with ?token=T (a browser's navigation is then redirected to the page without
//     the token, so that it leaves the address bar and the history); compared in constant time.
//     Without it: 401 (a page asks for the URL printed on the terminal);
//   - the Host header must be the address the server listens on (with its port; on loopback
//     also localhost, 127.0.0.1 and [::1]; on 0.0.0.0 or :: any IP address or the machine's
//     host name), otherwise 403: a page of another site whose name was made to resolve to
//     this machine (DNS rebinding) is refused even before the token is looked at;
//   - a request from another origin (an Origin header that is not this server's, or
//     Sec-Fetch-Site cross-site or same-site) is refused with 403, whatever its method;
//   - a request that may change something (any method but GET and HEAD) needs
//     Content-Type: application/json (415 otherwise): an HTML form or a no-cors fetch cannot
//     send it, and a fetch that does needs a CORS preflight, which is refused (403).
//
// GET and HEAD never change anything. Refusals are JSON, {"error": why}.

// TokenBytes is the size of a live view's token (hex-encoded in the URL): 192 bits.
const TokenBytes = 24

// guard is a server's access control (see above).
type guard struct {
	token  []byte
	cookie string // the cookie's name: per port, as a browser shares a host's cookies across ports
	hosts  map[string]bool
	anyIP  bool   // listening on 0.0.0.0 or ::: any IP literal with the port is a valid Host
	port   string // the port the server listens on
	self   string // the machine's host name (anyIP)
}

// newGuard draws a token for a server listening on addr (the listener's address).
func newGuard(addr net.Addr) (*guard, error) {
	b := make([]byte, TokenBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("live view: drawing the token: %w", err)
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil, fmt.Errorf("live view: %w", err)
	}
	g := &guard{token: []byte(hex.EncodeToString(b)), cookie: "dpsim_token_" + port, hosts: map[string]bool{}, port: port}
	ip := net.ParseIP(host)
	switch {
	case ip != nil && ip.IsUnspecified():
		g.anyIP = true
		g.self, _ = os.Hostname()
		g.addHost("localhost")
	case ip != nil && ip.IsLoopback():
		g.addHost("localhost")
		g.addHost("127.0.0.1")
		g.addHost("::1")
	}
	g.addHost(host)
	return g, nil
}

// addHost makes host (a name or an address, without the port) a valid Host with the port (and
// alone for port 80, as browsers leave the default port out).
func (g *guard) addHost(host string) {
	host = strings.ToLower(host)
	g.hosts[net.JoinHostPort(host, g.port)] = true
	if g.port == "80" {
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		g.hosts[host] = true
	}
}

// hostOK says whether a request's Host header names this server.
func (g *guard) hostOK(h string) bool {
	h = strings.ToLower(h)
	if g.hosts[h] {
		return true
	}
	if !g.anyIP {
		return false
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		host, port = strings.Trim(h, "[]"), "80"
	}
	if port != g.port {
		return false
	}
	return net.ParseIP(host) != nil || (g.self != "" && strings.EqualFold(host, g.self))
}

// baseURL is the page's address, http://HOST:PORT/, of a server listening on addr: on 0.0.0.0
// or :: HOST is the machine's name (an address others may reach it at; a valid Host).
func (g *guard) baseURL(addr net.Addr) string {
	if g.anyIP && g.self != "" {
		return "http://" + net.JoinHostPort(g.self, g.port) + "/"
	}
	return "http://" + addr.String() + "/"
}

// TokenURL is url (a server's address, http://HOST:PORT/) with the token to open it.
func (g *guard) tokenURL(base string) string { return base + "?token=" + string(g.token) }

// valid says whether t is the token, in constant time.
func (g *guard) valid(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), g.token) == 1
}

// requestToken is the token a request carries (?token=, Authorization: Bearer or the cookie)
// and whether it came as ?token=.
func (g *guard) requestToken(r *http.Request) (tok string, query bool) {
	if t := r.URL.Query().Get("token"); t != "" {
		return t, true
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:]), false
	}
	if c, err := r.Cookie(g.cookie); err == nil {
		return c.Value, false
	}
	return "", false
}

// isPage says whether path is a page (HTML), which asks for the token in words; the rest of
// the protected paths answer JSON.
func isPage(path string) bool {
	return path == "/" || strings.HasSuffix(path, ".html")
}

// isStatic says whether path is one of the page's scripts or style sheets: served without the
// token (they are the embedded files, the same for every run).
func isStatic(path string) bool {
	if strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/out/") {
		return false
	}
	return strings.HasSuffix(path, ".js") || strings.HasSuffix(path, ".css")
}

// wrap puts the guard in front of next.
func (g *guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY") // no other page may frame this one (clickjacking the interventions)
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		if !g.hostOK(r.Host) {
			refuse(w, http.StatusForbidden, fmt.Sprintf("Host %q is not this server's address: open the URL dpsim printed (a page of another site that resolves to this machine is refused)", r.Host))
			return
		}
		if isStatic(r.URL.Path) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			next.ServeHTTP(w, r)
			return
		}
		tok, query := g.requestToken(r)
		if !g.valid(tok) {
			if isPage(r.URL.Path) {
				h.Set("Content-Type", "text/html; charset=utf-8")
				h.Set("Cache-Control", "no-store")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = fmt.Fprint(w, tokenPage)
				return
			}
			h.Set("WWW-Authenticate", `Bearer realm="dpsim live view"`)
			refuse(w, http.StatusUnauthorized, "token required: open the URL dpsim printed on the terminal (http://HOST:PORT/?token=...), or send the token as ?token= or Authorization: Bearer")
			return
		}
		if why := crossOrigin(r); why != "" {
			refuse(w, http.StatusForbidden, why)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if why := jsonContent(r); why != "" {
				refuse(w, http.StatusUnsupportedMediaType, why)
				return
			}
		}
		if query && isPage(r.URL.Path) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			// The page keeps the token as a cookie (its scripts' requests and the event
			// stream carry it) and a browser's address bar is left without it (another
			// client gets the page at once).
			http.SetCookie(w, &http.Cookie{Name: g.cookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			h.Set("Cache-Control", "no-store")
			if r.Header.Get("Sec-Fetch-Mode") != "navigate" {
				next.ServeHTTP(w, r)
				return
			}
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			u.Scheme, u.Host = "", ""
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// crossOrigin says why r comes from another origin than this server's ("": it does not).
// Browsers send Origin with every request but a same-origin GET or HEAD, and Sec-Fetch-Site
// with every request; other clients (curl, Prometheus) send neither.
func crossOrigin(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if o == "null" || err != nil || u.Scheme != "http" || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Sprintf("Origin %s is not this server's (http://%s): requests from other pages are refused", o, r.Host)
		}
	}
	if r.Header.Get("Sec-Fetch-Mode") == "navigate" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		return "" // following a link to the page: it reads nothing for the page that has the link
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return "a request from another site's page (Sec-Fetch-Site " + r.Header.Get("Sec-Fetch-Site") + ") is refused"
	}
	return ""
}

// jsonContent says why r's Content-Type is not application/json ("": it is).
func jsonContent(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		if ct == "" {
			ct = "none"
		}
		return "Content-Type " + ct + ": a request that changes something must send Content-Type: application/json"
	}
	return ""
}

// refuse answers a refused request: {"error": why} with status.
func refuse(w http.ResponseWriter, status int, why string) {
	writeError(w, status, "", why)
}

// tokenPage is the page's answer without the token: no state, how to get in.
const tokenPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dpsim: token required</title></head>
<body><h1>Token required</h1>
<p>This live view answers only with its token: open the URL dpsim printed on the terminal
(<code>http://HOST:PORT/?token=...</code>). The browser then keeps the token as a cookie for this
address and port.</p></body></html>
`

// PublicAddr checks a live view's address (host:port) for a command: an address other than
// loopback (0.0.0.0, ::, a LAN address, a host name other than localhost) serves the network
// and needs the command's opt-in flag optIn (public: it was given). It returns the warning to
// print on stderr ("" for loopback) or an error naming the flag.
func PublicAddr(addr, optIn string, public bool) (warning string, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if IsLoopback(host) {
		return "", nil
	}
	if !public {
		return "", errors.New("serves the network (not loopback): anyone who can reach it and has the URL with its token sees the true state, and in a run can change its faults; give " + optIn + " to serve it anyway")
	}
	return fmt.Sprintf("warning: the live view on %s serves the network (%s), over plain HTTP: anyone who can reach it and learns the URL with its token sees the true state, and in a run can change its faults", addr, optIn), nil
}

// IsLoopback says whether host (a name or an address) is this machine's loopback: localhost
// or a loopback address.
func IsLoopback(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
