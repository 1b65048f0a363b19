package sim

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Loop plays whole episodes with the role cores and returns only what the eavesdropper
// concluded: the episode loop of the auditor's fast engine, which runs millions of episodes and
// needs neither records nor aggregates. It is the same Driver over the same in-memory Network
// (link faults included) that RunFast runs, so episode e from initial state x0 gives the same
// eavesdropper estimate here, in RunFast and over NATS.
//
// A Loop is not safe for concurrent use; give each worker its own.
type Loop struct {
	T     int
	cores []Core
	net   *Network
	drv   *Driver
	eve   *EavesdropperCore
	state int
}

// NewLoop builds the role cores of a plan (cloud control: plant, cloud, eavesdropper;
// consensus: every agent and the eavesdropper) with run seed seed, on a network with the
// scenario's link faults.
func NewLoop(p *plan.Plan, seed uint64) (*Loop, error) {
	if p == nil || p.Scenario == nil {
		return nil, errors.New("sim: loop: plan is nil")
	}
	inj, err := fault.New(&p.Scenario.Faults, fault.SeedOf(seed))
	if err != nil {
		return nil, fmt.Errorf("sim: loop: %w", err)
	}
	cores, err := NewCores(p, seed)
	if err != nil {
		return nil, err
	}
	for _, c := range cores {
		c.SetRecords(false) // only the final estimate is wanted
	}
	l := &Loop{T: p.Steps, cores: cores, net: NewNetwork(cores, inj)}
	l.drv = NewDriver(cores, l.net, nil, nil)
	l.eve = cores[len(cores)-1].(*EavesdropperCore)
	if p.Scenario.Kind == scenario.CloudControl {
		l.state = p.System.Nx()
	} else {
		l.state = p.Graph.N
	}
	return l, nil
}

// StateDim is the length of the initial state Episode accepts: n_x of the plant (cloud control)
// or the number of agents N (consensus).
func (l *Loop) StateDim() int { return l.state }

// EstimateDim is the length of the eavesdropper's estimate (n_x or N).
func (l *Loop) EstimateDim() int { return l.eve.node.Dim() }

// Episode plays episode ep (its noise from the contract paths rng(seed, "plant", 0, ep) or
// rng(seed, "agent", i, ep)) from initial state x0 (nil: the scenario's; else StateDim values:
// the plant's x(0), or every agent's x_i(0)) for T steps, and writes the eavesdropper's final
// least-squares estimate of x(0), from the transcript it received, into est (len
// EstimateDim). It reports whether the estimate exists (false: the transcript does not
// determine x(0), e.g. T < n_x for one output).
func (l *Loop) Episode(ep int, x0, est []float64) (bool, error) {
	if len(est) != l.eve.node.Dim() {
		return false, fmt.Errorf("sim: loop: estimate has length %d, want %d", len(est), l.eve.node.Dim())
	}
	if x0 != nil && len(x0) != l.state {
		what := "nx=" + strconv.Itoa(l.state)
		if l.eve.node.consensus != nil {
			what = strconv.Itoa(l.state) + " agents"
		}
		return false, fmt.Errorf("sim: loop: episode %d: x0 has length %d, want %s", ep, len(x0), what)
	}
	l.net.Begin(ep)
	err := l.drv.Episode(ep, x0, nil)
	l.net.End()
	if err != nil {
		return false, err
	}
	return l.eve.node.EstimateX0(est), nil
}
