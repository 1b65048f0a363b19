package role

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// Live faults (ctl.faults): the launcher of dpsim run --ui changes the run's link rules,
// partitions and crashes between episodes. The change travels as a file beside the plan
// files (contract.LiveFaults) named by a ctl.faults on ctl.episode, sent before the
// ctl.episode of the first episode it applies to: it comes through the same queue as the
// episodes, so it is applied when the episode before it is done and the next one has not
// begun - at step 0 of its episode, in every process alike.

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
func (r *coreRunner) updateFaults(proc *process, lf liveFaults) error {
	if r.inflight != nil {
		return fmt.Errorf("this process runs episodes in flight; live faults need one episode at a time")
	}
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
	r.live = lf
	return nil
}

// setInjector rebuilds the publishers' outboxes on inj (their links are the same: the
// subscribers do not change; the counters carry over) and takes the run's crashes, hearing
// the rejoins of restarted peers from now on.
func (t *natsTransport) setInjector(proc *process, inj *fault.Injector, crashes []scenario.Crash) error {
	for from, ps := range t.pubs {
		old := ps.ob
		old.End()
		ob := sim.NewPublisherOutbox(inj, from, t.made.topo.Subscribers(from))
		if err := ob.SetStats(old.Stats()); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		ob.Log = old.Log
		ps.ob, ps.wall, ps.coalesce = ob, false, false
		for _, l := range ob.Links() {
			if l.WallDelay() {
				ps.wall = true
			}
		}
	}
	t.made.inj = inj
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
