package engine

import (
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// records joins the partial records the cores of one in-memory run produce (sim.Ready) with
// the one join of pkg/trace (the launcher joins the role processes' trace files with the same),
// and hands each episode's full records to the accumulator and, when traced, to the Traces.
// The joins reuse their buffers, so an episode allocates nothing per step: (T+1) x
// (4 nx + ny + nu) floats for cloud control, (T+1) x (3 N floats + 3 N flags) for consensus,
// the per-worker memory EstimateCost counts.
type records struct {
	ctl *trace.ControlJoin
	con *trace.ConsensusJoin
	// the episode being handed over (see emit)
	acc  *metrics.Accumulator
	e    *metrics.Episode
	tr   *trace.Traces
	keep bool
	// the method values, made once (a method value made per call may allocate)
	putControl   func(*trace.ControlRecord, []trace.Missing) error
	putConsensus func(*trace.ConsensusRecord, []trace.Missing) error
}

func newRecords(p *plan.Plan, acc *metrics.Accumulator) (*records, error) {
	r := &records{acc: acc}
	var err error
	if p.System != nil && p.Graph == nil {
		r.ctl, err = trace.NewControlJoin(p.Steps, p.Reference, true)
	} else {
		if r.con, err = trace.NewConsensusJoin(p.Graph.N, p.Steps, true); err == nil {
			r.con.Reserve(p.Steps + 1) // an episode is held whole: allocate its steps once, here
		}
	}
	r.putControl, r.putConsensus = r.addControl, r.addConsensus
	return r, err
}

func (r *records) begin(ep int) {
	if r.ctl != nil {
		r.ctl.Begin(ep)
	} else {
		r.con.Begin(ep)
	}
}

// sink is the Driver's record sink: each core's pieces go to the join as they are produced.
func (r *records) sink(c sim.Core, rd *sim.Ready) error {
	if r.ctl != nil {
		from := c.Endpoint().Role // plant, cloud or eavesdropper: the join's roles
		for i := range rd.Control {
			if err := r.ctl.Add(from, &rd.Control[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range rd.Agent {
		if err := r.con.AddAgent(&rd.Agent[i]); err != nil {
			return err
		}
	}
	for i := range rd.Blocks {
		if err := r.con.AddBlock(&rd.Blocks[i]); err != nil {
			return err
		}
	}
	for i := range rd.Consensus {
		if err := r.con.AddEavesdropper(&rd.Consensus[i]); err != nil {
			return err
		}
	}
	return nil
}

// put feeds the episode's records 0..T to the accumulator (buffer e) and, when keep, returns
// copies of them.
func (r *records) put(e *metrics.Episode, keep bool) (*trace.Traces, error) {
	r.e, r.keep, r.tr = e, keep, nil
	if keep {
		r.tr = &trace.Traces{}
	}
	var err error
	if r.ctl != nil {
		err = r.ctl.Emit(r.putControl)
	} else {
		err = r.con.Emit(r.putConsensus)
	}
	tr := r.tr
	r.e, r.tr = nil, nil
	if err != nil {
		return nil, err
	}
	return tr, nil
}

func (r *records) addControl(rec *trace.ControlRecord, _ []trace.Missing) error {
	if err := r.acc.PutControl(r.e, rec); err != nil {
		return err
	}
	if r.keep {
		r.tr.Control = append(r.tr.Control, rec.Clone())
	}
	return nil
}

func (r *records) addConsensus(rec *trace.ConsensusRecord, _ []trace.Missing) error {
	if err := r.acc.PutConsensus(r.e, rec); err != nil {
		return err
	}
	if r.keep {
		r.tr.Consensus = append(r.tr.Consensus, rec.Clone())
	}
	return nil
}
