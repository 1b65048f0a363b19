package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// natsRunFields are the keys of summary.json (at any depth) that record the processes and the
// server of one run: a merged NATS run has every shard's processes instead (named by shard, with
// their counters, files and timeline), their grouping of episodes in flight, and no server left.
var natsRunFields = map[string]bool{"nats_url": true, "processes": true, "invalid": true, "stale": true, "launcher_ctl_invalid": true,
	"inflight": true, "secrets": true, "procs": true, "timeline": true}

// reportNumbers are report.md's sections of numbers - the privacy budget, the results against
// the bounds, the faults and links, the figures - without the setup (times, server, processes),
// the transport (each shard's timing) and the appendix of processes.
func reportNumbers(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	keep := false
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "## ") {
			keep = l == "## Privacy budget and calibration" || l == "## Results against the paper's bounds" || l == "## Faults and links" || l == "## Figures"
		}
		if keep {
			out = append(out, l)
		}
	}
	require.NotEmpty(t, out, path)
	return strings.TrimSpace(strings.Join(out, "\n")) // the appendix of a long process list follows or not
}

// sameNATSRunOutputs requires that the merge got of n NATS parts holds the outputs of the
// unsharded NATS run want: the metrics (summary.json's and every point's: the same JSON, which
// Go writes as the shortest decimal that reads back to the same float64 bits), summary.json but
// the times and natsRunFields, report.md's numbers, every other file (traces, figures, Parquet
// tables) byte for byte; and that it lists every shard's processes, which played the run's
// episodes between them, and the events of its timeline.
func sameNATSRunOutputs(t *testing.T, want, got string, n int) {
	t.Helper()
	type sum struct {
		Metrics json.RawMessage `json:"metrics"`
		Points  []struct {
			Metrics json.RawMessage `json:"metrics"`
		} `json:"points"`
		Processes []struct {
			Name     string `json:"name"`
			Point    int    `json:"point"`
			Status   string `json:"status"`
			Episodes int    `json:"episodes"`
			LogFile  string `json:"log_file"`
		} `json:"processes"`
	}
	var a, b sum
	readJSON(t, filepath.Join(want, "summary.json"), &a)
	readJSON(t, filepath.Join(got, "summary.json"), &b)
	require.Equal(t, string(a.Metrics), string(b.Metrics), "metrics, bit for bit")
	require.Len(t, b.Points, len(a.Points))
	for k := range a.Points {
		require.Equal(t, string(a.Points[k].Metrics), string(b.Points[k].Metrics), "point %d's metrics", k)
	}
	var sa, sb map[string]any
	readJSON(t, filepath.Join(want, "summary.json"), &sa)
	readJSON(t, filepath.Join(got, "summary.json"), &sb)
	require.Equal(t, "nats", sb["engine"])
	for _, s := range []map[string]any{sa, sb} {
		dropKeys(s, runTimes)
		dropKeys(s, natsRunFields)
	}
	require.Equal(t, sa, sb, "summary.json but times and processes")
	// every shard's processes (a shard without chunks has none), by shard; together they played
	// every episode once
	episodes := map[string]int{} // of each process of the unsharded run (point, name), over the shards
	shards := map[string]bool{}
	for _, p := range b.Processes {
		require.Equal(t, "ok", p.Status, p.Name)
		m := regexp.MustCompile(fmt.Sprintf(`^([a-z]+-\d+) \(shard (\d+)/%d\)$`, n)).FindStringSubmatch(p.Name)
		require.NotNil(t, m, p.Name)
		require.FileExists(t, filepath.Join(got, p.LogFile), "its log, in its part")
		episodes[fmt.Sprint(p.Point, m[1])] += p.Episodes
		shards[m[2]] = true
	}
	require.Len(t, b.Processes, len(shards)*len(a.Processes))
	// the same events in the episodes (process crashes and restarts, at their episode and step),
	// each on its shard's timeline; a whole run's own (episode -1: a partition, a proxy) once per
	// shard
	var ta, tb struct {
		Timeline []struct {
			Episode, Step int
			Event, Proc   string
		} `json:"timeline"`
	}
	readJSON(t, filepath.Join(want, "summary.json"), &ta)
	readJSON(t, filepath.Join(got, "summary.json"), &tb)
	events := func(tl []struct {
		Episode, Step int
		Event, Proc   string
	}) map[string]int {
		m := map[string]int{}
		for _, e := range tl {
			if e.Episode >= 0 {
				m[fmt.Sprintf("%s %d %d", e.Event, e.Episode, e.Step)]++
			}
		}
		return m
	}
	require.Equal(t, events(ta.Timeline), events(tb.Timeline), "timeline")
	require.Len(t, episodes, len(a.Processes))
	for _, p := range a.Processes {
		require.Equal(t, p.Episodes, episodes[fmt.Sprint(p.Point, p.Name)], "point %d %s", p.Point, p.Name)
	}
	require.Equal(t, reportNumbers(t, filepath.Join(want, "report.md")), reportNumbers(t, filepath.Join(got, "report.md")))
	names := func(dir string) []string {
		var out []string
		require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path == dir {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			if d.IsDir() && rel == "procs" { // the processes' files: the merged run's are in the parts
				return filepath.SkipDir
			}
			if !d.IsDir() {
				out = append(out, rel)
			}
			return nil
		}))
		return out
	}
	w := names(want)
	require.Equal(t, w, names(got), "the same files")
	for _, name := range w {
		if name == "summary.json" || name == "report.md" {
			continue
		}
		x, err := os.ReadFile(filepath.Join(want, name))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(got, name))
		require.NoError(t, err)
		require.True(t, bytes.Equal(x, y), "%s differs", name)
	}
}

// Over NATS (the default engine: each shard its own embedded server and role processes), the
// vehicle's run in 1, 2 and 7 shards - the fast engine's chunks, the traced episodes chunks of
// their own - a small consensus in 7 (6 chunks: the last shard has none and starts no process)
// and a consensus whose agent 0 crashes and restarts in every episode in 2, merged, give the
// unsharded NATS run's metrics, traces, figures, Parquet tables and report numbers, bit for
// bit, with every shard's processes listed by shard and the crashes on their timelines and in
// the connections' counts; a missing and a duplicated part are refused.
func TestNATSRunShardsMergeEqualUnsharded(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		scenario, episodes string
		ns                 []int
		traced             string
	}{{dpsimtest.Scenario("cloud-vehicle"), "40", []int{1, 2, 7}, "5"}, {filepath.Join("testdata", "consensus-ring.yaml"), "20", []int{7}, "5"},
		{dpsimtest.Scenario("faults-agent-crash"), "6", []int{2}, "2"}} {
		args := []string{c.scenario, "--episodes", c.episodes, "--trace-episodes", c.traced, "--seed", "9", "--parquet"}
		name := strings.TrimSuffix(filepath.Base(c.scenario), ".yaml")
		full := filepath.Join(dir, name, "full")
		mustDpsim(t, append([]string{"run", "--out", full}, args...)...)
		for _, n := range c.ns {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				base := filepath.Join(dir, name, fmt.Sprint(n))
				parts := runShards(t, base, n, args...)
				out := filepath.Join(base, "merged")
				mustDpsim(t, append([]string{"merge", out}, parts...)...)
				sameNATSRunOutputs(t, full, out, n)
				if n != 2 {
					return
				}
				_, errb, err := dpsim(t, nil, "merge", filepath.Join(base, "missing"), parts[1])
				require.Error(t, err)
				require.Contains(t, errb, "1 of 2 shards missing: 0/2")
				_, errb, err = dpsim(t, nil, "merge", filepath.Join(base, "twice"), parts[0], parts[1], parts[1])
				require.Error(t, err)
				require.Contains(t, errb, "shard 1/2 given twice")
			})
		}
	}
}

// A run's missing or duplicated part is refused, naming it, and so is a mix of the fast and
// the NATS engines' parts; --shard refuses the flags it does not combine with, naming both.
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
	nats := filepath.Join(dir, "nats-part")
	mustDpsim(t, "run", "--shard", "1/3", "--out", nats, dpsimtest.Scenario("cloud-vehicle"), "--episodes", "40", "--seed", "4")
	_, errb, err = dpsim(t, nil, "merge", out, parts[0], nats, parts[2])
	require.Error(t, err)
	require.Contains(t, errb, "engine (parts of the fast and the NATS engine are not merged) nats, not fast")
	for _, c := range []struct{ flag, value, engine string }{{"--resume", out, "nats"}, {"--dispatch", "", "fast"}, {"--ui=127.0.0.1:0", "", "nats"},
		{"--attach", "", "nats"}, {"--record", "bus.mcap", "nats"}} {
		a := []string{"run", "--shard", "0/2", "--out", out, dpsimtest.Scenario("cloud-vehicle"), "--seed", "4", "--engine", c.engine, c.flag}
		if c.value != "" {
			a = append(a, c.value)
		}
		_, errb, err = dpsim(t, nil, a...)
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, c.flag)
		require.Equal(t, 2, ee.ExitCode(), "%s: a usage error: %s", c.flag, errb)
		require.Contains(t, errb, "--shard and "+strings.Split(c.flag, "=")[0]+" do not combine", c.flag)
	}
}
