package roleproc

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// Crashes (faults.crashes). A process hosting a core the scenario kills writes its checkpoint
// when the core reaches its crash step - the step boundary at which it is killed, so nothing
// before it is lost - fsyncs it with its trace and fault log, and kills itself with SIGKILL
// (no cleanup runs: its results are what is on disk). The launcher sees the kill and starts
// the process again with --resume: the successor reads the checkpoint, cuts its files back to
// the checkpoint's offsets, restores its cores (state, inputs held, counters and the noise
// draw eta), subscribes, announces ctl.rejoin and continues the episode. Its peers never wait
// for it while it is down (the outage is in the scenario: their missing-input rules apply at
// once), and they hold what is due to it from its restart step until they hear its rejoin.
//
// The checkpoint is a JSON file, <out>/<name>.checkpoint.json (mode 0600: it holds the noise
// draw; the successor removes it once restored), written atomically (temporary
// file, fsync, rename, directory fsync): dpsim does not need JetStream, and a file works with
// any server.

// DefaultRejoinTimeout bounds how long a peer holds a delivery for a restarted process (the
// time to start a process, load the scenario, restore and subscribe).
const DefaultRejoinTimeout = time.Minute

// CheckpointVersion is the version of the checkpoint file.
const CheckpointVersion = 1

// Checkpoint is a role process's checkpoint.
type Checkpoint struct {
	V       int    `json:"v"`
	Run     string `json:"run"`
	Name    string `json:"name"`
	Episode int    `json:"episode"`
	Step    int    `json:"step"` // the crash step
	Restart int    `json:"restart"`
	// Cores are the hosted cores' states; Outboxes the injector counters of each publisher.
	Cores    []*sim.CoreState             `json:"cores"`
	Outboxes map[string][]fault.LinkStats `json:"outboxes"`
	// The files' sizes at the checkpoint, and the disk bound's state.
	TraceOffset  int64 `json:"trace_offset"`
	FaultsOffset int64 `json:"faults_offset"`
	KeepEnd      int64 `json:"keep_end"`
	Finished     int   `json:"finished"`
	// The process's counters so far.
	Episodes int                   `json:"episodes"`
	Steps    int                   `json:"steps"`
	Busy     float64               `json:"busy_seconds"`
	Invalid  wire.CountersSnapshot `json:"invalid"`
	// Inflight carries the counters of the episodes the process ran in flight (groups) before:
	// their cores and outboxes are not the checkpointed ones.
	Inflight *inflightCounts `json:"inflight,omitempty"`
	// LiveGeneration and LiveDigest name the live faults in force (ctl.faults; 0: the
	// scenario's): the successor puts them in force again before it restores.
	LiveGeneration int    `json:"live_generation,omitempty"`
	LiveDigest     uint64 `json:"live_digest,omitempty"`
}

// inflightCounts are the counters of episodes run in flight.
type inflightCounts struct {
	Links      []fault.LinkStats `json:"links,omitempty"`
	Unexpected uint64            `json:"unexpected,omitempty"`
	Stale      uint64            `json:"stale,omitempty"`
}

// crashesOf returns the scenario's crashes of the cores a process hosts.
func crashesOf(proc *process, cores []sim.Core) []scenario.Crash {
	var out []scenario.Crash
	for _, c := range proc.scn.Faults.Crashes {
		for _, k := range cores {
			if k.Endpoint().String() == c.Proc {
				out = append(out, c)
			}
		}
	}
	return out
}

// crash is the driver's OnCrash: checkpoint, then SIGKILL. It returns only if the kill fails.
func (r *coreRunner) crash(proc *process, c sim.Core) error {
	ck := &Checkpoint{V: CheckpointVersion, Run: proc.cfg.Run, Name: proc.cfg.Name(), Episode: r.tr.ep, Step: c.Cur(),
		Outboxes: map[string][]fault.LinkStats{}, KeepEnd: r.bound.keepEnd, Finished: r.bound.finished,
		Episodes: proc.res.Episodes, Steps: proc.res.Steps, Busy: (proc.busy + time.Since(r.epStart)).Seconds(), Invalid: proc.data.Snapshot(),
		LiveGeneration: r.live.gen, LiveDigest: r.live.digest}
	if cr := proc.scn.Faults.CrashOf(c.Endpoint().String(), r.tr.ep); cr != nil {
		ck.Restart = cr.Restart
	}
	for _, k := range r.cores {
		cp, ok := k.(sim.Checkpointer)
		if !ok {
			return fmt.Errorf("crash of %s: %s cannot be checkpointed", c.Endpoint(), k.Endpoint())
		}
		ck.Cores = append(ck.Cores, cp.Checkpoint())
	}
	for e, ps := range r.tr.pubs {
		ck.Outboxes[e.String()] = append([]fault.LinkStats(nil), ps.ob.Stats()...)
	}
	if r.inflight != nil || r.carried.Links != nil {
		in := r.inflightCounts()
		ck.Inflight = &in
	}
	var err error
	if err = syncWriter(r.flush, r.file); err != nil {
		return fmt.Errorf("crash: trace: %w", err)
	}
	if ck.TraceOffset, err = r.file.Seek(0, io.SeekCurrent); err != nil {
		return fmt.Errorf("crash: trace: %w", err)
	}
	if r.fw != nil {
		if err = syncWriter(r.fw.Flush, r.ffile); err != nil {
			return fmt.Errorf("crash: fault log: %w", err)
		}
		if ck.FaultsOffset, err = r.ffile.Seek(0, io.SeekCurrent); err != nil {
			return fmt.Errorf("crash: fault log: %w", err)
		}
	}
	// What the core released before its crash point (the cloud's u(t) of the step before) is
	// part of the run: it must be on the wire before the kill, not in the client's buffer.
	if err := proc.flush(); err != nil {
		return fmt.Errorf("crash: %w", err)
	}
	data, err := json.Marshal(ck)
	if err != nil {
		return fmt.Errorf("crash: checkpoint: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(proc.cfg.Out, contract.CheckpointFile(proc.cfg.Name())), data, 0o600); err != nil {
		return fmt.Errorf("crash: checkpoint: %w", err)
	}
	proc.log.Warn().Int("episode", ck.Episode).Int("step", ck.Step).Int("restart", ck.Restart).
		Msg("faults: checkpoint written; killing this process (SIGKILL)")
	if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("crash: SIGKILL: %w", err)
	}
	select {} // the kill is asynchronous: never go on
}

// readCheckpoint reads and checks a process's checkpoint.
func readCheckpoint(proc *process) (*Checkpoint, error) {
	path := filepath.Join(proc.cfg.Out, contract.CheckpointFile(proc.cfg.Name()))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--resume: %w", err)
	}
	var ck Checkpoint
	if err := json.Unmarshal(data, &ck); err != nil {
		return nil, fmt.Errorf("--resume: %s: %w", path, err)
	}
	switch {
	case ck.V != CheckpointVersion:
		return nil, fmt.Errorf("--resume: %s: version %d, want %d", path, ck.V, CheckpointVersion)
	case ck.Run != proc.cfg.Run || ck.Name != proc.cfg.Name():
		return nil, fmt.Errorf("--resume: %s is the checkpoint of %s in run %s, not of %s in run %s", path, ck.Name, ck.Run, proc.cfg.Name(), proc.cfg.Run)
	}
	return &ck, nil
}

// restoreFrom puts the runner in the checkpoint's state: cores, outbox counters, files.
func (r *coreRunner) restoreFrom(proc *process, ck *Checkpoint) error {
	if len(ck.Cores) != len(r.cores) {
		return fmt.Errorf("--resume: the checkpoint has %d cores, this process hosts %d", len(ck.Cores), len(r.cores))
	}
	for i, k := range r.cores {
		cp, ok := k.(sim.Checkpointer)
		if !ok {
			return fmt.Errorf("--resume: %s cannot be restored", k.Endpoint())
		}
		if err := cp.Restore(ck.Cores[i]); err != nil {
			return fmt.Errorf("--resume: %w", err)
		}
	}
	for e, ps := range r.tr.pubs {
		if st, ok := ck.Outboxes[e.String()]; ok {
			if err := ps.ob.SetStats(st); err != nil {
				return fmt.Errorf("--resume: %s: %w", e, err)
			}
		}
	}
	cut := func(f *os.File, off int64) error {
		if err := f.Truncate(off); err != nil {
			return err
		}
		_, err := f.Seek(off, io.SeekStart)
		return err
	}
	if err := cut(r.file, ck.TraceOffset); err != nil {
		return fmt.Errorf("--resume: trace: %w", err)
	}
	if r.ffile != nil {
		if err := cut(r.ffile, ck.FaultsOffset); err != nil {
			return fmt.Errorf("--resume: fault log: %w", err)
		}
	}
	if ck.Inflight != nil {
		r.carried = *ck.Inflight
	}
	r.bound.restore(ck.Finished, ck.KeepEnd)
	proc.res.Episodes, proc.res.Steps = ck.Episodes, ck.Steps
	proc.busy = time.Duration(ck.Busy * float64(time.Second))
	proc.res.Restarted, proc.res.RestartEpisode, proc.res.RestartStep = true, ck.Episode, ck.Restart
	proc.lastEp.Store(int64(ck.Episode))
	return nil
}

// resume implements runner: restore the checkpoint, announce the rejoin (the process is
// subscribed: its peers may send what is due to it from its restart step), finish the episode.
func (r *coreRunner) resume(proc *process) (int, error) {
	ck, err := readCheckpoint(proc)
	if err != nil {
		return 0, err
	}
	if ck.LiveGeneration > 0 {
		if err := proc.applyLiveFaults(r, liveFaults{gen: ck.LiveGeneration, digest: ck.LiveDigest}, -1); err != nil {
			return 0, fmt.Errorf("--resume: %w", err)
		}
	}
	if err := r.restoreFrom(proc, ck); err != nil {
		return 0, err
	}
	// The checkpoint holds the episode's noise draw, a secret: it is gone once restored.
	if err := os.Remove(filepath.Join(proc.cfg.Out, contract.CheckpointFile(proc.cfg.Name()))); err != nil {
		proc.log.Warn().Err(err).Msg("remove the restored checkpoint")
	}
	proc.log.Warn().Int("episode", ck.Episode).Int("step", ck.Step).Int("restart", ck.Restart).Msg("faults: restarted from the checkpoint")
	rejoin := contract.Rejoin{Step: ck.Restart, PID: os.Getpid()}.Message(proc.cfg.Run, proc.sender, ck.Episode)
	proc.rejoin.Store(rejoin)
	if err := proc.conn.Publish(proc.subj.CtlRejoin(proc.cfg.Role, proc.cfg.ID), rejoin); err != nil {
		return 0, err
	}
	if err := proc.flush(); err != nil {
		return 0, err
	}
	return ck.Episode, r.resumeEpisode(proc, ck)
}

// resumeEpisode finishes the checkpoint's episode: the transport begins it without a new
// begin of the outboxes' counters, the driver resumes the restored cores.
func (r *coreRunner) resumeEpisode(proc *process, ck *Checkpoint) error {
	// the outboxes keep the restored counters
	return r.drive(proc, ck.Episode, time.Now(), func() error { return r.drv.Resume(nil) })
}

// rejoins tracks the ctl.rejoin of restarted peers: what is due to a peer from its restart
// step waits until it is subscribed again.
type rejoins struct {
	mu    sync.Mutex
	heard map[string]int // sender -> newest episode it rejoined
	ch    chan struct{}  // closed and replaced at each rejoin
}

func newRejoins() *rejoins { return &rejoins{heard: map[string]int{}, ch: make(chan struct{})} }

func (j *rejoins) note(sender string, ep int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if old, ok := j.heard[sender]; !ok || ep > old {
		j.heard[sender] = ep
	}
	close(j.ch)
	j.ch = make(chan struct{})
}

// await waits until sender rejoined episode ep (or a later one), at most until deadline, or
// the stop channel closes.
func (j *rejoins) await(sender string, ep int, deadline time.Time, stop <-chan struct{}) error {
	for {
		j.mu.Lock()
		got, ok := j.heard[sender]
		ch := j.ch
		j.mu.Unlock()
		if ok && got >= ep {
			return nil
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return fmt.Errorf("%s did not rejoin episode %d after its restart (no ctl.rejoin)", sender, ep)
		}
		select {
		case <-ch:
		case <-stop:
			return errStopped
		case <-time.After(wait):
		}
	}
}

// echoRejoin repeats this process's own ctl.rejoin, once, to a peer restarted in the same
// episode: two processes that crash in one episode restart one after the other, and the one
// that announced first did so before the other had subscribed - without the echo each would
// hold what is due to the other until the rejoin timeout, and the episode stalled.
func (proc *process) echoRejoin(heard *wire.Message) {
	own := proc.rejoin.Load()
	if own == nil || heard.Sender == proc.sender || heard.Episode != own.Episode {
		return
	}
	proc.echoMu.Lock()
	key := fmt.Sprintf("%s/%d", heard.Sender, heard.Episode)
	if proc.echoedTo[key] {
		proc.echoMu.Unlock()
		return
	}
	if proc.echoedTo == nil {
		proc.echoedTo = map[string]bool{}
	}
	proc.echoedTo[key] = true
	proc.echoMu.Unlock()
	if err := proc.conn.Publish(proc.subj.CtlRejoin(proc.cfg.Role, proc.cfg.ID), own); err != nil {
		proc.log.Warn().Err(err).Str("peer", heard.Sender).Msg("faults: repeating the rejoin")
	}
}
