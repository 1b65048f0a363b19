package farm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// spawned are the local workers a coordinator started.
type spawned struct {
	cmds []*exec.Cmd
	done []chan struct{} // closed when cmds[i] exited
}

// spawn starts Config.Spawn local `dpsim worker` processes on the coordinator's server, each
// with its own account (local-i): the credentials reach them through a private file, never argv.
func (c *Coordinator) spawn(ctx context.Context) (*spawned, error) {
	sp := &spawned{}
	if c.cfg.Spawn <= 0 {
		return sp, nil
	}
	exe := c.cfg.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("farm: spawn workers: %w", err)
		}
	}
	threads := c.cfg.SpawnThreads
	if threads <= 0 {
		threads = max(1, runtime.GOMAXPROCS(0)/c.cfg.Spawn)
	}
	for i := range c.cfg.Spawn {
		cmd := exec.CommandContext(ctx, exe, "worker", "--server", c.srv.URL, "--creds", c.spawnCreds[i],
			"--threads", strconv.Itoa(threads), "--name", localName(i), "--log-level", c.log.GetLevel().String())
		cmd.Env = append(os.Environ(), c.cfg.SpawnEnv...)
		cmd.Stdout, cmd.Stderr = c.cfg.Stderr, c.cfg.Stderr
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // a worker stops cleanly
		cmd.WaitDelay = 2 * time.Second
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			sp.stop(0)
			return nil, fmt.Errorf("farm: spawn worker %d: %w", i, err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		sp.cmds, sp.done = append(sp.cmds, cmd), append(sp.done, done)
	}
	c.log.Info().Int("workers", c.cfg.Spawn).Int("threads", threads).Msg("started local workers")
	return sp, nil
}

// Spawned returns the process ids of the local workers (tests kill one).
func (c *Coordinator) Spawned() []int {
	var pids []int
	if c.procs != nil {
		for _, cmd := range c.procs.cmds {
			pids = append(pids, cmd.Process.Pid)
		}
	}
	return pids
}

// gone reports whether local workers were started and every one of them exited or is out
// (quarantined: out(i)).
func (sp *spawned) gone(out func(i int) bool) bool {
	if sp == nil || len(sp.cmds) == 0 {
		return false
	}
	for i, d := range sp.done {
		select {
		case <-d:
		default:
			if !out(i) {
				return false
			}
		}
	}
	return true
}

// stop waits up to grace for the workers to exit (the coordinator told them it is over), then
// sends SIGTERM, and SIGKILL a second later.
func (sp *spawned) stop(grace time.Duration) {
	end := time.Now().Add(grace)
	for i, cmd := range sp.cmds {
		select {
		case <-sp.done[i]:
			continue
		case <-time.After(max(0, time.Until(end))):
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-sp.done[i]:
		case <-time.After(time.Second):
			_ = cmd.Process.Kill()
			<-sp.done[i]
		}
	}
}
