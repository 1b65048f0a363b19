package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

var dpsimBin string

func TestMain(m *testing.M) { os.Exit(dpsimtest.Main(m, &dpsimBin)) }

// dpsim runs the dpsim binary with args (env added to the environment) and returns its stdout,
// stderr and error.
func dpsim(t testing.TB, env []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(dpsimBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(append(os.Environ(), "NATS_URL="), env...)
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func mustDpsim(t testing.TB, args ...string) string {
	t.Helper()
	out, errb, err := dpsim(t, nil, append(args, "--log-level", "warn")...)
	require.NoError(t, err, "dpsim %v: %s", args, errb)
	return out
}

// zeroed are the keys of audit.json that legitimately differ between a sharded and an unsharded
// audit: the time it took.
var zeroed = []string{"elapsed_sec", "episodes_per_sec"}

// decoded reads an audit.json with the keys given zeroed (at the top and in a sweep's points).
func decoded(t testing.TB, path string, keys []string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m), path)
	zero := func(m map[string]any) {
		for _, k := range keys {
			delete(m, k)
		}
	}
	zero(m)
	if pts, ok := m["points"].([]any); ok {
		for _, p := range pts {
			zero(p.(map[string]any))
		}
	}
	return m
}

// sameOutputs requires that dir got holds the files of dir want: the audit JSON files equal once
// decoded with the keys zeroed, every other file (report.md, the figures) byte for byte.
func sameOutputs(t testing.TB, want, got string, keys []string) {
	t.Helper()
	list := func(dir string) []string {
		es, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range es {
			if !e.IsDir() {
				names = append(names, e.Name())
			}
		}
		return names
	}
	names := list(want)
	require.Equal(t, names, list(got))
	require.NotEmpty(t, names)
	for _, n := range names {
		if strings.HasSuffix(n, ".json") {
			require.Equal(t, decoded(t, filepath.Join(want, n), keys), decoded(t, filepath.Join(got, n), keys), n)
			continue
		}
		a, err := os.ReadFile(filepath.Join(want, n))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(got, n))
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), "%s differs", n)
	}
}

// shards runs the N shards of an audit (args: the scenario and its flags) into dir/part-I and
// returns the parts.
func shards(t testing.TB, dir string, n int, args ...string) []string {
	t.Helper()
	var parts []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("part-%d", i))
		mustDpsim(t, append([]string{"audit", "--shard", fmt.Sprintf("%d/%d", i, n), "--out", p}, args...)...)
		parts = append(parts, p)
	}
	return parts
}

// N = 1, 2 and 7 shards of the fast engine merged give the unsharded audit's audit.json (but
// its elapsed time), report.md and trade-off figures, bit for bit; with the parts in any order.
func TestShardsMergeEqualUnsharded(t *testing.T) {
	dir := t.TempDir()
	args := []string{dpsimtest.Scenario("audit-vehicle-structured"), "--trials", "3000", "--seed", "11"}
	full := filepath.Join(dir, "full")
	wantJSON := mustDpsim(t, append([]string{"audit", "--out", full, "--json"}, args...)...)
	for _, n := range []int{1, 2, 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			parts := shards(t, filepath.Join(dir, fmt.Sprint(n)), n, args...)
			for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 { // the order of the parts does not matter
				parts[i], parts[j] = parts[j], parts[i]
			}
			out := filepath.Join(dir, fmt.Sprint(n), "merged")
			gotJSON := mustDpsim(t, append([]string{"merge", out, "--json"}, parts...)...)
			sameOutputs(t, full, out, zeroed)
			var want, got map[string]any
			require.NoError(t, json.Unmarshal([]byte(wantJSON), &want))
			require.NoError(t, json.Unmarshal([]byte(gotJSON), &got))
			for _, k := range zeroed {
				delete(want, k)
				delete(got, k)
			}
			require.Equal(t, want, got, "--json")
		})
	}
}

// A sweep (--episodes-per-trial-sweep: two points, and the composition figure) merges to the
// unsharded sweep's files.
func TestShardsMergeSweep(t *testing.T) {
	dir := t.TempDir()
	args := []string{dpsimtest.Scenario("audit-vehicle-structured"), "--trials", "1000", "--seed", "5", "--episodes-per-trial-sweep", "1,2"}
	full := filepath.Join(dir, "full")
	mustDpsim(t, append([]string{"audit", "--out", full}, args...)...)
	out := filepath.Join(dir, "merged")
	mustDpsim(t, append([]string{"merge", out}, shards(t, dir, 3, args...)...)...)
	sameOutputs(t, full, out, zeroed)
	require.FileExists(t, filepath.Join(out, "composition.png"))
}

// Two shards over NATS (--engine wire: the real role processes on an embedded server) merge to
// the unsharded wire audit: the same trials, bounds and verdict. What differs is the processes'
// record: each shard had its own processes, listed with their problems and notes by shard.
func TestWireShardsMerge(t *testing.T) {
	dir := t.TempDir()
	args := []string{dpsimtest.Scenario("audit-vehicle-structured"), "--engine", "wire", "--trials", "40", "--seed", "3", "--inflight", "8"}
	full := filepath.Join(dir, "full")
	mustDpsim(t, append([]string{"audit", "--out", full}, args...)...)
	out := filepath.Join(dir, "merged")
	mustDpsim(t, append([]string{"merge", out}, shards(t, dir, 2, args...)...)...)
	keys := append([]string{"processes", "problems", "degraded", "notes"}, zeroed...)
	want, got := decoded(t, filepath.Join(full, "audit.json"), keys), decoded(t, filepath.Join(out, "audit.json"), keys)
	require.Equal(t, "wire", got["engine"])
	require.Equal(t, float64(80), got["episodes"])
	require.Equal(t, want, got)
	// each shard's processes, named by shard, and its notes
	var full1, merged struct {
		Processes []struct{ Process string }
		Notes     []string
	}
	readJSON(t, filepath.Join(full, "audit.json"), &full1)
	readJSON(t, filepath.Join(out, "audit.json"), &merged)
	require.NotEmpty(t, full1.Processes)
	require.Len(t, merged.Processes, 2*len(full1.Processes))
	require.Equal(t, full1.Processes[0].Process+" (shard 0/2)", merged.Processes[0].Process)
	require.Contains(t, strings.Join(merged.Notes, "\n"), "shard 1/2: wire engine: up to 8 trials in flight")
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), path)
}

// A missing part, a part given twice and a part of another audit are refused, naming them.
func TestMergeRefusesBadParts(t *testing.T) {
	dir := t.TempDir()
	args := []string{dpsimtest.Scenario("audit-vehicle-structured"), "--trials", "500", "--seed", "2"}
	parts := shards(t, dir, 3, args...)
	out := filepath.Join(dir, "merged")
	_, errb, err := dpsim(t, nil, "merge", out, parts[0], parts[2])
	require.Error(t, err)
	require.Contains(t, errb, "1 of 3 shards missing: 1/3")
	_, errb, err = dpsim(t, nil, "merge", out, parts[0], parts[1], parts[1], parts[2])
	require.Error(t, err)
	require.Contains(t, errb, "shard 1/3 given twice: parts "+parts[1]+" and "+parts[1])
	other := filepath.Join(dir, "other")
	mustDpsim(t, append([]string{"audit", "--shard", "1/3", "--out", other}, dpsimtest.Scenario("audit-vehicle-structured"), "--trials", "500", "--seed", "3")...)
	_, errb, err = dpsim(t, nil, "merge", out, parts[0], other, parts[2])
	require.Error(t, err)
	require.Contains(t, errb, "part "+other+" (shard 1/3) is not of the same audit as part "+parts[0]+" (shard 0/3): seed 3, not 2")
	_, errb, err = dpsim(t, nil, "merge", out, parts[0], filepath.Join(dir, "nowhere"), parts[2])
	require.Error(t, err)
	require.Contains(t, errb, "part "+filepath.Join(dir, "nowhere"))
	require.NoDirExists(t, out, "nothing written when the parts do not fit")
	// a shard needs --out and a fixed seed, and refuses what it cannot play
	_, errb, err = dpsim(t, nil, "audit", "--shard", "0/2", dpsimtest.Scenario("audit-vehicle-structured"))
	require.Error(t, err)
	require.Contains(t, errb, "--shard 0/2: give --out PART")
	_, errb, err = dpsim(t, nil, "audit", "--shard", "2/2", "--out", out, dpsimtest.Scenario("audit-vehicle-structured"))
	require.Error(t, err)
	require.Contains(t, errb, `--shard "2/2": want 0 <= I < N`)
	_, errb, err = dpsim(t, nil, "audit", "--shard", "0/2", "--sequential", "--out", out, dpsimtest.Scenario("audit-vehicle-structured"))
	require.Error(t, err)
	require.Contains(t, errb, "--shard and --sequential exclude each other")
}
