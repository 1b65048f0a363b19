package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

// runTimes are the keys of summary.json that legitimately differ between a merged run and the
// unsharded one (at any depth): when and how fast it ran, its run id, the launcher's memory.
var runTimes = map[string]bool{"run_id": true, "started": true, "elapsed_seconds": true, "launcher_max_rss_bytes": true, "steps_per_sec": true}

// dropKeys removes the keys of drop from v, at any depth.
func dropKeys(v any, drop map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if drop[k] {
				delete(x, k)
				continue
			}
			dropKeys(e, drop)
		}
	case []any:
		for _, e := range x {
			dropKeys(e, drop)
		}
	}
}

// sameRunOutputs requires that the run outputs in got are those of want, file by file (figures/
// too): summary.json but runTimes, report.md but its elapsed and steps_per_sec rows, every other
// file (traces, figures and their data) byte for byte.
func sameRunOutputs(t *testing.T, want, got string) {
	t.Helper()
	files := func(dir string) map[string][]byte {
		m := map[string][]byte{}
		require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			data, err := os.ReadFile(path)
			m[rel] = data
			return err
		}))
		return m
	}
	w, g := files(want), files(got)
	require.Contains(t, w, "summary.json")
	require.Equal(t, len(w), len(g), "the same files")
	for name, a := range w {
		b, ok := g[name]
		require.True(t, ok, "%s missing", name)
		switch name {
		case "summary.json":
			var sa, sb any
			require.NoError(t, json.Unmarshal(a, &sa))
			require.NoError(t, json.Unmarshal(b, &sb))
			dropKeys(sa, runTimes)
			dropKeys(sb, runTimes)
			require.Equal(t, sa, sb, name)
		case "report.md":
			keep := func(s []byte) string {
				var out []string
				for _, l := range strings.Split(string(s), "\n") {
					if !strings.HasPrefix(l, "| elapsed |") && !strings.HasPrefix(l, "| steps_per_sec |") {
						out = append(out, l)
					}
				}
				return strings.Join(out, "\n")
			}
			require.Equal(t, keep(a), keep(b), name)
		default:
			require.True(t, bytes.Equal(a, b), "%s differs", name)
		}
	}
}

// runShards runs the N shards of `dpsim run args... --shard I/N` into dir/part-I.
func runShards(t *testing.T, dir string, n int, args ...string) []string {
	t.Helper()
	var parts []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("part-%d", i))
		mustDpsim(t, append([]string{"run", "--shard", fmt.Sprintf("%d/%d", i, n), "--out", p}, args...)...)
		parts = append(parts, p)
	}
	return parts
}

// The fast engine's run in 1, 2 and 7 shards (chunks dealt round-robin, the traced episodes
// chunks of their own), merged, gives the unsharded run's summary.json (but its times), report.md,
// traces and figures; so does a sweep of 21 points in 3 shards, with the scenario's seed.
func TestRunShardsMergeEqualUnsharded(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		scenario string
		episodes string
		ns       []int
		seed     []string // none: the scenario's (summary.json's seed_source says so in both)
	}{{"cloud-vehicle", "150", []int{1, 2, 7}, []string{"--seed", "9"}}, {"cloud-vehicle-sweep", "20", []int{3}, nil}} {
		args := append([]string{dpsimtest.Scenario(c.scenario), "--engine", "fast", "--episodes", c.episodes, "--trace-episodes", "5"}, c.seed...)
		full := filepath.Join(dir, c.scenario, "full")
		mustDpsim(t, append([]string{"run", "--out", full}, args...)...)
		for _, n := range c.ns {
			t.Run(fmt.Sprintf("%s/%d", c.scenario, n), func(t *testing.T) {
				parts := runShards(t, filepath.Join(dir, c.scenario, fmt.Sprint(n)), n, args...)
				out := filepath.Join(dir, c.scenario, fmt.Sprint(n), "merged")
				mustDpsim(t, append([]string{"merge", out}, parts...)...)
				sameRunOutputs(t, full, out)
			})
		}
	}
}

// A run's missing or duplicated part is refused, naming it; a shard needs the fast engine.
func TestRunMergeRefusesBadParts(t *testing.T) {
	dir := t.TempDir()
	args := []string{dpsimtest.Scenario("cloud-vehicle"), "--engine", "fast", "--episodes", "40", "--seed", "4"}
	parts := runShards(t, dir, 3, args...)
	out := filepath.Join(dir, "merged")
	_, errb, err := dpsim(t, nil, "merge", out, parts[2], parts[0])
	require.Error(t, err)
	require.Contains(t, errb, "1 of 3 shards missing: 1/3")
	_, errb, err = dpsim(t, nil, "merge", out, parts[0], parts[1], parts[2], parts[0])
	require.Error(t, err)
	require.Contains(t, errb, "shard 0/3 given twice")
	audit := filepath.Join(dir, "audit-part")
	mustDpsim(t, "audit", "--shard", "1/3", "--out", audit, dpsimtest.Scenario("audit-vehicle-structured"), "--trials", "300", "--seed", "4")
	_, errb, err = dpsim(t, nil, "merge", out, parts[0], audit, parts[2])
	require.Error(t, err)
	require.Contains(t, errb, "a part of dpsim audit, not of dpsim run")
	require.NoFileExists(t, filepath.Join(out, "summary.json"))
	_, errb, err = dpsim(t, nil, "run", "--shard", "0/2", "--out", out, dpsimtest.Scenario("cloud-vehicle"))
	require.Error(t, err)
	require.Contains(t, errb, "--shard 0/2 plays the fast engine's episodes: add --engine fast")
}
