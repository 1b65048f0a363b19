package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// viewMarker is what the view server adds to the page's <body>: view.js draws the finished
// run, app.js does not connect to the live event stream.
const viewMarker = `<body data-mode="view">`

// ViewServer serves a finished run (View) in the live view's page:
//
//	/               the page (web/index.html in view mode, drawn by web/view.js)
//	/api/state      the ViewState as JSON
//	/api/episode    ?point=K&episode=E: the series of a traced episode (as /api/state's
//	                episodes in the live view)
//	/out/NAME.png   the image of a figure of report.md that has no data (an older run)
//
// Every path but the page's scripts and style sheets needs the server's token, as the live
// view's (guard.go): TokenURL is the page's address with it.
type ViewServer struct {
	view  *View
	ln    net.Listener
	srv   *http.Server
	page  []byte
	guard *guard
}

// ServeView starts serving v on addr (host:port; port 0: a free one) in the background.
func ServeView(addr string, v *View) (*ViewServer, error) {
	web, err := fs.Sub(webFS, "web")
	if err != nil {
		return nil, err
	}
	index, err := fs.ReadFile(web, "index.html")
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(index, []byte("<body>")) {
		return nil, errors.New("view: the page has no <body> to mark")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	g, err := newGuard(ln.Addr())
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s := &ViewServer{view: v, ln: ln, page: bytes.Replace(index, []byte("<body>"), []byte(viewMarker), 1), guard: g}
	mux := http.NewServeMux()
	files := http.FileServer(http.FS(web))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" || r.URL.Path == "/index.html" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(s.page)
			return
		}
		files.ServeHTTP(w, r)
	})
	mux.HandleFunc("/api/state", s.state)
	mux.HandleFunc("/api/episode", s.episode)
	mux.HandleFunc("/out/", s.image)
	s.srv = &http.Server{Handler: g.wrap(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the page's address without the token, e.g. http://127.0.0.1:41234/.
func (s *ViewServer) URL() string { return s.guard.baseURL(s.ln.Addr()) }

// TokenURL is the page's address with the token: for the user's terminal only.
func (s *ViewServer) TokenURL() string { return s.guard.tokenURL(s.URL()) }

// Token is the server's token.
func (s *ViewServer) Token() string { return string(s.guard.token) }

// Close stops the server.
func (s *ViewServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

func (s *ViewServer) state(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.view.state)
}

func (s *ViewServer) episode(w http.ResponseWriter, r *http.Request) {
	k, err1 := strconv.Atoi(r.URL.Query().Get("point"))
	ep, err2 := strconv.Atoi(r.URL.Query().Get("episode"))
	if err1 != nil || err2 != nil {
		http.Error(w, "want ?point=K&episode=E (integers)", http.StatusBadRequest)
		return
	}
	b, ok := s.view.episodes[[2]int{k, ep}]
	if !ok {
		http.Error(w, fmt.Sprintf("no traced episode %d of point %d", ep, k), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (s *ViewServer) image(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path[len("/out/"):]
	if !s.view.images[name] {
		http.NotFound(w, r)
		return
	}
	http.ServeFile(w, r, filepath.Join(s.view.dir, name))
}
