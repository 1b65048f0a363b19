package run_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cmd/role"
	"github.com/dpsim/dpsim/internal/cmd/run"
	"github.com/dpsim/dpsim/pkg/plan"
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
	var procs []*launch
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
	_, p, err := role.LoadPoint(path, 0)
	require.NoError(t, err)
	sess, err := run.StartSession(context.Background(), run.SessionConfig{Attach: true, Plan: p, Seed: 53,
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
	_, p, err := role.LoadPoint(scenarioPath("cloud-vehicle"), 0)
	require.NoError(t, err)
	// The earlier run's plant plan: another horizon.
	old := *p
	old.Steps = p.Steps + 1
	old.Scenario = p.Scenario.Clone()
	old.Scenario.Steps = old.Steps
	var buf bytes.Buffer
	require.NoError(t, old.WriteFile(&buf, plan.Keep{Seed: true, PlantX0: true, Last: -1}))
	planFile := filepath.Join(dir, role.PlanFile("plant-0"))
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
	sess, err := run.StartSession(context.Background(), run.SessionConfig{Attach: true, Plan: p, Seed: 5,
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
	require.Equal(t, run.DefaultTraceEpisodes*101, bytes.Count(trace, []byte("\n")), "the first 100 episodes only")
	sum := readSummary(t, dir)
	require.Equal(t, 20000, sum.Points[0].Metrics.Runs, "the metrics cover every episode")
	require.Equal(t, run.DefaultTraceEpisodes, sum.Points[0].TraceEpisodes)
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
	_, p, err := role.LoadPoint(scenarioPath("cloud-vehicle"), 0)
	require.NoError(t, err)
	sess, err := run.StartSession(context.Background(), run.SessionConfig{Exe: dpsimBin, ScenarioPath: scenarioPath("cloud-vehicle"),
		Plan: p, Seed: 53, URL: srv.URL(), Run: "itrss", Dir: t.TempDir(), Timeout: 10 * time.Second, LogLevel: "warn"})
	require.NoError(t, err)
	require.NoError(t, sess.Episode(context.Background(), 0, nil))
	require.NoError(t, sess.Stop())
	runtime.KeepAlive(ballast)
	for _, pr := range sess.Procs() {
		r := sess.Result(pr)
		require.NotNil(t, r, pr.Name)
		require.Equal(t, role.RSSVmHWM, r.PeakRSSSource, pr.Name)
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
