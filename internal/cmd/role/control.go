package role

import (
	"errors"
	"fmt"
	"os"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/sim"
)

// plantRunner is the plant process: the only holder of x(t).
type plantRunner struct {
	node  *sim.PlantNode
	col   *bus.StepCollector
	pub   *bus.Publisher
	file  *os.File
	trace *sim.TraceWriter[sim.ControlRecord]
	x     []float64
	yhat  []float64
	u     []float64
}

func (r *plantRunner) setup(n *node) error {
	pn, err := sim.NewPlantNode(n.plan, n.cfg.Seed)
	if err != nil {
		return err
	}
	r.node = pn
	r.x, r.yhat, r.u = make([]float64, pn.Nx()), make([]float64, pn.Ny()), make([]float64, pn.Nu())
	cloud := bus.SenderName(bus.RoleCloud, n.cfg.ID)
	n.in.expect(n.subj.CloudU(n.cfg.ID), bus.Expect{Run: n.cfg.Run, Dim: pn.Nu(), Steps: n.steps, Sender: cloud, Kind: bus.StreamU})
	if err := n.in.subscribe(); err != nil {
		return err
	}
	if r.col, err = bus.NewStepCollector([]string{cloud}, bus.CollectorOptions{Counters: &n.data}); err != nil {
		return err
	}
	r.pub = n.conn.Publisher(n.subj.PlantYhat(n.cfg.ID), n.cfg.Run, n.sender, bus.StreamYhat)
	if r.file, err = n.openTrace(); err != nil {
		return err
	}
	r.trace = sim.NewTraceWriter[sim.ControlRecord](r.file)
	return nil
}

func (r *plantRunner) checkX0(x0 []float64) error {
	if len(x0) != r.node.Nx() || !finite(x0) {
		return fmt.Errorf("plant x0 needs %d finite values, got %d", r.node.Nx(), len(x0))
	}
	return nil
}

// episode: for t = 0..T-1 emit yhat(t) = C x(t) + gamma(t), publish it, wait for u(t), apply.
// In realtime a u(t) that misses its tick is counted (Missed) and the last input is held.
func (r *plantRunner) episode(n *node, st episodeStart) error {
	if err := r.node.Begin(st.ep, st.x0); err != nil {
		return err
	}
	realtime := n.cfg.Mode == bus.Realtime
	if realtime {
		n.clock.StartAt(gridOrigin(st))
	}
	clear(r.u)
	for t := 0; t < n.steps; t++ {
		deadline := n.clock.BeginStep(t)
		copy(r.x, r.node.State())
		r.node.Emit(r.yhat)
		rec := sim.ControlRecord{Episode: st.ep, Step: t, X: r.x, Yhat: r.yhat}
		if err := r.trace.Write(&rec); err != nil {
			return err
		}
		if err := r.pub.Send(st.ep, t, r.yhat); err != nil {
			return err
		}
		if err := r.col.Collect(n.in, st.ep, t, deadline); err != nil {
			if !realtime || !errors.Is(err, bus.ErrTimeout) {
				return err
			}
			n.clock.Miss() // hold the last input
		} else {
			copy(r.u, r.col.Values(0))
		}
		r.node.Apply(r.u)
		n.res.Steps++
	}
	copy(r.x, r.node.State())
	rec := sim.ControlRecord{Episode: st.ep, Step: n.steps, X: r.x}
	if err := r.trace.Write(&rec); err != nil {
		return err
	}
	n.res.Records = r.trace.Count()
	return nil
}

func (r *plantRunner) finish(n *node) error { return closeTrace(n, r.trace, r.file) }

type flusher interface {
	Flush() error
	Count() int
}

func closeTrace(n *node, tw flusher, f *os.File) error {
	if f == nil {
		return nil
	}
	var err error
	if tw != nil {
		err = tw.Flush()
		n.res.Records = tw.Count()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("trace file: %w", err)
	}
	return nil
}

// cloudRunner is the cloud controller process: it sees only yhat.
type cloudRunner struct {
	node  *sim.CloudNode
	c     *mat.Dense
	col   *bus.StepCollector
	pub   *bus.Publisher
	file  *os.File
	trace *sim.TraceWriter[sim.ControlRecord]
	yhat  []float64
	u     []float64
	xhat  []float64
	pred  *mat.VecDense
}

func (r *cloudRunner) setup(n *node) error {
	cn, err := sim.NewCloudNode(n.plan)
	if err != nil {
		return err
	}
	r.node, r.c = cn, n.plan.System.C
	r.yhat, r.u, r.xhat = make([]float64, cn.Ny()), make([]float64, cn.Nu()), make([]float64, cn.Nx())
	r.pred = mat.NewVecDense(cn.Ny(), r.yhat)
	plant := bus.SenderName(bus.RolePlant, n.cfg.ID)
	n.in.expect(n.subj.PlantYhat(n.cfg.ID), bus.Expect{Run: n.cfg.Run, Dim: cn.Ny(), Steps: n.steps, Sender: plant, Kind: bus.StreamYhat})
	if err := n.in.subscribe(); err != nil {
		return err
	}
	if r.col, err = bus.NewStepCollector([]string{plant}, bus.CollectorOptions{Counters: &n.data}); err != nil {
		return err
	}
	r.pub = n.conn.Publisher(n.subj.CloudU(n.cfg.ID), n.cfg.Run, n.sender, bus.StreamU)
	if r.file, err = n.openTrace(); err != nil {
		return err
	}
	r.trace = sim.NewTraceWriter[sim.ControlRecord](r.file)
	return nil
}

func (r *cloudRunner) checkX0([]float64) error { return nil } // the cloud starts from its xhat0

// episode: for t = 0..T-1 wait for yhat(t), compute u(t) (eq. 24), publish it. In realtime a
// yhat(t) that misses the tick t+1 is counted and replaced by the prediction C xhat(t).
func (r *cloudRunner) episode(n *node, st episodeStart) error {
	r.node.Begin(st.ep)
	realtime := n.cfg.Mode == bus.Realtime
	if realtime {
		n.clock.StartAt(gridOrigin(st))
	}
	for t := 0; t < n.steps; t++ {
		var deadline = n.clock.Tick(t + 1) // realtime: the cloud reacts, it does not sleep
		if !realtime {
			deadline = n.clock.BeginStep(t)
		}
		if err := r.col.Collect(n.in, st.ep, t, deadline); err != nil {
			if !realtime || !errors.Is(err, bus.ErrTimeout) {
				return err
			}
			n.clock.Miss()
			r.pred.MulVec(r.c, mat.NewVecDense(len(r.node.Next()), r.node.Next()))
		} else {
			copy(r.yhat, r.col.Values(0))
		}
		r.node.Step(t, r.yhat, r.u)
		copy(r.xhat, r.node.Xhat())
		rec := sim.ControlRecord{Episode: st.ep, Step: t, U: r.u, Xhat: r.xhat}
		if err := r.trace.Write(&rec); err != nil {
			return err
		}
		if err := r.pub.Send(st.ep, t, r.u); err != nil {
			return err
		}
		n.res.Steps++
	}
	return nil
}

func (r *cloudRunner) finish(n *node) error { return closeTrace(n, r.trace, r.file) }
