package auditcmd

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
)

// wireAudit runs `dpsim audit --engine wire args...` as its own process (it spawns the role
// processes over an embedded server) and returns its --json report.
func wireAudit(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(dpsimBin, append([]string{"audit", "--engine", "wire", "--json", "--log-level", "warn"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "NATS_URL=")
	require.NoError(t, cmd.Run(), errb.String())
	return out.String()
}

// The wire engine with 16 trials in flight (each trial's x(0) on the private line) gives the
// fast engine's verdict and bounds exactly, for the same seed, and says how it grouped the trials.
func TestWireInflightEqualsFast(t *testing.T) {
	const trials = 100
	start := time.Now()
	wire := decodeReport(t, wireAudit(t, scenarioPath("audit-vehicle-structured"), "--trials", fmt.Sprint(trials), "--seed", "31",
		"--inflight", "16"))
	t.Logf("wire, K=16: %d episodes in %.1f s", 2*trials, time.Since(start).Seconds())
	fastOut, _, err := runIn(t, scenarioPath("audit-vehicle-structured"), "--trials", fmt.Sprint(trials), "--json", "--seed", "31")
	require.NoError(t, err)
	fast := decodeReport(t, fastOut)
	require.Equal(t, 2*trials, wire.Episodes)
	require.Equal(t, fast.Verdict, wire.Verdict)
	require.Equal(t, fast.Pair, wire.Pair)
	require.Equal(t, fast.EpsilonLBCP, wire.EpsilonLBCP)
	require.Equal(t, fast.EpsilonLBGDP, wire.EpsilonLBGDP)
	require.Equal(t, fast.MuGDP, wire.MuGDP)
	require.Len(t, wire.Scores, len(fast.Scores))
	for i := range fast.Scores {
		require.Equal(t, fast.Scores[i].Result, wire.Scores[i].Result, "score %d", i)
	}
	require.Contains(t, strings.Join(wire.Notes, "\n"), "up to 16 trials in flight at once over the processes (--inflight); 13 group(s), the largest 16")
}

// --inflight must be a group size the processes accept.
func TestInflightUsageErrors(t *testing.T) {
	for _, k := range []string{"0", "-1", "1025"} {
		_, _, err := runIn(t, "a.yaml", "--inflight", k)
		require.ErrorIs(t, err, cli.ErrUsage, "--inflight %s", k)
		require.ErrorContains(t, err, "--inflight "+k+": want 1..1024")
	}
}
