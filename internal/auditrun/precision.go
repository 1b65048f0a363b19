package auditrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

// The wire engine's precision evidence (docs/math.md section 6.3). The scores of the wire engine
// are computed by the launcher from what the eavesdropper process recorded: its estimates (its
// trace) and, for the precision score, its transcript - every message it received, as received
// (role --transcript, <dir>/eavesdropper-0.transcript.jsonl). readPrecision rebuilds each episode's
// transcript from it (yhat(t) and u(t), or the y_i(t) the tests read; a message carrying several
// episodes in flight is cut by its length; the first copy of a step counts) and runs the game's
// precision tracker over it, as the fast engine runs it over its eavesdropper's inputs: without
// link faults the two see the same values, so both engines give the same evidence. Under link
// faults the transcript also holds copies the eavesdropper's core did not use (late, duplicated);
// the evidence is still a function of what the eavesdropper received, so the scores stay valid.

// transcriptRecord is one line of the eavesdropper's transcript (internal/roleproc).
type transcriptRecord struct {
	Subject string          `json:"subject"`
	Data    json.RawMessage `json:"data"`
	DataB64 []byte          `json:"data_b64"`
}

// wireTranscript holds the values the precision tests read, per episode and step.
type wireTranscript struct {
	T, total int
	control  bool
	ny, nu   int
	yhat, u  []float64 // control: [e][t][ny], [e][t][nu]
	hy, hu   []bool    // received, per (e, t)
	cols     []int     // consensus: the agents read
	col      []int     // agent -> column (-1: not read)
	y        []float64 // consensus: [e][t][len(cols)]
	hv       []bool    // [e][t][len(cols)]
}

// readPrecision returns the precision evidence of every episode 0..total-1 from the eavesdropper's
// transcript at path (nil when the game has no precision score).
func readPrecision(g *audit.Game, path string, total int) ([]audit.PrecisionEvidence, error) {
	if !g.HasPrecision() {
		return nil, nil
	}
	p := g.Plan
	w := &wireTranscript{T: p.Steps, total: total, control: p.Scenario.Kind == scenario.CloudControl}
	if w.control {
		w.ny, w.nu = p.System.Ny(), p.System.Nu()
		w.yhat, w.u = make([]float64, total*w.T*w.ny), make([]float64, total*w.T*w.nu)
		w.hy, w.hu = make([]bool, total*w.T), make([]bool, total*w.T)
	} else {
		w.cols = g.PrecisionAgents()
		w.col = make([]int, p.Graph.N)
		for i := range w.col {
			w.col[i] = -1
		}
		for c, i := range w.cols {
			w.col[i] = c
		}
		w.y, w.hv = make([]float64, total*w.T*len(w.cols)), make([]bool, total*w.T*len(w.cols))
	}
	if err := w.read(path); err != nil {
		return nil, fmt.Errorf("the eavesdropper's transcript: %w", err)
	}
	return w.evidence(g), nil
}

// read files every data message of the transcript.
func (w *wireTranscript) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), trace.MaxLine)
	var rec transcriptRecord
	var m wire.Message
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		rec = transcriptRecord{}
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		s, err := wire.ParseSubject(rec.Subject)
		if err != nil || s.IsCtl() {
			continue
		}
		data := []byte(rec.Data)
		if len(data) == 0 {
			data = rec.DataB64
		}
		if wire.Decode(data, &m) != nil {
			continue // not a data message the eavesdropper could read
		}
		w.file(s.Endpoint(), &m)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	return nil
}

// file takes one data message (the first copy of a sender's step counts).
func (w *wireTranscript) file(from endpoint.Endpoint, m *wire.Message) {
	t := m.Step
	if t < 0 || t >= w.T || m.Episode < 0 {
		return
	}
	dim := 1
	switch {
	case w.control && from.Role == endpoint.Plant:
		dim = w.ny
	case w.control && from.Role == endpoint.Cloud:
		dim = w.nu
	case !w.control && from.Role == endpoint.Agent:
		if from.ID < 0 || from.ID >= len(w.col) || w.col[from.ID] < 0 {
			return
		}
	default:
		return
	}
	if dim == 0 || len(m.Values)%dim != 0 {
		return
	}
	for k := 0; k < len(m.Values)/dim; k++ { // the episodes in flight the message carries
		e := m.Episode + k
		if e >= w.total {
			return
		}
		v := m.Values[k*dim : (k+1)*dim]
		et := e*w.T + t
		switch {
		case !w.control:
			c := w.col[from.ID]
			i := et*len(w.cols) + c
			if !w.hv[i] {
				w.y[i], w.hv[i] = v[0], true
			}
		case from.Role == endpoint.Plant:
			if !w.hy[et] {
				copy(w.yhat[et*w.ny:(et+1)*w.ny], v)
				w.hy[et] = true
			}
		default:
			if !w.hu[et] {
				copy(w.u[et*w.nu:(et+1)*w.nu], v)
				w.hu[et] = true
			}
		}
	}
}

// evidence runs the game's precision tracker over every episode's transcript, with the
// eavesdropper's stand-ins for what is missing (the plant's rule for u, the newest y_i seen).
func (w *wireTranscript) evidence(g *audit.Game) []audit.PrecisionEvidence {
	trk := g.PrecisionTracker()
	out := make([]audit.PrecisionEvidence, w.total)
	zero := g.Plan.Scenario.Faults.Missing.Plant == scenario.PlantZero
	var u, y []float64
	var have []bool
	if w.control {
		u = make([]float64, w.nu)
	} else {
		y, have = make([]float64, len(w.col)), make([]bool, len(w.col))
	}
	for e := 0; e < w.total; e++ {
		trk.TapBegin(e)
		clear(u)
		clear(y)
		for t := 0; t < w.T; t++ {
			et := e*w.T + t
			if w.control {
				var yhat []float64
				if w.hy[et] {
					yhat = w.yhat[et*w.ny : (et+1)*w.ny]
				}
				switch {
				case w.hu[et]:
					copy(u, w.u[et*w.nu:(et+1)*w.nu])
				case zero:
					clear(u)
				}
				trk.TapControl(t, yhat, u)
				continue
			}
			for c, i := range w.cols {
				k := et*len(w.cols) + c
				have[i] = w.hv[k]
				if have[i] {
					y[i] = w.y[k]
				}
			}
			trk.TapConsensus(t, y, have)
		}
		out[e] = trk.Evidence()
	}
	return out
}
