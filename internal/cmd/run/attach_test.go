package run_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/bus"
)

// dpsim run --attach starts no process: it prints each role's command and writes them with
// a credentials file per process (mode 0600, the secrets never on a command line); the
// processes started by hand from those lines, in reverse order and one late, run the
// episodes of each point of the sweep, and the numbers equal the fast engine's bit for bit.
func TestAttachByHand(t *testing.T) {
	dir, fdir := t.TempDir(), t.TempDir()
	l := start(t, "run", scenarioPath("consensus-gaussian"), "--attach", "--sign", "--runs", "3", "--seed", "11",
		"--agents-per-process", "4", "--out", dir, "--run-id", "byhand", "--attach-timeout", "60s", "--log-level", "warn")
	// The scenario sweeps 3 points: each point's processes are started when it announces them.
	var procs []*exec.Cmd
	var secrets []string
	var scripts, attachDirs []string
	for k := 0; k < 3; k++ {
		attach := filepath.Join(dir, "procs", fmt.Sprintf("p%02d", k), launch.AttachDir)
		attachDirs = append(attachDirs, attach)
		script, lines := awaitCommands(t, l, filepath.Join(attach, launch.CommandsFile))
		scripts = append(scripts, script)

		// Every process has its credentials file, private to its owner; no secret is on a line.
		creds, err := filepath.Glob(filepath.Join(attach, "*.env"))
		require.NoError(t, err)
		require.Len(t, creds, 4, "3 agent hosts (10 agents, 4 per process) and the eavesdropper")
		for _, f := range creds {
			st, err := os.Stat(f)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), f)
			c, err := bus.ReadCredentials(f)
			require.NoError(t, err)
			require.NotEmpty(t, c.Password)
			require.NotEmpty(t, c.SignSeed)
			secrets = append(secrets, c.Password, c.SignSeed)
		}
		for _, line := range lines {
			require.Contains(t, line, "--credentials "+attach)
			require.NotContains(t, line, "--parent-pid", "an attached process is nobody's child")
			require.Contains(t, line, "--batch 4", "hosts of 4 agents publish one message per step")
		}
		require.Len(t, lines, 4)
		require.Eventually(t, func() bool { return strings.Contains(l.stderr.String(), lines[3]) }, 5*time.Second, 10*time.Millisecond,
			"the launcher prints every command")

		// By hand, in reverse order; the last one a second late (the launcher just waits).
		for i := len(lines) - 1; i >= 0; i-- {
			if i == 0 {
				time.Sleep(time.Second)
			}
			procs = append(procs, startAttached(t, "sh", "-c", "exec "+lines[i]))
		}
	}
	sum := awaitAttached(t, l, procs, dir)
	require.Len(t, sum.Points, 3)
	for _, pt := range sum.Points {
		require.Equal(t, 3, pt.Metrics.Runs)
	}
	require.Len(t, sum.Processes, 12)

	// The secrets went nowhere else, and the credentials files are gone with the run;
	// commands.sh, the record of how the roles were started, is kept as it was.
	summary, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	for _, sec := range secrets {
		require.NotContains(t, strings.Join(scripts, ""), sec)
		require.NotContains(t, l.stderr.String(), sec)
		require.NotContains(t, string(summary), sec)
	}
	for k, d := range attachDirs {
		creds, err := filepath.Glob(filepath.Join(d, "*.env"))
		require.NoError(t, err)
		require.Empty(t, creds, "the credentials files outlived the run")
		kept, err := os.ReadFile(filepath.Join(d, launch.CommandsFile))
		require.NoError(t, err, "commands.sh of point %d is kept", k)
		require.Equal(t, scripts[k], string(kept))
	}

	code, _, stderr := runDpsim(t, 30*time.Second, "run", scenarioPath("consensus-gaussian"), "--runs", "3", "--seed", "11",
		"--engine", "fast", "--agents-per-process", "4", "--out", fdir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, string(readSummary(t, fdir).Metrics), string(sum.Metrics))
}

// awaitCommands waits until the launcher l wrote the attach commands file path and returns it
// and its command lines (each backgrounded in the script: the " &" taken off).
func awaitCommands(t *testing.T, l *started, path string) (script string, lines []string) {
	t.Helper()
	require.Eventually(t, func() bool { _, err := os.Stat(path); return err == nil }, 30*time.Second, 20*time.Millisecond,
		"no %s; launcher stderr:\n%s", path, l.stderr.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") || line == "wait" {
			continue
		}
		require.True(t, strings.HasSuffix(line, " &"), line)
		lines = append(lines, strings.TrimSuffix(line, " &"))
	}
	return string(data), lines
}

// startAttached starts a role process as someone other than the launcher would (no NATS_URL
// from this environment: the command says everything).
func startAttached(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command(name, args...)
	c.Env = append(os.Environ(), "NATS_URL=")
	require.NoError(t, c.Start())
	return c
}

// awaitAttached waits for the launcher and the processes started for it, and returns the
// summary of dir: the run complete, with attached processes.
func awaitAttached(t *testing.T, l *started, procs []*exec.Cmd, dir string) *summary {
	t.Helper()
	require.Equal(t, 0, l.wait(t, 90*time.Second), l.stderr.String())
	for _, c := range procs {
		require.NoError(t, c.Wait(), "%v", c.Args)
	}
	sum := readSummary(t, dir)
	require.Equal(t, "ok", sum.Status, sum.Error)
	require.True(t, sum.Attached)
	return sum
}

// What --attach cannot do is refused before anything starts, naming why.
func TestAttachRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{scenarioPath("faults-agent-crash"), "--attach"}, "faults.crashes"},
		{[]string{scenarioPath("faults-tcp-latency"), "--attach"}, "faults.proxies"},
		{[]string{scenarioPath("cloud-vehicle"), "--attach", "--engine", "fast"}, "fast engine"},
		{[]string{scenarioPath("cloud-vehicle"), "--attach", "--attach-timeout", "0s"}, "--attach-timeout"},
		{[]string{scenarioPath("cloud-vehicle"), "--listen", "nohost"}, "--listen"},
		{[]string{scenarioPath("cloud-vehicle"), "--listen", "127.0.0.1:0", "--cluster", "2"}, "--listen"},
	} {
		code, _, stderr := runDpsim(t, 30*time.Second, append([]string{"run", "--out", t.TempDir()}, c.args...)...)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.want, c.args)
	}
}

// An attach-mode launcher that nobody joins gives up after --attach-timeout, naming the
// processes it waited for, and leaves no credentials behind (commands.sh, which holds none,
// stays: the record of what was to be started).
func TestAttachTimeout(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 30*time.Second, "run", scenarioPath("cloud-vehicle"), "--attach", "--attach-timeout", "1s",
		"--out", dir, "--log-level", "warn")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "not ready within 1s")
	require.Contains(t, stderr, "plant.0")
	creds, err := filepath.Glob(filepath.Join(dir, "procs", launch.AttachDir, "*.env"))
	require.NoError(t, err)
	require.Empty(t, creds)
	_, err = os.Stat(filepath.Join(dir, "procs", launch.AttachDir, launch.CommandsFile))
	require.NoError(t, err)
}
