package run_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/schema"
	"github.com/dpsim/dpsim/pkg/wire"
)

// The contract of docs/schema and docs/asyncapi.yaml is what real runs do: every message a
// `dpsim run` puts on the wire - data, ctl, results, with their headers - and every file its
// processes write is valid against the schemas generated from the Go types.

// wireMsg is a message as it travelled: subject, payload, headers.
type wireMsg struct {
	subject string
	data    []byte
	header  nats.Header
}

// sniffWire records every message of every run, and the challenger's private line, with its
// headers (sniff keeps subject and payload only).
func sniffWire(t *testing.T, url string) func() []wireMsg {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name("test-contract-sniffer"))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	var mu sync.Mutex
	var msgs []wireMsg
	for _, filter := range []string{wire.AllRuns(), wire.ChallengerPrefix + ">"} {
		_, err := nc.Subscribe(filter, func(m *nats.Msg) {
			mu.Lock()
			msgs = append(msgs, wireMsg{m.Subject, append([]byte(nil), m.Data...), m.Header})
			mu.Unlock()
		})
		require.NoError(t, err)
	}
	require.NoError(t, nc.Flush())
	return func() []wireMsg {
		require.NoError(t, nc.Flush())
		mu.Lock()
		defer mu.Unlock()
		return append([]wireMsg(nil), msgs...)
	}
}

func loadSchemas(t *testing.T) *schema.Set {
	t.Helper()
	set, err := schema.Load(filepath.Join("..", "..", "..", "docs", "schema"))
	require.NoError(t, err)
	return set
}

// contractCase is one run whose traffic and files are validated.
type contractCase struct {
	name     string
	scenario func(t *testing.T) string
	args     []string
	eve      string // the eavesdropper's trace schema
	want     []string
}

func TestContractTraffic(t *testing.T) {
	set := loadSchemas(t)
	srv := server(t)
	cases := []contractCase{{
		name:     "cloud-vehicle",
		scenario: func(*testing.T) string { return scenarioPath("cloud-vehicle") },
		args:     []string{"--runs", "3"},
		eve:      "trace-eavesdropper-control.json",
		// episodes in flight (ctl.episodes, Dpsim-Episodes) and signing (Dpsim-Sig): the
		// launcher signs by default with an external server
		want: []string{"data-yhat.json", "data-u.json", "ctl-ready.json", "ctl-episodes.json", "ctl-done.json", "ctl-stop.json", "result.json",
			"header " + wire.HeaderEpisodes, "header " + wire.HeaderSig},
	}, {
		name: "consensus-hosts",
		scenario: func(t *testing.T) string {
			return dpsimtest.ScenarioVariant(t, "consensus-gaussian", `(?s)\nsweep:.*$`, "\n")
		},
		args: []string{"--runs", "2", "--agents-per-process", "4", "--inflight", "1"},
		eve:  "trace-eavesdropper-consensus.json",
		want: []string{"data-y.json", "ctl-ready.json", "ctl-episode.json", "ctl-done.json", "ctl-stop.json", "result.json"},
	}, {
		name:     "consensus-link-faults",
		scenario: func(t *testing.T) string { return writeScenario(t, fmt.Sprintf(faultyConsensus, 2, "reuse-last")) },
		args:     []string{"--agents-per-process", "1"},
		eve:      "trace-eavesdropper-consensus.json",
		want:     []string{"data-y.json", "header " + wire.HeaderTo, "header " + wire.HeaderGap},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sniffed := sniffWire(t, srv.URL())
			dir := t.TempDir()
			run := "contract-" + c.name
			args := append([]string{"run", c.scenario(t), "--nats-url", srv.URL(), "--out", dir, "--run-id", run, "--log-level", "warn"}, c.args...)
			code, _, stderr := runDpsim(t, 90*time.Second, args...)
			require.Equal(t, 0, code, "stderr:\n%s", stderr)
			seen := checkWire(t, set, run, sniffed())
			for _, w := range c.want {
				require.Positive(t, seen[w], "no %s in the run's traffic: %v", w, seen)
			}
			checkFiles(t, set, dir, c.eve)
		})
	}
}

// checkWire validates every message of run and counts them by schema and header.
func checkWire(t *testing.T, set *schema.Set, run string, msgs []wireMsg) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, m := range msgs {
		if !strings.Contains(m.subject, "."+run+".") && !strings.HasPrefix(m.subject, wire.ChallengerPrefix+run+".") {
			continue // another case's late ctl.stop
		}
		if err := set.ValidateMessage(m.subject, m.data, m.header); err != nil {
			t.Errorf("%v\npayload: %s\nheaders: %v", err, m.data, m.header)
			continue
		}
		seen[schemaName(t, m)]++
		for h := range m.header {
			seen["header "+h]++
		}
	}
	require.Greater(t, len(msgs), 20, "the sniffer saw the run")
	return seen
}

// schemaName is the schema a valid message was checked against (for the counts).
func schemaName(t *testing.T, m wireMsg) string {
	sub, err := wire.ParseSubject(m.subject)
	if err != nil {
		return "ctl-x0.json"
	}
	if !sub.IsCtl() {
		return "data-" + sub.Stream + ".json"
	}
	if sub.Ctl[0] == wire.CtlResult {
		return "result.json"
	}
	var msg wire.Message
	require.NoError(t, wire.Decode(m.data, &msg))
	return "ctl-" + msg.Kind + ".json"
}

// checkFiles validates the files of a run: each process's trace lines, result and plan file,
// and the merged trace.
func checkFiles(t *testing.T, set *schema.Set, dir, eve string) {
	t.Helper()
	procs := filepath.Join(dir, "procs")
	traces, err := filepath.Glob(filepath.Join(procs, "*.trace.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, traces)
	for _, path := range traces {
		name := strings.TrimSuffix(filepath.Base(path), ".trace.jsonl")
		var s string
		switch {
		case strings.HasPrefix(name, "plant-"):
			s = "trace-plant.json"
		case strings.HasPrefix(name, "cloud-"):
			s = "trace-cloud.json"
		case strings.HasPrefix(name, "eavesdropper-"):
			s = eve
		case strings.HasPrefix(name, "agent"):
			s = "trace-agent.json"
		default:
			t.Fatalf("%s: a trace of no known process", path)
		}
		n, err := set.ValidateLines(s, path)
		require.NoError(t, err)
		require.Positive(t, n, path)
	}
	results, err := filepath.Glob(filepath.Join(procs, "*.result.json"))
	require.NoError(t, err)
	require.Len(t, results, len(traces), "a result per process")
	for _, path := range results {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, set.Validate("result.json", data), path)
	}
	plans, err := filepath.Glob(filepath.Join(procs, "*.plan.json"))
	require.NoError(t, err)
	for _, path := range plans { // kept or not by the launcher: validated when they are there
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, set.Validate("plan.json", data), path)
		_, err = plan.ParseFile(data)
		require.NoError(t, err, path)
	}
	t.Logf("%d traces, %d results, %d plan files validated", len(traces), len(results), len(plans))
	merged := "trace-control.json"
	if strings.Contains(eve, "consensus") {
		merged = "trace-consensus.json"
	}
	n, err := set.ValidateLines(merged, filepath.Join(dir, "trace.jsonl"))
	require.NoError(t, err)
	require.Positive(t, n)
}

// The validation can fail: a real message broken in the ways an implementation might break it
// is rejected.
func TestContractTrafficBroken(t *testing.T) {
	set := loadSchemas(t)
	srv := server(t)
	sniffed := sniffWire(t, srv.URL())
	dir := t.TempDir()
	const run = "contract-broken"
	code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(), "--out", dir,
		"--run-id", run, "--log-level", "warn", "--runs", "1")
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	var yhat, done *wireMsg
	for _, m := range sniffed() {
		switch {
		case yhat == nil && strings.HasSuffix(m.subject, ".yhat"):
			yhat = &m
		case done == nil && strings.Contains(m.subject, ".ctl.done."):
			done = &m
		}
	}
	require.NotNil(t, yhat)
	require.NotNil(t, done)
	require.NoError(t, set.ValidateMessage(yhat.subject, yhat.data, yhat.header))
	require.NoError(t, set.ValidateMessage(done.subject, done.data, done.header))
	for _, b := range []struct{ why, old, new string }{
		{"kind left out", `,"kind":"yhat"`, ``},
		{"another version", `{"v":1,`, `{"v":2,`},
		{"episode as a string", `"ep":0,`, `"ep":"0",`},
		{"another sender", `"from":"plant.0"`, `"from":"plant.1"`},
	} {
		data := strings.Replace(string(yhat.data), b.old, b.new, 1)
		require.NotEqual(t, string(yhat.data), data, b.why)
		require.Error(t, set.ValidateMessage(yhat.subject, []byte(data), yhat.header), b.why)
	}
	var msg wire.Message
	require.NoError(t, wire.Decode(done.data, &msg))
	msg.Values = msg.Values[:3]
	short, err := wire.EncodeJSON(nil, &msg)
	require.NoError(t, err)
	require.Error(t, set.ValidateMessage(done.subject, short, done.header), "done without its trace offset")
	h := nats.Header{}
	h.Set(wire.HeaderEpisodes, "2")
	h.Set(wire.HeaderTo, "cloud.0")
	require.Error(t, set.ValidateMessage(yhat.subject, yhat.data, h), "a batch for one subscriber")
	trace := filepath.Join(dir, "procs", "plant-0.trace.jsonl")
	data, err := os.ReadFile(trace)
	require.NoError(t, err)
	bad := filepath.Join(t.TempDir(), "bad.trace.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(string(data), `"yhat":`, `"u":`, 1)), 0o644))
	_, err = set.ValidateLines("trace-plant.json", bad)
	require.Error(t, err, "a plant trace line with the cloud's field")
}
