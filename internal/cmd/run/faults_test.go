package run_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/fault"
)

// faultyVehicle and faultyConsensus exercise every fault kind at once on every link: loss,
// duplication, reordering, a random delay and a fixed delay on the input link.
const faultyVehicle = `name: faulty-vehicle
kind: cloud-control
steps: 60
episodes: %d
seed: 91
plant: {A: [[1, 0.1], [0, 1]], B: [[0.005], [0.1]], C: [[1, 0]], x0: [0, 0]}
controller: {K: [3.4240, 4.3095], L: [0.8266, 0.6973], reference: tanh, xhat0: [0, 0]}
privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, noise: structured, model: {A: 1, C: 1}}
faults:
  missing: {plant: %s}
  links:
    - {name: all, drop: 0.1, duplicate: 0.05, reorder: 0.05, random_delay: {dist: exponential, mean: 0.4}}
    - {name: u-delay, from: cloud.0, to: plant.0, delay: 2, window: [10, 40]}
`

const faultyConsensus = `name: faulty-consensus
kind: consensus
steps: 25
episodes: %d
seed: 92
graph: {name: paper10, weight: 0.25}
x0: [10, 100, 20, -30, -20, -60, 70, 0, 80, -20]
privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, noise: structured}
faults:
  missing: {agent: %s}
  links:
    - {name: loss, from: "agent.*", drop: 0.15, duplicate: 0.05, reorder: 0.05}
    - {name: slow, subject: agent.3.y, random_delay: {dist: uniform, min: 0, max: 2}}
`

func writeScenario(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// With faults on every link, the fast engine and a lockstep NATS run of the same scenario and
// seed agree bit for bit - metrics and per-link counters - whatever the number of agents per
// process; the counters add up, and a lost message is never fatal.
func TestFaultsBitIdenticalOverNATS(t *testing.T) {
	srv := server(t)
	cases := []struct {
		name, yaml, rule string
		per              []int
	}{
		{"vehicle-hold", faultyVehicle, "hold", []int{1}},
		{"vehicle-zero", faultyVehicle, "zero", []int{1}},
		{"consensus-reuse-last", faultyConsensus, "reuse-last", []int{1, 4}},
		{"consensus-skip", faultyConsensus, "skip", []int{3}},
	}
	const runs = 4
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeScenario(t, fmt.Sprintf(c.yaml, runs, c.rule))
			fdir := t.TempDir()
			code, _, stderr := runDpsim(t, 30*time.Second, "run", path, "--engine", "fast", "--out", fdir, "--log-level", "warn")
			require.Equal(t, 0, code, stderr)
			fast := readSummary(t, fdir)
			for _, per := range c.per {
				dir := t.TempDir()
				code, _, stderr := runDpsim(t, 90*time.Second, "run", path, "--nats-url", srv.URL(), "--out", dir,
					"--agents-per-process", fmt.Sprint(per), "--log-level", "warn")
				require.Equal(t, 0, code, stderr)
				sum := readSummary(t, dir)
				require.Equal(t, "ok", sum.Status, "injected faults are the experiment, not a degradation")
				require.JSONEq(t, string(fast.Metrics), string(sum.Metrics), "agents per process %d: NATS = fast, bit for bit", per)
				links := sum.Points[0].Metrics.Links
				require.NotEmpty(t, links)
				var dropped, dups uint64
				for _, l := range links {
					require.Equal(t, l.Sent-l.Dropped+l.Duplicated-l.Expired, l.Delivered, l.Link)
					// A duplicate is received as one unless both its copies were delayed past the
					// episode's end (then they count as two expired copies).
					require.LessOrEqual(t, l.DupReceived, l.Duplicated, l.Link)
					require.LessOrEqual(t, 2*(l.Duplicated-l.DupReceived), l.Expired, l.Link)
					dropped += l.Dropped
					dups += l.Duplicated
				}
				require.Positive(t, dropped)
				require.Positive(t, dups)
				require.Equal(t, runs, sum.Points[0].Metrics.Runs)
				checkFaultLogs(t, dir, sum, links)
				require.Equal(t, sortedCopy(readFaultEvents(t, filepath.Join(fdir, "faults.jsonl"))), processFaultEvents(t, dir, sum),
					"the fast engine's injector and the processes' injectors did the same to every message")
			}
		})
	}
}

// dropOnlyConsensus loses messages and nothing else: every agent's outbox takes the lossy path
// (one draw per dropping link), in the fast engine's in-memory network and in the processes.
const dropOnlyConsensus = `name: drop-only-consensus
kind: consensus
steps: 25
episodes: %d
seed: 93
graph: {name: paper10, weight: 0.25}
x0: [10, 100, 20, -30, -20, -60, 70, 0, 80, -20]
privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, noise: structured}
faults:
  missing: {agent: reuse-last}
  links:
    - {name: loss, from: "agent.*", drop: 0.15}
    - {name: eve-loss, subject: agent.2.y, to: "eavesdropper.*", drop: 0.3}
`

// With loss as the only fault, the fast engine (which files a release's gaps with its broadcast)
// and lockstep NATS runs of the same seed agree bit for bit: metrics, per-link counters and every
// injector's record of what it dropped.
func TestDropOnlyBitIdenticalOverNATS(t *testing.T) {
	srv := server(t)
	const runs = 4
	path := writeScenario(t, fmt.Sprintf(dropOnlyConsensus, runs))
	fdir := t.TempDir()
	code, _, stderr := runDpsim(t, 30*time.Second, "run", path, "--engine", "fast", "--out", fdir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	fast := readSummary(t, fdir)
	for _, per := range []int{1, 5} {
		dir := t.TempDir()
		code, _, stderr := runDpsim(t, 90*time.Second, "run", path, "--nats-url", srv.URL(), "--out", dir,
			"--agents-per-process", fmt.Sprint(per), "--log-level", "warn")
		require.Equal(t, 0, code, stderr)
		sum := readSummary(t, dir)
		require.Equal(t, "ok", sum.Status)
		require.JSONEq(t, string(fast.Metrics), string(sum.Metrics), "agents per process %d: NATS = fast, bit for bit", per)
		var dropped, eve uint64
		for _, l := range sum.Points[0].Metrics.Links {
			require.Equal(t, l.Sent-l.Dropped, l.Delivered, l.Link)
			require.Zero(t, l.Duplicated+l.Reordered+l.Delayed, l.Link)
			dropped += l.Dropped
			if strings.HasPrefix(l.Link, "agent.2->eavesdropper") {
				eve = l.Dropped
			}
		}
		require.Positive(t, dropped)
		require.Greater(t, eve, uint64(runs*25)/10, "the eavesdropper's lossier link (30 %%) drops more than 10 %%")
		checkFaultLogs(t, dir, sum, sum.Points[0].Metrics.Links)
		require.Equal(t, sortedCopy(readFaultEvents(t, filepath.Join(fdir, "faults.jsonl"))), processFaultEvents(t, dir, sum),
			"the fast engine's injector and the processes' injectors dropped the same messages")
	}
}

// checkFaultLogs reads every process's record of what its injector did (one line per message
// whose fate was not "on time, once") and checks that the per-link statistics say the same.
func checkFaultLogs(t *testing.T, dir string, sum *summary, links []fault.LinkStats) {
	t.Helper()
	type counts struct{ drop, dup, reorder, delay uint64 }
	got := map[string]*counts{}
	files := 0
	for _, p := range sum.Processes {
		if p.TraceFile == "" || p.Role == "eavesdropper" {
			continue
		}
		path := filepath.Join(dir, strings.TrimSuffix(p.TraceFile, ".trace.jsonl")+".faults.jsonl")
		data, err := os.ReadFile(path)
		require.NoError(t, err, "%s keeps a fault log", p.Name)
		files++
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line == "" {
				continue
			}
			var ev fault.Event
			require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
			c := got[ev.Link]
			if c == nil {
				c = &counts{}
				got[ev.Link] = c
			}
			switch {
			case ev.Drop:
				c.drop++
			default:
				if ev.Duplicate {
					c.dup++
				}
				if ev.Reorder {
					c.reorder++
				}
				if ev.DelaySteps > 0 || ev.DelayNS > 0 {
					c.delay++
				}
			}
		}
	}
	require.Positive(t, files)
	for _, l := range links {
		c := got[l.Link]
		if c == nil {
			c = &counts{}
		}
		require.Equal(t, counts{l.Dropped, l.Duplicated, l.Reordered, l.Delayed}, *c, "%s: the statistics are what the injector recorded", l.Link)
	}
}

func readFaultEvents(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

// processFaultEvents is every process's fault log, as one sorted list (fast: in release order,
// sorted here the same way).
func processFaultEvents(t *testing.T, dir string, sum *summary) []string {
	t.Helper()
	var all []string
	for _, p := range sum.Processes {
		if p.TraceFile == "" || p.Role == "eavesdropper" {
			continue
		}
		all = append(all, readFaultEvents(t, filepath.Join(dir, strings.TrimSuffix(p.TraceFile, ".trace.jsonl")+".faults.jsonl"))...)
	}
	return sortedCopy(all)
}

func sortedCopy(xs []string) []string {
	out := append([]string(nil), xs...)
	slices.Sort(out)
	return out
}

// vehicleWithFaults is the cloud-vehicle scenario with a faults section appended.
func vehicleWithFaults(t *testing.T, faults string) string {
	t.Helper()
	src, err := os.ReadFile(scenarioPath("cloud-vehicle"))
	require.NoError(t, err)
	return writeScenario(t, string(src)+"\n"+faults)
}

// Realtime: steps whose input misses its tick go on with the rules and are counted; the run
// completes "degraded" (exit 0) naming the counts, and --max-missed-fraction makes it fail.
func TestRealtimeMissesDegrade(t *testing.T) {
	srv := server(t)
	path := vehicleWithFaults(t, "faults:\n  links:\n    - {name: slow-u, from: cloud.0, to: plant.0, unit: ms, delay: 12, window: [20, 40]}\n")
	dir := t.TempDir()
	args := []string{"run", path, "--nats-url", srv.URL(), "--runs", "1", "--mode", "realtime", "--period", "5ms", "--log-level", "warn"}
	code, _, stderr := runDpsim(t, 60*time.Second, append(args, "--out", dir)...)
	require.Equal(t, 0, code, stderr)
	sum := readSummary(t, dir)
	require.Equal(t, "degraded", sum.Status)
	require.NotEmpty(t, sum.Degraded)
	require.Contains(t, sum.Degraded[0], "missed their realtime deadline")
	require.Greater(t, sum.MissedFraction, 0.0)
	require.GreaterOrEqual(t, sum.Timing["missed"].(float64), 10.0, "at least the 20 steps of the window minus those the delay still makes")
	require.Equal(t, 1, sum.Points[0].Metrics.Runs, "the episode completed")
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "**Status: degraded**")

	dir2 := t.TempDir()
	code, _, stderr = runDpsim(t, 60*time.Second, append(args, "--out", dir2, "--max-missed-fraction", "0.001")...)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "max-missed-fraction")
	require.Equal(t, "failed", readSummary(t, dir2).Status)
}

// Lockstep: a message that does not come within --timeout is not fatal any more - the
// receiver applies its rule, the late message is counted when it comes, and the run
// completes "degraded", naming the timeouts.
func TestLockstepTimeoutNotFatal(t *testing.T) {
	srv := server(t)
	path := vehicleWithFaults(t, "faults:\n  links:\n    - {name: stall, from: cloud.0, to: plant.0, unit: ms, delay: 300, window: [10, 12]}\n")
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 60*time.Second, "run", path, "--nats-url", srv.URL(), "--runs", "1", "--timeout", "60ms",
		"--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	sum := readSummary(t, dir)
	require.Equal(t, "degraded", sum.Status)
	require.Contains(t, sum.Degraded[0], "timed out")
	require.Equal(t, 1, sum.Points[0].Metrics.Runs)
	var late uint64
	for _, l := range sum.Points[0].Metrics.Links {
		if l.Link == "cloud.0->plant.0" {
			late = l.Late
		}
	}
	require.Positive(t, late, "the stalled inputs arrived after the plant went on without them")
}
