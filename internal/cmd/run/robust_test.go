package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cmd/run"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/roleproc"
	"github.com/dpsim/dpsim/internal/rss"
	"github.com/dpsim/dpsim/internal/runner"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
)

// readyOf returns a sniffer callback that closes the channel at the first ctl.ready of sender.
func readyOf(sender string) (func(string, []byte), <-chan struct{}) {
	ch := make(chan struct{})
	var once sync.Once
	return func(subject string, _ []byte) {
		if strings.HasSuffix(subject, ".ctl.ready."+sender) {
			once.Do(func() { close(ch) })
		}
	}, ch
}

// TestStrayProcess: a plant started by hand on the run id of a `dpsim run` would answer every
// episode too (its yhat duplicates the real plant's). The launcher accepts ready and done
// only from the processes it spawned, so the run fails with a clear error instead of ending
// 0 with thousands of messages dropped.
func TestStrayProcess(t *testing.T) {
	srv := server(t)
	on, ready := readyOf("plant.0")
	sniff(t, srv.URL(), on)
	const id = "itdup"
	stray := start(t, "plant", "--nats-url", srv.URL(), "--run", id, "--scenario", scenarioPath("cloud-vehicle"),
		"--out", t.TempDir(), "--log-level", "warn")
	t.Cleanup(func() { _ = stray.cmd.Process.Kill() })
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("the stray plant never announced itself: %s", stray.stderr.String())
	}
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(),
		"--run-id", id, "--runs", "5", "--out", dir, "--log-level", "warn")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "plant.0 is claimed by pid")
	require.Contains(t, stderr, "which this launcher did not start")
	require.Contains(t, stderr, "--run-id")
	sum := readSummary(t, dir)
	require.Equal(t, "failed", sum.Status)
	require.Contains(t, sum.Error, "plant.0")
	// The launcher's ctl.stop reached the stray too: it exits cleanly.
	require.Equal(t, 0, stray.wait(t, 20*time.Second), stray.stderr.String())
}

// TestAttachConflict: in attach mode the first pid heard for a sender is accepted and a second
// process claiming it fails the session.
func TestAttachConflict(t *testing.T) {
	srv := server(t)
	const id = "itattachdup"
	path := scenarioPath("cloud-vehicle")
	// Every process must be subscribed before the session starts: a session stopped early
	// sends one ctl.stop, which a process still starting would miss (nothing kills processes
	// started by hand).
	var mu sync.Mutex
	pids := map[string]map[int]bool{}
	sniff(t, srv.URL(), func(subject string, data []byte) {
		i := strings.Index(subject, ".ctl.ready.")
		if i < 0 {
			return
		}
		if m := decode(t, data); m != nil && len(m.Values) >= 1 {
			mu.Lock()
			sender := subject[i+len(".ctl.ready."):]
			if pids[sender] == nil {
				pids[sender] = map[int]bool{}
			}
			pids[sender][int(m.Values[0])] = true
			mu.Unlock()
		}
	})
	var procs []*started
	for _, r := range []string{"plant", "plant", "cloud", "eavesdropper"} {
		procs = append(procs, start(t, r, "--nats-url", srv.URL(), "--run", id, "--scenario", path, "--out", t.TempDir(), "--log-level", "warn"))
	}
	t.Cleanup(func() {
		for _, l := range procs {
			_ = l.cmd.Process.Kill()
		}
	})
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(pids["plant.0"]) == 2 && len(pids["cloud.0"]) == 1 && len(pids["eavesdropper.0"]) == 1
	}, 20*time.Second, 20*time.Millisecond, "every process announced itself")
	_, p, err := roleproc.LoadPoint(path, 0)
	require.NoError(t, err)
	sess, err := launch.StartSession(context.Background(), launch.SessionConfig{Attach: true, Plan: p, Seeds: sim.NewSeeds(53),
		URL: srv.URL(), Run: id, Dir: t.TempDir(), Timeout: 10 * time.Second})
	// Both plants repeat their ready until the first episode: the second is heard while
	// starting or, at the latest, with the done of the first episode both of them ran.
	for ep := 0; err == nil && ep < 5; ep++ {
		err = sess.Episode(context.Background(), ep, nil)
	}
	require.Error(t, err)
	require.Contains(t, err.Error(), "two processes claim plant.0")
	if sess != nil {
		_ = sess.Stop()
	}
	for _, l := range procs {
		l.wait(t, 20*time.Second)
	}
}

// TestAttachStalePlan: a process that read a plan file before the launcher wrote its own (an
// earlier run's, as a docker-compose role might) names the file's digest in its ctl.ready,
// and the launcher refuses it instead of running on a design it did not compute.
func TestAttachStalePlan(t *testing.T) {
	srv := server(t)
	const id = "itattachstale"
	dir := t.TempDir()
	_, p, err := roleproc.LoadPoint(scenarioPath("cloud-vehicle"), 0)
	require.NoError(t, err)
	// The earlier run's plant plan: another horizon.
	old := *p
	old.Steps = p.Steps + 1
	old.Scenario = p.Scenario.Clone()
	old.Scenario.Steps = old.Steps
	var buf bytes.Buffer
	require.NoError(t, old.WriteFile(&buf, plan.Keep{Seed: true, PlantX0: true, Last: -1}))
	planFile := filepath.Join(dir, contract.PlanFile("plant-0"))
	require.NoError(t, os.WriteFile(planFile, buf.Bytes(), 0o600))
	var mu sync.Mutex
	ready := false
	sniff(t, srv.URL(), func(subject string, data []byte) {
		if strings.HasSuffix(subject, ".ctl.ready.plant.0") {
			mu.Lock()
			ready = true
			mu.Unlock()
		}
	})
	l := start(t, "plant", "--nats-url", srv.URL(), "--run", id, "--plan", planFile, "--out", dir, "--log-level", "warn", "--seed", "5")
	t.Cleanup(func() { _ = l.cmd.Process.Kill() })
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ready
	}, 20*time.Second, 20*time.Millisecond, "the plant announced itself")
	sess, err := launch.StartSession(context.Background(), launch.SessionConfig{Attach: true, Plan: p, Seeds: sim.NewSeeds(5),
		URL: srv.URL(), Run: id, Dir: dir, Timeout: 10 * time.Second, StartTimeout: 15 * time.Second})
	require.Error(t, err)
	require.Contains(t, err.Error(), "plant.0 runs another plan file than the one this launcher wrote")
	require.Contains(t, err.Error(), "stale")
	if sess != nil {
		_ = sess.Stop()
	}
	l.wait(t, 20*time.Second)
}

// TestStaleOutputs: a single-point run into a directory a sweep wrote before leaves none of
// the sweep's files (per-point traces, sweep figures, the processes' files of other points);
// files dpsim does not write are kept.
func TestStaleOutputs(t *testing.T) {
	dir := t.TempDir()
	stale := []string{"trace-p03.jsonl", "sweep-final-mse.png", "sweep-eavesdropper.svg", "consensus-mse.png",
		"procs/p03/plant-0.trace.jsonl", "procs/p03/plant-0.log", "procs/p03/cloud-0.result.json",
		"procs/eavesdropper-0.transcript.jsonl", "report.md", "summary.json"}
	keep := []string{"notes.txt", "procs/p03/my-analysis.csv", "trace-pXY.jsonl"}
	for _, f := range append(append([]string{}, stale...), keep...) {
		path := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("stale\n"), 0o644))
	}
	code, _, stderr := runDpsim(t, 30*time.Second, "run", scenarioPath("cloud-vehicle"), "--engine", "fast", "--runs", "5",
		"--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	for _, f := range stale {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err == nil {
			require.NotEqual(t, "stale\n", string(data), "%s of the earlier run is still there", f)
		}
	}
	for _, f := range keep {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, "%s is not dpsim's: kept", f)
	}
	_, err := os.Stat(filepath.Join(dir, "procs", "p03", "plant-0.log"))
	require.True(t, os.IsNotExist(err))
	_, err = os.Stat(filepath.Join(dir, "trace.jsonl"))
	require.NoError(t, err, "this run's files are written")
}

// TestFastRunMemoryBounded: `dpsim run --engine fast` with the default settings keeps its
// memory flat in the number of runs (it used to keep every trace record and write them all:
// 9.3 GB for the README's 100000 runs) and writes only the first --trace-episodes episodes.
func TestFastRunMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("20000 episodes")
	}
	dir := t.TempDir()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > peak.Load() {
					peak.Store(m.HeapAlloc)
				}
			}
		}
	}()
	err := run.Run([]string{scenarioPath("cloud-vehicle"), "--engine", "fast", "--runs", "20000", "--out", dir, "--log-level", "warn"},
		&bytes.Buffer{}, os.Stderr)
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	growth := int64(peak.Load()) - int64(base)
	require.Less(t, growth, int64(96<<20), "heap grew by %d MB for 20000 episodes", growth>>20)
	trace, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	require.NoError(t, err)
	require.Equal(t, runner.DefaultTraceEpisodes*101, bytes.Count(trace, []byte("\n")), "the first 100 episodes only")
	sum := readSummary(t, dir)
	require.Equal(t, 20000, sum.Points[0].Metrics.Runs, "the metrics cover every episode")
	require.Equal(t, runner.DefaultTraceEpisodes, sum.Points[0].TraceEpisodes)
	require.Equal(t, 20000, sum.Points[0].Requested)
}

// TestChildPeakRSS: on Linux the rusage of a child includes the memory of its parent at
// fork/exec, so a large launcher made every child look large; each process now reports its
// own VmHWM. With a launcher of more than 160 MiB, the children still report ~20 MiB.
func TestChildPeakRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM is Linux's")
	}
	ballast := make([]byte, 160<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	srv := server(t)
	_, p, err := roleproc.LoadPoint(scenarioPath("cloud-vehicle"), 0)
	require.NoError(t, err)
	sess, err := launch.StartSession(context.Background(), launch.SessionConfig{Exe: dpsimBin, ScenarioPath: scenarioPath("cloud-vehicle"),
		Plan: p, Seeds: sim.NewSeeds(53), URL: srv.URL(), Run: "itrss", Dir: t.TempDir(), Timeout: 10 * time.Second, LogLevel: "warn"})
	require.NoError(t, err)
	require.NoError(t, sess.Episode(context.Background(), 0, nil))
	require.NoError(t, sess.Stop())
	runtime.KeepAlive(ballast)
	for _, pr := range sess.Procs() {
		r := sess.Result(pr)
		require.NotNil(t, r, pr.Name)
		require.Equal(t, rss.VmHWM, r.PeakRSSSource, pr.Name)
		require.Greater(t, r.PeakRSSBytes, int64(2<<20), pr.Name)
		require.Less(t, r.PeakRSSBytes, int64(100<<20), "%s reports %d MiB: its own peak, not the launcher's 160+ MiB", pr.Name, r.PeakRSSBytes>>20)
	}
}

// TestRunHelpOnStdout: `dpsim run --help` prints to stdout (and exits 0).
func TestRunHelpOnStdout(t *testing.T) {
	code, stdout, stderr := runDpsim(t, 20*time.Second, "run", "--help")
	require.Equal(t, 0, code)
	require.Empty(t, stderr)
	require.Contains(t, stdout, "Usage: dpsim run SCENARIO")
	require.Contains(t, stdout, "--trace-episodes")
	code, _, stderr = runDpsim(t, 20*time.Second, "run", scenarioPath("cloud-vehicle"), "--timeout", "1ns")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--timeout 1ns")
}

// TestSummaryAndReportAgree: a write of summary.json or report.md that fails (here: a
// directory in the way, which defeats the atomic rename even for root - what a full disk
// does to the write) never leaves the other file saying the run went well: the failure is
// recorded in the file that was written, or in neither (both removed or never written) with
// the errors on stderr; the exit code is 1.
func TestSummaryAndReportAgree(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blocked []string // made directories: their write fails
	}{
		{"summary.json fails", []string{"summary.json"}},
		{"report.md fails", []string{"report.md"}},
		{"both fail", []string{"summary.json", "report.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, b := range tc.blocked {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, b, "in-the-way"), 0o755))
			}
			code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--engine", "fast", "--runs", "3",
				"--out", dir, "--log-level", "warn")
			require.Equal(t, 1, code, stderr)
			blocked := func(f string) bool { return slices.Contains(tc.blocked, f) }
			for _, f := range tc.blocked {
				require.Contains(t, stderr, f, "the error names the file that could not be written")
			}
			if !blocked("report.md") {
				md, err := os.ReadFile(filepath.Join(dir, "report.md"))
				require.NoError(t, err)
				require.NotContains(t, string(md), "Status: ok")
				require.Contains(t, string(md), "**Status: failed**")
				require.Contains(t, string(md), "summary.json")
			}
			if !blocked("summary.json") {
				sum := readSummary(t, dir)
				require.Equal(t, "failed", sum.Status)
				require.Contains(t, sum.Error, "report.md")
			}
		})
	}
}

// TestChildKilledBeforeReady: a child killed before it says ready fails the run at once (its
// siblings, still starting, used to miss the one ctl.stop and wait out the 15 s stop bound,
// then be killed and recorded as failed); only the killed process is recorded as failed.
func TestChildKilledBeforeReady(t *testing.T) {
	dir := t.TempDir()
	const id = "killedearly"
	l := start(t, "run", scenarioPath("cloud-vehicle"), "--runs", "5", "--out", dir, "--run-id", id, "--log-level", "warn")
	pid := 0
	for deadline := time.Now().Add(30 * time.Second); pid == 0 && time.Now().Before(deadline); {
		pid = findProcess(t, "eavesdropper", id)
	}
	require.NotZero(t, pid, "the eavesdropper never started")
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	code := l.wait(t, 60*time.Second)
	require.Equal(t, 1, code, l.stderr.String())
	sum := readSummary(t, dir)
	require.Equal(t, "failed", sum.Status)
	require.Contains(t, sum.Error, "eavesdropper-0")
	for _, p := range sum.Processes {
		if p.Name == "eavesdropper-0" {
			require.Equal(t, "failed", p.Status)
			continue
		}
		require.NotEqual(t, "failed", p.Status, "%s did not fail: its sibling did", p.Name)
	}
}

// partialRun is what TestPartialEpisodeInNoMetric reads of summary.json.
type partialRun struct {
	Points []struct {
		Requested int              `json:"requested"`
		Episodes  int              `json:"episodes"`
		Metrics   *metrics.Results `json:"metrics"`
	} `json:"points"`
}

// TestPartialEpisodeInNoMetric kills the eavesdropper mid-run, several times: the plant and
// the cloud may finish the episode it was killed in, and that episode used to be folded into
// the control metrics (6 episodes) but not the eavesdropper's (5), with points[].episodes 5.
// A partial episode is in no metric: every count agrees, and trace.jsonl ends its records with
// a marker line that names the unfinished episode.
func TestPartialEpisodeInNoMetric(t *testing.T) {
	path := writeScenario(t, vehicleWith(400))
	for i := 0; i < 6; i++ {
		srv := server(t)
		on, reached, pid := watch(2+i, "eavesdropper.0")
		sniff(t, srv.URL(), on)
		dir := t.TempDir()
		// one episode at a time: the kill comes right after an episode (a group would end with it)
		l := start(t, "run", path, "--nats-url", srv.URL(), "--out", dir, "--log-level", "warn", "--trace-episodes", "-1", "--inflight", "1")
		select {
		case <-reached:
		case <-time.After(30 * time.Second):
			_ = l.cmd.Process.Kill()
			t.Fatalf("the run never reached episode %d: %s", 2+i, l.stderr.String())
		}
		time.Sleep(time.Duration(i) * 3 * time.Millisecond) // at other points of the episode
		require.Positive(t, pid())
		require.NoError(t, syscall.Kill(pid(), syscall.SIGKILL))
		require.Equal(t, 1, l.wait(t, 60*time.Second), l.stderr.String())
		data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		require.NoError(t, err)
		var sum partialRun
		require.NoError(t, json.Unmarshal(data, &sum))
		pt := sum.Points[0]
		res := pt.Metrics
		require.Positive(t, res.Runs)
		require.Equal(t, pt.Episodes, res.Runs, "run %d: points[0].episodes and metrics.runs", i)
		for k, st := range res.Control.FinalSqError {
			require.Equal(t, res.Runs, st.N, "run %d: control metric x%d", i, k)
		}
		// The eavesdropper estimates from its first observation on: every step after 0
		// counts every episode.
		eve := res.Control.EveSqError.N
		for step := 1; step < len(eve); step++ {
			require.Equal(t, res.Runs, eve[step], "run %d: eavesdropper metric at step %d", i, step)
		}
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		require.NoError(t, err)
		require.Contains(t, string(md), fmt.Sprintf("%d of 400", res.Runs))
		checkPartialTrace(t, filepath.Join(dir, "trace.jsonl"), res.Runs)
		t.Logf("run %d: %d episodes, incomplete %v", i, res.Runs, res.IncompleteEpisodes)
	}
}

// checkPartialTrace checks that a trace holds the complete episodes 0..runs-1 (61 records
// each) and that the records of every unfinished episode after them (several with episodes in
// flight) are followed by a line that marks them as such. It returns the unfinished episodes.
func checkPartialTrace(t *testing.T, path string, runs int) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	complete := runs * 61
	require.GreaterOrEqual(t, len(lines), complete)
	for _, line := range lines[:complete] {
		require.NotContains(t, line, launch.PartialMarkerKey)
	}
	var unfinished []int
	records, ep := 0, -1
	for _, line := range lines[complete:] {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if raw, ok := m[launch.PartialMarkerKey]; ok {
			var pm launch.PartialMarker
			require.NoError(t, json.Unmarshal(raw, &pm))
			require.Equal(t, ep, pm.Episode, "the marker names the episode above it")
			require.Equal(t, records, pm.Records, "and counts its records")
			unfinished = append(unfinished, pm.Episode)
			records, ep = 0, -1
			continue
		}
		var rec struct {
			Episode int `json:"episode"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		require.True(t, ep == -1 || rec.Episode == ep, "episode %d's records run into episode %d without a marker", ep, rec.Episode)
		ep = rec.Episode
		records++
	}
	require.Zero(t, records, "the last unfinished episode's records are marked")
	for i, e := range unfinished {
		require.Equal(t, runs+i, e, "the unfinished episodes follow the complete ones")
	}
	return unfinished
}

// With episodes in flight a killed process leaves several episodes of its group unfinished:
// every one of them is marked in trace.jsonl, not only the first (the others looked complete).
func TestEveryUnfinishedEpisodeMarked(t *testing.T) {
	path := writeScenario(t, vehicleWith(400))
	srv := server(t)
	on, reached, pid := watch(40, "eavesdropper.0")
	sniff(t, srv.URL(), on)
	dir := t.TempDir()
	l := start(t, "run", path, "--nats-url", srv.URL(), "--out", dir, "--log-level", "warn", "--trace-episodes", "-1", "--inflight", "16")
	select {
	case <-reached:
	case <-time.After(60 * time.Second):
		_ = l.cmd.Process.Kill()
		t.Fatalf("the run never reached episode 40: %s", l.stderr.String())
	}
	require.Positive(t, pid())
	require.NoError(t, syscall.Kill(pid(), syscall.SIGKILL))
	require.Equal(t, 1, l.wait(t, 60*time.Second), l.stderr.String())
	var sum partialRun
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &sum))
	res := sum.Points[0].Metrics
	unfinished := checkPartialTrace(t, filepath.Join(dir, "trace.jsonl"), res.Runs)
	t.Logf("%d complete episodes; unfinished and marked: %v", res.Runs, unfinished)
	require.Greater(t, len(unfinished), 1, "a group of 16 in flight leaves more than one episode unfinished")
}

// TestMissingScenarioFile: a scenario file that is not there is a usage error (exit 2), not a
// failed run (exit 1), for every command that takes one.
func TestMissingScenarioFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such.yaml")
	for _, args := range [][]string{
		{"run", missing},
		{"run", missing, "--engine", "fast"},
		{"audit", missing},
		{"calibrate", "--scenario", missing},
		{"plant", "--scenario", missing, "--nats-url", "nats://127.0.0.1:1", "--run", "r1", "--out", t.TempDir()},
	} {
		code, _, stderr := runDpsim(t, 30*time.Second, args...)
		require.Equal(t, 2, code, "dpsim %v: %s", args, stderr)
		require.Contains(t, stderr, "no-such.yaml: no such file", "dpsim %v", args)
	}
}
