package sim

import (
	"fmt"
	"slices"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
)

// Blocks partitions the N agents of a consensus run into blocks of Size consecutive agents,
// the agents of one process (dpsim run --agents-per-process): block b holds agents
// b*Size..min((b+1)*Size, N)-1 and is named host.<b*Size>, after its first agent. With
// Size > 1 a block runs as one BlockCore and publishes one message per step carrying the
// outputs of all its agents, so a network step costs O(blocks) messages instead of O(agents).
// Size <= 1 means one AgentCore per agent (one message per agent per step).
type Blocks struct {
	N, Size int
}

// NewBlocks returns the blocks of perProcess agents of a consensus plan, batched when
// Batchable(p); otherwise (or for cloud control) Hosts with Size 1: one core per agent.
func NewBlocks(p *plan.Plan, perProcess int) Blocks {
	if p == nil || p.Graph == nil || perProcess <= 1 || !Batchable(p) {
		return Blocks{Size: 1}
	}
	return Blocks{N: p.Graph.N, Size: perProcess}
}

// Batchable reports whether a consensus plan's agents may publish in blocks: no link fault
// (rules and partitions act on the link of one agent to one neighbour, agent.i -> agent.j, so
// each agent then publishes its own messages) and no crash (a crash kills one agent's process).
func Batchable(p *plan.Plan) bool {
	if p == nil || p.Scenario == nil || p.Scenario.Kind != scenario.Consensus {
		return false
	}
	f := &p.Scenario.Faults
	return !f.Active() && len(f.Crashes) == 0
}

// Batched reports whether agents publish in blocks (Size > 1).
func (h Blocks) Batched() bool { return h.Size > 1 }

// First returns the first agent of the block holding agent i.
func (h Blocks) First(i int) int { return i / h.Size * h.Size }

// Block returns the agents lo..hi-1 of the block that starts at agent lo.
func (h Blocks) Block(lo int) (int, int) { return lo, min(lo+h.Size, h.N) }

// Endpoints returns every block's endpoint, in agent order.
func (h Blocks) Endpoints() []endpoint.Endpoint {
	var out []endpoint.Endpoint
	for lo := 0; lo < h.N; lo += h.Size {
		out = append(out, BlockEndpoint(lo))
	}
	return out
}

// dims returns the message length of each block in senders (its number of agents).
func (h Blocks) dims(senders []endpoint.Endpoint) []int {
	out := make([]int, len(senders))
	for k, s := range senders {
		lo, hi := h.Block(s.ID)
		out[k] = hi - lo
	}
	return out
}

// BlockEndpoint is the block of agents starting at agent lo.
func BlockEndpoint(lo int) endpoint.Endpoint { return endpoint.Endpoint{Role: endpoint.Block, ID: lo} }

// nbrSrc is where a hosted agent finds one neighbour's y_j(t): sender k of the core's inputs at
// offset off in its message, or (k = -1) the hosted agent at position off.
type nbrSrc struct{ k, off int32 }

// BlockCore is a block of consensus agents lo..hi-1 as one Core (Hosts): each agent is an
// Agent (its arithmetic) with its own noise stream, and each completes step t exactly as its AgentCore would
// - the same eq. (25) update over its neighbours in Neighbors() order, the same missing-input
// rule - so a run gives bit-identical numbers however its agents are grouped. It releases one
// message per step, y(t) of its agents in agent order; a neighbour in the block is read
// directly, one in another block from that block's message (its offset). A block's message
// missing at the deadline is missing for each agent it carries: the rule applies per agent
// (reuse-last: that agent's newest y_j; skip) and Ready.Missing counts per agent and
// neighbour, as the agents' own cores would.
type BlockCore struct {
	base
	lo     int
	agents []*Agent
	rule   scenario.AgentMissing
	src    [][]nbrSrc // per hosted agent, its neighbours' sources in Neighbors order
	y      []float64  // y_i(t) of the hosted agents, the step in progress
	buf    []float64
	vals   [][]float64 // per sender, the values the step uses (complete's scratch)
}

// NewBlockCore returns the block of hs starting at agent lo (a multiple of hs.Size) of a
// consensus plan with run seed seed.
func NewBlockCore(p *plan.Plan, seed uint64, hs Blocks, lo int) (*BlockCore, error) {
	if err := needConsensus(p, "host"); err != nil {
		return nil, err
	}
	if !hs.Batched() || hs.N != p.Graph.N {
		return nil, fmt.Errorf("sim: host %d: blocks of %d agents for %d agents do not batch this plan", lo, hs.Size, p.Graph.N)
	}
	if lo < 0 || lo >= hs.N || lo%hs.Size != 0 {
		return nil, fmt.Errorf("sim: host %d: a block starts at a multiple of %d below %d", lo, hs.Size, hs.N)
	}
	lo, hi := hs.Block(lo)
	c := &BlockCore{lo: lo, rule: p.Scenario.Faults.Missing.Agent, y: make([]float64, hi-lo)}
	if c.rule == "" {
		c.rule = scenario.AgentReuseLast
	}
	for i := lo; i < hi; i++ {
		agent, err := NewAgent(p, seed, i)
		if err != nil {
			return nil, err
		}
		c.agents = append(c.agents, agent)
	}
	senders := hs.neighbourBlocks(p, lo) // Topology's: the blocks it hears are those it reaches
	weight := make([]int, len(senders))
	maxDeg := 0
	for _, agent := range c.agents {
		srcs := make([]nbrSrc, len(agent.Neighbors()))
		for n, j := range agent.Neighbors() {
			f := hs.First(j)
			if f == lo {
				srcs[n] = nbrSrc{k: -1, off: int32(j - lo)}
				continue
			}
			k := slices.Index(senders, BlockEndpoint(f))
			srcs[n] = nbrSrc{k: int32(k), off: int32(j - f)}
			weight[k]++
		}
		c.src = append(c.src, srcs)
		maxDeg = max(maxDeg, len(srcs))
	}
	c.buf, c.vals = make([]float64, maxDeg), make([][]float64, len(senders))
	self := BlockEndpoint(lo)
	c.base = base{self: self, T: p.Steps, in: newInputs(self, senders, p.Steps)}
	c.work = c.complete
	c.in.weight, c.in.dim = weight, hs.dims(senders)
	return c, nil
}

// Agents returns the hosted agents' arithmetic, in agent order.
func (c *BlockCore) Agents() []*Agent { return c.agents }

// Begin implements Core: x_i(0) from x0 (every agent's initial state, len N; nil: the
// scenario's), noise reseeded, y(0) released.
func (c *BlockCore) Begin(ep int, x0 []float64) error {
	c.beginBase(ep)
	for _, agent := range c.agents {
		x0i := agent.X0()
		if x0 != nil {
			if agent.Index() >= len(x0) {
				return fmt.Errorf("sim: host %d: agent %d: x0 has %d values", c.lo, agent.Index(), len(x0))
			}
			x0i = x0[agent.Index()]
		}
		if err := agent.Begin(ep, x0i); err != nil {
			return err
		}
	}
	c.emit()
	return nil
}

// emit releases y(t) of every hosted agent, each y_i(t) = x_i(t) + gamma_i(t) (eq. 25).
func (c *BlockCore) emit() {
	t := c.agents[0].Step()
	for a, agent := range c.agents {
		c.y[a] = agent.Emit()
	}
	y := c.y // a view: the block releases one message per call (it needs step t's inputs first)
	if !c.norec {
		y = c.ob.mem.copy(c.y)
		c.record(t, y)
	}
	c.ob.rd.Out = append(c.ob.rd.Out, Out{From: c.self, Step: t, Values: y})
}

// record adds the block's record of step t: every hosted agent's state and message y (nil at T).
func (c *BlockCore) record(t int, y []float64) {
	x := c.ob.mem.take(len(c.agents))
	for a, agent := range c.agents {
		x[a] = agent.State()
	}
	c.ob.rd.Blocks = append(c.ob.rd.Blocks, trace.BlockRecord{Episode: c.agents[0].episode, Step: t, First: c.lo, X: x, Y: y})
}

func (c *BlockCore) complete() bool {
	// Each sender's values for this step, once: its message, or by the rule its newest
	// (reuse-last), or nil (skip: the agents' terms are 0).
	for k := range c.vals {
		v := c.in.value(k)
		if v == nil && c.rule == scenario.AgentReuseLast {
			v = c.in.latest(k)
		}
		c.vals[k] = v
	}
	for a, agent := range c.agents {
		srcs := c.src[a]
		buf := c.buf[:len(srcs)]
		for n, s := range srcs {
			switch {
			case s.k < 0:
				buf[n] = c.y[s.off]
			case c.vals[s.k] != nil:
				buf[n] = c.vals[s.k][s.off]
			default: // skip: no contribution this step
				buf[n] = c.y[a]
			}
		}
		_ = agent.Update(c.y[a], buf) // len(buf) is the degree by construction
	}
	if c.agents[0].Step() == c.T {
		if !c.norec {
			c.record(c.T, nil)
		}
		return true
	}
	c.emit()
	return false
}

// Deliver implements Core.
func (c *BlockCore) Deliver(m *Msg) error { return c.step(m) }

// Tick implements Core.
func (c *BlockCore) Tick(t int) error { return c.tick(t) }

// Restart implements Core (a block never crashes: Batchable excludes crashes).
func (c *BlockCore) Restart() error { return c.restart() }
