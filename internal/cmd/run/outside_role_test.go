package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

// A user replaces a role with a program of their own (--role). testdata/outsidecloud is such a
// program - a cloud controller written from the protocol with nats.go only - that breaks one
// thing on purpose per -break mode. Whatever it breaks, the run must fail or end degraded,
// naming the role and the reason in stderr and summary.json, and never end ok with numbers
// computed from messages that were dropped; unbroken, it gives the Go cloud's numbers.

// outsideCloudBin is the stand-in cloud (internal/cmd/run/testdata/outsidecloud), built once
// next to the dpsim binary.
func outsideCloudBin(t *testing.T) string { return dpsimtest.OutsideCloud(t, filepath.Dir(dpsimBin)) }

// outsideRun is one run with the outside cloud.
type outsideRun struct {
	code     int
	stderr   string // the launcher's
	cloudErr string // the outside cloud's log
	sum      *summary
}

// runOutside runs scenario with the outside cloud broken as mode ("" works) in place of the Go
// cloud, as a user would: --role cloud.0='outsidecloud -break MODE'.
func runOutside(t *testing.T, scenario, mode string, args ...string) outsideRun {
	t.Helper()
	bin := outsideCloudBin(t)
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 90*time.Second, append([]string{"run", scenario, "--out", dir, "--log-level", "warn",
		"--progress=false", "--role", "cloud.0=" + bin + " -break '" + mode + "'"}, args...)...)
	_, err := os.Stat(filepath.Join(dir, "summary.json"))
	require.NoError(t, err, "launcher stderr:\n%s", stderr)
	cloudLog, _ := os.ReadFile(filepath.Join(dir, "procs", "cloud-0.log"))
	return outsideRun{code: code, stderr: stderr, cloudErr: string(cloudLog), sum: readSummary(t, dir)}
}

// Unbroken, the outside cloud is a cloud: the run ends ok with the Go cloud's numbers, bit for bit.
func TestOutsideRoleWorks(t *testing.T) {
	r := runOutside(t, scenarioPath("cloud-vehicle"), "", "--runs", "2", "--inflight", "1", "--seed", "5")
	require.Equal(t, 0, r.code, "%s\ncloud:\n%s", r.stderr, r.cloudErr)
	require.Equal(t, "ok", r.sum.Status, r.sum.Error)
	require.Empty(t, r.sum.Degraded)
	require.Equal(t, "ok", r.sum.proc(t, "cloud-0").Status)

	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--runs", "2", "--inflight", "1",
		"--seed", "5", "--out", dir, "--log-level", "warn", "--progress=false")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, string(readSummary(t, dir).Metrics), string(r.sum.Metrics), "the Go cloud's metrics (links included)")
}

// Broken, it never makes a run ok: each mode fails the run or ends it degraded, with the
// cloud and the reason in stderr and in summary.json's problems (the launcher's attribution),
// or for a wrong plan digest in the run's error (the run refuses to start with it).
func TestOutsideRoleBroken(t *testing.T) {
	// A 10-step vehicle: the modes whose u never reaches the plant cost a --timeout per step.
	scn := writeVariant(t, "cloud-vehicle", `(?m)^steps: 100.*$`, "steps: 10")
	for _, c := range []struct {
		mode   string
		kind   string // the problem attributed to cloud-0 ("": the run's error names it)
		reason string // in its detail (or the error)
	}{
		{"notrace", "no-trace", "cloud-0.trace.jsonl"},
		{"noresult", "no-result", "no ctl.result"},
		{"nolinks", "no-links", "no links"},
		{"nokind", "nothing-delivered", "kind"},
		{"wrongstep", "invalid-messages", "step"},
		{"nan", "nothing-delivered", "decode"}, // NaN as the literal NaN: not JSON
		{"inf", "nothing-delivered", "nonfinite"},
		{"digest", "", "plan file"},
		{"forbidden", "permission-violation", "dpsim.outside.plant.0.yhat"}, // and nothing delivered
	} {
		t.Run(c.mode, func(t *testing.T) {
			r := runOutside(t, scn, c.mode, "--runs", "2", "--inflight", "1", "--seed", "5", "--timeout", "50ms", "--run-id", "outside")
			t.Logf("exit %d, status %s\nerror: %s\ndegraded: %q\nproblems: %+v", r.code, r.sum.Status, r.sum.Error, r.sum.Degraded, r.sum.Problems)
			require.Contains(t, []string{"degraded", "failed"}, r.sum.Status, "a broken cloud made the run %s (exit %d)\nlauncher:\n%s\ncloud:\n%s",
				r.sum.Status, r.code, r.stderr, r.cloudErr)
			require.True(t, r.code != 0 || r.sum.Status == "degraded", "exit %d with status %s", r.code, r.sum.Status)
			require.True(t, namesCloud(strings.ToLower(r.stderr)), "stderr does not name the cloud:\n%s", r.stderr)
			if c.kind == "" {
				require.Contains(t, r.sum.Error, "cloud.0")
				require.Contains(t, r.sum.Error, c.reason)
				return
			}
			var found bool
			for _, p := range r.sum.Problems {
				if p.Process == "cloud-0" && p.Kind == c.kind {
					found = true
					require.Contains(t, p.Detail, c.reason)
					require.Contains(t, p.Program, "outsidecloud", "the user's command is named")
					require.Contains(t, r.stderr, p.Detail, "stderr says it too")
				}
			}
			require.True(t, found, "no %s problem of cloud-0 in summary.json: %+v", c.kind, r.sum.Problems)
			if r.sum.Status == "failed" {
				require.Contains(t, r.sum.Error, "cloud-0", "the failure names the cloud")
			}
			for _, p := range r.sum.Problems {
				require.Equal(t, "cloud-0", p.Process, "only the cloud is blamed: %+v", p)
			}
		})
	}
}

func namesCloud(s string) bool {
	return strings.Contains(s, "cloud-0") || strings.Contains(s, "cloud.0")
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
