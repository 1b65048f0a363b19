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

	"github.com/dpsim/dpsim/pkg/scenario"
)

// interventionScenario is a lockstep consensus run long enough to change its faults while it
// goes, with one link rule of its own.
const interventionScenario = `name: iv
kind: consensus
steps: 20
runs: %d
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
	resp, err := http.Get(base + "api/faults")
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

// requireReplays runs the replay scenario over NATS (lockstep) and with the fast engine and
// requires summary metrics (link counters included) and trace equal to the live run's.
func requireReplays(t *testing.T, live string, replay string, fast bool) {
	t.Helper()
	lsum := readSummary(t, live)
	ltrace, err := os.ReadFile(filepath.Join(live, "trace.jsonl"))
	require.NoError(t, err)
	engines := []string{"nats"}
	if fast {
		engines = append(engines, "fast")
	}
	for _, engine := range engines {
		dir := t.TempDir()
		code, _, stderr := runDpsim(t, 60*time.Second, "run", replay, "--engine", engine, "--out", dir, "--trace-episodes", "-1", "--log-level", "warn", "--progress=false")
		require.Equal(t, 0, code, stderr)
		sum := readSummary(t, dir)
		require.JSONEq(t, string(lsum.Metrics), string(sum.Metrics), "%s replay: metrics and link counters", engine)
		tr, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
		require.NoError(t, err)
		require.True(t, bytes.Equal(ltrace, tr), "%s replay: the trace differs", engine)
	}
}

// Through the HTTP API, while a lockstep run goes: a drop rule is added, the scenario's rule
// changed, a bad rule refused naming its field, a process crashed and restarted. Each change
// takes effect at step 0 of an episode, the link counters show the drops, faults.applied.yaml
// is a faults section, and the scenario run with it replays the live run bit for bit over NATS
// and with the fast engine.
func TestInterventionsAPI(t *testing.T) {
	const runs = 60
	out := t.TempDir()
	scn := writeScenario(t, fmt.Sprintf(interventionScenario, runs)+interventionBaseFaults)
	l := startLive(t, "run", scn, "--out", out, "--ui", "--trace-episodes", "-1", "--log-level", "warn", "--progress=false")
	base := l.await(t, uiURL, 30*time.Second)
	awaitEpisode(t, l, base, 3)

	code, body := apiCall(t, "POST", base+"api/faults/links", `{"name": "cut", "from": "agent.1", "to": "agent.2", "drop": 1}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Equal(t, "cut", body["rule"])
	code, body = apiCall(t, "POST", base+"api/faults/links", `{"name": "bad", "drop": 1.5}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "faults.links[2].drop", body["field"], "the field in the faults as they would be (base, cut, this one): %v", body)
	code, body = apiCall(t, "POST", base+"api/faults/links", `{"name": "base", "drop": 0.5}`)
	require.Equal(t, http.StatusBadRequest, code, "a name in use: %v", body)
	require.Equal(t, "faults.links[2].name", body["field"], body)
	code, body = apiCall(t, "PUT", base+"api/faults/links/nosuch", `{"drop": 0.5}`)
	require.Equal(t, http.StatusNotFound, code, body)
	code, body = apiCall(t, "POST", base+"api/procs/agent.42/crash", `{}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Equal(t, "faults.crashes[0].proc", body["field"], body)
	code, body = apiCall(t, "POST", base+"api/procs/agent-3/crash", `{"step": 5, "down": 4}`)
	require.Equal(t, http.StatusAccepted, code, body)
	code, body = apiCall(t, "PUT", base+"api/faults/links/base", `{"from": "agent.5", "to": "agent.*", "drop": 0.6}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Equal(t, "base.v2", body["rule"])

	require.Equal(t, 0, l.exit(t, 60*time.Second), l.stderr.String())
	sum := readSummary(t, out)
	require.Equal(t, "ok", sum.Status, sum.Error)
	var full struct {
		Interventions struct {
			Applied int `json:"applied"`
			List    []struct {
				Op, Name      string
				Applied       bool
				Episode, Step int
			} `json:"list"`
		} `json:"interventions"`
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &full))
	require.Equal(t, 3, full.Interventions.Applied)
	cutAt := -1
	for _, c := range full.Interventions.List {
		require.True(t, c.Applied, c)
		require.GreaterOrEqual(t, c.Episode, 3, c)
		require.Equal(t, 0, c.Step)
		if c.Name == "cut" {
			cutAt = c.Episode
		}
	}
	require.Equal(t, 3, sum.events("intervention"))
	require.Equal(t, 1, sum.events("killed"))
	for _, ls := range sum.links(t) {
		if ls.Link == "agent.1->agent.2" {
			require.Equal(t, uint64(20*(runs-cutAt)), ls.Dropped, "every message of the cut link from episode %d on", cutAt)
		}
	}
	requireReplays(t, out, replayScenario(t, runs, out), true)
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
	code, body := apiCall(t, "POST", base+"api/faults/links", `{"drop": 1}`)
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
	code, body := apiCall(t, "POST", base+"api/faults/links", `{"name": "cut", "from": "agent.1", "to": "agent.2", "drop": 1}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Equal(t, true, body["applied"], "in force at once, in the episode in progress: %v", body)
	ep, step := int(body["episode"].(float64)), int(body["step"].(float64))
	require.GreaterOrEqual(t, ep, 1)
	require.Positive(t, step)
	require.Less(t, step, steps)

	require.Equal(t, 0, l.exit(t, 60*time.Second), l.stderr.String())
	sum := readSummary(t, out)
	require.Contains(t, []string{"ok", "degraded"}, sum.Status, sum.Error)
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
