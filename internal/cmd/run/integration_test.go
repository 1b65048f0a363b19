package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/roleproc"
	"github.com/dpsim/dpsim/internal/rss"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

// The integration tests run the real binary: every role its own OS process, over an embedded
// NATS server on a random loopback port that the test starts itself, so that a separate
// client can watch the run from the first message on.

var dpsimBin string

func TestMain(m *testing.M) {
	if role := os.Getenv(benchRoleEnv); role != "" { // a raw request-reply process of a benchmark
		os.Exit(rawRole(role, os.Getenv(benchURLEnv)))
	}
	os.Exit(dpsimtest.Main(m, &dpsimBin))
}

func scenarioPath(name string) string { return dpsimtest.Scenario(name) }

// server starts an embedded NATS server for one test.
func server(t testing.TB) *bus.Embedded {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	return srv
}

type sniffed struct {
	subject string
	data    []byte
}

// sniffer records every message of every run ("dpsim.>") on its own connection; onMsg, if
// set, runs for each message on the client's goroutine.
type sniffer struct {
	mu    sync.Mutex
	msgs  []sniffed
	nc    *nats.Conn
	onMsg func(subject string, data []byte)
}

func sniff(t testing.TB, url string, onMsg func(string, []byte)) *sniffer {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name("test-sniffer"))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	s := &sniffer{nc: nc, onMsg: onMsg}
	_, err = nc.Subscribe(wire.AllRuns(), func(m *nats.Msg) {
		s.mu.Lock()
		s.msgs = append(s.msgs, sniffed{m.Subject, append([]byte(nil), m.Data...)})
		s.mu.Unlock()
		if s.onMsg != nil {
			s.onMsg(m.Subject, m.Data)
		}
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	return s
}

func (s *sniffer) all() []sniffed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sniffed(nil), s.msgs...)
}

// started is a dpsim command the test started, with its output (readable while it runs).
type started struct {
	cmd    *exec.Cmd
	stderr dpsimtest.SyncBuffer
	stdout dpsimtest.SyncBuffer
}

func start(t testing.TB, args ...string) *started {
	t.Helper()
	l := &started{cmd: exec.Command(dpsimBin, args...)}
	l.cmd.Stdout, l.cmd.Stderr = &l.stdout, &l.stderr
	l.cmd.Env = append(os.Environ(), "NATS_URL=")
	require.NoError(t, l.cmd.Start())
	return l
}

// wait waits for the launcher to exit (bounded) and returns its exit code.
func (l *started) wait(t testing.TB, limit time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- l.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(limit):
		_ = l.cmd.Process.Kill()
		<-done
		t.Fatalf("dpsim %v did not finish within %v\nstderr:\n%s", l.cmd.Args[1:], limit, l.stderr.String())
	}
	return l.cmd.ProcessState.ExitCode()
}

func runDpsim(t testing.TB, limit time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	l := start(t, args...)
	code = l.wait(t, limit)
	return code, l.stdout.String(), l.stderr.String()
}

// summary is the part of summary.json the tests read; Metrics stays raw for exact comparison.
type summary struct {
	Scenario            string   `json:"scenario"`
	Seed                uint64   `json:"seed"`
	SeedString          string   `json:"seed_string"`
	Sampler             string   `json:"sampler"`
	Granularity         float64  `json:"granularity"`
	Runs                int      `json:"runs"`
	Steps               int      `json:"steps"`
	NATSURL             string   `json:"nats_url"`
	NATSCluster         int      `json:"nats_cluster"`
	Attached            bool     `json:"attached"`
	LauncherMaxRSSBytes int64    `json:"launcher_max_rss_bytes"`
	EstimatedMemory     int64    `json:"estimated_memory_bytes"`
	Engine              string   `json:"engine"`
	Status              string   `json:"status"`
	Error               string   `json:"error"`
	Degraded            []string `json:"degraded"`
	// MissedFraction is the fraction of process steps that went on without their messages.
	MissedFraction float64               `json:"missed_fraction"`
	Metrics        json.RawMessage       `json:"metrics"`
	Processes      []procSummary         `json:"processes"`
	Problems       []record.PointProblem `json:"problems"`
	Invalid        map[string]wire.CountersSnapshot
	Points         []struct {
		Metrics       *metrics.Results `json:"metrics"`
		Requested     int              `json:"requested"`
		TraceEpisodes int              `json:"trace_episodes"`
	} `json:"points"`
	RunID       string         `json:"run_id"`
	Timing      map[string]any `json:"timing"`
	SeedSource  string         `json:"seed_source"`
	Connections struct {
		Disconnects    uint64 `json:"disconnects"`
		Reconnects     uint64 `json:"reconnects"`
		ServerRestarts int    `json:"server_restarts"`
		Crashes        int    `json:"crashes"`
		Restarts       int    `json:"restarts"`
	} `json:"connections"`
	Timeline []struct {
		Episode int    `json:"episode"`
		Step    int    `json:"step"`
		Proc    string `json:"proc"`
		Event   string `json:"event"`
	} `json:"timeline"`
}

// links returns the per-link counters of a single-point run's metrics.
func (s *summary) links(t testing.TB) []fault.LinkStats {
	t.Helper()
	var m struct {
		Links []fault.LinkStats `json:"links"`
	}
	require.NoError(t, json.Unmarshal(s.Metrics, &m))
	return m.Links
}

// events returns the timeline's events of kind ev.
func (s *summary) events(ev string) int {
	n := 0
	for _, e := range s.Timeline {
		if e.Event == ev {
			n++
		}
	}
	return n
}

type procSummary struct {
	Role                string                `json:"role"`
	ID                  int                   `json:"id"`
	PID                 int                   `json:"pid"`
	Name                string                `json:"name"`
	Point               int                   `json:"point"`
	Agents              []int                 `json:"agents"`
	ExitCode            int                   `json:"exit_code"`
	Status              string                `json:"status"`
	MaxRSSBytes         int64                 `json:"max_rss_bytes"`
	RSSSource           string                `json:"max_rss_source"`
	WaitRSS             int64                 `json:"wait_max_rss_bytes"`
	StepsPerSec         float64               `json:"steps_per_sec"`
	Invalid             wire.CountersSnapshot `json:"invalid"`
	TraceFile           string                `json:"trace_file"`
	SlowConsumerDropped int                   `json:"slow_consumer_dropped"`
	CtlInvalid          wire.CountersSnapshot `json:"ctl_invalid"`
}

func readSummary(t testing.TB, dir string) *summary {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var s summary
	require.NoError(t, json.Unmarshal(data, &s))
	return &s
}

func (s *summary) proc(t testing.TB, name string) procSummary {
	t.Helper()
	for _, p := range s.Processes {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no process %s in summary", name)
	return procSummary{}
}

func decode(t testing.TB, data []byte) *wire.Message {
	var m wire.Message
	if err := wire.Decode(data, &m); err != nil {
		return nil
	}
	return &m
}

// TestCloudVehicleOverNATS runs cloud-vehicle (5 runs) as processes while a separate client
// watches dpsim.>, then checks the documented subjects, that the plant's true state never
// appears on the bus, and that the fast engine gives the same numbers for the seed.
func TestCloudVehicleOverNATS(t *testing.T) {
	srv := server(t)
	sn := sniff(t, srv.URL(), nil)
	dir := t.TempDir()
	const runs, run = 5, "itvehicle"
	// one episode at a time: the subjects carry one message per episode and step
	code, stdout, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(),
		"--runs", fmt.Sprint(runs), "--out", dir, "--run-id", run, "--log-level", "warn", "--inflight", "1")
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	require.Contains(t, stdout, "cloud-vehicle")
	sum := readSummary(t, dir)
	require.Equal(t, "ok", sum.Status)
	require.Equal(t, srv.URL(), sum.NATSURL)
	require.Equal(t, runs, sum.Runs)
	require.Equal(t, uint64(53), sum.Seed, "the scenario's seed")
	require.Equal(t, "53", sum.SeedString)
	require.Equal(t, "secure", sum.Sampler, "the default sampler, named")
	require.Equal(t, math.Ldexp(1, -20), sum.Granularity, "the grid 2^20 below sigma = 1.8779")
	T := sum.Steps
	require.Equal(t, 100, T)
	require.Len(t, sum.Processes, 3)
	for _, p := range sum.Processes {
		require.Positive(t, p.PID, p.Name)
		require.Equal(t, 0, p.ExitCode, p.Name)
		require.Equal(t, "ok", p.Status, p.Name)
		require.Positive(t, p.MaxRSSBytes, p.Name)
		if runtime.GOOS == "linux" {
			require.Equal(t, rss.VmHWM, p.RSSSource, "%s: its own peak, not the wait4 rusage", p.Name)
		}
		require.Less(t, p.MaxRSSBytes, int64(512<<20), p.Name)
		require.Zero(t, p.Invalid.Dropped, p.Name)
	}
	for _, f := range []string{"trace.jsonl", "report.md", "tracking-error.png", "tracking-error.svg"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, "%s written", f)
	}
	msgs := sn.all()

	t.Run("documented subjects", func(t *testing.T) {
		count := map[string]int{}
		for _, m := range msgs {
			count[m.subject]++
		}
		subj, _ := wire.NewSubjects(run)
		require.Equal(t, runs*T, count[subj.PlantYhat(0)], "yhat: one per step")
		require.Equal(t, runs*T, count[subj.CloudU(0)], "u: one per step")
		require.Equal(t, runs, count[subj.CtlEpisode()])
		// ctl.stop is repeated every 100 ms until every process exited (a process not yet
		// subscribed would miss one); stopping is idempotent, so a loaded machine sees more.
		require.GreaterOrEqual(t, count[subj.CtlStop()], 1)
		for _, r := range []endpoint.Role{endpoint.Plant, endpoint.Cloud, endpoint.Eavesdropper} {
			require.GreaterOrEqual(t, count[subj.CtlReady(r, 0)], 1, "ready %s (repeated until the first episode)", r)
			require.Equal(t, runs, count[subj.CtlDone(r, 0)], "done %s", r)
			require.Equal(t, 1, count[subj.CtlResult(r, 0)], "result %s", r)
		}
		// Every data message is a valid version-1 message with the subject's sender.
		for _, m := range msgs {
			s, err := wire.ParseSubject(m.subject)
			require.NoError(t, err, m.subject)
			if s.IsCtl() {
				continue
			}
			msg := decode(t, m.data)
			require.NotNil(t, msg, m.subject)
			require.NoError(t, wire.Validate(msg, wire.Expect{Run: run, Dim: 1, Steps: T, Episode: wire.AnyEpisode, Sender: s.Sender(), Kind: s.Stream}))
		}
		// The eavesdropper saw every message of the run after it subscribed.
		eve := sum.proc(t, "eavesdropper-0")
		require.Equal(t, uint64(2*runs*T), eve.Invalid.Received, "eavesdropper data messages")
	})

	t.Run("true state never on the bus", func(t *testing.T) {
		f, err := os.Open(filepath.Join(dir, sum.proc(t, "plant-0").TraceFile))
		require.NoError(t, err)
		defer f.Close()
		plant, err := trace.Read[trace.ControlRecord](f)
		require.NoError(t, err)
		require.Len(t, plant, runs*(T+1))
		// The plant's secrets: x(t) and C x(t) = x_1(t) (C = [1 0]) for every episode and step.
		type key struct{ ep, t int }
		x := map[key][]float64{}
		secret := map[float64]bool{}
		for _, r := range plant {
			x[key{r.Episode, r.Step}] = r.X
			for _, v := range r.X {
				if v != 0 { // x(0) = 0 is the scenario's public initial state
					secret[v] = true
				}
			}
		}
		checked := 0
		for _, m := range msgs {
			msg := decode(t, m.data)
			if msg == nil {
				continue
			}
			for _, v := range msg.Values {
				require.False(t, secret[v], "%s carries %v, a component of the true state", m.subject, v)
			}
			if xs, ok := x[key{msg.Episode, msg.Step}]; ok && len(msg.Values) > 0 {
				require.NotEqual(t, xs, msg.Values, "%s equals x(t)", m.subject)
				require.NotEqual(t, xs[:1], msg.Values, "%s equals C x(t)", m.subject)
			}
			checked++
		}
		require.Greater(t, checked, 2*runs*T)
	})

	t.Run("NATS equals fast engine", func(t *testing.T) {
		fdir := t.TempDir()
		code, _, stderr := runDpsim(t, 30*time.Second, "run", scenarioPath("cloud-vehicle"), "--engine", "fast",
			"--runs", fmt.Sprint(runs), "--out", fdir, "--log-level", "warn")
		require.Equal(t, 0, code, stderr)
		fast := readSummary(t, fdir)
		require.Equal(t, "fast", fast.Engine)
		require.JSONEq(t, string(fast.Metrics), string(sum.Metrics), "same seed, same numbers: bit-identical Results")
		a, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(fdir, "trace.jsonl"))
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), "per-step traces identical")
		require.Equal(t, runs*(T+1), bytes.Count(a, []byte("\n")), "every episode traced (runs < --trace-episodes)")
		var res metrics.Results
		require.NoError(t, json.Unmarshal(sum.Metrics, &res))
		require.Equal(t, runs, res.Runs)
		require.Empty(t, res.IncompleteEpisodes)
	})
}

// TestConsensusProcesses runs consensus-gaussian with one process per agent and with agent
// hosts (--agents-per-process 4, one message per host per step): same Results as the fast
// engine grouped the same way, bit for bit, the sum preserved.
func TestConsensusProcesses(t *testing.T) {
	srv := server(t)
	const runs = 3
	for _, per := range []int{1, 4} {
		t.Run(fmt.Sprintf("agents-per-process=%d", per), func(t *testing.T) {
			fdir := t.TempDir()
			code, _, stderr := runDpsim(t, 30*time.Second, "run", scenarioPath("consensus-gaussian"), "--engine", "fast",
				"--runs", fmt.Sprint(runs), "--out", fdir, "--agents-per-process", fmt.Sprint(per), "--log-level", "warn")
			require.Equal(t, 0, code, stderr)
			fast := readSummary(t, fdir)
			dir := t.TempDir()
			code, _, stderr = runDpsim(t, 60*time.Second, "run", scenarioPath("consensus-gaussian"), "--nats-url", srv.URL(),
				"--runs", fmt.Sprint(runs), "--out", dir, "--agents-per-process", fmt.Sprint(per), "--log-level", "warn")
			require.Equal(t, 0, code, stderr)
			sum := readSummary(t, dir)
			require.NotEmpty(t, sum.Points)
			require.Positive(t, sum.LauncherMaxRSSBytes)
			agents := sum.Points[0].Metrics.Consensus.Agents
			wantProcs := (agents+per-1)/per + 1 // agent processes + eavesdropper, per point
			require.Len(t, sum.Processes, wantProcs*len(sum.Points))
			hosts := 0
			for _, p := range sum.Processes {
				require.Equal(t, 0, p.ExitCode, p.Name)
				if p.Role == "agent" {
					hosts++
					require.Len(t, p.Agents, 2)
					require.LessOrEqual(t, p.Agents[1]-p.Agents[0]+1, per)
				}
			}
			require.Equal(t, (agents+per-1)/per*len(sum.Points), hosts)
			require.JSONEq(t, string(fast.Metrics), string(sum.Metrics), "NATS agents = fast engine, bit for bit")
			if len(sum.Points) > 1 { // a sweep: one metrics entry per point
				var list []json.RawMessage
				require.NoError(t, json.Unmarshal(sum.Metrics, &list))
				require.Len(t, list, len(sum.Points))
			}
			for _, pt := range sum.Points {
				c := pt.Metrics.Consensus
				require.Equal(t, runs, pt.Metrics.Runs)
				require.Less(t, c.SumRelDevMax, 1e-9, "eq. (25) preserves the network sum")
				// Hosts of 4 send one message per step: links host.<i> -> host.<j> / eavesdropper.
				blocks := (agents + per - 1) / per
				for _, l := range pt.Metrics.Links {
					if per == 1 {
						require.True(t, strings.HasPrefix(l.Link, "agent."), l.Link)
						continue
					}
					require.True(t, strings.HasPrefix(l.Link, "host."), l.Link)
					require.EqualValues(t, runs*pt.Metrics.Steps, l.Delivered, l.Link)
				}
				if per > 1 {
					require.LessOrEqual(t, len(pt.Metrics.Links), blocks*blocks)
				}
			}
		})
	}
}

// TestLongPathConsensus runs a path of 24 agents, one process each: agents at the two ends run
// many steps apart, and the eavesdropper, which nobody waits for, may fall behind all of them.
// It must buffer what runs ahead (it used to drop messages more than 8 steps ahead and fail the
// run), and the numbers must equal the fast engine's.
func TestLongPathConsensus(t *testing.T) {
	if testing.Short() {
		t.Skip("25 processes")
	}
	srv := server(t)
	dir := t.TempDir()
	x0 := make([]string, 24)
	for i := range x0 {
		x0[i] = fmt.Sprint(i * 3)
	}
	path := filepath.Join(dir, "path24.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`name: path24
kind: consensus
steps: 60
episodes: 3
seed: 5
graph: {name: path, n: 24, weight: 0.3}
x0: [`+strings.Join(x0, ", ")+`]
privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01}
`), 0o644))
	fdir := filepath.Join(dir, "fast")
	code, _, stderr := runDpsim(t, 60*time.Second, "run", path, "--engine", "fast", "--out", fdir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	ndir := filepath.Join(dir, "nats")
	code, _, stderr = runDpsim(t, 120*time.Second, "run", path, "--nats-url", srv.URL(), "--out", ndir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, string(readSummary(t, fdir).Metrics), string(readSummary(t, ndir).Metrics))
}

// TestHostileMessages publishes garbage, NaN values, wrong dimensions, another run's message
// and a bogus subject into a running scenario: every receiver counts and drops them, and the
// run still succeeds with exactly the fast engine's numbers.
func TestHostileMessages(t *testing.T) {
	srv := server(t)
	const run, runs = "ithostile", 20
	subj, _ := wire.NewSubjects(run)
	pub, err := nats.Connect(srv.URL(), nats.Name("test-attacker"))
	require.NoError(t, err)
	t.Cleanup(pub.Close)
	var once sync.Once
	fired := make(chan struct{})
	nan, err := wire.EncodeBinary(nil, &wire.Message{V: 1, Run: run, Episode: 1, Step: 0, Sender: "plant.0", Kind: "yhat", Values: []float64{math.NaN()}})
	require.NoError(t, err)
	wrongDim, err := wire.EncodeJSON(nil, &wire.Message{V: 1, Run: run, Episode: 1, Step: 0, Sender: "cloud.0", Kind: "u", Values: []float64{1, 2, 3}})
	require.NoError(t, err)
	otherRun, err := wire.EncodeJSON(nil, &wire.Message{V: 1, Run: "someoneelse", Episode: 1, Step: 0, Sender: "plant.0", Kind: "yhat", Values: []float64{1}})
	require.NoError(t, err)
	badVersion := []byte(`{"v":7,"run":"ithostile","ep":1,"step":0,"from":"plant.0","sent":0,"kind":"yhat","vals":[1]}`)
	forgedSender, err := wire.EncodeJSON(nil, &wire.Message{V: 1, Run: run, Episode: 1, Step: 0, Sender: "cloud.0", Kind: "yhat", Values: []float64{1}})
	require.NoError(t, err)
	sniff(t, srv.URL(), func(subject string, data []byte) {
		if subject != subj.CtlDone(endpoint.Plant, 0) {
			return
		}
		once.Do(func() {
			go func() {
				defer close(fired)
				for _, m := range []struct {
					subject string
					data    []byte
				}{
					{subj.PlantYhat(0), []byte("\x00\xffgarbage{{{")},
					{subj.PlantYhat(0), nan},
					{subj.PlantYhat(0), otherRun},
					{subj.PlantYhat(0), badVersion},
					{subj.PlantYhat(0), forgedSender},
					{subj.CloudU(0), wrongDim},
					{subj.CloudU(0), []byte(`{"v":1,"vals":[NaN]}`)},
					{subj.CtlEpisode(), []byte("not a message")},
					{subj.CtlStop(), []byte(`{"v":1,"run":"ithostile","kind":"nope"}`)},
					{"dpsim." + run + ".plant.7.yhat", []byte("{}")},
				} {
					_ = pub.Publish(m.subject, m.data)
				}
				_ = pub.Flush()
			}()
		})
	})
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(),
		"--runs", fmt.Sprint(runs), "--out", dir, "--run-id", run, "--log-level", "warn", "--trace-episodes", "3",
		"--inflight", "1") // the disk bound below is per episode (with K in flight a process keeps the kept and the last K)
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("the hostile messages were never published")
	}
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	sum := readSummary(t, dir)
	require.Equal(t, "ok", sum.Status)
	cloud, plant, eve := sum.proc(t, "cloud-0"), sum.proc(t, "plant-0"), sum.proc(t, "eavesdropper-0")
	// cloud: garbage, NaN, other run, bad version, forged sender on its yhat subject
	require.GreaterOrEqual(t, cloud.Invalid.Dropped, uint64(5), "%+v", cloud.Invalid)
	// plant: wrong dimension and the NaN literal on its u subject
	require.GreaterOrEqual(t, plant.Invalid.Dropped, uint64(2), "%+v", plant.Invalid)
	// the eavesdropper sees all 8 data-subject messages (ctl garbage is not data)
	require.GreaterOrEqual(t, eve.Invalid.Dropped, uint64(8), "%+v", eve.Invalid)
	for _, p := range []procSummary{cloud, plant, eve} {
		require.Equal(t, p.Invalid.Received-p.Invalid.Dropped, p.Invalid.Accepted, p.Name)
	}
	// The run was not perturbed: the fast engine's numbers exactly.
	fdir := t.TempDir()
	code, _, stderr = runDpsim(t, 30*time.Second, "run", scenarioPath("cloud-vehicle"), "--engine", "fast",
		"--runs", fmt.Sprint(runs), "--out", fdir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, string(readSummary(t, fdir).Metrics), string(sum.Metrics))
	// --trace-episodes 3: the merged trace holds the first 3 episodes, identical to the fast
	// engine's first 3; the metrics cover all 20.
	a, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(fdir, "trace.jsonl"))
	require.NoError(t, err)
	require.Equal(t, 3*101, bytes.Count(a, []byte("\n")))
	require.True(t, bytes.HasPrefix(b, a), "the traced episodes equal the fast engine's")
	require.Equal(t, 3, sum.Points[0].TraceEpisodes)
	// The disk is bounded: each process keeps the records of the 3 traced episodes and of the
	// last one (each later episode replaced the one before), the transcript only the first 3.
	for _, name := range []string{"plant-0", "cloud-0", "eavesdropper-0"} {
		data, err := os.ReadFile(filepath.Join(dir, "procs", name+".trace.jsonl"))
		require.NoError(t, err)
		lines := bytes.Count(data, []byte("\n"))
		require.LessOrEqual(t, lines, 4*101, name)
		require.GreaterOrEqual(t, lines, 3*100, name)
	}
	tr, err := os.ReadFile(filepath.Join(dir, "procs", "eavesdropper-0.transcript.jsonl"))
	require.NoError(t, err)
	require.Less(t, bytes.Count(tr, []byte("\n")), 3*210, "the transcript keeps 3 episodes")
	// The drops were logged by the receivers.
	log, err := os.ReadFile(filepath.Join(dir, "procs", "cloud-0.log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "dropped invalid message")
}

// waitEpisodes returns a sniffer callback that closes the channel once the plant reported
// episode n done, and records the pid of a process from its ready message.
func watch(n int, readyOf string) (func(string, []byte), <-chan struct{}, func() int) {
	reached := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	pid := 0
	return func(subject string, data []byte) {
			switch {
			case strings.HasSuffix(subject, ".ctl.ready."+readyOf):
				var m wire.Message
				if wire.Decode(data, &m) == nil && len(m.Values) >= 1 {
					mu.Lock()
					pid = int(m.Values[0])
					mu.Unlock()
				}
			case strings.HasSuffix(subject, ".ctl.done.plant.0"):
				var m wire.Message
				if wire.Decode(data, &m) == nil && m.Episode >= n {
					once.Do(func() { close(reached) })
				}
			}
		}, reached, func() int {
			mu.Lock()
			defer mu.Unlock()
			return pid
		}
}

// TestChildDies kills the cloud process in the middle of a run: the launcher exits non-zero
// with a message naming it, and still writes the summary.
func TestChildDies(t *testing.T) {
	srv := server(t)
	on, reached, pid := watch(3, "cloud.0")
	sniff(t, srv.URL(), on)
	dir := t.TempDir()
	l := start(t, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(), "--runs", "100000", "--out", dir, "--log-level", "warn")
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		_ = l.cmd.Process.Kill()
		t.Fatalf("the run never reached episode 3: %s", l.stderr.String())
	}
	require.Positive(t, pid())
	require.NoError(t, syscall.Kill(pid(), syscall.SIGKILL))
	code := l.wait(t, 30*time.Second)
	require.Equal(t, 1, code)
	require.Contains(t, l.stderr.String(), "cloud-0", "the error names the process that died")
	require.Contains(t, l.stderr.String(), "killed")
	sum := readSummary(t, dir)
	require.Equal(t, "failed", sum.Status)
	require.Contains(t, sum.Error, "cloud-0")
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "> **Status: failed** - the run did not finish")
	require.Contains(t, string(md), "cloud-0")
	require.Contains(t, string(md), "of 100000 requested")
	require.Contains(t, string(md), "**Verdict (partial: failed, ")
	for _, p := range sum.Processes {
		if p.Name != "cloud-0" {
			require.Equal(t, 0, p.ExitCode, "%s stopped cleanly", p.Name)
		} else {
			require.NotEqual(t, 0, p.ExitCode)
		}
	}
}

// TestInterrupt sends SIGINT to the launcher mid-run: it stops the children, writes the
// partial results and exits non-zero.
func TestInterrupt(t *testing.T) {
	srv := server(t)
	on, reached, _ := watch(3, "plant.0")
	sniff(t, srv.URL(), on)
	dir := t.TempDir()
	// one episode at a time: the signal comes right after an episode (a group would end with it)
	l := start(t, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(), "--runs", "100000", "--out", dir, "--log-level", "warn", "--inflight", "1")
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		_ = l.cmd.Process.Kill()
		t.Fatalf("the run never reached episode 3: %s", l.stderr.String())
	}
	require.NoError(t, l.cmd.Process.Signal(os.Interrupt))
	code := l.wait(t, 30*time.Second)
	require.Equal(t, 1, code, l.stderr.String())
	require.Contains(t, l.stderr.String(), "interrupted")
	sum := readSummary(t, dir)
	require.Equal(t, "interrupted", sum.Status)
	var res metrics.Results
	require.NoError(t, json.Unmarshal(sum.Metrics, &res))
	require.GreaterOrEqual(t, res.Runs, 3, "the finished episodes are aggregated")
	require.Less(t, res.Runs, 100000)
	require.LessOrEqual(t, len(res.IncompleteEpisodes), 1, "at most the episode running at the signal")
	for _, p := range sum.Processes {
		require.Equal(t, 0, p.ExitCode, "%s flushed and exited on ctl.stop", p.Name)
		require.Equal(t, "ok", p.Status, p.Name)
	}
	trace, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, bytes.Count(trace, []byte("\n")), 3*101)
	// report.md and the table say the run was interrupted, not a normal passing run.
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "> **Status: interrupted** - the run did not finish")
	require.Contains(t, string(md), fmt.Sprintf("episodes completed: %d of 100000 requested", res.Runs))
	require.Contains(t, string(md), "**Verdict (partial: interrupted, ")
	require.NotContains(t, string(md), "**Verdict:**")
	require.Contains(t, l.stdout.String(), "(partial: of 100000 requested)")
	require.Contains(t, l.stdout.String(), "interrupted (partial results)")
}

// TestMalformedScenario: the launcher refuses a bad scenario with the field named, before
// starting anything.
func TestMalformedScenario(t *testing.T) {
	data, err := os.ReadFile(scenarioPath("cloud-vehicle"))
	require.NoError(t, err)
	bad := strings.Replace(string(data), "epsilon: 1\n", "epsilon: -1\n", 1)
	require.NotEqual(t, string(data), bad)
	path := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte(bad), 0o644))
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 20*time.Second, "run", path, "--out", dir)
	require.Contains(t, []int{1, 2}, code)
	require.Contains(t, stderr, "privacy.epsilon")
	_, err = os.Stat(filepath.Join(dir, "summary.json"))
	require.True(t, os.IsNotExist(err), "nothing ran")

	code, _, stderr = runDpsim(t, 20*time.Second, "run")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "SCENARIO")
	code, _, stderr = runDpsim(t, 20*time.Second, "run", path, "--engine", "warp")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--engine")
}

// TestRoleHelp: every role explains every flag, and refuses to run without its required ones.
func TestRoleHelp(t *testing.T) {
	for _, r := range []string{"plant", "cloud", "agent", "eavesdropper"} {
		code, stdout, stderr := runDpsim(t, 20*time.Second, r, "--help")
		require.Equal(t, 0, code, r)
		require.Empty(t, stderr, "an asked-for --help goes to stdout")
		for _, f := range []string{"-nats-url", "-run", "-scenario", "-id", "-out", "-mode", "-period", "-timeout", "-log-level"} {
			require.Contains(t, stdout, f, "%s --help", r)
		}
		if r == "plant" || r == "agent" {
			require.Contains(t, stdout, "-seed", r)
		}
		if r == "agent" {
			require.Contains(t, stdout, "-agents", r)
		}
		code, _, stderr = runDpsim(t, 20*time.Second, r, "--nats-url", "nats://127.0.0.1:1")
		require.Equal(t, 2, code, r)
		require.Contains(t, stderr, "--run is required")
	}
}

// TestRealtime runs cloud-vehicle paced on the wall clock (Ts = 5 ms): the plant's steps
// start on the tick grid, and late messages, overruns, misses and jitter are reported per
// process and in total. Without a miss the run reproduces the lockstep numbers exactly.
func TestRealtime(t *testing.T) {
	srv := server(t)
	dir := t.TempDir()
	const runs, period = 2, 5 * time.Millisecond
	code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(),
		"--runs", fmt.Sprint(runs), "--out", dir, "--mode", "realtime", "--period", period.String(), "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var sum struct {
		Mode      string `json:"mode"`
		PeriodNS  int64  `json:"period_ns"`
		Metrics   json.RawMessage
		TimingRaw map[string]any `json:"timing"`
		Processes []struct {
			Name    string                `json:"name"`
			Invalid wire.CountersSnapshot `json:"invalid"`
			Timing  wire.TimingStats      `json:"timing"`
			Elapsed float64               `json:"busy_seconds"`
		} `json:"processes"`
	}
	require.NoError(t, json.Unmarshal(data, &sum))
	require.Equal(t, "realtime", sum.Mode)
	require.Equal(t, int64(period), sum.PeriodNS)
	var late, missed, overruns float64
	for _, p := range sum.Processes {
		late += float64(p.Invalid.ByReason["late"])
		missed += float64(p.Timing.Missed)
		overruns += float64(p.Timing.Overruns)
		if p.Name == "plant-0" {
			require.Equal(t, "realtime", p.Timing.Mode)
			require.Equal(t, runs*100, p.Timing.Jitter.N, "one jitter sample per paced step")
			require.Equal(t, period, p.Timing.Period)
		}
	}
	// late_messages counts the deliveries of an earlier step than the receiver's (the links'
	// late), which the cores file; the inbox drops none as late any more.
	require.Zero(t, late)
	var linkLate float64
	for _, lk := range (&summary{Metrics: sum.Metrics}).links(t) {
		linkLate += float64(lk.Late)
	}
	require.Equal(t, linkLate, sum.TimingRaw["late_messages"])
	require.Equal(t, missed, sum.TimingRaw["missed"])
	require.Equal(t, overruns, sum.TimingRaw["overruns"])
	require.Contains(t, sum.TimingRaw, "jitter_p99_max_ns")
	// Paced: 2 episodes of 100 steps of 5 ms take at least a second of episode time.
	require.Less(t, sum.TimingRaw["steps_per_sec"].(float64), 1.05/period.Seconds())
	if missed == 0 && late == 0 {
		fdir := t.TempDir()
		code, _, stderr := runDpsim(t, 30*time.Second, "run", scenarioPath("cloud-vehicle"), "--engine", "fast",
			"--runs", fmt.Sprint(runs), "--out", fdir, "--log-level", "warn")
		require.Equal(t, 0, code, stderr)
		require.JSONEq(t, string(readSummary(t, fdir).Metrics), string(sum.Metrics))
	} else {
		t.Logf("machine too loaded for Ts = %v: %v late, %v missed (reported, as they must be)", period, late, missed)
	}
}

// TestAttach drives role processes started by hand (not by the launcher) with a Session in
// attach mode: the ready is repeated until the first episode, so the order does not matter.
// The plant opens the challenger's sealed x(0) with the curve key of the credentials file the
// session writes: it starts once the file is there.
func TestAttach(t *testing.T) {
	srv := server(t)
	dir := t.TempDir()
	const id = "itattach"
	path := scenarioPath("cloud-vehicle")
	common := []string{"--nats-url", srv.URL(), "--run", id, "--scenario", path, "--out", dir, "--log-level", "warn"}
	var procs []*started
	for _, r := range []string{"cloud", "eavesdropper"} {
		procs = append(procs, start(t, append([]string{r}, common...)...))
	}
	_, p, err := roleproc.LoadPoint(path, 0)
	require.NoError(t, err)
	sn := sniff(t, srv.URL(), nil)     // everything on dpsim.>, what the eavesdropper could see
	time.Sleep(200 * time.Millisecond) // the processes are up before the session listens
	type started struct {
		sess *launch.Session
		err  error
	}
	ready := make(chan started, 1)
	go func() {
		sess, err := launch.StartSession(context.Background(), launch.SessionConfig{Attach: true, Plan: p, Seeds: sim.NewSeeds(53),
			URL: srv.URL(), Run: id, Dir: dir, Timeout: 10 * time.Second})
		ready <- started{sess, err}
	}()
	creds := filepath.Join(dir, launch.AttachDir, "plant-0.env")
	require.Eventually(t, func() bool { _, err := os.Stat(creds); return err == nil }, 20*time.Second, 10*time.Millisecond, "the plant's credentials file")
	procs = append(procs, start(t, append([]string{"plant", "--credentials", creds}, common...)...))
	st := <-ready
	sess, err := st.sess, st.err
	require.NoError(t, err)
	x0 := []float64{1.5, -0.5} // episode 1 starts from an explicit state (the challenger's hook)
	for ep := 0; ep < 3; ep++ {
		var start []float64
		if ep == 1 {
			start = x0
		}
		require.NoError(t, sess.Episode(context.Background(), ep, start))
	}
	require.Error(t, sess.Episode(context.Background(), 3, []float64{1}), "a wrong-length x0 is refused before anything is sent")
	require.NoError(t, sess.Stop())
	for _, l := range procs {
		require.Equal(t, 0, l.wait(t, 20*time.Second), l.stderr.String())
	}
	// The challenger's x(0) reached the plant (below) but never travelled on dpsim.>: the
	// public ctl.episode of episode 1 only says the x(0) is private.
	for _, m := range sn.all() {
		var msg wire.Message
		if wire.Decode(m.data, &msg) != nil {
			continue
		}
		if strings.HasSuffix(m.subject, ".ctl.episode") {
			require.Empty(t, msg.Values, "ctl.episode must not carry x(0)")
		}
		require.NotEqual(t, x0, msg.Values, "x(0) seen on %s", m.subject)
	}
	col, err := sess.Collect()
	require.NoError(t, err)
	require.Equal(t, 3, col.Results.Runs)
	require.Empty(t, col.Missing)
	for _, r := range col.Control {
		if r.Step == 0 {
			if r.Episode == 1 {
				require.Equal(t, x0, r.X)
			} else {
				require.Equal(t, []float64{0, 0}, r.X, "the scenario's x(0)")
			}
		}
	}
}
