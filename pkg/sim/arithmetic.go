package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/estimate"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// The labels of the random stream paths (contract, see the package doc): the plant's noise of
// episode e is rng.NewNoise(seed, rng.Label(LabelPlant), 0, e), agent i's is
// rng.NewNoise(seed, rng.Label(LabelAgent), i, e).
const (
	LabelPlant = "plant"
	LabelAgent = "agent"
)

// labelAgent and labelPlant are rng.Label(LabelAgent) and rng.Label(LabelPlant), hashed once.
var labelAgent, labelPlant = rng.Label(LabelAgent), rng.Label(LabelPlant)

func needControl(p *plan.Plan, role string) error {
	if p == nil {
		return fmt.Errorf("sim: %s: plan is nil", role)
	}
	if p.Scenario == nil || p.Scenario.Kind != scenario.CloudControl || p.System == nil {
		return fmt.Errorf("sim: %s: needs a cloud-control plan", role)
	}
	return nil
}

func needConsensus(p *plan.Plan, role string) error {
	if p == nil {
		return fmt.Errorf("sim: %s: plan is nil", role)
	}
	if p.Scenario == nil || p.Scenario.Kind != scenario.Consensus || p.Graph == nil {
		return fmt.Errorf("sim: %s: needs a consensus plan", role)
	}
	return nil
}

// Plant is the plant's arithmetic in cloud control (Section 5, eq. (23)), which PlantCore
// wraps as a Core: it holds the true state x(t), and injects the privacy noise at its edge,
// publishing only yhat(t) = C x(t) + gamma(t).
// The noise is the plan's (plan.NewSecureNoise with the secure sampler, plan.NewNoise with the
// float sampler: structured gamma(t) = C_m A_m^t S eta, or i.i.d., or none), reseeded per episode
// from the contract path rng.NewNoise(seed, Label("plant"), 0, episode).
//
// Per episode: Begin, then for t = 0..T-1: Emit (yhat(t)), Apply (u(t)); State is x(t) between
// Begin/Apply and the next Apply, x(T) at the end. Emit and Apply do not allocate.
// A Plant is not safe for concurrent use.
type Plant struct {
	plant   *dynamics.Plant
	noise   noise.Stream
	seed    uint64
	x0      []float64 // the scenario's x(0) (nil: origin)
	gamma   []float64
	nx, ny  int
	episode int
	t       int
	chacha  rand.ChaCha8 // the episode's noise generator, reseeded by Begin (docs/protocol.md 12.1)
	rnd     *rand.Rand   // over chacha (the float sampler)
	redrawn rand.ChaCha8 // the redraw stream's generator (faults.crashes noise: redraw)
	src     *rand.ChaCha8

	// The secure sampler (docs/math.md section 10): the private part of every release comes from
	// secure, the rest from np, a copy of the plant run from x_np(0) (x(0) with the private
	// model's coordinates emb set to 0) on the same inputs: public arithmetic.
	secure  *noise.SecureStream
	np      *dynamics.Plant
	emb     []int
	xp      []float64 // x(0)[emb]
	release []float64 // the release's private part of the step
	// the last release and the state it was made from, and a plant to output it (Gamma)
	lastYhat, lastX []float64
	outAt           *dynamics.Plant
	untracked       bool // SetTrackState(false): x(t) is not simulated
}

// NewPlant returns the plant of a cloud-control plan with run seed seed.
func NewPlant(p *plan.Plan, seed uint64) (*Plant, error) {
	if err := needControl(p, "plant"); err != nil {
		return nil, err
	}
	ny := p.System.Ny()
	if m := p.OutputDim(); m != ny {
		return nil, fmt.Errorf("sim: plant: the noise has dimension %d, the plant has %d outputs", m, ny)
	}
	var x0 []float64
	if p.Scenario.Plant != nil && p.Scenario.Plant.X0 != nil {
		x0 = append([]float64(nil), p.Scenario.Plant.X0...)
		if err := p.System.CheckState(x0); err != nil {
			return nil, fmt.Errorf("sim: plant: scenario x0: %w", err)
		}
	}
	n := &Plant{
		plant: dynamics.NewPlant(p.System, x0), seed: seed, x0: x0,
		gamma: make([]float64, ny), nx: p.System.Nx(), ny: ny,
	}
	var err error
	if p.Secure() {
		if n.secure, err = p.NewSecureNoise(); err != nil {
			return nil, fmt.Errorf("sim: plant: noise: %w", err)
		}
		n.np, n.emb, n.xp = dynamics.NewPlant(p.System, nil), p.Embedding, make([]float64, len(p.Embedding))
		n.release, n.lastYhat, n.lastX = make([]float64, ny), make([]float64, ny), make([]float64, n.nx)
		n.outAt = dynamics.NewPlant(p.System, nil)
		return n, nil
	}
	if n.noise, err = p.NewNoise(); err != nil {
		return nil, fmt.Errorf("sim: plant: noise: %w", err)
	}
	return n, nil
}

// Nx is the state dimension, Ny the output dimension, Nu the input dimension.
func (n *Plant) Nx() int { return n.nx }

// Ny is the output dimension (length of yhat).
func (n *Plant) Ny() int { return n.ny }

// Nu is the input dimension (length of u).
func (n *Plant) Nu() int { return n.plant.Nu() }

// Begin starts episode episode from x0 (nil: the scenario's plant x0; an explicit x0 is how the
// auditor's challenger chooses between x and x') and reseeds the noise from the contract path
// rng.NewNoise(seed, rng.Label("plant"), 0, episode). It allocates nothing once warm.
func (n *Plant) Begin(episode int, x0 []float64) error {
	if episode < 0 {
		return fmt.Errorf("sim: plant: episode %d is negative", episode)
	}
	if x0 == nil {
		x0 = n.x0
	} else if len(x0) != n.nx {
		return fmt.Errorf("sim: plant: episode %d: x0 has length %d, want nx=%d", episode, len(x0), n.nx)
	} else if k := nonFinite(x0); k >= 0 {
		return fmt.Errorf("sim: plant: episode %d: x0[%d] = %v is not finite", episode, k, x0[k])
	}
	n.plant.Reset(x0)
	n.episode, n.t = episode, 0
	rng.ReseedNoise(&n.chacha, n.seed, labelPlant, 0, uint64(episode)) // rng.NewNoise's stream, no allocation
	return n.startNoise(&n.chacha)
}

// startNoise starts the episode's noise from src: the float stream, or the secure release of
// x(0)'s private coordinates with x_np(0) = x(0) less them.
func (n *Plant) startNoise(src *rand.ChaCha8) error {
	n.src = src
	if n.secure == nil {
		if n.rnd == nil {
			n.rnd = rand.New(src)
		}
		n.noise.Reset(n.rnd)
		return nil
	}
	x := n.plant.State()
	xnp := n.np.State() // a view, reset below from x with the private coordinates cleared
	copy(xnp, x)
	for k, q := range n.emb {
		n.xp[k] = x[q]
		xnp[q] = 0
	}
	n.np.Reset(xnp)
	if err := n.secure.Reset(src, n.xp); err != nil {
		return fmt.Errorf("sim: plant: episode %d: %w", n.episode, err)
	}
	return nil
}

// Emit writes the published output yhat(t) = C x(t) + gamma(t) (len Ny) and draws gamma(t) from
// the episode's noise stream: the noise is injected here, at the plant's edge (Theorem 3: the
// true output never leaves the plant). Call once per step, before Apply. No allocation.
//
// With the secure sampler yhat(t) = C x_np(t) + (the release's private part), both computed
// without the secret except through the exactly rounded release (docs/math.md section 10).
func (n *Plant) Emit(yhat []float64) {
	if n.secure != nil {
		n.np.Output(yhat)
		n.secure.Next(n.release)
		for i, g := range n.release {
			yhat[i] = yhat[i] + g
		}
		if !n.untracked { // for Gamma, computed only when asked: the release and the state it was made from
			copy(n.lastYhat, yhat)
			copy(n.lastX, n.plant.State())
		}
		return
	}
	n.plant.Output(yhat)
	n.noise.Next(n.gamma)
	for i, g := range n.gamma {
		yhat[i] += g
	}
}

// Apply advances x(t+1) = A x(t) + B u(t) (eq. 23) with the received u(t) (len Nu). No allocation.
func (n *Plant) Apply(u []float64) {
	if !n.untracked {
		n.plant.Step(u)
	}
	if n.np != nil {
		n.np.Step(u)
	}
	n.t++
}

// SetTrackState turns off (or on again) the simulation of the true state x(t) when nothing
// reads it: with the secure sampler the published values come from x_np and the release alone,
// so a caller that keeps no records and no checkpoints (the audit's episode batch) saves a
// plant step per step. It has no effect with the float sampler, whose yhat(t) is C x(t) + gamma(t).
// State, Gamma and checkpoints are meaningless while it is off.
func (n *Plant) SetTrackState(on bool) {
	n.untracked = !on && n.secure != nil
}

// Idle passes step t while the plant's process is down (faults.crashes): x stays, nothing is
// released, and the noise stream moves on to gamma(t+1), so the plant is back with the
// episode's draw at the right step. No allocation.
func (n *Plant) Idle() {
	n.skipNoise()
	n.t++
}

// skipNoise passes one step of the noise without a release.
func (n *Plant) skipNoise() {
	if n.secure != nil {
		n.secure.Skip()
		return
	}
	n.noise.Next(n.gamma)
}

// Redraw replaces the episode's noise draw by a fresh one from the stream
// rng.NewNoise(seed, rng.Label("plant-redraw"), 0, episode), advanced to the current step: what a
// restarted process that does not restore its draw would do (a second independent release;
// faults.crashes noise: redraw demonstrates the leak).
func (n *Plant) Redraw() {
	n.redrawn.Seed(rng.NoiseKey(n.seed, rng.Label(LabelPlant+"-redraw"), 0, uint64(n.episode)))
	src := &n.redrawn
	n.src = src
	if n.secure != nil {
		// the release of x(0)'s private coordinates again, with fresh noise; x_np runs on
		if err := n.secure.Reset(src, n.xp); err != nil {
			panic(err) // the same inputs were rounded at Begin
		}
	} else {
		n.noise.Reset(rand.New(src))
	}
	for k := 0; k < n.t; k++ {
		n.skipNoise()
	}
}

// State returns x(t) as a view (do not modify; it changes with Apply and Begin).
func (n *Plant) State() []float64 { return n.plant.State() }

// Gamma returns the noise gamma(t) of the last Emit (a view). It is the plant's secret, for
// scoring only. With the secure sampler it is the noise in effect, yhat(t) - C x(t), computed
// here from the last release and the state it was made from.
func (n *Plant) Gamma() []float64 {
	if n.secure != nil {
		n.outAt.Reset(n.lastX)
		n.outAt.Output(n.gamma)
		for i := range n.gamma {
			n.gamma[i] = n.lastYhat[i] - n.gamma[i]
		}
	}
	return n.gamma
}

// Step returns t: the number of Apply calls since Begin.
func (n *Plant) Step() int { return n.t }

// Episode returns the current episode.
func (n *Plant) Episode() int { return n.episode }

// Controller is the cloud's arithmetic, which CloudCore wraps as a Core: the observer-based
// tracking controller of eq. (24),
//
//	u(t) = -K (xhat(t) - x_r(t)),   xhat(t+1) = A xhat + B u + L (yhat(t) - C xhat),
//
// started at the scenario's xhat0 every episode. It sees only yhat. Step does not allocate.
type Controller struct {
	ctl        *dynamics.ObserverController
	xhat0      []float64
	used       []float64 // xhat(t) that produced the last u(t)
	nx, nu, ny int
	episode    int
}

// NewController returns the cloud controller of a cloud-control plan.
func NewController(p *plan.Plan) (*Controller, error) {
	if err := needControl(p, "cloud"); err != nil {
		return nil, err
	}
	var xhat0 []float64
	if c := p.Scenario.Controller; c != nil && c.Xhat0 != nil {
		xhat0 = append([]float64(nil), c.Xhat0...)
	}
	ctl, err := dynamics.NewObserverController(p.System, p.K, p.L, p.Reference, xhat0)
	if err != nil {
		return nil, fmt.Errorf("sim: cloud: %w", err)
	}
	nx := p.System.Nx()
	return &Controller{ctl: ctl, xhat0: xhat0, used: make([]float64, nx), nx: nx, nu: p.System.Nu(), ny: p.System.Ny()}, nil
}

// Nu is the input dimension (length of u), Ny the output dimension (length of yhat).
func (c *Controller) Nu() int { return c.nu }

// Ny is the length of yhat.
func (c *Controller) Ny() int { return c.ny }

// Nx is the state (estimate) dimension.
func (c *Controller) Nx() int { return c.nx }

// Begin starts an episode: xhat(0) = the scenario's xhat0.
func (c *Controller) Begin(episode int) {
	c.ctl.Reset(c.xhat0)
	copyVals(c.used, c.ctl.Estimate())
	c.episode = episode
}

// Step writes u(t) into u (len Nu) from the received yhat(t) (len Ny) and advances the observer,
// eq. (24). No allocation.
func (c *Controller) Step(t int, yhat, u []float64) {
	copyVals(c.used, c.ctl.Estimate())
	c.ctl.Step(t, yhat, u)
}

// Xhat returns xhat(t), the estimate the last Step used to compute u(t) (a view; after Begin,
// xhat(0)). This is the cloud's field of a trace.ControlRecord.
func (c *Controller) Xhat() []float64 { return c.used }

// Next returns xhat(t+1), the estimate after the last Step (a view).
func (c *Controller) Next() []float64 { return c.ctl.Estimate() }

// Agent is the arithmetic of consensus agent i (Section 6, eq. (25)), which AgentCore (or a
// BlockCore, for a block of agents) wraps as a Core:
//
//	y_i(t) = x_i(t) + gamma_i(t),   x_i(t+1) = x_i(t) + sum_j w_ij (y_j(t) - y_i(t)),
//
// with gamma_i from the plan's noise stream (structured: the constant offset sigma_i eta_i, eta_i
// drawn once per episode, eqs. (29)-(31)), reseeded per episode from the contract path
// rng.NewNoise(seed, rng.Label("agent"), i, episode).
//
// Neighbour order: Update takes the neighbours' messages in the order of Neighbors(), which is
// dynamics.Graph.Neighbors(i): ascending neighbour index. A distributed agent must collect the
// messages of step t into that order before calling Update. Emit and Update do not allocate.
type Agent struct {
	i       int
	agent   *dynamics.ConsensusAgent
	nbr     []int
	noise   noise.Stream
	seed    uint64
	x0      float64      // the scenario's x_i(0)
	chacha  rand.ChaCha8 // the episode's noise generator, reseeded by Begin
	rnd     *rand.Rand   // over chacha (the float sampler)
	redrawn rand.ChaCha8 // the redraw stream's generator (faults.crashes noise: redraw)
	src     *rand.ChaCha8
	gamma   [1]float64
	y       float64
	episode int
	t       int

	// The secure sampler (docs/math.md section 10): y_i(t) = w(t) + pub(t), w the exactly
	// rounded release of x_i(0), pub the sum of the updates so far (public arithmetic).
	secure *noise.SecureStream
	pub    float64
	xp     [1]float64
}

// NewAgent returns agent i (0-based) of a consensus plan with run seed seed.
func NewAgent(p *plan.Plan, seed uint64, i int) (*Agent, error) {
	if err := needConsensus(p, "agent"); err != nil {
		return nil, err
	}
	if i < 0 || i >= p.Graph.N {
		return nil, fmt.Errorf("sim: agent %d: out of range for %d agents", i, p.Graph.N)
	}
	if len(p.Scenario.X0) != p.Graph.N {
		return nil, fmt.Errorf("sim: agent %d: scenario x0 has %d values for %d agents", i, len(p.Scenario.X0), p.Graph.N)
	}
	if m := p.OutputDim(); m != 1 {
		return nil, fmt.Errorf("sim: agent %d: noise dimension %d, want 1", i, m)
	}
	nb := p.Graph.Neighbors(i)
	w := make([]float64, len(nb))
	idx := make([]int, len(nb))
	for k, e := range nb {
		w[k], idx[k] = e.W, e.J
	}
	x0 := p.Scenario.X0[i]
	a := &Agent{i: i, agent: dynamics.NewConsensusAgent(x0, w), nbr: idx, seed: seed, x0: x0}
	var err error
	if p.Secure() {
		a.secure, err = p.NewSecureNoise()
	} else {
		a.noise, err = p.NewNoise()
	}
	if err != nil {
		return nil, fmt.Errorf("sim: agent %d: noise: %w", i, err)
	}
	return a, nil
}

// Index returns i.
func (a *Agent) Index() int { return a.i }

// Neighbors returns the neighbour indices in the order Update expects their messages (a view).
func (a *Agent) Neighbors() []int { return a.nbr }

// Weights returns w_ij in the order of Neighbors (a view).
func (a *Agent) Weights() []float64 { return a.agent.Weights() }

// Begin starts an episode at x_i(0) = x0i and reseeds the noise from the contract path
// rng.NewNoise(seed, rng.Label("agent"), i, episode). Pass the scenario's value (X0()) for a normal run.
func (a *Agent) Begin(episode int, x0i float64) error {
	if episode < 0 {
		return fmt.Errorf("sim: agent %d: episode %d is negative", a.i, episode)
	}
	if math.IsNaN(x0i) || math.IsInf(x0i, 0) {
		return fmt.Errorf("sim: agent %d: episode %d: x0 = %v is not finite", a.i, episode, x0i)
	}
	a.agent.Reset(x0i)
	a.episode, a.t = episode, 0
	rng.ReseedNoise(&a.chacha, a.seed, labelAgent, uint64(a.i), uint64(episode)) // rng.NewNoise's stream, no allocation
	return a.startNoise(&a.chacha, x0i)
}

// startNoise starts the episode's noise from src: the float stream, or the secure release of
// x_i(0) (pub = 0).
func (a *Agent) startNoise(src *rand.ChaCha8, x0i float64) error {
	a.src = src
	if a.secure == nil {
		if a.rnd == nil {
			a.rnd = rand.New(src)
		}
		a.noise.Reset(a.rnd)
		return nil
	}
	a.pub, a.xp[0] = 0, x0i
	if err := a.secure.Reset(src, a.xp[:]); err != nil {
		return fmt.Errorf("sim: agent %d: episode %d: %w", a.i, a.episode, err)
	}
	return nil
}

// X0 returns the scenario's x_i(0).
func (a *Agent) X0() float64 { return a.x0 }

// Emit draws gamma_i(t) and returns the published message y_i(t) = x_i(t) + gamma_i(t), eq. (25).
// Call once per step, before Update. No allocation.
//
// With the secure sampler y_i(t) = w(t) + pub(t) (docs/protocol.md section 12.4).
func (a *Agent) Emit() float64 {
	if a.secure != nil {
		a.secure.Next(a.gamma[:])
		a.y = a.gamma[0] + a.pub
		a.gamma[0] = a.y - a.agent.State() // the noise in effect, for scoring
		return a.y
	}
	a.noise.Next(a.gamma[:])
	a.y = a.agent.Output(a.gamma[0])
	return a.y
}

// Update applies eq. (25): x_i(t+1) = x_i(t) + sum_k w_k (yneigh[k] - yself), with yself = y_i(t)
// (what Emit returned) and yneigh[k] the message of Neighbors()[k] for the same step. It returns an
// error (and leaves the state) if len(yneigh) is not the degree. No allocation on success.
func (a *Agent) Update(yself float64, yneigh []float64) error {
	if len(yneigh) != len(a.nbr) {
		return fmt.Errorf("sim: agent %d: step %d: %d neighbour messages, want %d", a.i, a.t, len(yneigh), len(a.nbr))
	}
	u := a.agent.StepBy(yself, yneigh)
	if a.secure != nil {
		a.pub = a.pub + u
	}
	a.t++
	return nil
}

// Idle passes step t while the agent's process is down (faults.crashes): x_i stays, nothing is
// released, the noise stream moves on. No allocation.
func (a *Agent) Idle() {
	a.skipNoise()
	a.t++
}

// skipNoise passes one step of the noise without a release.
func (a *Agent) skipNoise() {
	if a.secure != nil {
		a.secure.Skip()
		return
	}
	a.noise.Next(a.gamma[:])
}

// Redraw replaces the episode's noise draw by a fresh one from the stream
// rng.NewNoise(seed, rng.Label("agent-redraw"), i, episode), advanced to the current step (see
// Plant.Redraw: only to demonstrate the leak of a restart that redraws).
func (a *Agent) Redraw() {
	a.redrawn.Seed(rng.NoiseKey(a.seed, rng.Label(LabelAgent+"-redraw"), uint64(a.i), uint64(a.episode)))
	src := &a.redrawn
	a.src = src
	if a.secure != nil {
		if err := a.secure.Reset(src, a.xp[:]); err != nil {
			panic(err) // the same input was rounded at Begin
		}
	} else {
		a.noise.Reset(rand.New(src))
	}
	for k := 0; k < a.t; k++ {
		a.skipNoise()
	}
}

// State returns x_i(t).
func (a *Agent) State() float64 { return a.agent.State() }

// Gamma returns gamma_i(t) of the last Emit (the agent's secret, for scoring only).
func (a *Agent) Gamma() float64 { return a.gamma[0] }

// Step returns t: the number of Update calls since Begin.
func (a *Agent) Step() int { return a.t }

// Estimator is the eavesdropper's arithmetic, which EavesdropperCore wraps as a Core: the
// adversary. It sees only the transcript (what goes over the bus) and estimates the private
// initial state by least squares (pkg/estimate, docs/math.md sections 4-5):
//
//   - cloud control: x0_hat from yhat(0..t) and u(0..t-1) with the plant's own model (A, B, C)
//     on the affine manifold of eqs. (19)-(20) (estimate.ControlEstimator);
//   - consensus: every x_i(0) from the broadcast y(0..t) (estimate.NetworkEstimator).
//
// It never sees the truth. Observe methods do not allocate on success.
type Estimator struct {
	control   *estimate.ControlEstimator
	consensus *estimate.NetworkEstimator
	dim       int

	nu      int // inputs (cloud control)
	next    int // steps observed
	episode int
}

// NewEstimator returns the eavesdropper of a plan (cloud control or consensus).
func NewEstimator(p *plan.Plan) (*Estimator, error) {
	if p == nil || p.Scenario == nil {
		return nil, errors.New("sim: eavesdropper: plan is nil")
	}
	switch p.Scenario.Kind {
	case scenario.CloudControl:
		if err := needControl(p, "eavesdropper"); err != nil {
			return nil, err
		}
		sys := p.System
		est, err := estimate.NewControlEstimator(sys.A, sys.B, sys.C, p.Steps)
		if err != nil {
			return nil, fmt.Errorf("sim: eavesdropper: %w", err)
		}
		return &Estimator{control: est, dim: sys.Nx(), nu: sys.Nu()}, nil
	case scenario.Consensus:
		if err := needConsensus(p, "eavesdropper"); err != nil {
			return nil, err
		}
		g := p.Graph
		nbrs, ws := make([][]int, g.N), make([][]float64, g.N)
		for i := 0; i < g.N; i++ {
			for _, e := range g.Neighbors(i) {
				nbrs[i] = append(nbrs[i], e.J)
				ws[i] = append(ws[i], e.W)
			}
		}
		est, err := estimate.NewNetworkEstimatorLists(nbrs, ws)
		if err != nil {
			return nil, fmt.Errorf("sim: eavesdropper: %w", err)
		}
		return &Estimator{consensus: est, dim: g.N}, nil
	}
	return nil, fmt.Errorf("sim: eavesdropper: unknown scenario kind %q", p.Scenario.Kind)
}

// Dim is the length of the x0 estimate: nx (control) or N (consensus).
func (e *Estimator) Dim() int { return e.dim }

// Begin forgets the transcript for a new episode.
func (e *Estimator) Begin(episode int) {
	if e.control != nil {
		e.control.Reset()
	}
	if e.consensus != nil {
		e.consensus.Reset()
	}
	e.next, e.episode = 0, episode
}

// observeControl adds step t of a cloud-control transcript: yhat(t) (nil: not received, its
// output rows are left out of the least squares) and u(t) (the input the plant is taken to
// have applied: received, or the caller's stand-in).
func (e *Estimator) observeControl(t int, yhat, u []float64) error {
	if e.control == nil {
		return errors.New("sim: eavesdropper: control message in a consensus run")
	}
	if err := e.control.Observe(t, yhat, u); err != nil {
		return fmt.Errorf("sim: eavesdropper: episode %d: %w", e.episode, err)
	}
	e.next++
	return nil
}

// observeConsensus adds step t of a consensus transcript: y(t) with have[i] false where y_i(t)
// was not received (y[i] is then a stand-in for the neighbours' terms only).
func (e *Estimator) observeConsensus(t int, y []float64, have []bool) error {
	if e.consensus == nil {
		return errors.New("sim: eavesdropper: consensus message in a cloud-control run")
	}
	if err := e.consensus.ObservePartial(t, y, have); err != nil {
		return fmt.Errorf("sim: eavesdropper: episode %d: %w", e.episode, err)
	}
	e.next++
	return nil
}

// EstimateX0 writes the current least-squares x0 estimate into dst (len Dim) and reports whether
// it exists (control: once O_t'O_t is invertible, e.g. from t = nx-1 on for one output). The
// control estimate uses the completed steps only (both yhat(t) and u(t) seen; u(t) does not
// change the x0 estimate, it is needed for the next step). No allocation.
func (e *Estimator) EstimateX0(dst []float64) bool {
	if len(dst) != e.dim {
		return false
	}
	if e.control != nil {
		return e.control.Estimate(dst)
	}
	return e.consensus.Estimate(dst)
}

// Steps returns the number of completed transcript steps.
func (e *Estimator) Steps() int {
	return e.next
}

func nonFinite(v []float64) int {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return i
		}
	}
	return -1
}

// secureSource is the generator the plant's secure stream reads now.
func (n *Plant) secureSource() *rand.ChaCha8 { return n.src }

// secureSource is the generator the agent's secure stream reads now.
func (a *Agent) secureSource() *rand.ChaCha8 { return a.src }
