package sim

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Episode batches: the cloud-control cores hosting up to Width consecutive episodes each, as a
// BlockCore hosts a block of agents. One core per role plays episodes ep, ep+1, ..., ep+w-1 side
// by side: at step t the plant releases ONE message carrying yhat(t) of every episode of the
// batch (w*ny values, episode j's at j*ny), the cloud answers with one message of w*nu inputs,
// and the eavesdropper reads both. Each episode keeps its own arithmetic (Plant, Controller,
// Estimator: episode ep+j's noise stream is rng(seed, "plant", 0, ep+j), as in PlantCore), so
// its estimate is bit for bit the one the one-episode cores give; what the batch shares is the
// bookkeeping of a step (the base's filing, the driver's delivery, the network's queue), paid
// once per w episodes instead of once per episode.
//
// A batch has no faults to apply per episode: link faults, partitions and crashes draw per
// message and per episode, so NewBatch refuses a plan with any (the one-episode cores play
// those), and the batch keeps no records (the auditor's use: final estimates only).

// ErrNotBatchable is NewBatch's refusal of a plan the batch cannot play (consensus, faults).
var ErrNotBatchable = errors.New("sim: batch: only fault-free cloud control is played in episode batches")

// EpisodeBatchable reports whether NewBatch accepts plan p: cloud control without faults of any kind.
func EpisodeBatchable(p *plan.Plan) bool {
	if p == nil || p.Scenario == nil || p.Scenario.Kind != scenario.CloudControl {
		return false
	}
	f := &p.Scenario.Faults
	return !f.Active() && len(f.Crashes) == 0 && len(f.ServerRestarts) == 0 && len(f.Proxies) == 0
}

// Batch is the three cores of a cloud-control run, each hosting up to Width episodes.
type Batch struct {
	Width int
	plant *batchPlantCore
	cloud *batchCloudCore
	eve   *batchEveCore
}

// NewBatch returns the batch cores of plan p (EpisodeBatchable) with run seed seed and capacity width.
func NewBatch(p *plan.Plan, seed uint64, width int) (*Batch, error) {
	if !EpisodeBatchable(p) {
		return nil, ErrNotBatchable
	}
	if width < 1 {
		return nil, fmt.Errorf("sim: batch: width %d, want >= 1", width)
	}
	b := &Batch{Width: width,
		plant: &batchPlantCore{rule: p.Scenario.Faults.Missing.Plant},
		cloud: &batchCloudCore{c: p.System.C},
		eve:   &batchEveCore{rule: p.Scenario.Faults.Missing.Plant}}
	for j := 0; j < width; j++ {
		pl, err := NewPlant(p, seed)
		if err != nil {
			return nil, err
		}
		pl.SetTrackState(false) // the batch keeps no records: x(t) is never read
		ctl, err := NewController(p)
		if err != nil {
			return nil, err
		}
		est, err := NewEstimator(p)
		if err != nil {
			return nil, err
		}
		b.plant.plants = append(b.plant.plants, pl)
		b.cloud.ctls = append(b.cloud.ctls, ctl)
		b.eve.ests = append(b.eve.ests, est)
	}
	nu, ny := b.plant.plants[0].Nu(), b.plant.plants[0].Ny()
	if b.plant.rule == "" {
		b.plant.rule = scenario.PlantHold
	}
	b.eve.rule = b.plant.rule
	b.plant.nu, b.plant.ny, b.plant.u, b.plant.yhat = nu, ny, make([]float64, width*nu), make([]float64, width*ny)
	b.cloud.nu, b.cloud.ny, b.cloud.u, b.cloud.yhat = nu, ny, make([]float64, width*nu), make([]float64, width*ny)
	b.eve.nu, b.eve.ny, b.eve.u = nu, ny, make([]float64, width*nu)
	b.plant.base = base{self: PlantEndpoint, T: p.Steps, in: newInputs(PlantEndpoint, []endpoint.Endpoint{CloudEndpoint}, p.Steps), norec: true}
	b.cloud.base = base{self: CloudEndpoint, T: p.Steps, in: newInputs(CloudEndpoint, []endpoint.Endpoint{PlantEndpoint}, p.Steps), norec: true}
	b.eve.base = base{self: EavesdropperEndpoint, T: p.Steps,
		in: newInputs(EavesdropperEndpoint, []endpoint.Endpoint{PlantEndpoint, CloudEndpoint}, p.Steps), norec: true}
	b.plant.work, b.cloud.work, b.eve.work = b.plant.complete, b.cloud.complete, b.eve.complete
	return b, nil
}

// Cores returns the batch's cores (plant, cloud, eavesdropper), for a Network and a Driver.
func (b *Batch) Cores() []Core { return []Core{b.plant, b.cloud, b.eve} }

// Set gives the next batch its initial states: len(x0s) episodes (1..Width), episode ep+j (ep:
// the driver's episode) from x0s[j] (nil: the scenario's x(0)). The slices are read at Begin.
func (b *Batch) Set(x0s [][]float64) error {
	if len(x0s) < 1 || len(x0s) > b.Width {
		return fmt.Errorf("sim: batch: %d episodes, want 1..%d", len(x0s), b.Width)
	}
	w := len(x0s)
	b.plant.w, b.cloud.w, b.eve.w = w, w, w
	b.plant.x0s = x0s
	b.plant.in.dim, b.cloud.in.dim = []int{w * b.plant.nu}, []int{w * b.plant.ny}
	b.eve.in.dim = []int{w * b.plant.ny, w * b.plant.nu}
	return nil
}

// EstimateDim is the length of an episode's estimate (nx).
func (b *Batch) EstimateDim() int { return b.eve.ests[0].Dim() }

// Estimate writes episode j's (of the last batch) final least-squares estimate of x(0) into est
// and reports whether it exists, as Estimator.EstimateX0.
func (b *Batch) Estimate(j int, est []float64) bool { return b.eve.ests[j].EstimateX0(est) }

// batchPlantCore is PlantCore for a batch of episodes (no crashes: the batch has none).
type batchPlantCore struct {
	base
	plants  []*Plant
	x0s     [][]float64
	w       int
	nu, ny  int
	rule    scenario.PlantMissing
	yhat, u []float64
}

func (c *batchPlantCore) Begin(ep int, _ []float64) error {
	if err := c.errEpisode(ep); err != nil {
		return err
	}
	c.beginBase(ep)
	for j := 0; j < c.w; j++ {
		if err := c.plants[j].Begin(ep+j, c.x0s[j]); err != nil {
			return err
		}
	}
	clear(c.u)
	c.emit()
	return nil
}

// emit releases yhat(t) of every episode of the batch in one message.
func (c *batchPlantCore) emit() {
	ny := c.ny
	for j, pl := range c.plants[:c.w] {
		pl.Emit(c.yhat[j*ny : (j+1)*ny])
	}
	c.ob.rd.Out = append(c.ob.rd.Out, Out{From: c.self, Step: c.plants[0].Step(), Values: c.yhat[:c.w*ny]})
}

func (c *batchPlantCore) complete() bool {
	nu := c.nu
	plantInput(c.in, 0, c.rule, c.u[:c.w*nu])
	for j, pl := range c.plants[:c.w] {
		pl.Apply(c.u[j*nu : (j+1)*nu])
	}
	if c.plants[0].Step() == c.T {
		return true
	}
	c.emit()
	return false
}

func (c *batchPlantCore) Deliver(m *Msg) error { return c.step(m) }
func (c *batchPlantCore) Tick(t int) error     { return c.tick(t) }
func (c *batchPlantCore) Restart() error       { return c.restart() }

// batchCloudCore is CloudCore for a batch of episodes.
type batchCloudCore struct {
	base
	ctls    []*Controller
	c       *mat.Dense
	w       int
	nu, ny  int
	yhat, u []float64
}

func (c *batchCloudCore) Begin(ep int, _ []float64) error {
	if err := c.errEpisode(ep); err != nil {
		return err
	}
	c.beginBase(ep)
	for j, ctl := range c.ctls[:c.w] {
		ctl.Begin(ep + j)
	}
	return nil
}

func (c *batchCloudCore) complete() bool {
	t := c.in.cur
	nu, ny := c.nu, c.ny
	v := c.in.value(0)
	for j, ctl := range c.ctls[:c.w] {
		var yhat []float64
		if v != nil {
			yhat = v[j*ny : (j+1)*ny : (j+1)*ny] // read in place: Step keeps nothing of it
		} else { // CloudCore's rule
			yhat = c.yhat[j*ny : (j+1)*ny]
			predictOutput(c.c, ctl.Next(), yhat)
		}
		ctl.ctl.Step(t, yhat, c.u[j*nu:(j+1)*nu]) // Controller.Step without the copy of xhat(t) its records read
	}
	c.ob.rd.Out = append(c.ob.rd.Out, Out{From: c.self, Step: t, Values: c.u[:c.w*nu]})
	return t+1 == c.T
}

func (c *batchCloudCore) Deliver(m *Msg) error { return c.step(m) }
func (c *batchCloudCore) Tick(t int) error     { return c.tick(t) }
func (c *batchCloudCore) Restart() error       { return c.restart() }

// batchEveCore is EavesdropperCore (cloud control, no records) for a batch of episodes.
type batchEveCore struct {
	base
	ests   []*Estimator
	rule   scenario.PlantMissing
	w      int
	nu, ny int
	u      []float64
	taps   []Tap // per slot, or nil (precision.go)
}

func (c *batchEveCore) Begin(ep int, _ []float64) error {
	if err := c.errEpisode(ep); err != nil {
		return err
	}
	c.beginBase(ep)
	for j, e := range c.ests[:c.w] {
		e.Begin(ep + j)
		if c.taps != nil && c.taps[j] != nil {
			c.taps[j].TapBegin(ep + j)
		}
	}
	clear(c.u)
	return nil
}

func (c *batchEveCore) complete() bool {
	t := c.in.cur
	nu, ny := c.nu, c.ny
	yhat := c.in.value(0)
	plantInput(c.in, 1, c.rule, c.u[:c.w*nu]) // what the plant's rule applies
	for j, e := range c.ests[:c.w] {
		var y []float64
		if yhat != nil {
			y = yhat[j*ny : (j+1)*ny]
		}
		// observeControl without wrapping an error nobody reads (EavesdropperCore without
		// records ignores it too: the estimate says what came of the step)
		if e.control.Observe(t, y, c.u[j*nu:(j+1)*nu]) == nil {
			e.next++
		}
		if c.taps != nil && c.taps[j] != nil {
			c.taps[j].TapControl(t, y, c.u[j*nu:(j+1)*nu])
		}
	}
	return t+1 == c.T
}

func (c *batchEveCore) Deliver(m *Msg) error { return c.step(m) }
func (c *batchEveCore) Tick(t int) error     { return c.tick(t) }
func (c *batchEveCore) Restart() error       { return c.restart() }
