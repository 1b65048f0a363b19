package live

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// Intervener changes a run's faults while it goes (launch.Interventions behind an adapter):
// State is GET /api/faults; Do makes change op (add, change, remove, crash) on target (link,
// partition, proc) named name ("" for an add) with the fields of body, asked for by by (to be
// recorded with the change).
type Intervener interface {
	State() any
	Do(op, target, name string, body map[string]any, by Requester) (any, error)
}

// Requester is who asked for a change through the API: the client's address, its User-Agent
// and its Origin header (empty when it sent none: not a browser's page). The request passed
// the server's checks (the token, the Host, same origin, JSON).
type Requester struct {
	RemoteAddr string
	UserAgent  string
	Origin     string
}

// requester is r's Requester.
func requester(r *http.Request) Requester {
	return Requester{RemoteAddr: r.RemoteAddr, UserAgent: r.UserAgent(), Origin: r.Header.Get("Origin")}
}

// The interventions API on the live view's server (dpsim run --ui):
//
//	GET    /api/faults                    the faults in force, the changes applied and pending
//	POST   /api/faults/links              add a link rule (a faults.links entry)        -> 202
//	PUT    /api/faults/links/{name}       replace rule name by the body's fields        -> 202
//	DELETE /api/faults/links/{name}       stop rule name                                -> 202
//	POST   /api/faults/partitions         add a partition (a faults.partitions entry)   -> 202
//	PUT    /api/faults/partitions/{name}  replace partition name                        -> 202
//	DELETE /api/faults/partitions/{name}  stop partition name                           -> 202
//	POST   /api/procs/{name}/crash        kill process name at {step} of next_episode,
//	                                      back at {restart} (or after {down} steps)     -> 202
//
// Every request needs the server's token, a Host naming the server, no other origin and, for
// these changes, Content-Type: application/json (guard.go). Bodies and answers are JSON. A change takes effect at step 0 of the state's next_episode (the
// next episode the run starts; with episodes in flight, the first of the next group); the
// answer is the change, pending. A refused change is {"error": why, "field": the field at fault} with
// a 4xx status: 400 an invalid field, 404 no such rule, 409 not possible in this run.

// maxBody bounds a request body.
const maxBody = 1 << 16

// HandleInterventions serves the interventions API of iv on s.
func (s *Server) HandleInterventions(iv Intervener) {
	s.mux.HandleFunc("GET /api/faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, iv.State())
	})
	for _, t := range []struct{ path, target string }{{"links", "link"}, {"partitions", "partition"}} {
		s.mux.HandleFunc("POST /api/faults/"+t.path, func(w http.ResponseWriter, r *http.Request) {
			doChange(w, r, iv, "add", t.target, "", true)
		})
		s.mux.HandleFunc("PUT /api/faults/"+t.path+"/{name}", func(w http.ResponseWriter, r *http.Request) {
			doChange(w, r, iv, "change", t.target, r.PathValue("name"), true)
		})
		s.mux.HandleFunc("DELETE /api/faults/"+t.path+"/{name}", func(w http.ResponseWriter, r *http.Request) {
			doChange(w, r, iv, "remove", t.target, r.PathValue("name"), false)
		})
	}
	s.mux.HandleFunc("POST /api/procs/{name}/crash", func(w http.ResponseWriter, r *http.Request) {
		doChange(w, r, iv, "crash", "proc", r.PathValue("name"), true)
	})
}

// doChange reads the body (a JSON object, when wanted) and asks iv for the change.
func doChange(w http.ResponseWriter, r *http.Request, iv Intervener, op, target, name string, body bool) {
	var fields map[string]any
	if body {
		data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		switch {
		case err != nil:
			writeError(w, http.StatusBadRequest, "", "reading the body: "+err.Error())
			return
		case len(data) > maxBody:
			writeError(w, http.StatusRequestEntityTooLarge, "", "the body is larger than 64 KiB")
			return
		case len(data) == 0 && op == "crash":
		default:
			if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
				writeError(w, http.StatusBadRequest, "", "want a JSON object with the fields of the entry (as in a scenario file)")
				return
			}
		}
	}
	out, err := iv.Do(op, target, name, fields, requester(r))
	if err != nil {
		status, field := http.StatusBadRequest, ""
		var r interface {
			RefusalKind() string
			FieldName() string
		}
		if errors.As(err, &r) {
			status, field = refusalStatus[r.RefusalKind()], r.FieldName()
			if status == 0 {
				status = http.StatusBadRequest
			}
		}
		writeError(w, status, field, err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, out)
}

// refusalStatus is the HTTP status of each kind of refused change (launch.RefusalKind): the
// launcher knows why it refuses, the HTTP server how to say it.
var refusalStatus = map[string]int{"invalid": http.StatusBadRequest, "not-found": http.StatusNotFound,
	"conflict": http.StatusConflict, "internal": http.StatusInternalServerError}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is the body of a refused request.
type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, status int, field, msg string) {
	writeJSON(w, status, apiError{Error: msg, Field: field})
}
