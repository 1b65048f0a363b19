package roleproc

import (
	"slices"

	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// Records held for later encoding. In lockstep the plant and the cloud take turns: a step of
// every episode in flight is the plant's arithmetic, then the cloud's, and each waits for the
// other's message. Whatever a process does between receiving its input and publishing its
// output is on that chain; encoding the trace lines of the 32 episodes of a step was a good
// part of it. An episode in flight (slot) therefore keeps its records - copied, as the cores
// reuse their buffers - until the process has published its step's messages and is about to
// wait for its peers (natsTransport.idle): they are encoded while the peers compute, into the
// same lines in the same order.

// held is one slot's records not yet encoded, in the order the cores produced them (a
// process writes one record type: control, agent or consensus).
type held struct {
	control   []trace.ControlRecord
	agent     []trace.AgentRecord
	consensus []trace.ConsensusRecord
	floats    []float64 // the values of the held records (a slice taken from it stays valid when it grows)
}

// hold copies the records of rd into h.
func (h *held) hold(rd *sim.Ready) {
	for i := range rd.Control {
		c := &rd.Control[i]
		h.control = append(h.control, trace.ControlRecord{Episode: c.Episode, Step: c.Step, X: h.copy(c.X), Ref: h.copy(c.Ref),
			Yhat: h.copy(c.Yhat), U: h.copy(c.U), Xhat: h.copy(c.Xhat), EveX0: h.copy(c.EveX0), EveMissing: c.EveMissing,
			Down: slices.Clone(c.Down)})
	}
	for i := range rd.Agent {
		h.holdAgent(rd.Agent[i])
	}
	for i := range rd.Blocks {
		b := &rd.Blocks[i]
		for k, x := range b.X {
			a := trace.AgentRecord{Episode: b.Episode, Step: b.Step, Agent: b.First + k, X: x}
			if b.Y != nil {
				a.Y = &b.Y[k]
			}
			h.holdAgent(a)
		}
	}
	for i := range rd.Consensus {
		c := &rd.Consensus[i]
		h.consensus = append(h.consensus, trace.ConsensusRecord{Episode: c.Episode, Step: c.Step, X: h.copy(c.X), Y: h.copy(c.Y),
			EveX0: h.copy(c.EveX0), EveMissing: c.EveMissing, Down: slices.Clone(c.Down)})
	}
}

// holdAgent holds a copy of a (its Y copied into h.floats).
func (h *held) holdAgent(a trace.AgentRecord) {
	if a.Y != nil {
		h.floats = append(h.floats, *a.Y)
		a.Y = &h.floats[len(h.floats)-1]
	}
	h.agent = append(h.agent, a)
}

// copy returns a copy of v in h.floats: nil for nil, empty for empty (the encoder omits both).
func (h *held) copy(v []float64) []float64 {
	if v == nil {
		return nil
	}
	start := len(h.floats)
	h.floats = append(h.floats, v...)
	return h.floats[start:len(h.floats):len(h.floats)]
}

// empty reports whether nothing is held.
func (h *held) empty() bool {
	return len(h.control) == 0 && len(h.agent) == 0 && len(h.consensus) == 0
}

// encode writes the held records through r's trace writer, in order, and forgets them.
func (h *held) encode(r *records) error {
	var err error
	for i := range h.control {
		if err == nil {
			err = r.ctrace.Write(&h.control[i])
		}
	}
	for i := range h.agent {
		if err == nil {
			err = r.atrace.Write(&h.agent[i])
		}
	}
	for i := range h.consensus {
		if err == nil {
			err = r.ntrace.Write(&h.consensus[i])
		}
	}
	clear(h.control) // drop the references to the copied Down slices
	clear(h.consensus)
	h.control, h.agent, h.consensus, h.floats = h.control[:0], h.agent[:0], h.consensus[:0], h.floats[:0]
	return err
}

// holdSink is a slot's sink (sim.Driver): its cores' records are held, not encoded yet.
func (s *slot) holdSink(_ sim.Core, rd *sim.Ready) error {
	s.held.hold(rd)
	return nil
}

// flushHeld encodes what the slot holds and flushes its trace writer into its buffer.
func (s *slot) flushHeld() error {
	if err := s.held.encode(&s.records); err != nil {
		return err
	}
	return s.flush()
}

// encodeHeld encodes the records every episode of the group holds: the process is about to
// wait for its peers.
func (g *inflight) encodeHeld() error {
	for _, s := range g.slots[:g.count] {
		if s.held.empty() {
			continue
		}
		if err := s.held.encode(&s.records); err != nil {
			return err
		}
	}
	return nil
}
