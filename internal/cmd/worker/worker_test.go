package workercmd

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

var bin string

func TestMain(m *testing.M) { os.Exit(dpsimtest.Main(m, &bin)) }

// dpsim runs the binary and returns its stdout; it fails the test on a non-zero exit.
func dpsim(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "dpsim %s\n%s", strings.Join(args, " "), errb.String())
	return out.Bytes()
}

// decoded is a JSON document without the fields that measure time (and the dispatch's own
// account), which are the only ones that may differ between the engines.
func decoded(t *testing.T, data []byte, drop ...string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	for _, k := range drop {
		delete(m, k)
	}
	return m
}

// `dpsim audit --spawn-workers N` prints the in-process audit's verdict, bounds and counts, and
// its account of the dispatch (here with every chunk checked: --verify-share 1).
func TestAuditDispatchEqualsInProcess(t *testing.T) {
	sc := dpsimtest.Scenario("audit-vehicle-structured")
	args := []string{"audit", sc, "--trials", "12000", "--seed", "12", "--json", "--progress=false", "--log-level", "error"} // 6 chunks of farm.AuditChunk
	want := decoded(t, dpsim(t, args...), "elapsed_sec", "episodes_per_sec")
	out := t.TempDir()
	got := decoded(t, dpsim(t, append(args, "--spawn-workers", "2", "--verify-share", "1", "--out", out)...), "elapsed_sec", "episodes_per_sec")
	d, ok := got["dispatch"].(map[string]any)
	require.True(t, ok, "the output has the dispatch")
	delete(got, "dispatch")
	require.Equal(t, want, got)
	require.EqualValues(t, 6, d["chunks"])
	require.EqualValues(t, 2, d["spawned_workers"])
	require.EqualValues(t, 1, d["verify_share"])
	require.EqualValues(t, 6, d["verified_chunks"], "every chunk played twice and agreed on") // by the other worker, or the coordinator
	require.Equal(t, filepath.Join(out, "workers", "w1.creds"), d["credentials_file"])
	require.Len(t, d["credentials_files"], 4) // --worker-creds's default
	for _, f := range d["credentials_files"].([]any) {
		st, err := os.Stat(f.(string))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	}
	require.Empty(t, d["quarantined"])
}

// `dpsim run --engine fast --spawn-workers 2` writes the in-process run's metrics, summary numbers
// and trace files, here for a sweep with link faults (one job per point).
func TestRunDispatchEqualsInProcess(t *testing.T) {
	sc := dpsimtest.Scenario("faults-vehicle-latency")
	run := func(out string, extra ...string) map[string]any {
		args := append([]string{"run", sc, "--engine", "fast", "--runs", "40", "--seed", "8", "--trace-episodes", "3",
			"--out", out, "--progress=false", "--log-level", "error"}, extra...)
		dpsim(t, args...)
		data, err := os.ReadFile(filepath.Join(out, "summary.json"))
		require.NoError(t, err)
		return decoded(t, data)
	}
	a, b := t.TempDir(), t.TempDir()
	want, got := run(a), run(b, "--spawn-workers", "2")
	require.Equal(t, want["metrics"], got["metrics"])
	require.Equal(t, want["status"], got["status"])
	require.Nil(t, want["dispatch"])
	require.NotNil(t, got["dispatch"])
	files, err := filepath.Glob(filepath.Join(a, "*.jsonl")) // a sweep: traces and fault logs per point
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		ta, err := os.ReadFile(f)
		require.NoError(t, err)
		tb, err := os.ReadFile(filepath.Join(b, filepath.Base(f)))
		require.NoError(t, err)
		require.Equal(t, string(ta), string(tb), filepath.Base(f))
	}
}

// The flags are checked: dispatch needs the fast engine, --worker-listen needs --dispatch, and a
// worker needs its server and credentials.
func TestUsageErrors(t *testing.T) {
	sc := dpsimtest.Scenario("audit-vehicle-structured")
	for _, args := range [][]string{
		{"audit", sc, "--engine", "wire", "--dispatch"},
		{"audit", sc, "--worker-listen", "0.0.0.0:4222"},
		{"audit", sc, "--spawn-workers", "-1"},
		{"audit", sc, "--spawn-workers", "1", "--verify-share", "1.5"},
		{"audit", sc, "--spawn-workers", "1", "--worker-creds", "-1"},
		{"audit", sc, "--spawn-workers", "1", "--chunk-timeout", "-1s"},
		{"run", sc, "--dispatch"}, // the NATS engine
		{"worker"},
		{"worker", "--server", "nats://127.0.0.1:1"},
		{"worker", "--creds", "x"},
	} {
		cmd := exec.Command(bin, args...)
		err := cmd.Run()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v", args)
		require.Equal(t, 2, ee.ExitCode(), "%v", args)
	}
	help := dpsim(t, "worker", "--help")
	for _, flag := range []string{"--server", "--creds", "--threads", "--tls-ca", "--name"} {
		require.Contains(t, string(help), flag)
	}
}
