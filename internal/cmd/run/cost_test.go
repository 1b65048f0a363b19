package run_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

// TestRunCostBounds is the acceptance case on the command: the vehicle with T = 10^6
// (fast engine, one run) runs with a bounded summary.json and report.md; the ring of 10^5
// nodes is refused before it starts, with its estimated cost and the --budget that confirms
// it (before, it took 2.2 GB and wrote a 595 MB summary.json).
func TestRunCostBounds(t *testing.T) {
	veh := dpsimtest.ScenarioVariant(t, "cloud-vehicle", `(?m)^steps: 100.*$`, "steps: 1000000")
	dir := t.TempDir()
	start := time.Now()
	code, _, stderr := runDpsim(t, 3*time.Minute, "run", veh, "--engine", "fast", "--runs", "1", "--trace-episodes", "0", "--out", dir)
	t.Logf("T = 10^6, fast engine, one run: %v", time.Since(start).Round(time.Millisecond))
	require.Equal(t, 0, code, stderr)
	for name, bound := range map[string]int64{"summary.json": 8 << 20, "report.md": 1 << 20} {
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Less(t, st.Size(), bound, name)
	}

	x0 := make([]string, 100_000)
	for i := range x0 {
		x0[i] = fmt.Sprint(i % 100)
	}
	ring := dpsimtest.ScenarioVariant(t, "consensus-gaussian", `(?m)^graph:\n(  .*\n)+`, "graph: {name: ring, n: 100000, weight: 0.25}\n",
		`(?m)^x0: \[.*\]$`, "x0: ["+strings.Join(x0, ", ")+"]", `(?s)\nsweep:.*$`, "\n")
	dir = t.TempDir()
	code, _, stderr = runDpsim(t, time.Minute, "run", ring, "--engine", "fast", "--runs", "1", "--out", dir)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "estimated cost memory ~")
	require.Contains(t, stderr, "summary.json ~")
	require.Contains(t, stderr, "confirm with --budget ")
	_, err := os.Stat(filepath.Join(dir, "summary.json"))
	require.True(t, os.IsNotExist(err), "nothing ran")

	code, _, stderr = runDpsim(t, time.Minute, "run", ring, "--engine", "fast", "--budget", "lots")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--budget")
}

// TestRunCostCountsTracedRecords: the estimate counts the traced episode's records, which the
// fast engine holds whole until the episode ends. The vehicle at T = 10^6 with its trace
// (--trace-episodes at its default) peaked at ~1 GB against an estimate without them, and
// T = 10^7 was accepted and passed 3 GB: now the estimate recorded in summary.json bounds the
// launcher's measured peak from above within 3x, T = 10^7 is refused up front with the
// --budget that confirms it, and a --budget confirms a run refused at a smaller one.
func TestRunCostCountsTracedRecords(t *testing.T) {
	veh := dpsimtest.ScenarioVariant(t, "cloud-vehicle", `(?m)^steps: 100.*$`, "steps: 1000000")
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 3*time.Minute, "run", veh, "--engine", "fast", "--runs", "1", "--out", dir)
	require.Equal(t, 0, code, stderr)
	s := readSummary(t, dir)
	t.Logf("T = 10^6, traced: estimate %d MiB, launcher peak %d MiB (%.2fx)", s.EstimatedMemory>>20,
		s.LauncherMaxRSSBytes>>20, float64(s.EstimatedMemory)/float64(s.LauncherMaxRSSBytes))
	require.Positive(t, s.LauncherMaxRSSBytes, "the launcher's peak is measured (VmHWM)")
	require.GreaterOrEqual(t, s.EstimatedMemory, s.LauncherMaxRSSBytes, "the estimate is an upper bound of the peak")
	require.LessOrEqual(t, s.EstimatedMemory, 3*s.LauncherMaxRSSBytes, "the estimate is within 3x of the peak")
	require.Greater(t, s.EstimatedMemory, int64(840e6), "it counts the 10^6 traced records")

	long := dpsimtest.ScenarioVariant(t, "cloud-vehicle", `(?m)^steps: 100.*$`, "steps: 10000000")
	dir = t.TempDir()
	code, _, stderr = runDpsim(t, time.Minute, "run", long, "--engine", "fast", "--runs", "1", "--out", dir)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "estimated cost memory ~")
	require.Contains(t, stderr, "exceeds the memory budget 2 GiB")
	require.Contains(t, stderr, "confirm with --budget ")
	_, err := os.Stat(filepath.Join(dir, "summary.json"))
	require.True(t, os.IsNotExist(err), "nothing ran")

	// a --budget confirms what a smaller one refuses: T = 10^5 (traced: ~230 MiB) at 64 MiB
	short := dpsimtest.ScenarioVariant(t, "cloud-vehicle", `(?m)^steps: 100.*$`, "steps: 100000")
	code, _, stderr = runDpsim(t, time.Minute, "run", short, "--engine", "fast", "--runs", "1", "--budget", "64MiB", "--out", t.TempDir())
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "exceeds the memory budget 64 MiB")
	need := strings.TrimSpace(stderr[strings.LastIndex(stderr, "--budget ")+len("--budget "):])
	need = strings.ReplaceAll(strings.SplitN(need, "\n", 2)[0], " ", "")
	code, _, stderr = runDpsim(t, time.Minute, "run", short, "--engine", "fast", "--runs", "1", "--budget", need, "--out", t.TempDir())
	require.Equal(t, 0, code, "--budget %s: %s", need, stderr)
}

// The scenario's warnings reach the terminal before the run (stderr), and report.md's
// warnings (here the noise swamping an unstable loop's control) are in the final table: they
// used to be in report.md only.
func TestWarningsOnTerminal(t *testing.T) {
	path := dpsimtest.ScenarioVariant(t, "cloud-vehicle", `K: \[3\.4240, 4\.3095\]`, "K: [-3.4240, -4.3095]")
	code, stdout, stderr := runDpsim(t, time.Minute, "run", path, "--engine", "fast", "--runs", "5", "--out", t.TempDir())
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "dpsim run: warning: controller.K: A - B K has spectral radius")
	require.Regexp(t, `(?m)^warning +the noise swamps the control`, stdout)
}
