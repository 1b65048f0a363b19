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
	dir      string // its --out
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
	return outsideRun{dir: dir, code: code, stderr: stderr, cloudErr: string(cloudLog), sum: readSummary(t, dir)}
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
// or for a mistake at start in the run's error. The headline of a failure (summary.json's
// error, up to what followed from it) names the cloud and says what was seen; it never blames
// the process the cloud misled; report.md lists every problem, fatal or not.
func TestOutsideRoleBroken(t *testing.T) {
	// A 10-step vehicle: the modes whose u never reaches the plant cost a --timeout per step.
	scn := dpsimtest.ScenarioVariant(t, "cloud-vehicle", `(?m)^steps: 100.*$`, "steps: 10")
	for _, c := range []struct {
		mode   string
		kind   string // the problem attributed to cloud-0 ("": the run's error names it)
		reason string // in its detail (or the error)
		not    string // never in the error ("": no check)
		args   []string
	}{
		{mode: "notrace", kind: "no-trace", reason: "cloud-0.trace.jsonl"},
		{mode: "noresult", kind: "no-result", reason: "no ctl.result"},
		{mode: "nolinks", kind: "no-links", reason: "no links"},
		{mode: "nokind", kind: "nothing-delivered", reason: "kind"},
		{mode: "wrongstep", kind: "invalid-messages", reason: "step"},
		{mode: "nan", kind: "nothing-delivered", reason: "decode"}, // NaN as the literal NaN: not JSON
		{mode: "inf", kind: "nothing-delivered", reason: "nonfinite"},
		{mode: "digest", reason: "plan digest", not: "stale"},                                   // the launcher wrote the file before it started the cloud
		{mode: "forbidden", kind: "permission-violation", reason: "dpsim.outside.plant.0.yhat"}, // and nothing delivered
		// every u dropped, and each step waits for it its whole --timeout: the run fails, and the
		// headline is the cause, not "no ctl.done from" everyone
		{mode: "dropall", kind: "nothing-delivered", reason: "run", args: []string{"--timeout", "400ms"}},
		// the plant's messages carry several episodes: the cloud misreads them, the plant is not blamed
		{mode: "noheader", kind: "rejected-valid-messages", reason: "Dpsim-Episodes", not: "plant-0 (", args: []string{"--inflight", "4", "--runs", "8"}},
		{mode: "wrongpid", reason: "wrong pid", not: "another process uses this run id"},
		{mode: "badresult", kind: "invalid-result", reason: "version 2"},
		{mode: "failstart", reason: "cloud-0.log", not: "Node.js"}, // the error line of its log, and where the log is
		{mode: "late", kind: "late-messages", reason: "after their step"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			args := []string{"--runs", "2", "--inflight", "1", "--seed", "5", "--timeout", "50ms", "--run-id", "outside"}
			r := runOutside(t, scn, c.mode, append(args, c.args...)...)
			t.Logf("exit %d, status %s\nerror: %s\ndegraded: %q\nproblems: %+v", r.code, r.sum.Status, r.sum.Error, r.sum.Degraded, r.sum.Problems)
			require.Contains(t, []string{"degraded", "failed"}, r.sum.Status, "a broken cloud made the run %s (exit %d)\nlauncher:\n%s\ncloud:\n%s",
				r.sum.Status, r.code, r.stderr, r.cloudErr)
			require.True(t, r.code != 0 || r.sum.Status == "degraded", "exit %d with status %s", r.code, r.sum.Status)
			require.True(t, namesCloud(strings.ToLower(r.stderr)), "stderr does not name the cloud:\n%s", r.stderr)
			if c.not != "" {
				require.NotContains(t, r.sum.Error, c.not)
			}
			if r.sum.Status == "failed" {
				head := headline(r.sum.Error)
				require.True(t, namesCloud(head), "the headline does not name the cloud: %s", r.sum.Error)
				require.False(t, containsAny(head, []string{"plant-0", "eavesdropper-0"}) && !strings.Contains(head, "no ctl.done from"),
					"the headline blames another process: %s", head)
				require.Contains(t, r.stderr, head, "stderr says the headline")
			}
			md, err := os.ReadFile(filepath.Join(r.dir, "report.md"))
			require.NoError(t, err)
			for _, p := range r.sum.Problems {
				require.Contains(t, string(md), "problem: "+p.Process, "report.md lists every problem, fatal or not")
			}
			if c.kind == "" {
				require.Empty(t, r.sum.Problems)
				require.Contains(t, headline(r.sum.Error), c.reason)
				return
			}
			var found bool
			for _, p := range r.sum.Problems {
				if p.Process == "cloud-0" && p.Kind == c.kind {
					found = true
					require.Contains(t, p.Detail, c.reason)
					require.Contains(t, p.Program, "outsidecloud", "the user's command is named")
					require.Contains(t, r.stderr, p.Detail, "stderr says it too")
					if p.Fatal {
						require.Contains(t, headline(r.sum.Error), p.Detail, "a fatal problem is the headline")
					}
				}
			}
			require.True(t, found, "no %s problem of cloud-0 in summary.json: %+v", c.kind, r.sum.Problems)
			if r.sum.Status == "failed" {
				require.Contains(t, r.sum.Error, "cloud-0", "the failure names the cloud")
			}
			for _, p := range r.sum.Problems {
				require.Equal(t, "cloud-0", p.Process, "only the cloud is blamed: %+v", p)
			}
			if c.mode == "late" {
				require.NotContains(t, string(md), "delivered once, on time", "report.md calls late messages on time")
			}
		})
	}
}

// headline is the part of a run's error that says its cause: before what followed from it.
func headline(err string) string {
	for _, sep := range []string{"; what followed: ", "; problems seen: "} {
		if i := strings.Index(err, sep); i >= 0 {
			err = err[:i]
		}
	}
	return err
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
