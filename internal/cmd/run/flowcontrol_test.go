package run_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

// cpuHogs starts n CPU-bound processes beside the test (another user's job on a 2-core
// machine) and kills them at its end.
func cpuHogs(t *testing.T, n int) {
	t.Helper()
	for range n {
		hog := exec.Command("sh", "-c", "while :; do :; done")
		require.NoError(t, hog.Start())
		t.Cleanup(func() {
			_ = hog.Process.Kill()
			_ = hog.Wait()
		})
	}
}

// A lockstep run never loses a message to its own speed: with link faults every agent sends
// one message per episode and step, 128 episodes in flight make 38,400 messages a group for
// the eavesdropper (subscribed to everything), which on a busy machine falls behind the
// agents. Its inbox dropped what found its channel full (a NATS slow consumer), the group
// never completed and the run failed after the idle timeout. Now it waits behind: the run
// completes at the default --inflight with the fast engine's numbers bit for bit.
func TestFlowControlUnderLoad(t *testing.T) {
	path := dpsimtest.ScenarioVariant(t, "faults-consensus-loss", `(?s)\nsweep:.*$`, "\n", `(?m)^      drop: 0 .*$`, "      drop: 0.2")
	cpuHogs(t, 3)
	dir, fdir := t.TempDir(), t.TempDir()
	code, _, stderr := runDpsim(t, 5*time.Minute, "run", path, "--runs", "384", "--out", dir, "--progress=false", "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runDpsim(t, 2*time.Minute, "run", path, "--runs", "384", "--engine", "fast", "--out", fdir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	sum, fsum := readSummary(t, dir), readSummary(t, fdir)
	require.Equal(t, "ok", sum.Status, "%s %v", sum.Error, sum.Degraded)
	require.JSONEq(t, string(fsum.Metrics), string(sum.Metrics))
	logs, err := filepath.Glob(filepath.Join(dir, "procs", "*.log"))
	require.NoError(t, err)
	for _, l := range logs {
		b, err := os.ReadFile(l)
		require.NoError(t, err)
		require.NotContains(t, string(b), "slow consumer", l)
	}
}
