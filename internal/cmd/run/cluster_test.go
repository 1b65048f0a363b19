package run_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --cluster 3: three embedded servers joined by routes, the processes spread over them (every
// message crosses a route); the numbers equal the fast engine's bit for bit.
func TestClusterRunEqualsFastEngine(t *testing.T) {
	dir, fdir := t.TempDir(), t.TempDir()
	code, _, stderr := runDpsim(t, 90*time.Second, "run", scenarioPath("consensus-gaussian"), "--runs", "4", "--cluster", "3",
		"--agents-per-process", "3", "--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runDpsim(t, 30*time.Second, "run", scenarioPath("consensus-gaussian"), "--runs", "4", "--engine", "fast", "--agents-per-process", "3", "--out", fdir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	sum := readSummary(t, dir)
	require.Equal(t, "ok", sum.Status, sum.Error)
	require.Equal(t, 3, sum.NATSCluster)
	require.Len(t, strings.Split(sum.NATSURL, ","), 3, sum.NATSURL)
	require.JSONEq(t, string(readSummary(t, fdir).Metrics), string(sum.Metrics))
	for _, bad := range [][]string{{"--cluster", "-1"}, {"--cluster", "17"}, {"--cluster", "3", "--nats-url", "nats://127.0.0.1:1"}} {
		code, _, stderr := runDpsim(t, 30*time.Second, append([]string{"run", scenarioPath("cloud-vehicle"), "--out", t.TempDir()}, bad...)...)
		require.Equal(t, 2, code, "%v: %s", bad, stderr)
	}
}

// The shipped scenario kills cluster member 1 (the cloud's) for 2 s mid-run: the cloud
// reconnects to another member, the run completes every episode, and the outage is counted
// and on the timeline. Without --cluster the scenario is refused with the reason.
func TestClusterMemberKilled(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 90*time.Second, "run", scenarioPath("faults-cluster-member"), "--runs", "4", "--cluster", "3",
		"--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	sum := readSummary(t, dir)
	require.Contains(t, []string{"ok", "degraded"}, sum.Status, sum.Error)
	require.Equal(t, 1, sum.Connections.ServerRestarts)
	require.GreaterOrEqual(t, sum.Connections.Disconnects, uint64(1), "the cloud lost its member")
	require.GreaterOrEqual(t, sum.Connections.Reconnects, uint64(1), "and reached another")
	require.Equal(t, 1, sum.events("nats-server-stopped"))
	require.Equal(t, 4, sum.Points[0].Metrics.Runs, "every episode completed and was folded")

	code, _, stderr = runDpsim(t, 30*time.Second, "run", scenarioPath("faults-cluster-member"), "--runs", "1", "--out", t.TempDir(), "--log-level", "warn")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "server 1, but the run has 1 embedded server(s)")
}
