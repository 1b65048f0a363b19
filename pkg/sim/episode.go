package sim

import (
	"errors"
	"fmt"

	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Loop plays whole episodes with the role cores and returns only what the eavesdropper
// concluded: the lean episode loop of the auditor's fast engine (issue 4), which runs millions of
// episodes and needs neither records nor aggregates. It drives exactly the cores RunFast and the
// NATS processes run (PlantNode, CloudNode, AgentNode, EavesdropperNode), in the step order of
// the package doc and with the same random stream paths, so episode e from initial state x0 gives
// the same eavesdropper estimate here, in RunFast and over NATS. There is no second
// implementation of any algorithm: Loop only sequences the cores.
//
// A Loop is not safe for concurrent use; give each worker its own (NewLoop is cheap).
type Loop struct {
	T int

	// cloud control
	plant *PlantNode
	cloud *CloudNode
	yhat  []float64
	u     []float64

	// consensus
	agents []*AgentNode
	x0     []float64 // the scenario's x(0) of every agent
	y, nb  []float64

	eve *EavesdropperNode
}

// NewLoop builds the role cores of a plan (cloud control: plant, cloud, eavesdropper; consensus:
// every agent and the eavesdropper) with run seed seed.
func NewLoop(p *plan.Plan, seed uint64) (*Loop, error) {
	if p == nil || p.Scenario == nil {
		return nil, errors.New("sim: loop: plan is nil")
	}
	l := &Loop{T: p.Steps}
	var err error
	if l.eve, err = NewEavesdropperNode(p); err != nil {
		return nil, err
	}
	switch p.Scenario.Kind {
	case scenario.CloudControl:
		if l.plant, err = NewPlantNode(p, seed); err != nil {
			return nil, err
		}
		if l.cloud, err = NewCloudNode(p); err != nil {
			return nil, err
		}
		l.yhat, l.u = make([]float64, l.plant.Ny()), make([]float64, l.plant.Nu())
	case scenario.Consensus:
		n := p.Graph.N
		l.agents, l.x0, l.y = make([]*AgentNode, n), make([]float64, n), make([]float64, n)
		deg := 0
		for i := range l.agents {
			if l.agents[i], err = NewAgentNode(p, seed, i); err != nil {
				return nil, err
			}
			l.x0[i] = l.agents[i].X0()
			deg = max(deg, len(l.agents[i].Neighbors()))
		}
		l.nb = make([]float64, deg)
	default:
		return nil, fmt.Errorf("sim: loop: unknown scenario kind %q", p.Scenario.Kind)
	}
	return l, nil
}

// StateDim is the length of the initial state Episode accepts: n_x of the plant (cloud control)
// or the number of agents N (consensus).
func (l *Loop) StateDim() int {
	if l.plant != nil {
		return l.plant.Nx()
	}
	return len(l.agents)
}

// EstimateDim is the length of the eavesdropper's estimate (n_x or N).
func (l *Loop) EstimateDim() int { return l.eve.Dim() }

// Episode plays episode ep (its noise from the contract paths rng(seed, "plant", 0, ep) or
// rng(seed, "agent", i, ep)) from initial state x0 (nil: the scenario's; else StateDim values:
// the plant's x(0), or every agent's x_i(0)) for T steps, and writes the eavesdropper's final
// least-squares estimate of x(0), from the whole transcript yhat(0..T-1), u(0..T-1) (or
// y(0..T-1)), into est (len EstimateDim). It reports whether the estimate exists (false: the
// transcript does not determine x(0), e.g. T < n_x for one output).
//
// Cloud control, step t: plant.Emit -> eavesdropper sees yhat(t) -> cloud.Step -> eavesdropper
// sees u(t) -> plant.Apply. Consensus, step t: every agent Emits -> eavesdropper sees y(t) ->
// every agent Updates with its neighbours' y_j(t) in ascending index order. The package doc's
// order, without the records. No allocation per step; Begin allocates each emitter's random
// source once per episode (rng.New).
func (l *Loop) Episode(ep int, x0, est []float64) (bool, error) {
	if len(est) != l.eve.Dim() {
		return false, fmt.Errorf("sim: loop: estimate has length %d, want %d", len(est), l.eve.Dim())
	}
	if l.plant != nil {
		return l.control(ep, x0, est)
	}
	return l.consensus(ep, x0, est)
}

func (l *Loop) control(ep int, x0, est []float64) (bool, error) {
	if err := l.plant.Begin(ep, x0); err != nil {
		return false, err
	}
	l.cloud.Begin(ep)
	l.eve.Begin(ep)
	for t := 0; t < l.T; t++ {
		l.plant.Emit(l.yhat)
		if err := l.eve.ObserveYhat(t, l.yhat); err != nil {
			return false, err
		}
		l.cloud.Step(t, l.yhat, l.u)
		if err := l.eve.ObserveU(t, l.u); err != nil {
			return false, err
		}
		l.plant.Apply(l.u)
	}
	return l.eve.EstimateX0(est), nil
}

func (l *Loop) consensus(ep int, x0, est []float64) (bool, error) {
	if x0 == nil {
		x0 = l.x0
	} else if len(x0) != len(l.agents) {
		return false, fmt.Errorf("sim: loop: episode %d: x0 has length %d, want %d agents", ep, len(x0), len(l.agents))
	}
	for i, a := range l.agents {
		if err := a.Begin(ep, x0[i]); err != nil {
			return false, err
		}
	}
	l.eve.Begin(ep)
	for t := 0; t < l.T; t++ {
		for i, a := range l.agents {
			l.y[i] = a.Emit()
		}
		if err := l.eve.ObserveConsensus(t, l.y); err != nil {
			return false, err
		}
		for i, a := range l.agents {
			nbr := a.Neighbors()
			nb := l.nb[:len(nbr)]
			for k, j := range nbr {
				nb[k] = l.y[j]
			}
			if err := a.Update(l.y[i], nb); err != nil {
				return false, err
			}
		}
	}
	return l.eve.EstimateX0(est), nil
}
