package run_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// inflightOf is summary.json "inflight".
type inflightOf struct {
	Asked   int `json:"asked"`
	Used    int `json:"used"`
	Largest int `json:"largest_group"`
	Groups  int `json:"groups"`
	Alone   struct {
		Crash         int `json:"crash"`
		ServerRestart int `json:"server_restart"`
		Proxy         int `json:"proxy"`
	} `json:"alone"`
}

func readInflight(t *testing.T, dir string) *inflightOf {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var s struct {
		Inflight *inflightOf `json:"inflight"`
	}
	require.NoError(t, json.Unmarshal(data, &s))
	return s.Inflight
}

// traceByEpisode reads a merged trace file into its lines, by episode.
func traceByEpisode(t *testing.T, path string) map[int][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[int][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		var r struct {
			Episode int `json:"episode"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		out[r.Episode] = append(out[r.Episode], sc.Text())
	}
	require.NoError(t, sc.Err())
	return out
}

// inflightCase is a scenario played by the fast engine and over NATS with K = 1, 3 and 16
// episodes in flight.
type inflightCase struct {
	path string
	runs int
	// groups are the groups expected for K = 3 and K = 16 (summary.json inflight.groups)
	groups3, groups16 int
	crash, restart    int // episodes alone, by reason
	// timing is the episode whose records depend on timing (a server outage loses messages):
	// compared neither with the fast engine nor across K; -1: none.
	timing int
	status string
	// traced is --trace-episodes (0: -1, every episode): fewer bound the processes' traces
	traced int
}

// checkInflight runs c and requires that the merged traces (every episode but c.timing), the
// metrics and the per-link counters of K = 1, 3 and 16 equal each other and the fast engine's
// bit for bit, and that summary.json says how the episodes were grouped.
func checkInflight(t *testing.T, c inflightCase) {
	runs, traced := fmt.Sprint(c.runs), c.runs
	if c.traced == 0 {
		c.traced = -1
	} else {
		traced = c.traced
	}
	fdir := t.TempDir()
	code, _, stderr := runDpsim(t, 30*time.Second, "run", c.path, "--engine", "fast", "--runs", runs, "--out", fdir,
		"--log-level", "warn", "--trace-episodes", fmt.Sprint(c.traced))
	require.Equal(t, 0, code, stderr)
	fast, fastTrace := readSummary(t, fdir), traceByEpisode(t, filepath.Join(fdir, "trace.jsonl"))
	require.Len(t, fastTrace, traced)
	for _, k := range []int{1, 3, 16} {
		dir := t.TempDir()
		code, _, stderr := runDpsim(t, 60*time.Second, "run", c.path, "--runs", runs, "--out", dir, "--log-level", "warn",
			"--trace-episodes", fmt.Sprint(c.traced), "--inflight", fmt.Sprint(k))
		require.Equal(t, 0, code, "K=%d: %s", k, stderr)
		sum := readSummary(t, dir)
		require.Equal(t, c.status, sum.Status, "K=%d: %s", k, sum.Error)
		require.Equal(t, c.runs, sum.Points[0].Metrics.Runs, "K=%d", k)
		got := traceByEpisode(t, filepath.Join(dir, "trace.jsonl"))
		require.Len(t, got, traced, "K=%d", k)
		for ep := range traced {
			if ep != c.timing {
				require.Equal(t, fastTrace[ep], got[ep], "K=%d, episode %d: the merged records equal the fast engine's", k, ep)
			}
		}
		if c.timing < 0 {
			require.JSONEq(t, string(fast.Metrics), string(sum.Metrics), "K=%d: metrics and link counters equal the fast engine's", k)
		}
		in := readInflight(t, dir)
		require.NotNil(t, in, "K=%d: summary.json inflight", k)
		require.Equal(t, k, in.Asked)
		require.Equal(t, k, in.Used)
		require.Equal(t, c.crash, in.Alone.Crash, "K=%d", k)
		require.Equal(t, c.restart, in.Alone.ServerRestart, "K=%d", k)
		switch k {
		case 1:
			require.Equal(t, c.runs, in.Groups)
		case 3:
			require.Equal(t, c.groups3, in.Groups)
		case 16:
			require.Equal(t, c.groups16, in.Groups)
		}
		rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
		require.NoError(t, err)
		require.Contains(t, string(rep), "episodes_in_flight", "K=%d: the report says how many episodes were in flight", k)
	}
}

// The vehicle without faults: 20 episodes in groups of 1, 3 (7 groups) and 16 (2 groups);
// with 5 traced episodes the processes bound their traces (the kept episodes end inside a
// group) and the metrics still cover every episode.
func TestInflightVehicleBitIdentical(t *testing.T) {
	for _, traced := range []int{0, 5} {
		t.Run(fmt.Sprintf("trace-episodes=%d", traced), func(t *testing.T) {
			checkInflight(t, inflightCase{path: scenarioPath("cloud-vehicle"), runs: 20, groups3: 7, groups16: 2, timing: -1, status: "ok", traced: traced})
		})
	}
}

// Link faults: loss, duplication, reordering and delays on every link (each publisher then
// sends one message per episode), and the shipped partition.
func TestInflightLinkFaultsBitIdentical(t *testing.T) {
	t.Run("faulty-vehicle", func(t *testing.T) {
		checkInflight(t, inflightCase{path: writeScenario(t, fmt.Sprintf(faultyVehicle, 7, "hold")), runs: 7, groups3: 3, groups16: 1, timing: -1, status: "ok"})
	})
	t.Run("faults-partition", func(t *testing.T) {
		checkInflight(t, inflightCase{path: scenarioPath("faults-partition"), runs: 7, groups3: 3, groups16: 1, timing: -1, status: "ok"})
	})
}

// Process crashes: the shipped one kills agent 0 in every episode (each runs alone); a plant
// crash in episode 2 of 6 splits the groups around it.
func TestInflightCrashBitIdentical(t *testing.T) {
	t.Run("faults-agent-crash", func(t *testing.T) {
		checkInflight(t, inflightCase{path: scenarioPath("faults-agent-crash"), runs: 3, groups3: 3, groups16: 3, crash: 3, timing: -1, status: "ok"})
	})
	t.Run("plant-crash-in-episode-2", func(t *testing.T) {
		text := strings.Replace(vehicleWith(6), "faults: {}", `faults:
  crashes:
    - {proc: plant.0, episode: 2, step: 40, restart: 46}`, 1)
		// K=3: {0,1} {2} {3,4,5}; K=16: {0,1} {2} {3,4,5}
		checkInflight(t, inflightCase{path: writeScenario(t, text), runs: 6, groups3: 3, groups16: 3, crash: 1, timing: -1, status: "ok"})
	})
}

// The shipped server restart (episode 2 of 5, which runs alone): every other episode equals the
// fast engine's whatever K; the outage's own episode loses messages, so it depends on timing.
func TestInflightServerRestartBitIdentical(t *testing.T) {
	// K=3: {0,1} {2} {3,4}; K=16: the same
	checkInflight(t, inflightCase{path: scenarioPath("faults-nats-restart"), runs: 5, groups3: 3, groups16: 3, restart: 1, timing: 2, status: "degraded"})
}

// A run with 8 episodes in flight whose process was killed resumes right after its last
// complete group (a multiple of 8 episodes: a group is done by every process or not at all),
// here with 5 in flight, and ends with the metrics and trace of an uninterrupted run.
func TestInflightResumeAfterChildKilled(t *testing.T) {
	path := writeScenario(t, vehicleWith(60))
	ref := t.TempDir()
	code, _, stderr := runDpsim(t, 60*time.Second, "run", path, "--out", ref, "--log-level", "warn", "--inflight", "1")
	require.Equal(t, 0, code, stderr)

	dir, done := killedRun(t, path, "--inflight", "8")
	require.Less(t, done, 60)
	require.Zero(t, done%8, "the completed episodes are whole groups: %d", done)
	resumedEqualsRef(t, path, dir, ref, 60, done, "--inflight", "5")
	require.Equal(t, 5, readInflight(t, dir).Used, "the resumed run's own --inflight")
}

// --inflight is refused where it cannot apply.
func TestInflightRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--inflight", "0"}, "--inflight 0: want 1..1024"},
		{[]string{"--inflight", "-3"}, "--inflight -3: want 1..1024"},
		{[]string{"--inflight", "4", "--engine", "fast"}, "the fast engine has none"},
		{[]string{"--inflight", "4", "--mode", "realtime", "--period", "10ms"}, "realtime mode keeps one episode in flight"},
	} {
		code, _, stderr := runDpsim(t, 30*time.Second, append([]string{"run", scenarioPath("cloud-vehicle"), "--out", t.TempDir()}, c.args...)...)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.want, "%v", c.args)
	}
}

// Episodes in flight over signed traffic, TLS, a cluster of servers and agent hosts: the
// metrics and link counters equal the fast engine's.
func TestInflightSecureClusterHosts(t *testing.T) {
	cases := []struct {
		name, scenario string
		args           []string
	}{
		{"signed, TLS", "cloud-vehicle", []string{"--sign", "--tls", "auto"}},
		{"cluster of 3", "cloud-vehicle", []string{"--cluster", "3"}},
		{"agent hosts", "consensus-gaussian", []string{"--agents-per-process", "5"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fdir, dir := t.TempDir(), t.TempDir()
			code, _, stderr := runDpsim(t, 30*time.Second, "run", scenarioPath(c.scenario), "--engine", "fast", "--runs", "20", "--out", fdir,
				"--log-level", "warn", "--agents-per-process", "5")
			require.Equal(t, 0, code, stderr)
			args := append([]string{"run", scenarioPath(c.scenario), "--runs", "20", "--out", dir, "--log-level", "warn", "--inflight", "16"}, c.args...)
			code, _, stderr = runDpsim(t, 60*time.Second, args...)
			require.Equal(t, 0, code, stderr)
			sum := readSummary(t, dir)
			require.Equal(t, "ok", sum.Status, sum.Error)
			require.JSONEq(t, string(readSummary(t, fdir).Metrics), string(sum.Metrics))
			require.Equal(t, 16, readInflight(t, dir).Largest)
		})
	}
}
