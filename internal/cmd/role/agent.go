package role

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/sim"
)

// agentRunner hosts consensus agents ID..LastAgent. Every agent publishes its y_i(t) on its own
// subject and reads its neighbours' from NATS, also when they live in the same process.
type agentRunner struct {
	agents []*sim.AgentNode
	pubs   []*bus.Publisher
	col    *bus.StepCollector
	nbIdx  [][]int // per hosted agent: collector indices of its neighbours, in Neighbors() order
	ys     []float64
	nb     []float64
	last   []float64 // realtime: last value heard from each collector sender (NaN: none yet)
	yv     []float64
	n      int // agents in the network
	file   *os.File
	trace  *sim.TraceWriter[sim.AgentRecord]
}

func (r *agentRunner) setup(n *node) error {
	r.n = n.plan.Graph.N
	if n.cfg.LastAgent >= r.n {
		return fmt.Errorf("agents %d..%d: the network has %d agents (0..%d)", n.cfg.ID, n.cfg.LastAgent, r.n, r.n-1)
	}
	need := map[int]bool{}
	for i := n.cfg.ID; i <= n.cfg.LastAgent; i++ {
		a, err := sim.NewAgentNode(n.plan, n.cfg.Seed, i)
		if err != nil {
			return err
		}
		r.agents = append(r.agents, a)
		r.pubs = append(r.pubs, n.conn.Publisher(n.subj.AgentY(i), n.cfg.Run, bus.SenderName(bus.RoleAgent, i), bus.StreamY))
		for _, j := range a.Neighbors() {
			need[j] = true
		}
	}
	senders := make([]int, 0, len(need))
	for j := range need {
		senders = append(senders, j)
	}
	slices.Sort(senders)
	names := make([]string, len(senders))
	pos := make(map[int]int, len(senders))
	for k, j := range senders {
		names[k] = bus.SenderName(bus.RoleAgent, j)
		pos[j] = k
		n.in.expect(n.subj.AgentY(j), bus.Expect{Run: n.cfg.Run, Dim: 1, Steps: n.steps, Sender: names[k], Kind: bus.StreamY})
	}
	maxDeg := 0
	for _, a := range r.agents {
		idx := make([]int, len(a.Neighbors()))
		for m, j := range a.Neighbors() {
			idx[m] = pos[j]
		}
		r.nbIdx = append(r.nbIdx, idx)
		maxDeg = max(maxDeg, len(idx))
	}
	r.ys, r.nb, r.last, r.yv = make([]float64, len(r.agents)), make([]float64, maxDeg), make([]float64, len(names)), make([]float64, 1)
	if len(names) == 0 {
		return errors.New("the hosted agents have no neighbours")
	}
	if err := n.in.subscribe(); err != nil {
		return err
	}
	var err error
	// A peer is at most one step ahead in lockstep; a wider window absorbs realtime jitter.
	if r.col, err = bus.NewStepCollector(names, bus.CollectorOptions{Counters: &n.data, Window: 8}); err != nil {
		return err
	}
	if r.file, err = n.openTrace(); err != nil {
		return err
	}
	r.trace = sim.NewTraceWriter[sim.AgentRecord](r.file)
	return nil
}

func (r *agentRunner) checkX0(x0 []float64) error {
	if len(x0) != r.n || !finite(x0) {
		return fmt.Errorf("consensus x0 needs %d finite values (one per agent), got %d", r.n, len(x0))
	}
	return nil
}

// episode: for t = 0..T-1 every hosted agent emits and publishes y_i(t) (eq. 25), then the
// process collects every neighbour's y_j(t) and every hosted agent updates. In realtime a
// neighbour's message that misses the tick is counted (Missed) and its last value is used.
func (r *agentRunner) episode(n *node, st episodeStart) error {
	for _, a := range r.agents {
		x0 := a.X0()
		if st.x0 != nil {
			x0 = st.x0[a.Index()]
		}
		if err := a.Begin(st.ep, x0); err != nil {
			return err
		}
	}
	realtime := n.cfg.Mode == bus.Realtime
	if realtime {
		n.clock.StartAt(gridOrigin(st))
		for k := range r.last {
			r.last[k] = math.NaN()
		}
	}
	for t := 0; t < n.steps; t++ {
		deadline := n.clock.BeginStep(t)
		for k, a := range r.agents {
			x := a.State()
			y := a.Emit()
			r.ys[k] = y
			rec := sim.AgentRecord{Episode: st.ep, Step: t, Agent: a.Index(), X: x, Y: &y}
			if err := r.trace.Write(&rec); err != nil {
				return err
			}
			r.yv[0] = y
			if err := r.pubs[k].Send(st.ep, t, r.yv); err != nil {
				return err
			}
		}
		if err := r.col.Collect(n.in, st.ep, t, deadline); err != nil {
			if !realtime || !errors.Is(err, bus.ErrTimeout) {
				return err
			}
			n.clock.Miss()
		}
		for k, a := range r.agents {
			buf := r.nb[:len(r.nbIdx[k])]
			for m, j := range r.nbIdx[k] {
				switch v := r.col.Values(j); {
				case v != nil:
					buf[m] = v[0]
				case !math.IsNaN(r.last[j]):
					buf[m] = r.last[j] // realtime: the neighbour's last value
				default:
					buf[m] = r.ys[k] // nothing heard yet: no contribution
				}
			}
			if err := a.Update(r.ys[k], buf); err != nil {
				return err
			}
		}
		if realtime {
			for j := range r.last {
				if v := r.col.Values(j); v != nil {
					r.last[j] = v[0]
				}
			}
		}
		n.res.Steps++
	}
	for _, a := range r.agents {
		rec := sim.AgentRecord{Episode: st.ep, Step: n.steps, Agent: a.Index(), X: a.State()}
		if err := r.trace.Write(&rec); err != nil {
			return err
		}
	}
	n.res.Records = r.trace.Count()
	return nil
}

func (r *agentRunner) finish(n *node) error { return closeTrace(n, r.trace, r.file) }
