package run_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The shipped scenario: the embedded server is stopped for 1 s in the middle of episode 2 and
// started again on the same port. Every process reconnects, the run completes every episode,
// ends "degraded" naming the outage, and the report shows the timeline.
func TestNATSServerRestart(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 90*time.Second, "run", scenarioPath("faults-nats-restart"), "--runs", "4",
		"--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	sum := readSummary(t, dir)
	require.Equal(t, "degraded", sum.Status, sum.Error)
	require.Equal(t, 1, sum.Connections.ServerRestarts)
	require.GreaterOrEqual(t, sum.Connections.Disconnects, uint64(3), "every process saw the outage")
	require.GreaterOrEqual(t, sum.Connections.Reconnects, uint64(3), "and came back")
	require.Equal(t, 1, sum.events("nats-server-stopped"))
	require.Equal(t, 1, sum.events("nats-server-started"))
	require.Equal(t, 3, sum.events("reconnected"))
	require.Contains(t, strings.Join(sum.Degraded, "\n"), "restarted 1 time(s)")
	require.Equal(t, 4, sum.Points[0].Metrics.Runs, "every episode completed and was folded")
	rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(rep), "## Timeline of faults")
	require.Contains(t, string(rep), "nats-server-stopped")
	require.NotContains(t, string(rep), "**FAIL**", "lost messages are explained by the outage")
}

// The shipped partition: the NATS run completes, equals the fast engine bit for bit, counts the
// cut messages per link and shows the partition in the report.
func TestPartition(t *testing.T) {
	dir, fdir := t.TempDir(), t.TempDir()
	code, _, stderr := runDpsim(t, 90*time.Second, "run", scenarioPath("faults-partition"), "--runs", "6", "--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runDpsim(t, 30*time.Second, "run", scenarioPath("faults-partition"), "--runs", "6", "--engine", "fast", "--out", fdir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	sum, fsum := readSummary(t, dir), readSummary(t, fdir)
	require.Equal(t, "ok", sum.Status)
	require.JSONEq(t, string(fsum.Metrics), string(sum.Metrics))
	cut := 0
	for _, l := range sum.links(t) {
		from, to, _ := strings.Cut(l.Link, "->")
		side := func(e string) bool {
			return e == "agent.0" || e == "agent.1" || e == "agent.2" || e == "agent.3" || e == "agent.4"
		}
		crossing := strings.HasPrefix(to, "agent.") && side(from) != side(to)
		if crossing {
			cut++
			require.Equal(t, uint64(6*10), l.Dropped, "%s: every message of steps 10..19 of 6 episodes", l.Link)
		} else {
			require.Zero(t, l.Dropped, l.Link)
		}
	}
	require.Positive(t, cut)
	rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(rep), "partition halves")
	require.Equal(t, 1, sum.events("partition"))
}

// The shipped crash scenario: agent 0 is killed (SIGKILL) at step 10 of every episode and
// restarted from its checkpoint; the NATS run equals the fast engine's replay of the same
// fault bit for bit (metrics, per-link counters and the merged trace), and the timeline shows
// every kill and restart.
func TestAgentCrashRestart(t *testing.T) {
	dir, fdir := t.TempDir(), t.TempDir()
	code, _, stderr := runDpsim(t, 120*time.Second, "run", scenarioPath("faults-agent-crash"), "--runs", "5", "--out", dir,
		"--log-level", "warn", "--trace-episodes", "-1")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runDpsim(t, 30*time.Second, "run", scenarioPath("faults-agent-crash"), "--runs", "5", "--engine", "fast",
		"--out", fdir, "--log-level", "warn", "--trace-episodes", "-1")
	require.Equal(t, 0, code, stderr)
	sum, fsum := readSummary(t, dir), readSummary(t, fdir)
	require.Equal(t, "ok", sum.Status, sum.Error)
	require.JSONEq(t, string(fsum.Metrics), string(sum.Metrics))
	a, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(fdir, "trace.jsonl"))
	require.NoError(t, err)
	require.Equal(t, string(b), string(a), "the merged traces are identical")
	require.Contains(t, string(a), `"down":[0]`, "the down steps are marked")
	require.Equal(t, 5, sum.Connections.Crashes)
	require.Equal(t, 5, sum.Connections.Restarts)
	require.Equal(t, 5, sum.events("killed"))
	require.Equal(t, 5, sum.events("restarted"))
	agent0 := sum.proc(t, "agent-0")
	require.Equal(t, 0, agent0.ExitCode, "the last successor exited normally")
	rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(rep), "## Timeline of faults")
	require.Contains(t, string(rep), "restarted from its checkpoint with the same noise draw")
	require.NotContains(t, string(rep), "**FAIL**")
}

// Crash and restart of the plant and of the cloud (cloud control), alone and two in one
// episode: state and noise restored, the results equal the fast engine's replay. Two
// processes restarted in one episode stalled it: the first announced its rejoin before the
// second had subscribed, and each held what was due to the other.
func TestPlantAndCloudCrashRestart(t *testing.T) {
	for _, tc := range []struct {
		name, crashes string
		restarts      int
		down          string
	}{
		{"plant.0", "    - {proc: plant.0, episode: 1, step: 40, restart: 46}", 1, `"down":["plant.0"]`},
		{"cloud.0", "    - {proc: cloud.0, episode: 1, step: 40, restart: 46}", 1, `"down":["cloud.0"]`},
		{"plant.0 then cloud.0", "    - {proc: plant.0, episode: all, step: 10, restart: 15}\n    - {proc: cloud.0, episode: all, step: 20, restart: 25}", 6, `"down":["cloud.0"]`},
		{"plant.0 and cloud.0 at once", "    - {proc: plant.0, episode: all, step: 10, restart: 15}\n    - {proc: cloud.0, episode: all, step: 10, restart: 15}", 6, `"down":["`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(vehicleWith(3), "faults: {}", "faults:\n  crashes:\n"+tc.crashes, 1)
			path := writeScenario(t, text)
			dir, fdir := t.TempDir(), t.TempDir()
			code, _, stderr := runDpsim(t, 90*time.Second, "run", path, "--out", dir, "--log-level", "warn")
			require.Equal(t, 0, code, stderr)
			code, _, stderr = runDpsim(t, 30*time.Second, "run", path, "--engine", "fast", "--out", fdir, "--log-level", "warn")
			require.Equal(t, 0, code, stderr)
			sum, fsum := readSummary(t, dir), readSummary(t, fdir)
			require.Equal(t, "ok", sum.Status, sum.Error)
			require.Equal(t, tc.restarts, sum.Connections.Restarts)
			require.JSONEq(t, string(fsum.Metrics), string(sum.Metrics))
			a, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
			require.NoError(t, err)
			b, err := os.ReadFile(filepath.Join(fdir, "trace.jsonl"))
			require.NoError(t, err)
			require.Equal(t, string(b), string(a))
			require.Contains(t, string(a), tc.down)
		})
	}
}

// vehicleWith is the vehicle scenario (structured noise) with runs episodes of 60 steps.
func vehicleWith(runs int) string {
	return `name: crash-vehicle
kind: cloud-control
steps: 60
episodes: ` + strconv.Itoa(runs) + `
seed: 93
plant: {A: [[1, 0.1], [0, 1]], B: [[0.005], [0.1]], C: [[1, 0]], x0: [0, 0]}
controller: {K: [3.4240, 4.3095], L: [0.8266, 0.6973], reference: tanh, xhat0: [0, 0]}
privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, noise: structured, model: {A: 1, C: 1}}
faults: {}
`
}

// A process killed at a random point (SIGKILL from outside, not scheduled) loses no finished
// episode: its trace holds every episode it finished, identical to an undisturbed run's; the
// launcher stops, folds every complete episode into summary.json and report.md, marks the
// exit on the timeline and exits non-zero.
func TestKilledProcessLosesNoFinishedEpisode(t *testing.T) {
	path := writeScenario(t, vehicleWith(400))
	ref := t.TempDir()
	code, _, stderr := runDpsim(t, 120*time.Second, "run", path, "--runs", "100", "--out", ref, "--log-level", "warn", "--trace-episodes", "-1")
	require.Equal(t, 0, code, stderr)

	dir := t.TempDir()
	// one episode at a time: 400 episodes in flight would be over before the kill
	l := start(t, "run", path, "--out", dir, "--log-level", "warn", "--trace-episodes", "-1", "--run-id", "killtest", "--inflight", "1")
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	wait := time.Duration(300+rnd.IntN(700)) * time.Millisecond
	pid := 0
	deadline := time.Now().Add(30 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		pid = findProcess(t, "plant", "killtest")
		time.Sleep(20 * time.Millisecond)
	}
	require.NotZero(t, pid, "the plant process never started")
	time.Sleep(wait)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	code = l.wait(t, 60*time.Second)
	require.NotEqual(t, 0, code, "a run whose process died fails")

	sum := readSummary(t, dir)
	require.Equal(t, "failed", sum.Status)
	require.Contains(t, sum.Error, "plant-0")
	require.Equal(t, 1, sum.events("exited"))
	finished := sum.Points[0].Metrics.Runs
	require.Positive(t, finished, "episodes finished before the kill (killed after %v)", wait)
	require.Less(t, finished, 400)
	rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(rep), "exited")

	got := episodesOf(t, filepath.Join(dir, "procs", "plant-0.trace.jsonl"))
	want := episodesOf(t, filepath.Join(ref, "procs", "plant-0.trace.jsonl"))
	n := min(finished, len(want))
	for ep := 0; ep < n; ep++ {
		require.Equal(t, want[ep], got[ep], "episode %d of the killed plant's trace", ep)
	}
	t.Logf("killed after %v: %d episodes finished, all kept", wait, finished)
}

// episodesOf splits a process trace into its episodes' lines (complete episodes: 61 records).
func episodesOf(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	var cur strings.Builder
	n := 0
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		cur.WriteString(line)
		if n++; n == 61 {
			out = append(out, cur.String())
			cur.Reset()
			n = 0
		}
	}
	return out
}

// findProcess returns the pid of a running dpsim role process of the run (0: none yet).
func findProcess(t *testing.T, role, run string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		if len(args) > 2 && args[1] == role && slices.Contains(args, run) {
			return pid
		}
	}
	return 0
}

// The shipped toxiproxy scenario in realtime: the plant's connection goes through an embedded
// toxiproxy with 8 +- 6 ms each way, so some u(t) arrive after their tick: they are counted as
// late, the steps as missed, and the run ends degraded naming them; the proxy is on the timeline.
func TestToxiproxyLatency(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 90*time.Second, "run", scenarioPath("faults-tcp-latency"), "--runs", "2", "--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	sum := readSummary(t, dir)
	require.Equal(t, "degraded", sum.Status)
	require.Positive(t, sum.Timing["late_messages"], "messages after their tick are counted")
	require.Positive(t, sum.Timing["missed"])
	require.Equal(t, 1, sum.events("proxy"))
	require.Equal(t, 1, sum.events("connection-reset"), "the reset of episode 1, step 50")
	require.Equal(t, uint64(1), sum.Connections.Reconnects, "the plant reconnected after the reset")
	plant := sum.proc(t, "plant-0")
	require.Equal(t, 0, plant.ExitCode)
	rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(rep), "toxiproxy: latency 8ms +- 6ms")
}

// Crashes need lockstep and one agent per process; server restarts the embedded server: each
// refusal names the scenario and the reason, before any process starts.
func TestProcessFaultsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", scenarioPath("faults-agent-crash"), "--mode", "realtime", "--period", "10ms"}, "faults.crashes needs lockstep mode"},
		{[]string{"run", scenarioPath("faults-agent-crash"), "--agents-per-process", "2"}, "--agents-per-process 1"},
		{[]string{"run", scenarioPath("faults-nats-restart"), "--nats-url", "nats://127.0.0.1:1"}, "run without --nats-url"},
	} {
		code, _, stderr := runDpsim(t, 30*time.Second, append(c.args, "--out", t.TempDir())...)
		require.NotEqual(t, 0, code, c.args)
		require.Contains(t, stderr, c.want, c.args)
	}
}

// Two agents killed at the same step of every episode and restarted together: the run
// completes and equals the fast engine's replay (it stalled until the launcher's bound).
func TestTwoAgentsCrashInOneEpisode(t *testing.T) {
	src, err := os.ReadFile(scenarioPath("faults-agent-crash"))
	require.NoError(t, err)
	text := strings.Replace(string(src), "      noise: resume\n", "      noise: resume\n    - {proc: agent.1, episode: all, step: 10, restart: 15, noise: resume}\n", 1)
	require.Contains(t, text, "proc: agent.1")
	path := writeScenario(t, text)
	dir, fdir := t.TempDir(), t.TempDir()
	code, _, stderr := runDpsim(t, 120*time.Second, "run", path, "--runs", "3", "--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runDpsim(t, 30*time.Second, "run", path, "--runs", "3", "--engine", "fast", "--out", fdir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	sum, fsum := readSummary(t, dir), readSummary(t, fdir)
	require.Equal(t, "ok", sum.Status, sum.Error)
	require.Equal(t, 6, sum.Connections.Restarts)
	require.JSONEq(t, string(fsum.Metrics), string(sum.Metrics))
}
