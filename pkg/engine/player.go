package engine

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// Player plays whole episodes with the role cores and returns only what the eavesdropper
// concluded: the episode loop of the auditor's fast engine, which runs millions of episodes and
// needs neither records nor aggregates. It is the same sim.Driver over the same in-memory sim.Network
// (link faults included) that Run runs, so episode e from initial state x0 gives the same
// eavesdropper estimate here, in Run and over NATS.
//
// A Player is not safe for concurrent use; give each worker its own.
type Player struct {
	T     int
	cores []sim.Core
	net   *sim.Network
	drv   *sim.Driver
	eve   *sim.EavesdropperCore
	state int
	// consensus: the state is every agent's x_i(0), not the plant's x(0)
	consensus bool
}

// NewPlayer builds the role cores of a plan (cloud control: plant, cloud, eavesdropper;
// consensus: every agent and the eavesdropper) with the run's seeds (seeds.Run: the noise;
// seeds.Fault: the fates of the scenario's link faults), on a network with those faults.
func NewPlayer(p *plan.Plan, seeds sim.Seeds) (*Player, error) {
	if p == nil || p.Scenario == nil {
		return nil, errors.New("engine: player: plan is nil")
	}
	inj, err := fault.New(&p.Scenario.Faults, seeds.Fault)
	if err != nil {
		return nil, fmt.Errorf("engine: player: %w", err)
	}
	cores, err := sim.NewCores(p, seeds.Run)
	if err != nil {
		return nil, err
	}
	for _, c := range cores {
		c.SetRecords(false) // only the final estimate is wanted
	}
	l := &Player{T: p.Steps, cores: cores, net: sim.NewNetwork(sim.NewTopology(p, sim.Blocks{}), cores, inj)}
	l.drv = sim.NewDriver(cores, l.net, nil, nil)
	l.eve = cores[len(cores)-1].(*sim.EavesdropperCore)
	if p.Scenario.Kind == scenario.CloudControl {
		l.state = p.System.Nx()
	} else {
		l.state, l.consensus = p.Graph.N, true
	}
	return l, nil
}

// StateDim is the length of the initial state Play accepts: n_x of the plant (cloud control)
// or the number of agents N (consensus).
func (l *Player) StateDim() int { return l.state }

// EstimateDim is the length of the eavesdropper's estimate (n_x or N).
func (l *Player) EstimateDim() int { return l.eve.Estimator().Dim() }

// Play plays episode ep (its noise from the contract paths rng(seed, "plant", 0, ep) or
// rng(seed, "agent", i, ep)) from initial state x0 (nil: the scenario's; else StateDim values:
// the plant's x(0), or every agent's x_i(0)) for T steps, and writes the eavesdropper's final
// least-squares estimate of x(0), from the transcript it received, into est (len
// EstimateDim). It reports whether the estimate exists (false: the transcript does not
// determine x(0), e.g. T < n_x for one output).
func (l *Player) Play(ep int, x0, est []float64) (bool, error) {
	if len(est) != l.eve.Estimator().Dim() {
		return false, fmt.Errorf("engine: player: estimate has length %d, want %d", len(est), l.eve.Estimator().Dim())
	}
	if x0 != nil && len(x0) != l.state {
		what := "nx=" + strconv.Itoa(l.state)
		if l.consensus {
			what = strconv.Itoa(l.state) + " agents"
		}
		return false, fmt.Errorf("engine: player: episode %d: x0 has length %d, want %s", ep, len(x0), what)
	}
	l.net.Begin(ep)
	err := l.drv.Episode(ep, x0, nil)
	l.net.End()
	if err != nil {
		return false, err
	}
	return l.eve.Estimator().EstimateX0(est), nil
}

// BatchPlayer plays Width consecutive episodes at a time through the episode-batch cores
// (sim.Batch: one core per role hosting every episode of the batch, one message per role and
// step for all of them) on the same in-memory network and driver as Player: episode e from x0
// gives the estimate Player.Play gives, bit for bit, at a fraction of the bookkeeping per
// episode. Fault-free cloud control only (sim.EpisodeBatchable); Player plays everything else.
//
// A BatchPlayer is not safe for concurrent use; give each worker its own.
type BatchPlayer struct {
	T     int
	batch *sim.Batch
	net   *sim.Network
	drv   *sim.Driver
	nx    int
}

// NewBatchPlayer returns the batch player of plan p (sim.EpisodeBatchable) with the run's seeds and
// room for width episodes at a time.
func NewBatchPlayer(p *plan.Plan, seeds sim.Seeds, width int) (*BatchPlayer, error) {
	b, err := sim.NewBatch(p, seeds.Run, width)
	if err != nil {
		return nil, fmt.Errorf("engine: batch player: %w", err)
	}
	cores := b.Cores()
	l := &BatchPlayer{T: p.Steps, batch: b, net: sim.NewNetwork(sim.NewTopology(p, sim.Blocks{}), cores, nil), nx: p.System.Nx()}
	l.drv = sim.NewDriver(cores, l.net, nil, nil)
	return l, nil
}

// Width is the most episodes one Play takes.
func (l *BatchPlayer) Width() int { return l.batch.Width }

// EstimateDim is the length of an episode's estimate (nx).
func (l *BatchPlayer) EstimateDim() int { return l.batch.EstimateDim() }

// Play plays episodes ep, ep+1, ..., ep+len(x0s)-1 (at most Width), episode ep+j from x0s[j] (nil:
// the scenario's x(0); else nx values), and writes episode ep+j's final estimate of x(0) into
// est[j] (len EstimateDim) and whether it exists into ok[j], as Player.Play does for one.
func (l *BatchPlayer) Play(ep int, x0s, est [][]float64, ok []bool) error {
	if len(est) != len(x0s) || len(ok) != len(x0s) {
		return fmt.Errorf("engine: batch player: %d initial states, %d estimates, %d flags", len(x0s), len(est), len(ok))
	}
	for j, x0 := range x0s {
		if x0 != nil && len(x0) != l.nx {
			return fmt.Errorf("engine: batch player: episode %d: x0 has length %d, want nx=%d", ep+j, len(x0), l.nx)
		}
		if len(est[j]) != l.batch.EstimateDim() {
			return fmt.Errorf("engine: batch player: estimate has length %d, want %d", len(est[j]), l.batch.EstimateDim())
		}
	}
	if err := l.batch.Set(x0s); err != nil {
		return fmt.Errorf("engine: batch player: %w", err)
	}
	l.net.Begin(ep)
	err := l.drv.Episode(ep, nil, nil)
	l.net.End()
	if err != nil {
		return err
	}
	for j := range x0s {
		ok[j] = l.batch.Estimate(j, est[j])
	}
	return nil
}
