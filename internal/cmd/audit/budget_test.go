package auditcmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// guardedAudit runs `dpsim audit args...` as its own process under a 3 GB address-space limit
// (a regression that allocates the game dies there instead of taking the machine down) and
// returns its exit code, stderr and peak resident set.
func guardedAudit(t *testing.T, timeout time.Duration, args ...string) (int, string, int64) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", `ulimit -v 3000000 && exec "$0" audit --log-level warn --progress=false "$@"`, dpsimBin}, args...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Env = append(os.Environ(), "NATS_URL=", "GOMEMLIMIT=512MiB")
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		require.True(t, ok)
		return code, errb.String(), ru.Maxrss << 10 // KiB on linux
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("dpsim audit %v did not end within %v\nstderr:\n%s", args, timeout, errb.String())
		return -1, "", 0
	}
}

// refusedWithEstimate checks an up-front refusal: exit 1, the estimate and the --budget that
// confirms it, and a process that stayed small (it built nothing).
func refusedWithEstimate(t *testing.T, code int, stderr string, rss int64) string {
	t.Helper()
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "estimated cost memory ~")
	require.Contains(t, stderr, "exceeds the memory budget 2 GiB")
	require.Contains(t, stderr, "confirm with --budget ")
	require.NotContains(t, stderr, "out of memory")
	require.Less(t, rss, int64(256<<20), "refused before anything big is allocated")
	return stderr
}

// TestAuditRefusesTheLargeRingUpFront: the audit of a ring of 10^5 agents (its game's dense
// N x N matrices: 80 GB each) died with "fatal error: runtime: out of memory"; now both engines
// refuse it up front, with the estimate and the --budget that would confirm it.
func TestAuditRefusesTheLargeRingUpFront(t *testing.T) {
	x0 := make([]string, 100_000)
	for i := range x0 {
		x0[i] = fmt.Sprint(i % 100)
	}
	ring := dpsimtest.ScenarioVariant(t, "audit-consensus-gaussian", `(?m)^graph:\n(  .*\n)+`, "graph: {name: ring, n: 100000, weight: 0.25}\n",
		`(?m)^x0: \[.*\]$`, "x0: ["+strings.Join(x0, ", ")+"]")
	for _, eng := range []string{"fast", "wire"} {
		code, stderr, rss := guardedAudit(t, 2*time.Minute, ring, "--engine", eng, "--trials", "100")
		refusedWithEstimate(t, code, stderr, rss)
		t.Logf("%s: %s (peak RSS %d MiB)", eng, strings.TrimSpace(stderr), rss>>20)
	}
	code, stderr, rss := guardedAudit(t, 2*time.Minute, ring, "--one-run")
	refusedWithEstimate(t, code, stderr, rss)
}

// TestAuditRefusesTenMillionSteps: the vehicle's audit at T = 10^7 (the players' estimators
// keep u(t) of 64 episodes per worker; the game's O_T matrices) passed 3 GB; now both engines
// refuse it up front.
func TestAuditRefusesTenMillionSteps(t *testing.T) {
	long := dpsimtest.ScenarioVariant(t, "audit-vehicle-structured", `(?m)^steps: 100$`, "steps: 10000000")
	for _, eng := range []string{"fast", "wire"} {
		code, stderr, rss := guardedAudit(t, 2*time.Minute, long, "--engine", eng, "--trials", "10")
		refusedWithEstimate(t, code, stderr, rss)
		t.Logf("%s: %s", eng, strings.TrimSpace(stderr))
	}
}

// TestAuditBudgetConfirms: an audit refused at a small --budget runs with the --budget its
// refusal names; the estimate bounds the measured peak from above within a small factor.
func TestAuditBudgetConfirms(t *testing.T) {
	veh := dpsimtest.ScenarioVariant(t, "audit-vehicle-structured", `(?m)^steps: 100$`, "steps: 100000")
	code, stderr, rss := guardedAudit(t, 2*time.Minute, veh, "--trials", "100", "--workers", "1", "--budget", "64MiB")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "exceeds the memory budget 64 MiB")
	require.Less(t, rss, int64(256<<20))
	need := stderr[strings.LastIndex(stderr, "--budget ")+len("--budget "):]
	need = strings.ReplaceAll(strings.SplitN(need, "\n", 2)[0], " ", "")
	code, stderr, rss = guardedAudit(t, 3*time.Minute, veh, "--trials", "100", "--workers", "1", "--budget", need, "--json")
	require.Equal(t, 0, code, "--budget %s: %s", need, stderr)

	s, err := scenario.Load(veh)
	require.NoError(t, err)
	c, err := engine.EstimateAuditCost(s.Expand(), engine.AuditCostOptions{Trials: 100, Workers: 1})
	require.NoError(t, err)
	t.Logf("T = 10^5, 200 episodes, one worker: estimate %d MiB, peak RSS %d MiB (%.2fx)", c.MemoryBytes>>20, rss>>20, float64(c.MemoryBytes)/float64(rss))
	require.GreaterOrEqual(t, c.MemoryBytes, rss, "the estimate is an upper bound of the peak")
	require.LessOrEqual(t, c.MemoryBytes, 4*rss, "the estimate is within 4x of the peak")
}
