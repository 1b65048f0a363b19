package run_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/fault"
)

// liveRun is a dpsim run started with its stderr readable while it runs.
type liveRun struct {
	cmd    *exec.Cmd
	stdout dpsimtest.SyncBuffer // the final table (or --json)
	stderr dpsimtest.SyncBuffer
	done   <-chan struct{} // closed when the process ended
}

func startLive(t testing.TB, args ...string) *liveRun {
	t.Helper()
	l := &liveRun{cmd: exec.Command(dpsimBin, args...)}
	l.cmd.Stdout, l.cmd.Stderr = &l.stdout, &l.stderr
	l.cmd.Env = append(os.Environ(), "NATS_URL=")
	l.done = dpsimtest.Background(t, l.cmd)
	return l
}

// await returns the first submatch of re in stderr, waiting up to limit for it.
func (l *liveRun) await(t testing.TB, re *regexp.Regexp, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(l.stderr.String()); m != nil {
			return m[1]
		}
		select {
		case <-l.done:
			t.Fatalf("dpsim ended (%v) before %v on stderr:\n%s", l.cmd.ProcessState, re, l.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no %v on stderr within %v:\n%s", re, limit, l.stderr.String())
	return ""
}

// exit waits for the run's end and returns its exit code.
func (l *liveRun) exit(t testing.TB, limit time.Duration) int {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(limit):
		t.Fatalf("dpsim did not finish within %v:\n%s", limit, l.stderr.String())
	}
	return l.cmd.ProcessState.ExitCode()
}

var uiURL = regexp.MustCompile(`live view (http://127\.0\.0\.1:\d+/\?token=[0-9a-f]+) `)

// liveState is the part of the live view's state the test reads.
type liveState struct {
	Status        string `json:"status"`
	EpisodesDone  int    `json:"episodes_done"`
	EpisodesTotal int    `json:"episodes_total"`
	Point         int    `json:"point"`
	Done          []int  `json:"done"`
	Aggregate     *struct {
		Point int        `json:"point"`
		Runs  int        `json:"runs"`
		T     []int      `json:"t"`
		Mean  []*float64 `json:"mean"`
		Hi    []*float64 `json:"ci_hi"`
	} `json:"aggregate"`
	Episodes []struct {
		T []int `json:"t"`
	} `json:"episodes"`
	Processes []struct {
		Key      string `json:"key"`
		State    string `json:"state"`
		PID      int    `json:"pid"`
		RSSBytes int64  `json:"rss_bytes"`
	} `json:"processes"`
	LiveLinks []struct {
		Point    int    `json:"point"`
		Link     string `json:"link"`
		Episodes int    `json:"episodes"`
		Sent     uint64 `json:"sent"`
		Dropped  uint64 `json:"dropped"`
	} `json:"live_links"`
}

// readEvents reads the /events stream until its "end" event and returns every state in order.
func readEvents(t *testing.T, url string) []liveState {
	t.Helper()
	resp, err := http.Get(dpsimtest.LivePath(url, "events"))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var states []liveState
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var st liveState
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &st))
			states = append(states, st)
			if event == "end" {
				return states
			}
		}
	}
	t.Fatalf("the event stream closed without an end event (%v) after %d states", sc.Err(), len(states))
	return nil
}

func metricSum(mf map[string]*dto.MetricFamily, name string) float64 {
	var s float64
	if f := mf[name]; f != nil {
		for _, m := range f.Metric {
			s += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return s
}

// TestLiveUI runs a lossy consensus sweep (8 points) with --ui: the event stream shows the
// episodes growing while it runs, the traced episodes' series and the processes' sampled
// memory; the last point's links replayed by the launcher equal its processes' injector side
// (sent, dropped); and
// /metrics scraped after the end (--ui-hold) agrees with summary.json: episodes, steps, every
// link's counters summed over the points, the invalid messages by process and reason, deadline
// misses, peak RSS; a lockstep run has no lateness histogram.
func TestLiveUI(t *testing.T) {
	out := t.TempDir()
	// one episode per group: a lockstep run's stream has a state a second (LockstepEventInterval),
	// and the run lasts long enough for a few
	l := startLive(t, "run", scenarioPath("faults-consensus-loss"), "--runs", "12", "--seed", "5", "--out", out, "--inflight", "1",
		"--ui", "--ui-hold", "2m", "--progress=false")
	url := l.await(t, uiURL, 30*time.Second)
	states := readEvents(t, url)
	end := states[len(states)-1]
	require.Equal(t, "ok", end.Status, l.stderr.String())
	require.Equal(t, 8*12, end.EpisodesTotal)
	require.Equal(t, end.EpisodesTotal, end.EpisodesDone)
	var running, progress, midPoint int
	seen := map[int]bool{}
	var rssSampled bool
	for _, st := range states[:len(states)-1] {
		if st.Status == "running" {
			running++
		}
		for _, lk := range st.LiveLinks {
			require.Positive(t, lk.Sent, lk.Link)
		}
		for _, p := range st.Processes {
			require.True(t, p.PID > 0 || p.State != "ready", "a started process without its pid: %+v", p)
			rssSampled = rssSampled || p.RSSBytes > 1<<20
		}
		if st.EpisodesDone > 0 && st.EpisodesDone < st.EpisodesTotal {
			progress++
		}
		// the Monte Carlo aggregate of the point in progress covers the episodes it completed
		if a := st.Aggregate; a != nil && st.Status == "running" {
			require.LessOrEqual(t, a.Runs, st.Done[a.Point], "%+v", st.Done)
			if a.Point == st.Point && a.Runs > 0 && a.Runs < 12 {
				midPoint++
			}
		}
		seen[st.EpisodesDone] = true
	}
	require.Greater(t, running, 0, "no state while running")
	require.Greater(t, progress, 0, "no state between the first and the last episode")
	require.GreaterOrEqual(t, len(seen), 3, "the episodes did not grow in the stream: %v", seen)
	require.NotEmpty(t, end.Episodes, "no traced episode")
	require.Len(t, end.Episodes[len(end.Episodes)-1].T, 31, "steps 0..30 of the latest traced episode")
	require.Len(t, end.Processes, 8*11)
	require.Positive(t, midPoint, "no aggregate of part of a point's episodes while it ran")
	if runtime.GOOS == "linux" {
		require.True(t, rssSampled, "no process's memory sampled while the run went on")
	}

	// The run's outputs are written before the end event.
	s := readSummary(t, out)
	require.Equal(t, "ok", s.Status)
	mf := dpsimtest.ScrapeMetrics(t, url)
	ep, _ := dpsimtest.MetricValue(mf, "dpsim_episodes_completed_total")
	steps, _ := dpsimtest.MetricValue(mf, "dpsim_steps_total")
	var episodes int
	links := map[string]fault.LinkStats{}
	for _, p := range s.Points {
		episodes += p.Metrics.Runs
		for _, lk := range p.Metrics.Links {
			sum := links[lk.Link]
			sum.Add(&lk)
			links[lk.Link] = sum
		}
	}
	require.Equal(t, float64(episodes), ep)
	// The aggregate at the end is the last point's mean square of summary.json's metrics.
	lastRes := s.Points[len(s.Points)-1].Metrics
	require.NotNil(t, end.Aggregate)
	require.Equal(t, []int{7, 12, 31}, []int{end.Aggregate.Point, end.Aggregate.Runs, len(end.Aggregate.T)})
	fin := lastRes.Consensus.FinalSqDeviation
	require.InEpsilon(t, fin.Mean, *end.Aggregate.Mean[30], 1e-5)
	require.InEpsilon(t, fin.Hi, *end.Aggregate.Hi[30], 1e-5)
	require.Equal(t, float64(episodes*s.Steps), steps)
	require.NotEmpty(t, links)
	var dropped uint64
	for name, lk := range links {
		for fate, want := range map[string]uint64{"sent": lk.Sent, "dropped": lk.Dropped, "delivered": lk.Delivered, "late": lk.Late, "duplicated": lk.Duplicated} {
			got, ok := dpsimtest.MetricValue(mf, "dpsim_link_messages_total", "link", name, "fate", fate)
			require.True(t, ok, "%s %s", name, fate)
			require.Equal(t, float64(want), got, "%s %s", name, fate)
		}
		dropped += lk.Dropped
	}
	require.Positive(t, dropped, "a lossy scenario without a dropped message")
	// The last point's links, replayed by the launcher from the fault seed episode by episode,
	// are the injector side of what its processes counted.
	last := s.Points[len(s.Points)-1].Metrics.Links
	require.Len(t, end.LiveLinks, len(last))
	var lastDropped uint64
	for i, lk := range last {
		got := end.LiveLinks[i]
		require.Equal(t, []any{7, lk.Link, 12, lk.Sent, lk.Dropped}, []any{got.Point, got.Link, got.Episodes, got.Sent, got.Dropped})
		lastDropped += got.Dropped
	}
	require.Positive(t, lastDropped, "30 % loss without a replayed drop")
	var invalid uint64
	for key, c := range s.Invalid {
		for reason, n := range c.ByReason {
			got, ok := dpsimtest.MetricValue(mf, "dpsim_invalid_messages_total", "process", key, "reason", reason)
			require.True(t, ok, "%s %s", key, reason)
			require.Equal(t, float64(n), got, "%s %s", key, reason)
			invalid += n
		}
	}
	require.Equal(t, float64(invalid), metricSum(mf, "dpsim_invalid_messages_total"))
	require.Equal(t, s.Timing["missed"], metricSum(mf, "dpsim_deadline_misses_total"))
	for _, p := range s.Processes {
		key := fmt.Sprintf("p%02d/%s", p.Point, p.Name)
		got, ok := dpsimtest.MetricValue(mf, "dpsim_process_peak_rss_bytes", "process", key)
		require.True(t, ok, key)
		require.Equal(t, float64(p.MaxRSSBytes), got, key)
	}
	_, ok := dpsimtest.MetricValue(mf, "dpsim_run_info", "status", "ok")
	require.True(t, ok)
	require.Nil(t, mf["dpsim_step_lateness_seconds"], "lockstep: no tick to be late for")
	require.Nil(t, mf["dpsim_process_rss_bytes"], "every process finished: their peaks are in dpsim_process_peak_rss_bytes")

	require.NoError(t, l.cmd.Process.Signal(syscall.SIGINT)) // ends --ui-hold
	require.Equal(t, 0, l.exit(t, 30*time.Second), l.stderr.String())
}

// TestNATSMonitor: --nats-monitor serves the embedded server's /healthz and /varz during the
// run, and is refused with an external server.
func TestNATSMonitor(t *testing.T) {
	out := t.TempDir()
	l := startLive(t, "run", scenarioPath("cloud-vehicle"), "--runs", "100000", "--trace-episodes", "0", "--out", out,
		"--nats-monitor", "127.0.0.1:0", "--progress=false")
	base := l.await(t, regexp.MustCompile(`NATS monitoring (http://127\.0\.0\.1:\d+)/varz`), 30*time.Second)
	get := func(path string) string {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	require.Contains(t, get("/healthz"), `"ok"`)
	require.Contains(t, get("/varz"), `"server_name": "dpsim-embedded"`)
	require.Contains(t, get("/connz"), `"connections"`)
	require.NoError(t, l.cmd.Process.Signal(syscall.SIGINT))
	l.exit(t, 60*time.Second)

	code, _, stderr := runDpsim(t, 30*time.Second, "run", scenarioPath("cloud-vehicle"), "--out", t.TempDir(),
		"--nats-url", "nats://127.0.0.1:1", "--nats-monitor", "127.0.0.1:0")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "--nats-monitor")
}
