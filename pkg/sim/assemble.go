package sim

import (
	"cmp"
	"slices"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/plan"
)

// assembler joins the partial records the cores of one in-memory run produce (Ready) into the
// full records of an episode - the in-memory counterpart of MergeControl / MergeConsensus,
// with preallocated buffers so the fast engine does not allocate per step. The buffers are
// flat, (T+1) x width each (a vector per step would cost a slice header and an allocation per
// step), and one record is handed over at a time: 8 (4 nx + ny + nu) + 12 bytes per step for
// cloud control, 25 N + 12 for consensus, the per-worker memory EstimateCost counts.
type assembler struct {
	control bool
	T, n    int // steps; agents (consensus)
	ref     dynamics.Reference
	ep      int
	ctl     ControlRecord   // the record being handed over (put copies what it keeps)
	con     ConsensusRecord // idem
	// per-step backing storage (step t at [t*w, (t+1)*w), w the vector's length) and presence
	x, refs, yhat, u, xhat, eve flat
	y                           flat
	hasX, hasYhat, hasU, hasEve []bool // control: per step
	agentX                      []bool // consensus: per (step, agent), its record arrived
	missing                     []int
	// down: the steps with roles (control) / agents (consensus) down (faults.crashes)
	downCtl map[int][]string
	downCon map[int][]int
}

// flat is a (T+1) x w matrix stored by rows: row t is step t's vector.
type flat struct {
	w int
	v []float64
}

func newFlat(n, w int) flat { return flat{w: w, v: make([]float64, n*w)} }

// at returns step t's vector (a view).
func (f flat) at(t int) []float64 { return f.v[t*f.w : (t+1)*f.w : (t+1)*f.w] }

func newAssembler(p *plan.Plan, ref dynamics.Reference) *assembler {
	T := p.Steps
	a := &assembler{T: T, ref: ref, control: p.System != nil && p.Graph == nil}
	mk := newFlat
	a.hasX, a.hasYhat, a.hasU, a.hasEve, a.missing = make([]bool, T+1), make([]bool, T+1), make([]bool, T+1), make([]bool, T+1), make([]int, T+1)
	a.downCtl, a.downCon = map[int][]string{}, map[int][]int{}
	if a.control {
		nx, nu, ny := p.System.Nx(), p.System.Nu(), p.System.Ny()
		a.x, a.refs, a.yhat, a.u, a.xhat, a.eve = mk(T+1, nx), mk(T+1, nx), mk(T+1, ny), mk(T+1, nu), mk(T+1, nx), mk(T+1, nx)
	} else {
		a.n = p.Graph.N
		a.x, a.y, a.eve = mk(T+1, a.n), mk(T+1, a.n), mk(T+1, a.n)
		a.agentX = make([]bool, (T+1)*a.n)
	}
	return a
}

func (a *assembler) begin(ep int) {
	a.ep = ep
	clear(a.hasX)
	clear(a.hasYhat)
	clear(a.hasU)
	clear(a.hasEve)
	clear(a.agentX)
	clear(a.missing)
	clear(a.downCtl)
	clear(a.downCon)
}

// sink is the Driver's record sink.
func (a *assembler) sink(_ Core, rd *Ready) error {
	for i := range rd.Control {
		r := &rd.Control[i]
		t := r.Step
		if r.X != nil {
			copy(a.x.at(t), r.X)
			a.hasX[t] = true
		}
		if r.Yhat != nil {
			copy(a.yhat.at(t), r.Yhat)
			a.hasYhat[t] = true
		}
		if r.U != nil {
			copy(a.u.at(t), r.U)
			copy(a.xhat.at(t), r.Xhat)
			a.hasU[t] = true
		}
		if r.EveX0 != nil {
			copy(a.eve.at(t), r.EveX0)
			a.hasEve[t] = true
		}
		a.missing[t] += r.EveMissing
		if len(r.Down) > 0 {
			a.downCtl[t] = append(a.downCtl[t], r.Down...)
		}
	}
	for i := range rd.Agent {
		r := &rd.Agent[i]
		k := r.Step*a.n + r.Agent
		a.x.at(r.Step)[r.Agent] = r.X
		a.agentX[k] = true
		if r.Y != nil {
			a.y.at(r.Step)[r.Agent] = *r.Y
		}
		if r.Down {
			a.y.at(r.Step)[r.Agent] = 0
			a.downCon[r.Step] = append(a.downCon[r.Step], r.Agent)
		}
	}
	for i := range rd.Blocks {
		b := &rd.Blocks[i]
		copy(a.x.at(b.Step)[b.First:], b.X)
		k := b.Step*a.n + b.First
		for j := k; j < k+len(b.X); j++ {
			a.agentX[j] = true
		}
		if b.Y != nil {
			copy(a.y.at(b.Step)[b.First:], b.Y)
		}
	}
	for i := range rd.Consensus {
		r := &rd.Consensus[i]
		if r.EveX0 != nil {
			copy(a.eve.at(r.Step), r.EveX0)
			a.hasEve[r.Step] = true
		}
		a.missing[r.Step] += r.EveMissing
	}
	return nil
}

// downOrNil is nil for an empty list (no field in the JSON, as MergeControl / MergeConsensus).
func downOrNil[T cmp.Ordered](v []T) []T {
	if len(v) == 0 {
		return nil
	}
	slices.Sort(v)
	return v
}

func opt(ok bool, v []float64) []float64 {
	if ok {
		return v
	}
	return nil
}

// put feeds the episode's records 0..T to the accumulator (buffer e) and, when keep, returns
// copies of them.
func (a *assembler) put(acc *Accumulator, e *episodeAcc, keep bool) (*Traces, error) {
	var tr *Traces
	if a.control {
		if keep {
			tr = &Traces{Control: make([]ControlRecord, 0, a.T+1)}
		}
		for t := 0; t <= a.T; t++ {
			a.ref.At(t, a.refs.at(t))
			r := &a.ctl
			*r = ControlRecord{Episode: a.ep, Step: t, X: opt(a.hasX[t], a.x.at(t)), Ref: a.refs.at(t),
				EveX0: opt(a.hasEve[t], a.eve.at(t)), EveMissing: a.missing[t], Down: downOrNil(a.downCtl[t])}
			if t < a.T {
				r.Yhat, r.U, r.Xhat = opt(a.hasYhat[t], a.yhat.at(t)), opt(a.hasU[t], a.u.at(t)), opt(a.hasU[t], a.xhat.at(t))
			}
			if err := acc.validControl(r); err != nil {
				return nil, err
			}
			if err := acc.putControl(e, r); err != nil {
				return nil, err
			}
			if keep {
				tr.Control = append(tr.Control, r.Clone())
			}
		}
		return tr, nil
	}
	if keep {
		tr = &Traces{Consensus: make([]ConsensusRecord, 0, a.T+1)}
	}
	for t := 0; t <= a.T; t++ {
		r := &a.con
		*r = ConsensusRecord{Episode: a.ep, Step: t, X: a.x.at(t), EveX0: opt(a.hasEve[t], a.eve.at(t)), EveMissing: a.missing[t], Down: downOrNil(a.downCon[t])}
		for i := 0; i < a.n; i++ {
			if !a.agentX[t*a.n+i] {
				r.X = nil // an agent's record is missing: the episode is incomplete
			}
		}
		if t < a.T {
			r.Y = a.y.at(t)
		}
		if err := acc.validConsensus(r); err != nil {
			return nil, err
		}
		if err := acc.putConsensus(e, r); err != nil {
			return nil, err
		}
		if keep {
			tr.Consensus = append(tr.Consensus, r.Clone())
		}
	}
	return tr, nil
}
