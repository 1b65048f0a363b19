package roleproc

import (
	"time"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// pacer is the wall clock of a process's driver (sim.Pacer). Lockstep: outputs go out at
// once, and a step's deadline is --timeout after the core last progressed (a safety net: the
// lockstep network's gap notices complete every step). Realtime: the plant and the agents
// release step k's output at the tick t_k = t0 + k Ts, the cloud reacts at once, and every
// step's deadline is the next tick t_{k+1} (the eavesdropper, which nobody waits for, gets a
// grace of --timeout + the grid lead + one period more).
type pacer struct {
	clock    *Clock
	realtime bool
	reacts   bool // the cloud: outputs go out as soon as computed
	period   time.Duration
	timeout  time.Duration
	grace    time.Duration
	origin   time.Time
}

func newPacer(proc *process, eve bool) *pacer {
	p := &pacer{clock: proc.clock, realtime: proc.cfg.Mode == wire.Realtime, reacts: proc.cfg.Role == endpoint.Cloud,
		period: proc.cfg.Period, timeout: proc.cfg.Timeout}
	if eve {
		p.grace = proc.cfg.Timeout + contract.GridLead + proc.cfg.Period
	}
	return p
}

func (p *pacer) begin(origin time.Time) {
	p.origin = origin
	p.clock.StartAt(origin)
}

func (p *pacer) tick(k int) time.Time { return p.origin.Add(time.Duration(k) * p.period) }

// ReleaseAt implements sim.Pacer.
func (p *pacer) ReleaseAt(o *sim.Out) time.Time {
	if !p.realtime || p.reacts {
		return time.Time{}
	}
	return p.tick(o.Step)
}

// Deadline implements sim.Pacer.
func (p *pacer) Deadline(_ sim.Core, t int, since time.Time) time.Time {
	if !p.realtime {
		return since.Add(p.timeout)
	}
	return p.tick(t + 1).Add(p.grace)
}

// Now implements sim.Pacer.
func (p *pacer) Now() time.Time { return time.Now() }

// Released implements sim.Pacer: the clock's step, jitter and overrun statistics (of the
// paced releases: the cloud's replies keep no grid).
func (p *pacer) Released(o *sim.Out, at time.Time, late bool) {
	if p.realtime && p.reacts {
		return
	}
	p.clock.Observe(o.Step, at, late)
}
