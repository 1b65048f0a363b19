package run_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// interventionScenario is a lockstep consensus run long enough to change its faults while it
// goes, with one link rule of its own.
const interventionScenario = `name: iv
kind: consensus
steps: 20
episodes: %d
seed: 97
graph: {name: paper10, weight: 0.25}
x0: [10, 100, 20, -30, -20, -60, 70, 0, 80, -20]
privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, noise: structured}
`

const interventionBaseFaults = `faults:
  links:
    - {name: base, from: agent.5, to: "agent.*", drop: 0.2}
`

// ivState is the part of GET /api/faults the tests read.
type ivState struct {
	Enabled       bool   `json:"enabled"`
	Refused       string `json:"refused"`
	NextEpisode   int    `json:"next_episode"`
	FaultsYAML    string `json:"faults_yaml"`
	Interventions []struct {
		Op, Target, Name, Rule string
		Applied                bool
		Episode, Step          int
	} `json:"interventions"`
}

// apiCall sends a JSON request to the live view and returns the status and the decoded body.
func apiCall(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(data, &out), "%s %s: %s", method, url, data)
	return resp.StatusCode, out
}

func ivStateOf(t *testing.T, base string) ivState {
	t.Helper()
	resp, err := http.Get(dpsimtest.LivePath(base, "api/faults"))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var st ivState
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

// awaitEpisode waits until the run's next episode is at least ep (episodes went by).
func awaitEpisode(t *testing.T, l *liveRun, base string, ep int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for ivStateOf(t, base).NextEpisode < ep {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not reach episode %d:\n%s", ep, l.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// awaitApplied waits until the run's n-th change took effect.
func awaitApplied(t *testing.T, l *liveRun, base string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for st := ivStateOf(t, base); len(st.Interventions) < n || !st.Interventions[n-1].Applied; st = ivStateOf(t, base) {
		if time.Now().After(deadline) {
			t.Fatalf("change %d did not take effect:\n%s", n, l.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// replayScenario is the scenario with the faults section of the live run's faults.applied.yaml.
func replayScenario(t *testing.T, runs int, out string) string {
	t.Helper()
	applied, err := os.ReadFile(filepath.Join(out, "faults.applied.yaml"))
	require.NoError(t, err)
	text := fmt.Sprintf(interventionScenario, runs)
	s, err := scenario.Parse([]byte(text), "iv.yaml")
	require.NoError(t, err)
	_, err = scenario.DecodeFaults(s, applied, "faults.applied.yaml")
	require.NoError(t, err, "faults.applied.yaml is a valid faults section:\n%s", applied)
	return writeScenario(t, text+string(applied))
}

// requireReplays runs the replay scenario over NATS (lockstep) with each of inflights episodes
// in flight ("": the default) and, when fast, with the fast engine, and requires summary
// metrics (link counters included) and trace equal to the live run's.
func requireReplays(t *testing.T, live string, replay string, fast bool, inflights ...string) {
	t.Helper()
	lsum := readSummary(t, live)
	ltrace, err := os.ReadFile(filepath.Join(live, "trace.jsonl"))
	require.NoError(t, err)
	type engine struct{ name, inflight string }
	var engines []engine
	for _, k := range inflights {
		engines = append(engines, engine{"nats", k})
	}
	if fast {
		engines = append(engines, engine{"fast", ""})
	}
	for _, e := range engines {
		dir := t.TempDir()
		args := []string{"run", replay, "--engine", e.name, "--out", dir, "--trace-episodes", "-1", "--log-level", "warn", "--progress=false"}
		if e.inflight != "" {
			args = append(args, "--inflight", e.inflight)
		}
		start := time.Now()
		code, _, stderr := runDpsim(t, 60*time.Second, args...)
		require.Equal(t, 0, code, stderr)
		t.Logf("replay --engine %s --inflight %q: %v", e.name, e.inflight, time.Since(start).Round(time.Millisecond))
		sum := readSummary(t, dir)
		require.JSONEq(t, string(lsum.Metrics), string(sum.Metrics), "%s replay (inflight %q): metrics and link counters", e.name, e.inflight)
		tr, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
		require.NoError(t, err)
		require.True(t, bytes.Equal(ltrace, tr), "%s replay (inflight %q): the trace differs", e.name, e.inflight)
	}
}

// groupStarts are the first episodes of the groups a lockstep point of runs episodes plays
// with k in flight when the episodes alone (crashes) are those given (launch.NextGroup).
func groupStarts(runs, k int, alone map[int]bool) map[int]bool {
	starts := map[int]bool{}
	for ep := 0; ep < runs; {
		starts[ep] = true
		n := 1
		for !alone[ep] && n < k && ep+n < runs && !alone[ep+n] {
			n++
		}
		ep += n
	}
	return starts
}

// Through the HTTP API, while a lockstep run goes with episodes in flight (32,
// and 3): a drop rule is added, a bad rule refused naming its field; once the rule took effect
// a process is crashed and restarted and the scenario's rule changed. Each change takes effect at step 0 of the first
// episode of a group, the crash's episode runs alone and the groups after it are whole again,
// the link counters show the drops, faults.applied.yaml is a faults section, and the scenario
// run with it replays the live run bit for bit over NATS with 1 and 32 episodes in flight and
// with the fast engine.
func TestInterventionsAPI(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inflight []string // the live run's --inflight (none: the default)
		k, runs  int
	}{{"inflight 32", []string{"--inflight", "32"}, 32, 160}, {"inflight 3", []string{"--inflight", "3"}, 3, 60}} {
		t.Run(tc.name, func(t *testing.T) {
			out := playInterventions(t, tc.runs, tc.inflight)
			checkInterventions(t, out, tc.runs, tc.k)
			requireReplays(t, out, replayScenario(t, tc.runs, out), true, "1", "32")
		})
	}
}

// playInterventions runs the intervention scenario with --ui and makes the changes of
// TestInterventionsAPI through the API once its first group started; it returns OUT.
func playInterventions(t *testing.T, runs int, extra []string) string {
	t.Helper()
	out := t.TempDir()
	scn := writeScenario(t, fmt.Sprintf(interventionScenario, runs)+interventionBaseFaults)
	args := append([]string{"run", scn, "--out", out, "--ui", "--trace-episodes", "-1", "--log-level", "warn", "--progress=false"}, extra...)
	start := time.Now()
	l := startLive(t, args...)
	base := l.await(t, uiURL, 30*time.Second)
	awaitEpisode(t, l, base, 1)
	st := ivStateOf(t, base)
	require.True(t, st.Enabled, "episodes in flight take interventions: %s", st.Refused)

	code, body := apiCall(t, "POST", dpsimtest.LivePath(base, "api/faults/links"), `{"name": "cut", "from": "agent.1", "to": "agent.2", "drop": 1}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Equal(t, "cut", body["rule"])
	code, body = apiCall(t, "POST", dpsimtest.LivePath(base, "api/faults/links"), `{"name": "bad", "drop": 1.5}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "faults.links[2].drop", body["field"], "the field in the faults as they would be (base, cut, this one): %v", body)
	code, body = apiCall(t, "POST", dpsimtest.LivePath(base, "api/faults/links"), `{"name": "base", "drop": 0.5}`)
	require.Equal(t, http.StatusBadRequest, code, "a name in use: %v", body)
	require.Equal(t, "faults.links[2].name", body["field"], body)
	code, body = apiCall(t, "PUT", dpsimtest.LivePath(base, "api/faults/links/nosuch"), `{"drop": 0.5}`)
	require.Equal(t, http.StatusNotFound, code, body)
	code, body = apiCall(t, "POST", dpsimtest.LivePath(base, "api/procs/agent.42/crash"), `{}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Equal(t, "faults.crashes[0].proc", body["field"], body)
	// the crash waits for a group after the cut's: a group under a new link rule alone (its
	// publisher sends one message per episode, the others still coalesce), then a crash's
	awaitApplied(t, l, base, 1)
	code, body = apiCall(t, "POST", dpsimtest.LivePath(base, "api/procs/agent-3/crash"), `{"step": 5, "down": 4}`)
	require.Equal(t, http.StatusAccepted, code, body)
	code, body = apiCall(t, "PUT", dpsimtest.LivePath(base, "api/faults/links/base"), `{"from": "agent.5", "to": "agent.*", "drop": 0.6}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Equal(t, "base.v2", body["rule"])

	require.Equal(t, 0, l.exit(t, 60*time.Second), l.stderr.String())
	t.Logf("live run %v: %v", extra, time.Since(start).Round(time.Millisecond))
	return out
}

// checkInterventions checks the live run in out of TestInterventionsAPI, played with k
// episodes in flight: where its changes took effect, its groups, its counters and events.
func checkInterventions(t *testing.T, out string, runs, k int) {
	t.Helper()
	sum := readSummary(t, out)
	require.Equal(t, "intervened", sum.Status, "a run changed through the live view is never plain ok: %s", sum.Error)
	var full struct {
		Interventions struct {
			Applied int `json:"applied"`
			List    []struct {
				Op, Name      string
				Applied       bool
				Episode, Step int
				At            time.Time      `json:"at"`
				Body          map[string]any `json:"body"`
				RemoteAddr    string         `json:"remote_addr"`
				UserAgent     string         `json:"user_agent"`
				Origin        *string        `json:"origin"`
			} `json:"list"`
		} `json:"interventions"`
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &full))
	require.Equal(t, 3, full.Interventions.Applied)
	cutAt, crashAt := -1, -1
	for _, c := range full.Interventions.List {
		require.True(t, c.Applied, c)
		require.GreaterOrEqual(t, c.Episode, 1, c)
		require.Equal(t, 0, c.Step)
		// who asked, when and with what
		require.False(t, c.At.IsZero(), c)
		require.True(t, strings.HasPrefix(c.RemoteAddr, "127.0.0.1:"), c.RemoteAddr)
		require.Equal(t, "Go-http-client/1.1", c.UserAgent)
		require.NotNil(t, c.Origin, "origin is always recorded")
		require.Empty(t, *c.Origin, "not a browser's page")
		switch c.Name {
		case "cut":
			cutAt = c.Episode
		case "agent.3":
			crashAt = c.Episode
		}
	}
	t.Logf("K = %d: cut from episode %d, the crash in episode %d", k, cutAt, crashAt)
	require.Less(t, cutAt, crashAt, "the crash was asked once the cut took effect")
	starts := groupStarts(runs, k, map[int]bool{crashAt: true})
	for _, c := range full.Interventions.List {
		require.True(t, starts[c.Episode], "%s %s took effect at episode %d, the first of a group (K = %d)", c.Op, c.Name, c.Episode, k)
	}
	in := readInflight(t, out)
	require.Equal(t, k, in.Used, "--ui leaves --inflight as it is")
	require.Equal(t, len(starts), in.Groups, "the groups: whole but for the crash's episode, alone, and the one before it")
	require.Equal(t, 1, in.Alone.Crash)
	require.Equal(t, k, in.Largest)
	require.Equal(t, 3, sum.events("intervention"))
	require.Equal(t, 1, sum.events("killed"))
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "**Status: intervened** - every requested episode completed, but 3 live intervention(s)")
	require.Contains(t, string(md), "- intervention: add link cut")
	for _, ls := range sum.links(t) {
		if ls.Link == "agent.1->agent.2" {
			require.Equal(t, uint64(20*(runs-cutAt)), ls.Dropped, "every message of the cut link from episode %d on", cutAt)
		}
	}
}

// A run that cannot take interventions says why, with a 409 naming the reason.
func TestInterventionsRefused(t *testing.T) {
	out := t.TempDir()
	scn := writeScenario(t, fmt.Sprintf(interventionScenario, 3)+interventionBaseFaults)
	l := startLive(t, "run", scn, "--out", out, "--ui", "--ui-hold", "1m", "--engine", "fast", "--log-level", "warn", "--progress=false")
	base := l.await(t, uiURL, 30*time.Second)
	st := ivStateOf(t, base)
	require.False(t, st.Enabled)
	require.Contains(t, st.Refused, "--engine fast")
	code, body := apiCall(t, "POST", dpsimtest.LivePath(base, "api/faults/links"), `{"drop": 1}`)
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, body["error"], "--engine fast")
}

// In a realtime run a link rule added while an episode goes takes effect at a step of it, a
// margin ahead of the wall clock: the link's drops start exactly there, faults.applied.yaml
// records the step, and the fast engine run with it injects the same fates on every link.
func TestInterventionsRealtimeMidEpisode(t *testing.T) {
	const runs, steps = 6, 60
	out := t.TempDir()
	text := strings.Replace(fmt.Sprintf(interventionScenario, runs), "steps: 20", fmt.Sprintf("steps: %d", steps), 1)
	scn := writeScenario(t, text+interventionBaseFaults)
	l := startLive(t, "run", scn, "--mode", "realtime", "--period", "10ms", "--out", out, "--ui", "--trace-episodes", "-1",
		"--log-level", "warn", "--progress=false")
	base := l.await(t, uiURL, 30*time.Second)
	awaitEpisode(t, l, base, 2) // episode 1 is starting
	code, body := apiCall(t, "POST", dpsimtest.LivePath(base, "api/faults/links"), `{"name": "cut", "from": "agent.1", "to": "agent.2", "drop": 1}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Equal(t, true, body["applied"], "in force at once, in the episode in progress: %v", body)
	ep, step := int(body["episode"].(float64)), int(body["step"].(float64))
	require.GreaterOrEqual(t, ep, 1)
	require.Positive(t, step)
	require.Less(t, step, steps)

	require.Equal(t, 0, l.exit(t, 60*time.Second), l.stderr.String())
	sum := readSummary(t, out)
	require.Equal(t, "intervened", sum.Status, sum.Error)
	dropped := map[string]uint64{}
	for _, ls := range sum.links(t) {
		dropped[ls.Link] = ls.Dropped
	}
	require.Equal(t, uint64(steps-step+steps*(runs-1-ep)), dropped["agent.1->agent.2"], "dropped from episode %d step %d on", ep, step)
	applied, err := os.ReadFile(filepath.Join(out, "faults.applied.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(applied), fmt.Sprintf("episode: %d\n          step: %d", ep, step))

	replay := writeScenario(t, text+string(applied))
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 30*time.Second, "run", replay, "--engine", "fast", "--out", dir, "--log-level", "warn", "--progress=false")
	require.Equal(t, 0, code, stderr)
	for _, ls := range readSummary(t, dir).links(t) {
		require.Equal(t, dropped[ls.Link], ls.Dropped, "the fates of %s", ls.Link)
	}
}
