package role

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// eveRunner is the eavesdropper: it subscribes to dpsim.<run>.> and estimates x(0) from the
// data messages only. Coordination messages pass through its transcript but never reach the
// estimator (in particular an explicit x0 of ctl.episode is not read).
type eveRunner struct {
	node    *sim.EavesdropperNode
	control bool
	col     *bus.StepCollector
	y       []float64
	est     []float64
	file    *os.File
	ctrace  *sim.TraceWriter[sim.ControlRecord]
	ntrace  *sim.TraceWriter[sim.ConsensusRecord]
	tfile   *os.File
	tw      *bufio.Writer
	line    transcriptLine
	enc     *json.Encoder
	msgs    int
}

// transcriptLine is one received message in the eavesdropper's transcript: the receive time,
// the subject and the payload (as JSON when it is JSON, else base64 in data_b64).
type transcriptLine struct {
	T       int64           `json:"t"`
	Subject string          `json:"subject"`
	Data    json.RawMessage `json:"data,omitempty"`
	DataB64 []byte          `json:"data_b64,omitempty"`
}

func (r *eveRunner) setup(n *node) error {
	en, err := sim.NewEavesdropperNode(n.plan)
	if err != nil {
		return err
	}
	r.node, r.control = en, n.scn.Kind == scenario.CloudControl
	r.est = make([]float64, en.Dim())
	var senders []string
	exp := func(subject, sender, kind string, dim int) {
		n.in.expect(subject, bus.Expect{Run: n.cfg.Run, Dim: dim, Steps: n.steps, Sender: sender, Kind: kind})
		senders = append(senders, sender)
	}
	if r.control {
		sys := n.plan.System
		exp(n.subj.PlantYhat(0), bus.SenderName(bus.RolePlant, 0), bus.StreamYhat, sys.Ny())
		exp(n.subj.CloudU(0), bus.SenderName(bus.RoleCloud, 0), bus.StreamU, sys.Nu())
	} else {
		for i := 0; i < n.plan.Graph.N; i++ {
			exp(n.subj.AgentY(i), bus.SenderName(bus.RoleAgent, i), bus.StreamY, 1)
		}
		r.y = make([]float64, n.plan.Graph.N)
	}
	// Coordination messages are legitimate traffic: skipped here, not counted as invalid.
	n.in.unknown = func(nm *nats.Msg) bool {
		s, err := bus.ParseSubject(nm.Subject)
		return err == nil && s.IsCtl()
	}
	if n.cfg.Transcript {
		name := TranscriptFile(n.cfg.Name())
		if r.tfile, err = os.Create(filepath.Join(n.cfg.Out, name)); err != nil {
			return fmt.Errorf("transcript: %w", err)
		}
		n.res.TranscriptFile = name
		r.tw = bufio.NewWriterSize(r.tfile, 1<<16)
		r.enc = json.NewEncoder(r.tw)
	}
	n.in.tap = func(nm *nats.Msg) {
		r.msgs++
		if r.enc == nil {
			return
		}
		r.line = transcriptLine{T: time.Now().UnixNano(), Subject: nm.Subject}
		if utf8.Valid(nm.Data) && json.Valid(nm.Data) {
			r.line.Data = nm.Data
		} else {
			r.line.DataB64 = nm.Data
		}
		if err := r.enc.Encode(&r.line); err != nil {
			n.log.Warn().Err(err).Msg("transcript")
		}
	}
	if err := n.in.subscribeTo(n.subj.All()); err != nil {
		return err
	}
	// The eavesdropper only listens: nobody waits for it, so within an episode the whole system
	// may run up to T steps ahead of it (and agents far apart on a graph are many steps apart).
	// It buffers the whole episode, up to a memory budget of eveWindowBudget sender-slots.
	window := n.steps + 1
	if limit := max(64, eveWindowBudget/len(senders)); window > limit {
		window = limit
	}
	if r.col, err = bus.NewStepCollector(senders, bus.CollectorOptions{Counters: &n.data, Window: window}); err != nil {
		return err
	}
	if r.file, err = n.openTrace(); err != nil {
		return err
	}
	if r.control {
		r.ctrace = sim.NewTraceWriter[sim.ControlRecord](r.file)
	} else {
		r.ntrace = sim.NewTraceWriter[sim.ConsensusRecord](r.file)
	}
	return nil
}

func (r *eveRunner) checkX0([]float64) error { return nil } // never read

// episode: for t = 0..T-1 collect the step's messages (yhat(t) and u(t), or every y_i(t)),
// feed them to the estimator and record its x(0) estimate.
func (r *eveRunner) episode(n *node, st episodeStart) error {
	r.node.Begin(st.ep)
	realtime := n.cfg.Mode == bus.Realtime
	blind := false // realtime: a step was missed, the estimate of this episode stops there
	for t := 0; t < n.steps; t++ {
		if err := r.col.Collect(n.in, st.ep, t, n.clock.BeginStep(t)); err != nil {
			if !realtime || !errors.Is(err, bus.ErrTimeout) {
				return err
			}
			// A passive observer never fails the run for a late message: it counts the miss
			// and, missing a step of the transcript, estimates no further in this episode.
			n.clock.Miss()
			blind = true
		}
		if blind {
			if err := r.writeRecord(st.ep, t, nil); err != nil {
				return err
			}
			n.res.Steps++
			continue
		}
		if r.control {
			if err := r.node.ObserveControl(t, r.col.Values(0), r.col.Values(1)); err != nil {
				return err
			}
		} else {
			for i := range r.y {
				r.y[i] = r.col.Values(i)[0]
			}
			if err := r.node.ObserveConsensus(t, r.y); err != nil {
				return err
			}
		}
		var est []float64
		if r.node.EstimateX0(r.est) {
			est = r.est
		}
		if err := r.writeRecord(st.ep, t, est); err != nil {
			return err
		}
		n.res.Steps++
	}
	return nil
}

// eveWindowBudget bounds the eavesdropper's step buffer: window x senders slots.
const eveWindowBudget = 1 << 20

// writeRecord appends the eavesdropper's x(0) estimate after step t (nil: none) to its trace.
func (r *eveRunner) writeRecord(ep, t int, est []float64) error {
	if r.control {
		return r.ctrace.Write(&sim.ControlRecord{Episode: ep, Step: t, EveX0: est})
	}
	return r.ntrace.Write(&sim.ConsensusRecord{Episode: ep, Step: t, EveX0: est})
}

func (r *eveRunner) finish(n *node) error {
	// Whatever is still queued (the last coordination messages) goes into the transcript too.
	for drained := false; !drained && n.in != nil; {
		select {
		case nm := <-n.in.ch:
			n.in.tap(nm)
		default:
			drained = true
		}
	}
	n.res.Messages = r.msgs
	var err error
	if r.tw != nil {
		err = r.tw.Flush()
		if cerr := r.tfile.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			err = fmt.Errorf("transcript: %w", err)
		}
	}
	var tw flusher = r.ntrace
	if r.control {
		tw = r.ctrace
	}
	if r.file == nil {
		return err
	}
	if cerr := closeTrace(n, tw, r.file); err == nil {
		err = cerr
	}
	return err
}
