// The file is not named example_js_test.go: a _js suffix would make it build for GOOS=js only.

package run_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/internal/launch"
)

// The cloud of examples/js-cloud, in JavaScript, stands in for `dpsim cloud`: a run with it
// has the Go cloud's metrics and merged trace bit for bit, for the same seed, with episodes
// in flight or one at a time, in either encoding. It runs under attach mode: the launcher
// writes every role's command line and the test starts them, the cloud with node.
func TestJSCloudBitForBit(t *testing.T) {
	dir := jsCloudReady(t)
	cloudJS := filepath.Join(dir, "cloud.js")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"inflight-32", []string{"--runs", "40"}}, // the default K: a group of 32, then one of 8
		{"inflight-1", []string{"--runs", "12", "--inflight", "1"}},
		// binary messages, and traces bounded to 10 episodes: the cloud cuts its trace back
		{"binary", []string{"--runs", "40", "--inflight", "16", "--encoding", "binary", "--trace-episodes", "10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", scenarioPath("cloud-vehicle"), "--seed", "23", "--log-level", "warn"}, tc.args...)
			goOut, jsOut := t.TempDir(), t.TempDir()
			code, _, stderr := runDpsim(t, 2*time.Minute, append(args, "--out", goOut)...)
			require.Equal(t, 0, code, stderr)
			runWithJSCloud(t, cloudJS, append(args, "--out", jsOut, "--attach", "--attach-timeout", "60s"), jsOut)

			want, got := readSummary(t, goOut), readSummary(t, jsOut)
			require.Equal(t, "ok", got.Status, got.Error)
			require.Equal(t, string(want.Metrics), string(got.Metrics), "summary.json metrics")
			var leaves any
			require.NoError(t, json.Unmarshal(got.Metrics, &leaves))
			wantTrace, err := os.ReadFile(filepath.Join(goOut, "trace.jsonl"))
			require.NoError(t, err)
			gotTrace, err := os.ReadFile(filepath.Join(jsOut, "trace.jsonl"))
			require.NoError(t, err)
			require.NotEmpty(t, wantTrace)
			require.True(t, bytes.Equal(wantTrace, gotTrace), "trace.jsonl differs")
			t.Logf("%d metrics and %d trace lines equal", countLeaves(leaves), bytes.Count(gotTrace, []byte("\n")))
		})
	}
}

// runWithJSCloud runs the launcher in attach mode with args and starts its processes, the
// cloud with node cloudJS, the others as written; it returns when all of them ended well.
func runWithJSCloud(t *testing.T, cloudJS string, args []string, out string) {
	t.Helper()
	l := start(t, args...)
	_, lines := awaitCommands(t, l, filepath.Join(out, "procs", launch.AttachDir, launch.CommandsFile))
	require.Len(t, lines, 3)
	var procs []*exec.Cmd
	cloud := false
	for _, line := range lines {
		if rest, ok := strings.CutPrefix(line, dpsimBin+" cloud "); ok {
			line, cloud = "node "+cloudJS+" "+rest, true
		}
		procs = append(procs, startAttached(t, "sh", "-c", "exec "+line))
	}
	require.True(t, cloud, "no cloud among the commands: %q", lines)
	awaitAttached(t, l, procs, out)
	res, err := os.ReadFile(filepath.Join(out, "procs", "cloud-0.result.json"))
	require.NoError(t, err)
	require.Contains(t, string(res), `"status": "ok"`)
}

// jsCloudReady returns the example's directory once node can run it: the nats client is
// installed from the lockfile (npm ci) when node_modules is missing. Without node the test is
// skipped, saying how to install it - but in CI (CI=true), where .ci/run installs it, it fails.
func jsCloudReady(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the JavaScript cloud runs real processes")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := tool + " is not on PATH: the JavaScript cloud of examples/js-cloud needs Node.js (Debian: apt-get install nodejs npm)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg + "; CI must have it (.ci/run installs it)")
			}
			t.Skip(msg)
		}
	}
	dir := filepath.Join(dpsimtest.Root(), "examples", "js-cloud")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "nats")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		outp, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci in %s:\n%s", dir, outp)
	}
	return dir
}

func countLeaves(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := 0
		for _, e := range x {
			n += countLeaves(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			n += countLeaves(e)
		}
		return n
	}
	return 1
}
