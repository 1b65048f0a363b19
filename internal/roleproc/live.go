package roleproc

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// Live faults (ctl.faults): the launcher of dpsim run --ui changes the run's link rules,
// partitions and crashes between episodes, or between groups of episodes in flight. The
// change travels as a file beside the plan files (contract.LiveFaults) named by a ctl.faults
// on ctl.episode, sent before the ctl.episode (or ctl.episodes) of the first episode it
// applies to: it comes through the same queue as the episodes, so it is applied when the
// episode (group) before it is done and the next one has not begun - at step 0 of its
// episode, in every process alike.

// liveFaults is a ctl.faults heard: generation gen of the live faults, with its digest.
type liveFaults struct {
	gen    int
	digest uint64
}

// applyLiveFaults reads the live faults a ctl.faults for episode ep names and puts them in force: the
// scenario's links, partitions and crashes are replaced, and the runner rebuilt on them. An
// error fails the process: going on with other faults than the launcher's would not replay.
func (proc *process) applyLiveFaults(r runner, lf liveFaults, ep int) error {
	b, err := os.ReadFile(filepath.Join(proc.cfg.Out, contract.LiveFaultsFile(lf.gen)))
	if err != nil {
		return fmt.Errorf("ctl.faults: %w", err)
	}
	got, err := contract.DecodeLiveFaults(b, proc.cfg.Run, lf.gen, lf.digest)
	if err != nil {
		return fmt.Errorf("ctl.faults: %w", err)
	}
	if ep >= 0 && got.Episode != ep { // ep < 0: a restarted process puts its checkpoint's in force again
		return fmt.Errorf("ctl.faults: %s applies from episode %d, the message says %d", contract.LiveFaultsFile(lf.gen), got.Episode, ep)
	}
	if c := proc.mid.p.Load(); c != nil && c.lf.gen < lf.gen {
		proc.mid.p.CompareAndSwap(c, nil) // the later faults hold its rules
	}
	f := &proc.scn.Faults
	f.Links, f.Partitions, f.Crashes = got.Faults.Links, got.Faults.Partitions, got.Faults.Crashes
	if err := r.updateFaults(proc, lf); err != nil {
		return fmt.Errorf("ctl.faults: generation %d: %w", lf.gen, err)
	}
	proc.log.Info().Int("generation", lf.gen).Int("episode", ep).Int("links", len(f.Links)).Int("partitions", len(f.Partitions)).
		Int("crashes", len(f.Crashes)).Msg("faults: live change in force from this episode")
	return nil
}

// updateFaults implements runner: the injector of the scenario's faults as they now are, the
// cores told of its crashes, this process's own crash armed, the fault log opened when a
// rule appears. The outboxes keep their counters; copies they held expired with the episode.
// The slots of episodes in flight (inflight.go), idle between groups, are rebuilt alike: the
// next group's coalescing is decided on the new faults (a publisher with a rule, or any crash
// in the run, sends one message per episode from now on) and a crash makes its episode run
// alone (checkGroup reads the faults as changed).
func (r *coreRunner) updateFaults(proc *process, lf liveFaults) error {
	f := &proc.scn.Faults
	inj, err := fault.New(f, proc.cfg.FaultSeed)
	if err != nil {
		return err
	}
	for _, c := range r.cores {
		if !sim.SetCrashes(c, f.Crashes) {
			return fmt.Errorf("%s cannot be told of crashes", c.Endpoint())
		}
	}
	if err := r.tr.setInjector(proc, inj, f.Crashes); err != nil {
		return err
	}
	if len(crashesOf(proc, r.cores)) > 0 {
		r.drv.OnCrash = func(c sim.Core) error { return r.crash(proc, c) }
	}
	if inj.Active() && len(r.tr.pubs) > 0 && r.ffile == nil {
		if err := r.openFaultLog(proc); err != nil {
			return err
		}
	}
	if r.inflight != nil {
		for _, s := range r.inflight.slots {
			for _, c := range s.cores {
				if !sim.SetCrashes(c, f.Crashes) {
					return fmt.Errorf("%s cannot be told of crashes", c.Endpoint())
				}
			}
			if err := s.tr.setOutboxes(inj, f.Crashes); err != nil {
				return err
			}
			s.tr.crashes, s.tr.rejoins = r.tr.crashes, r.tr.rejoins
			r.logSlot(s)
		}
	}
	r.live = lf
	return nil
}

// setInjector rebuilds the publishers' outboxes on inj (setOutboxes) and takes the run's
// crashes, hearing the rejoins of restarted peers from now on.
func (t *natsTransport) setInjector(proc *process, inj *fault.Injector, crashes []scenario.Crash) error {
	if err := t.setOutboxes(inj, crashes); err != nil {
		return err
	}
	if len(t.pubs) == 0 || len(crashes) == 0 {
		return nil
	}
	t.crashes = crashes
	if t.rejoins != nil {
		return nil
	}
	t.rejoins = newRejoins()
	if err := t.subscribeRejoins(proc); err != nil {
		return err
	}
	return proc.flush()
}

// setOutboxes rebuilds the publishers' outboxes on inj (their links are the same: the
// subscribers do not change; the counters and the fault log carry over), with whether each
// may coalesce decided as newTransport does on the run's crashes.
func (t *natsTransport) setOutboxes(inj *fault.Injector, crashes []scenario.Crash) error {
	for from, ps := range t.pubs {
		old := ps.ob
		old.End()
		ob := sim.NewPublisherOutbox(inj, from, t.made.topo.Subscribers(from))
		if err := ob.SetStats(old.Stats()); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		ob.Log = old.Log
		ps.ob, ps.wall = ob, false
		for _, l := range ob.Links() {
			if l.WallDelay() {
				ps.wall = true
			}
		}
		ps.coalesce = ob.Clear() && !ps.wall && !t.realtime && len(crashes) == 0
	}
	t.made.inj = inj
	return nil
}

// A change in the middle of a realtime episode (ctl.faults with a step S > 0): only the link
// rules and partitions change, and theirs begin at (E, S), so the process may put them in
// force at any step before S - which it does at its next release. A process that has released
// step S (or finished episode E) when it comes fails: the run would not replay.

// midChange is a live change for step "step" of episode ep in progress, read on receipt (err:
// it could not be).
type midChange struct {
	lf       liveFaults
	ep, step int
	faults   contract.LiveFaults
	err      error
}

// midFaults is the mid-episode change a process has not put in force yet.
type midFaults struct {
	mu sync.Mutex
	p  atomic.Pointer[midChange]
}

// noteMid reads the live faults of a mid-episode ctl.faults and keeps them for the next
// release (on the client's goroutine). Two before a release: the later faults (they hold the
// earlier's rules), due at the earlier step.
func (proc *process) noteMid(m *wire.Message, lf liveFaults) {
	c := &midChange{lf: lf, ep: m.Episode, step: m.Step}
	b, err := os.ReadFile(filepath.Join(proc.cfg.Out, contract.LiveFaultsFile(lf.gen)))
	if err == nil {
		c.faults, err = contract.DecodeLiveFaults(b, proc.cfg.Run, lf.gen, lf.digest)
	}
	if err == nil && (c.faults.Episode != m.Episode || c.faults.Step != m.Step) {
		err = fmt.Errorf("%s applies from episode %d step %d, the message says episode %d step %d", contract.LiveFaultsFile(lf.gen),
			c.faults.Episode, c.faults.Step, m.Episode, m.Step)
	}
	if err != nil {
		c.err = fmt.Errorf("ctl.faults: %w", err)
	}
	proc.mid.mu.Lock()
	defer proc.mid.mu.Unlock()
	if old := proc.mid.p.Load(); old != nil && old.err == nil && old.ep == c.ep && old.step < c.step {
		c.step = old.step
	}
	proc.mid.p.Store(c)
}

// checkMid puts a mid-episode change in force before the release of step "step" of the
// transport's episode, or fails when that release comes after the change's step.
func (t *natsTransport) checkMid(step int) error {
	c := t.mid.p.Load()
	switch {
	case c == nil:
		return nil
	case c.err != nil:
		return c.err
	case t.ep < c.ep:
		return nil // its episode has not begun here yet
	case t.ep > c.ep || step > c.step:
		return fmt.Errorf("ctl.faults generation %d: the change from episode %d step %d came when this process was at episode %d step %d, past it: its faults would not replay (the launcher's margin was too short)",
			c.lf.gen, c.ep, c.step, t.ep, step)
	}
	if err := t.onMid(c); err != nil {
		return fmt.Errorf("ctl.faults generation %d: %w", c.lf.gen, err)
	}
	t.mid.p.CompareAndSwap(c, nil)
	return nil
}

// applyMid puts the link rules and partitions of a mid-episode change in force: the outboxes
// get the new links (the rules added act from the change's step), keeping what they hold.
func (r *coreRunner) applyMid(proc *process, c *midChange) error {
	f := &proc.scn.Faults
	f.Links, f.Partitions = c.faults.Faults.Links, c.faults.Faults.Partitions
	inj, err := fault.New(f, proc.cfg.FaultSeed)
	if err != nil {
		return err
	}
	for from, ps := range r.tr.pubs {
		ob := sim.NewPublisherOutbox(inj, from, r.tr.made.topo.Subscribers(from))
		if err := ps.ob.SetLinks(ob.Links()); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		for _, l := range ob.Links() {
			ps.wall = ps.wall || l.WallDelay()
		}
		ps.coalesce = false
	}
	r.tr.made.inj = inj
	if inj.Active() && len(r.tr.pubs) > 0 && r.ffile == nil {
		if err := r.openFaultLog(proc); err != nil {
			return err
		}
	}
	r.live = c.lf
	proc.log.Info().Int("generation", c.lf.gen).Int("episode", c.ep).Int("step", c.step).Int("links", len(f.Links)).
		Int("partitions", len(f.Partitions)).Msg("faults: live change in force from this step")
	return nil
}
