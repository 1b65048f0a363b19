package sim

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
)

// The endpoints of a cloud-control run (one plant, one cloud) and of the eavesdropper.
var (
	PlantEndpoint        = endpoint.Endpoint{Role: endpoint.Plant, ID: 0}
	CloudEndpoint        = endpoint.Endpoint{Role: endpoint.Cloud, ID: 0}
	EavesdropperEndpoint = endpoint.Endpoint{Role: endpoint.Eavesdropper, ID: 0}
)

// AgentEndpoint is consensus agent i.
func AgentEndpoint(i int) endpoint.Endpoint { return endpoint.Endpoint{Role: endpoint.Agent, ID: i} }

// PlantCore is the plant as a Core (its arithmetic: Plant): it releases yhat(t) at the start
// of step t and completes step t with u(t) from the cloud - or, when u(t) is missing at the
// step's deadline, with its missing-input rule: hold (the newest u received, by step; zero
// before the first) or zero. It then applies x(t+1) = A x(t) + B u(t) (eq. 23).
type PlantCore struct {
	base
	plant *Plant
	rule  scenario.PlantMissing
	x     []float64
	yhat  []float64
	u     []float64
}

// NewPlantCore returns the plant core of a cloud-control plan with run seed seed.
func NewPlantCore(p *plan.Plan, seed uint64) (*PlantCore, error) {
	plant, err := NewPlant(p, seed)
	if err != nil {
		return nil, err
	}
	c := &PlantCore{plant: plant, rule: p.Scenario.Faults.Missing.Plant,
		x: make([]float64, plant.Nx()), yhat: make([]float64, plant.Ny()), u: make([]float64, plant.Nu())}
	if c.rule == "" {
		c.rule = scenario.PlantHold
	}
	c.base = base{self: PlantEndpoint, T: p.Steps, in: newInputs(PlantEndpoint, []endpoint.Endpoint{CloudEndpoint}, p.Steps)}
	c.work = c.complete
	c.setCrashes(p.Scenario.Faults.Crashes)
	return c, nil
}

// Plant returns the plant's arithmetic (its state and noise, for scoring).
func (c *PlantCore) Plant() *Plant { return c.plant }

// Begin implements Core: x(0) = x0 (nil: the scenario's), noise reseeded, yhat(0) released.
func (c *PlantCore) Begin(ep int, x0 []float64) error {
	c.beginBase(ep)
	if err := c.plant.Begin(ep, x0); err != nil {
		return err
	}
	clear(c.u)
	if !c.downAt(0) {
		c.emit()
	}
	c.checkCrash()
	return nil
}

// emit records x(t), draws the noise and releases yhat(t) = C x(t) + gamma(t).
func (c *PlantCore) emit() {
	t := c.plant.Step()
	c.plant.Emit(c.yhat)
	yhat := c.yhat // a view: the plant releases at most one yhat per call (it needs u(t) first)
	if !c.norec {
		yhat = c.ob.mem.copy(c.yhat)
		c.ob.rd.Control = append(c.ob.rd.Control, trace.ControlRecord{Episode: c.plant.Episode(), Step: t, X: c.ob.mem.copy(c.plant.State()), Yhat: yhat})
	}
	c.ob.rd.Out = append(c.ob.rd.Out, Out{From: c.self, Step: t, Values: yhat})
}

func (c *PlantCore) complete() bool {
	if t := c.in.cur; c.downAt(t) { // crashed: x frozen, nothing released, the noise runs on
		if !c.norec {
			c.ob.rd.Control = append(c.ob.rd.Control, trace.ControlRecord{Episode: c.plant.Episode(), Step: t, X: c.ob.mem.copy(c.plant.State()), Down: downNames[endpoint.Plant]})
		}
		c.plant.Idle()
	} else {
		plantInput(c.in, 0, c.rule, c.u)
		c.plant.Apply(c.u)
	}
	if c.plant.Step() == c.T {
		if !c.norec {
			c.ob.rd.Control = append(c.ob.rd.Control, trace.ControlRecord{Episode: c.plant.Episode(), Step: c.T, X: c.ob.mem.copy(c.plant.State())})
		}
		return true
	}
	if next := c.plant.Step(); !c.downAt(next) {
		if c.downAt(next-1) && c.redraw {
			c.plant.Redraw()
		}
		c.emit()
	}
	return false
}

// downNames are the Down field of a down core's records (one process per role and id).
var downNames = [...][]string{endpoint.Plant: {"plant.0"}, endpoint.Cloud: {"cloud.0"}}

// Restart implements Core.
func (c *PlantCore) Restart() error { return c.restart() }

// plantInput writes into u the input the plant applies at the current step: sender k's u(t),
// or, missing, the plant's rule (zero, or hold the newest u received; u keeps its value
// before the first). The plant applies it; the eavesdropper assumes it.
func plantInput(in *inputs, k int, rule scenario.PlantMissing, u []float64) {
	switch v := in.value(k); {
	case v != nil:
		copyVals(u, v)
	case rule == scenario.PlantZero:
		clear(u)
	default: // hold
		if l := in.latest(k); l != nil {
			copyVals(u, l)
		}
	}
}

// Deliver implements Core.
func (c *PlantCore) Deliver(m *Msg) error { return c.step(m) }

// Tick implements Core.
func (c *PlantCore) Tick(t int) error { return c.tick(t) }

// CloudCore is the cloud controller as a Core (its arithmetic: Controller, eq. (24)): it
// completes step t with yhat(t) - or, when yhat(t) is missing at the deadline, with the
// observer's own prediction C xhat(t) (the observer then runs open loop for that step) - and
// releases u(t).
type CloudCore struct {
	base
	ctl  *Controller
	c    *mat.Dense
	yhat []float64
	u    []float64
}

// NewCloudCore returns the cloud core of a cloud-control plan.
func NewCloudCore(p *plan.Plan) (*CloudCore, error) {
	ctl, err := NewController(p)
	if err != nil {
		return nil, err
	}
	c := &CloudCore{ctl: ctl, c: p.System.C, yhat: make([]float64, ctl.Ny()), u: make([]float64, ctl.Nu())}
	c.base = base{self: CloudEndpoint, T: p.Steps, in: newInputs(CloudEndpoint, []endpoint.Endpoint{PlantEndpoint}, p.Steps)}
	c.work = c.complete
	c.setCrashes(p.Scenario.Faults.Crashes)
	return c, nil
}

// Begin implements Core: xhat(0) = the scenario's xhat0 (the cloud never sees x(0)).
func (c *CloudCore) Begin(ep int, _ []float64) error {
	if err := c.errEpisode(ep); err != nil {
		return err
	}
	c.beginBase(ep)
	c.ctl.Begin(ep)
	c.checkCrash()
	return nil
}

// Restart implements Core.
func (c *CloudCore) Restart() error { return c.restart() }

func (c *CloudCore) complete() bool {
	t := c.in.cur
	if c.downAt(t) { // crashed: the observer is frozen, no u(t) is released
		if !c.norec {
			c.ob.rd.Control = append(c.ob.rd.Control, trace.ControlRecord{Episode: c.ctl.episode, Step: t, Down: downNames[endpoint.Cloud]})
		}
		return t+1 == c.T
	}
	if v := c.in.value(0); v != nil {
		copyVals(c.yhat, v)
	} else {
		predictOutput(c.c, c.ctl.Next(), c.yhat)
	}
	c.ctl.Step(t, c.yhat, c.u)
	u := c.u // a view: the cloud releases at most one u per call (it needs yhat(t) first)
	if !c.norec {
		u = c.ob.mem.copy(c.u)
		c.ob.rd.Control = append(c.ob.rd.Control, trace.ControlRecord{Episode: c.ctl.episode, Step: t, U: u, Xhat: c.ob.mem.copy(c.ctl.Xhat())})
	}
	c.ob.rd.Out = append(c.ob.rd.Out, Out{From: c.self, Step: t, Values: u})
	return t+1 == c.T
}

// predictOutput is the cloud's stand-in for a missing yhat(t): C xhat(t), so that the
// observer's innovation is zero and it runs open loop for the step.
func predictOutput(c *mat.Dense, xhat, yhat []float64) {
	r, k := c.Dims()
	for i := 0; i < r; i++ {
		var s float64
		for j := 0; j < k; j++ {
			s += c.At(i, j) * xhat[j]
		}
		yhat[i] = s
	}
}

// Deliver implements Core.
func (c *CloudCore) Deliver(m *Msg) error { return c.step(m) }

// Tick implements Core.
func (c *CloudCore) Tick(t int) error { return c.tick(t) }

// AgentCore is consensus agent i as a Core (its arithmetic: Agent, eq. (25)): it releases
// y_i(t) at the start of step t and completes the step with its neighbours' y_j(t), taken in
// Neighbors() order. A neighbour's message missing at the deadline is replaced by the rule:
// reuse-last (the newest y_j received, by step; skip before the first) or skip (the term
// w_ij (y_j - y_i) is 0 for this step).
type AgentCore struct {
	base
	agent *Agent
	rule  scenario.AgentMissing
	y     float64
	buf   []float64
	state float64
}

// NewAgentCore returns agent i of a consensus plan with run seed seed.
func NewAgentCore(p *plan.Plan, seed uint64, i int) (*AgentCore, error) {
	agent, err := NewAgent(p, seed, i)
	if err != nil {
		return nil, err
	}
	nb := agent.Neighbors()
	senders := make([]endpoint.Endpoint, len(nb))
	for k, j := range nb {
		senders[k] = AgentEndpoint(j)
	}
	c := &AgentCore{agent: agent, rule: p.Scenario.Faults.Missing.Agent, buf: make([]float64, len(nb))}
	if c.rule == "" {
		c.rule = scenario.AgentReuseLast
	}
	self := AgentEndpoint(i)
	c.base = base{self: self, T: p.Steps, in: newInputs(self, senders, p.Steps)}
	c.work = c.complete
	c.setCrashes(p.Scenario.Faults.Crashes)
	return c, nil
}

// Agent returns the agent's arithmetic.
func (c *AgentCore) Agent() *Agent { return c.agent }

// Begin implements Core: x_i(0) from x0 (every agent's initial state, len N; nil: the
// scenario's), noise reseeded, y_i(0) released.
func (c *AgentCore) Begin(ep int, x0 []float64) error {
	c.beginBase(ep)
	x0i := c.agent.X0()
	if x0 != nil {
		if c.agent.Index() >= len(x0) {
			return fmt.Errorf("sim: agent %d: x0 has %d values", c.agent.Index(), len(x0))
		}
		x0i = x0[c.agent.Index()]
	}
	if err := c.agent.Begin(ep, x0i); err != nil {
		return err
	}
	if !c.downAt(0) {
		c.emit()
	}
	c.checkCrash()
	return nil
}

// Restart implements Core.
func (c *AgentCore) Restart() error { return c.restart() }

func (c *AgentCore) emit() {
	t := c.agent.Step()
	x := c.agent.State()
	c.y = c.agent.Emit()
	y := c.ob.mem.take(1)
	y[0] = c.y
	if !c.norec {
		c.ob.rd.Agent = append(c.ob.rd.Agent, trace.AgentRecord{Episode: c.agent.episode, Step: t, Agent: c.agent.Index(), X: x, Y: &y[0]})
	}
	c.ob.rd.Out = append(c.ob.rd.Out, Out{From: c.self, Step: t, Values: y})
}

func (c *AgentCore) complete() bool {
	if t := c.in.cur; c.downAt(t) { // crashed: x_i frozen, nothing released, the noise runs on
		if !c.norec {
			c.ob.rd.Agent = append(c.ob.rd.Agent, trace.AgentRecord{Episode: c.agent.episode, Step: t, Agent: c.agent.Index(), X: c.agent.State(), Down: true})
		}
		c.agent.Idle()
		return c.next()
	}
	for k := range c.buf {
		switch v := c.in.value(k); {
		case v != nil:
			c.buf[k] = v[0]
		case c.rule == scenario.AgentReuseLast && c.in.latest(k) != nil:
			c.buf[k] = c.in.latest(k)[0]
		default: // skip: no contribution this step
			c.buf[k] = c.y
		}
	}
	_ = c.agent.Update(c.y, c.buf) // len(buf) is the degree by construction
	return c.next()
}

// next ends step t-1: the terminal record at T, else the release of y_i(t) unless down.
func (c *AgentCore) next() bool {
	if c.agent.Step() == c.T {
		if !c.norec {
			c.ob.rd.Agent = append(c.ob.rd.Agent, trace.AgentRecord{Episode: c.agent.episode, Step: c.T, Agent: c.agent.Index(), X: c.agent.State()})
		}
		return true
	}
	if t := c.agent.Step(); !c.downAt(t) {
		if c.downAt(t-1) && c.redraw {
			c.agent.Redraw()
		}
		c.emit()
	}
	return false
}

// Deliver implements Core.
func (c *AgentCore) Deliver(m *Msg) error { return c.step(m) }

// Tick implements Core.
func (c *AgentCore) Tick(t int) error { return c.tick(t) }

// EavesdropperCore is the eavesdropper as a Core (its arithmetic: Estimator): it sees the
// deliveries addressed to it and, at each step, estimates x(0) from what it received. A
// missing yhat(t) (or y_i(t)) leaves that output out of the least squares; a missing u(t)
// is replaced by what the plant's rule would apply (hold the newest u seen, or zero), and a
// missing y_i(t) in the neighbours' terms by the newest y_i seen (0 before the first). Each
// record names how many messages the step missed (EveMissing).
type EavesdropperCore struct {
	base
	estimator *Estimator
	control   bool
	plantRule scenario.PlantMissing
	u         []float64
	y         []float64
	have      []bool
	src       []nbrSrc // consensus: where y_i(t) is, per agent (its sender and offset)
	est       []float64
	tap       Tap // what the estimator takes in, for the auditor's precision scores (precision.go)
}

// NewEavesdropperCore returns the eavesdropper core of a plan (every agent publishing its own
// messages, for consensus).
func NewEavesdropperCore(p *plan.Plan) (*EavesdropperCore, error) {
	return NewEavesdropperCoreOfBlocks(p, Blocks{Size: 1})
}

// NewEavesdropperCoreOfBlocks returns the eavesdropper core of a plan whose consensus agents
// publish in the blocks of hs (Hosts.Batched; else one message per agent): y_i(t) is read
// from its block's message, and a block's message missing counts as each of its agents'.
func NewEavesdropperCoreOfBlocks(p *plan.Plan, hs Blocks) (*EavesdropperCore, error) {
	estimator, err := NewEstimator(p)
	if err != nil {
		return nil, err
	}
	c := &EavesdropperCore{estimator: estimator, control: estimator.control != nil, plantRule: p.Scenario.Faults.Missing.Plant,
		est: make([]float64, estimator.Dim())}
	var senders []endpoint.Endpoint
	var weight, dims []int
	switch {
	case c.control:
		senders = []endpoint.Endpoint{PlantEndpoint, CloudEndpoint}
		c.u = make([]float64, estimator.nu)
	case hs.Batched():
		if hs.N != p.Graph.N {
			return nil, fmt.Errorf("sim: eavesdropper: blocks for %d agents, the network has %d", hs.N, p.Graph.N)
		}
		senders = hs.Endpoints()
		dims = hs.dims(senders)
		weight = dims
		c.src = make([]nbrSrc, p.Graph.N)
		for i := range c.src {
			f := hs.First(i)
			c.src[i] = nbrSrc{k: int32(f / hs.Size), off: int32(i - f)}
		}
	default:
		n := p.Graph.N
		senders = make([]endpoint.Endpoint, n)
		c.src = make([]nbrSrc, n)
		for i := range senders {
			senders[i] = AgentEndpoint(i)
			c.src[i] = nbrSrc{k: int32(i)}
		}
	}
	if !c.control {
		c.y, c.have = make([]float64, p.Graph.N), make([]bool, p.Graph.N)
	}
	c.base = base{self: EavesdropperEndpoint, T: p.Steps, in: newInputs(EavesdropperEndpoint, senders, p.Steps)}
	c.work = c.complete
	c.in.weight, c.in.dim = weight, dims
	c.setCrashes(p.Scenario.Faults.Crashes)
	return c, nil
}

// Restart implements Core (the eavesdropper never crashes).
func (c *EavesdropperCore) Restart() error { return c.restart() }

// Estimator returns the eavesdropper's arithmetic (its least-squares estimators).
func (c *EavesdropperCore) Estimator() *Estimator { return c.estimator }

// Begin implements Core (x0 is never read: the eavesdropper does not know it).
func (c *EavesdropperCore) Begin(ep int, _ []float64) error {
	if err := c.errEpisode(ep); err != nil {
		return err
	}
	c.beginBase(ep)
	c.estimator.Begin(ep)
	clear(c.u)
	if c.tap != nil {
		c.tap.TapBegin(ep)
	}
	return nil
}

func (c *EavesdropperCore) complete() bool {
	t := c.in.cur
	var err error
	if c.control {
		yhat := c.in.value(0)
		plantInput(c.in, 1, c.plantRule, c.u) // what the plant's rule applies
		err = c.estimator.observeControl(t, yhat, c.u)
		if c.tap != nil {
			c.tap.TapControl(t, yhat, c.u)
		}
	} else {
		for i, s := range c.src {
			v := c.in.value(int(s.k))
			c.have[i] = v != nil
			switch {
			case v != nil:
				c.y[i] = v[s.off]
			case c.in.latest(int(s.k)) != nil:
				c.y[i] = c.in.latest(int(s.k))[s.off]
			default:
				c.y[i] = 0
			}
		}
		err = c.estimator.observeConsensus(t, c.y, c.have)
		if c.tap != nil {
			c.tap.TapConsensus(t, c.y, c.have)
		}
	}
	if c.norec {
		return t+1 == c.T
	}
	missing := c.in.missing()
	var est []float64
	if err == nil && c.estimator.EstimateX0(c.est) {
		est = c.ob.mem.copy(c.est)
	}
	if c.control {
		c.ob.rd.Control = append(c.ob.rd.Control, trace.ControlRecord{Episode: c.estimator.episode, Step: t, EveX0: est, EveMissing: missing})
	} else {
		c.ob.rd.Consensus = append(c.ob.rd.Consensus, trace.ConsensusRecord{Episode: c.estimator.episode, Step: t, EveX0: est, EveMissing: missing})
	}
	return t+1 == c.T
}

// Deliver implements Core.
func (c *EavesdropperCore) Deliver(m *Msg) error { return c.step(m) }

// Tick implements Core.
func (c *EavesdropperCore) Tick(t int) error { return c.tick(t) }

// NewCores returns every core of a plan's run: plant, cloud and eavesdropper (cloud
// control), or every agent and the eavesdropper (consensus).
func NewCores(p *plan.Plan, seed uint64) ([]Core, error) {
	return NewCoresInBlocks(p, seed, Blocks{Size: 1})
}

// NewCoresInBlocks is NewCores with the consensus agents in the blocks of hs: one BlockCore per
// block when hs.Batched(), else one AgentCore per agent.
func NewCoresInBlocks(p *plan.Plan, seed uint64, hs Blocks) ([]Core, error) {
	if p == nil || p.Scenario == nil {
		return nil, fmt.Errorf("sim: cores: plan is nil")
	}
	var out []Core
	switch p.Scenario.Kind {
	case scenario.CloudControl:
		pc, err := NewPlantCore(p, seed)
		if err != nil {
			return nil, err
		}
		cc, err := NewCloudCore(p)
		if err != nil {
			return nil, err
		}
		out = append(out, pc, cc)
	case scenario.Consensus:
		if err := needConsensus(p, "agents"); err != nil {
			return nil, err
		}
		if hs.Batched() {
			for _, h := range hs.Endpoints() {
				hc, err := NewBlockCore(p, seed, hs, h.ID)
				if err != nil {
					return nil, err
				}
				out = append(out, hc)
			}
			break
		}
		for i := 0; i < p.Graph.N; i++ {
			a, err := NewAgentCore(p, seed, i)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
	default:
		return nil, fmt.Errorf("sim: cores: unknown scenario kind %q", p.Scenario.Kind)
	}
	ec, err := NewEavesdropperCoreOfBlocks(p, hs)
	if err != nil {
		return nil, err
	}
	return append(out, ec), nil
}
