package live

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed web
var webFS embed.FS

// The event stream's pace: a state event at most every EventInterval when the state changed,
// and at least every HeartbeatInterval (the elapsed time and time left move on). A run's page
// often shares the run's cores, and each event costs it a redraw: a run's stream goes at most
// every RealtimeEventInterval in realtime (it keeps up with the episode in progress, Stream)
// and every LockstepEventInterval in lockstep (progress and counters).
const (
	EventInterval         = 250 * time.Millisecond
	RealtimeEventInterval = 500 * time.Millisecond
	LockstepEventInterval = time.Second
	HeartbeatInterval     = 2 * time.Second
)

// Server serves a hub over HTTP:
//
//	/            the page (embedded: web/index.html and app.js for a run, web/audit.html and
//	             audit.js for an audit (ServeAudit), with common.js, style.css and the vendored uPlot)
//	/api/state   the hub's State as JSON
//	/events      Server-Sent Events: "state" events (the State as JSON), then one "end" event
//	             with the final state when the run ended, after which the stream closes
//	/metrics     Prometheus text format (see metrics.go)
//	/api/faults  the interventions API, once HandleInterventions was called (interventions.go)
//
// Every path but the page's scripts and style sheets needs the server's token (guard.go):
// TokenURL is the page's address with it.
type Server struct {
	hub   source
	ln    net.Listener
	srv   *http.Server
	mux   *http.ServeMux // HandleInterventions adds to it (interventions.go)
	guard *guard
}

// source is what a Server serves: a run's Hub, or an audit's AuditHub.
type source interface {
	JSON(maxAge time.Duration) (version uint64, data []byte)
	Ended() <-chan struct{}
	registry() *prometheus.Registry
}

// Serve starts serving h on addr (host:port; port 0: a free one) in the background.
func Serve(addr string, h *Hub) (*Server, error) { return serve(addr, h, "") }

// serve serves src on addr with page (a file of web/; "": index.html) at /.
func serve(addr string, h source, page string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("live view: %w", err)
	}
	g, err := newGuard(ln.Addr())
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	s := &Server{hub: h, ln: ln, mux: mux, guard: g}
	web, _ := fs.Sub(webFS, "web")
	mux.Handle("/", http.FileServer(http.FS(web)))
	if page != "" {
		mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) { http.ServeFileFS(w, r, web, page) })
	}
	mux.HandleFunc("/api/state", s.state)
	mux.HandleFunc("/events", s.events)
	mux.Handle("/metrics", promhttp.HandlerFor(h.registry(), promhttp.HandlerOpts{}))
	s.srv = &http.Server{Handler: g.wrap(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the page's address without the token, e.g. http://127.0.0.1:41234/: what may be
// written down (the token opens it).
func (s *Server) URL() string { return s.guard.baseURL(s.ln.Addr()) }

// TokenURL is the page's address with the token, e.g. http://127.0.0.1:41234/?token=...: for
// the user's terminal only.
func (s *Server) TokenURL() string { return s.guard.tokenURL(s.URL()) }

// Token is the server's token (the API's Authorization: Bearer, or ?token=).
func (s *Server) Token() string { return string(s.guard.token) }

// Close stops the server: the event streams, which end at the run's end, get a second to
// send their last event, then every connection is closed.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	_, b := s.hub.JSON(0)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// events streams the state: one event at once, then one whenever it changed (at most every
// EventInterval), and the final state as an "end" event.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	var last uint64
	send := func(event string) bool {
		v, b := s.hub.JSON(HeartbeatInterval)
		if v == last && event == "state" {
			return true
		}
		last = v
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	tick := time.NewTicker(eventInterval(s.hub))
	defer tick.Stop()
	for {
		select {
		case <-s.hub.Ended():
			last = 0
			send("end")
			return
		default:
		}
		if !send("state") {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.hub.Ended():
		case <-tick.C:
		}
	}
}

// eventInterval is the least time between two state events of src.
func eventInterval(src source) time.Duration {
	h, ok := src.(*Hub)
	switch {
	case !ok:
		return EventInterval
	case h.info.Mode == "realtime":
		return RealtimeEventInterval
	}
	return LockstepEventInterval
}
