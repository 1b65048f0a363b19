package run_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/runner"
	"github.com/dpsim/dpsim/pkg/wire"
)

// resumeSweep is a 3-point sweep of the vehicle, short enough for a test.
const resumeSweep = `name: resume-sweep
kind: cloud-control
steps: 60
episodes: 40
seed: 71
plant: {A: [[1, 0.1], [0, 1]], B: [[0.005], [0.1]], C: [[1, 0]], x0: [0, 0]}
controller: {K: [3.4240, 4.3095], L: [0.8266, 0.6973], reference: tanh, xhat0: [0, 0]}
privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, noise: structured, model: {A: 1, C: 1}}
sweep:
  - param: epsilon
    values: [0.5, 1, 2]
`

// doneOf returns a sniffer callback that closes the channel at the first ctl.done of the plant
// of run id run for an episode >= ep.
func doneOf(run string, ep int) (func(string, []byte), <-chan struct{}) {
	ch := make(chan struct{})
	var once sync.Once
	return func(subject string, data []byte) {
		if subject != "dpsim."+run+".ctl.done.plant.0" {
			return
		}
		var m wire.Message
		if wire.Decode(data, &m) == nil && m.Episode >= ep {
			once.Do(func() { close(ch) })
		}
	}, ch
}

// processEpisode is a process of summary.json and the episodes it ran.
type processEpisode struct {
	Name     string `json:"name"`
	Point    int    `json:"point"`
	Episodes int    `json:"episodes"`
}

// processEpisodes returns the processes of dir's summary.json with the episodes each ran.
func processEpisodes(t *testing.T, dir string) []processEpisode {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var sum struct {
		Processes []processEpisode `json:"processes"`
	}
	require.NoError(t, json.Unmarshal(data, &sum))
	require.NotEmpty(t, sum.Processes)
	return sum.Processes
}

// TestResumeAfterLauncherKilled kills the launcher (SIGKILL of the real `dpsim run`) in the
// middle of the second point of a sweep over NATS: OUT/resume.json marks the outputs as
// partial (mode 0600, no summary.json), a resume with other options is refused (exit 2), and
// `dpsim run --resume OUT` completes the run with summary.json metrics - every point - and
// traces identical to an uninterrupted run's; the state is gone once the run completed.
func TestResumeAfterLauncherKilled(t *testing.T) {
	path := writeScenario(t, resumeSweep)
	ref := t.TempDir()
	// 20 traced episodes: the processes of the resumed point keep the first episodes they run
	// (fewer than 20) and then one at a time.
	code, _, stderr := runDpsim(t, 180*time.Second, "run", path, "--out", ref, "--log-level", "warn", "--trace-episodes", "20")
	require.Equal(t, 0, code, stderr)

	srv := server(t)
	on, reached := doneOf("resumed-p1", 12)
	sniff(t, srv.URL(), on)
	dir := t.TempDir()
	// one episode at a time, so that episodes are checkpointed before the kill at episode 12
	// (TestInflightResumeAfterChildKilled resumes groups)
	l := start(t, "run", path, "--out", dir, "--nats-url", srv.URL(), "--run-id", "resumed", "--log-level", "warn", "--trace-episodes", "20", "--inflight", "1")
	select {
	case <-reached:
	case <-time.After(120 * time.Second):
		_ = l.cmd.Process.Kill()
		t.Fatalf("the run never reached episode 12 of point 1: %s", l.stderr.String())
	}
	// The state is written at most every 500 ms while a point runs: kill once it holds a
	// checkpoint of point 1 (episode 12 may come sooner than that after point 0's save).
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(dir, runner.ResumeFile))
		var st struct {
			Current *struct {
				Point int `json:"point"`
			} `json:"current"`
		}
		return err == nil && json.Unmarshal(data, &st) == nil && st.Current != nil && st.Current.Point == 1
	}, 30*time.Second, 5*time.Millisecond, "a checkpoint of point 1")
	require.NoError(t, l.cmd.Process.Kill())
	_ = l.wait(t, 10*time.Second)

	_, err := os.Stat(filepath.Join(dir, "summary.json"))
	require.ErrorIs(t, err, os.ErrNotExist, "the killed launcher wrote no summary")
	st, err := os.Stat(filepath.Join(dir, runner.ResumeFile))
	require.NoError(t, err, "the outputs are marked partial")
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	var state struct {
		Done    []json.RawMessage `json:"done"`
		Current *struct {
			Point    int `json:"point"`
			Episodes int `json:"episodes"`
		} `json:"current"`
	}
	data, err := os.ReadFile(filepath.Join(dir, runner.ResumeFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &state))
	require.Len(t, state.Done, 1, "point 0 completed")
	require.NotNil(t, state.Current)
	require.Equal(t, 1, state.Current.Point)
	require.Positive(t, state.Current.Episodes)
	require.Less(t, state.Current.Episodes, 40)

	// What would not give the results of this run is refused, naming why.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{path, "--seed", "7"}, "--seed 7 (the run has 71)"},
		{[]string{path, "--runs", "10"}, "--runs 10"},
		{[]string{scenarioPath("cloud-vehicle")}, "is not the run's"},
		{[]string{path, "--role", "cloud.0=true"}, "--role is not the run's"},
		{[]string{path, "--attach"}, "--attach is not the run's"},
		{nil, "give the run's SCENARIO again"},
	} {
		code, _, stderr := runDpsim(t, 30*time.Second, append([]string{"run", "--resume", dir, "--nats-url", srv.URL(), "--seed", "71"}, tc.args...)...)
		require.Equal(t, 2, code, stderr)
		require.Contains(t, stderr, tc.want)
		if !strings.Contains(tc.want, "--seed") {
			require.NotContains(t, stderr, "--seed 71", "the run's own seed is accepted")
		}
	}
	code, _, stderr = runDpsim(t, 30*time.Second, "run", path, "--resume", t.TempDir())
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "nothing to resume")
	// The scenario file edited since: refused; back as it was, accepted.
	require.NoError(t, os.WriteFile(path, []byte(resumeSweep+"# edited\n"), 0o644))
	code, _, stderr = runDpsim(t, 30*time.Second, "run", path, "--resume", dir, "--nats-url", srv.URL())
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "the file changed since the run started")
	require.NoError(t, os.WriteFile(path, []byte(resumeSweep), 0o644))

	code, _, stderr = runDpsim(t, 180*time.Second, "run", path, "--resume", dir, "--nats-url", srv.URL(), "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stderr, "starts again", "the resumed point continued after its folded episodes")
	got, want := readSummary(t, dir), readSummary(t, ref)
	for _, p := range processEpisodes(t, dir) {
		want := map[int]int{0: 40, 1: 40 - state.Current.Episodes, 2: 40}[p.Point]
		require.Equal(t, want, p.Episodes, "a process of point %d", p.Point)
	}
	require.Equal(t, "ok", got.Status, got.Error)
	require.JSONEq(t, string(want.Metrics), string(got.Metrics), "the metrics of every point")
	require.Len(t, got.Points, 3)
	for k, pt := range got.Points {
		require.Equal(t, 40, pt.Metrics.Runs, "point %d", k)
	}
	for _, f := range []string{"trace-p00.jsonl", "trace-p01.jsonl", "trace-p02.jsonl"} {
		a, err := os.ReadFile(filepath.Join(ref, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		require.True(t, string(a) == string(b), "%s differs from the uninterrupted run's", f)
		require.NotContains(t, string(b), launch.PartialMarkerKey)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(md), "**Status: ok**"))
	_, err = os.Stat(filepath.Join(dir, runner.ResumeFile))
	require.ErrorIs(t, err, os.ErrNotExist, "a completed run leaves no resume state")
}

// TestResumeFastEngine: --engine fast resumes at the last completed point: the launcher killed
// while the second point runs, --resume runs the second and third and the metrics of every
// point equal an uninterrupted run's.
func TestResumeFastEngine(t *testing.T) {
	path := writeScenario(t, resumeSweep)
	args := []string{"run", path, "--engine", "fast", "--runs", "3000", "--trace-episodes", "5", "--log-level", "warn"}
	ref := t.TempDir()
	code, _, stderr := runDpsim(t, 180*time.Second, append(args, "--out", ref)...)
	require.Equal(t, 0, code, stderr)

	dir := killedFastRun(t, args...)
	_, err := os.Stat(filepath.Join(dir, "summary.json"))
	require.ErrorIs(t, err, os.ErrNotExist, "killed before the end")

	code, _, stderr = runDpsim(t, 180*time.Second, "run", path, "--resume", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	got := readSummary(t, dir)
	require.Equal(t, "ok", got.Status, got.Error)
	require.JSONEq(t, string(readSummary(t, ref).Metrics), string(got.Metrics))
}

// TestResumeAfterChildKilled: a run that failed because a process was killed resumes right
// after its last completed episode (the unfinished one's records and the marker line are cut
// from the trace) and ends with the metrics and trace of an uninterrupted run.
func TestResumeAfterChildKilled(t *testing.T) {
	path := writeScenario(t, vehicleWith(60))
	ref := t.TempDir()
	code, _, stderr := runDpsim(t, 180*time.Second, "run", path, "--out", ref, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)

	// one episode at a time: the kill lands inside an episode (TestInflightResumeAfterChildKilled kills one of 8)
	dir, done := killedRun(t, path, "--inflight", "1")
	require.Less(t, done, 60)
	resumedEqualsRef(t, path, dir, ref, 60, done)
}

// killedRun runs the scenario at path (with args) over a server of its own and SIGKILLs the
// eavesdropper once the plant reported episode 20 done: the run fails. It returns the run's
// OUT and the episodes it completed.
func killedRun(t *testing.T, path string, args ...string) (dir string, done int) {
	srv := server(t)
	on, reached, pid := watch(20, "eavesdropper.0")
	sniff(t, srv.URL(), on)
	dir = t.TempDir()
	l := start(t, append([]string{"run", path, "--nats-url", srv.URL(), "--out", dir, "--log-level", "warn"}, args...)...)
	select {
	case <-reached:
	case <-time.After(60 * time.Second):
		_ = l.cmd.Process.Kill()
		t.Fatalf("the run never reached episode 20: %s", l.stderr.String())
	}
	require.NoError(t, syscall.Kill(pid(), syscall.SIGKILL))
	require.Equal(t, 1, l.wait(t, 60*time.Second), l.stderr.String())
	failed := readSummary(t, dir)
	require.Equal(t, "failed", failed.Status)
	return dir, failed.Points[0].Metrics.Runs
}

// resumedEqualsRef resumes the run of scenario path in dir (with args), which completed done of its runs
// episodes, and requires the results of the uninterrupted run in ref: the metrics, the trace,
// and every process having played only the episodes after the done ones.
func resumedEqualsRef(t *testing.T, path, dir, ref string, runs, done int, args ...string) {
	code, _, stderr := runDpsim(t, 180*time.Second, append([]string{"run", path, "--resume", dir, "--log-level", "warn"}, args...)...)
	require.Equal(t, 0, code, stderr)
	got := readSummary(t, dir)
	require.Equal(t, "ok", got.Status, got.Error)
	require.JSONEq(t, string(readSummary(t, ref).Metrics), string(got.Metrics))
	for _, p := range processEpisodes(t, dir) {
		require.Equal(t, runs-done, p.Episodes, "%s resumed after the %d completed episodes", p.Name, done)
	}
	a, err := os.ReadFile(filepath.Join(ref, "trace.jsonl"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	require.NoError(t, err)
	require.True(t, string(a) == string(b), "trace.jsonl differs from the uninterrupted run's")
}
