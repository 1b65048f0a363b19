package run_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The shipped scenario: the embedded server is stopped for 1 s in the middle of episode 2 and
// started again on the same port. Every process reconnects, the run completes every episode,
// ends "degraded" naming the outage, and the report shows the timeline.
func TestNATSServerRestart(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 90*time.Second, "run", scenarioPath("faults-nats-restart"), "--runs", "4",
		"--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	sum := readSummary(t, dir)
	require.Equal(t, "degraded", sum.Status, sum.Error)
	require.Equal(t, 1, sum.Connections.ServerRestarts)
	require.GreaterOrEqual(t, sum.Connections.Disconnects, uint64(3), "every process saw the outage")
	require.GreaterOrEqual(t, sum.Connections.Reconnects, uint64(3), "and came back")
	require.Equal(t, 1, sum.events("nats-server-stopped"))
	require.Equal(t, 1, sum.events("nats-server-started"))
	require.Equal(t, 3, sum.events("reconnected"))
	require.Contains(t, strings.Join(sum.Degraded, "\n"), "restarted 1 time(s)")
	require.Equal(t, 4, sum.Points[0].Metrics.Runs, "every episode completed and was folded")
	rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(rep), "## Timeline of faults")
	require.Contains(t, string(rep), "nats-server-stopped")
	require.NotContains(t, string(rep), "**FAIL**", "lost messages are explained by the outage")
}

// The shipped partition: the NATS run completes, equals the fast engine bit for bit, counts the
// cut messages per link and shows the partition in the report.
func TestPartition(t *testing.T) {
	dir, fdir := t.TempDir(), t.TempDir()
	code, _, stderr := runDpsim(t, 90*time.Second, "run", scenarioPath("faults-partition"), "--runs", "6", "--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runDpsim(t, 30*time.Second, "run", scenarioPath("faults-partition"), "--runs", "6", "--engine", "fast", "--out", fdir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	sum, fsum := readSummary(t, dir), readSummary(t, fdir)
	require.Equal(t, "ok", sum.Status)
	require.JSONEq(t, string(fsum.Metrics), string(sum.Metrics))
	var m struct {
		Links []struct {
			Link    string `json:"link"`
			Dropped uint64 `json:"dropped"`
		} `json:"links"`
	}
	require.NoError(t, json.Unmarshal(sum.Metrics, &m))
	cut := 0
	for _, l := range m.Links {
		from, to, _ := strings.Cut(l.Link, "->")
		side := func(e string) bool {
			return e == "agent.0" || e == "agent.1" || e == "agent.2" || e == "agent.3" || e == "agent.4"
		}
		crossing := strings.HasPrefix(to, "agent.") && side(from) != side(to)
		if crossing {
			cut++
			require.Equal(t, uint64(6*10), l.Dropped, "%s: every message of steps 10..19 of 6 episodes", l.Link)
		} else {
			require.Zero(t, l.Dropped, l.Link)
		}
	}
	require.Positive(t, cut)
	rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(rep), "partition halves")
	require.Equal(t, 1, sum.events("partition"))
}
