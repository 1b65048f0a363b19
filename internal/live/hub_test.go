package live

import (
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/trace"
)

func controlHub(steps int) *Hub {
	return NewHub(Info{Scenario: "s", Kind: "cloud-control", Runs: 10, Points: []PointInfo{{Name: "s", Steps: steps}}}, time.Now())
}

// The hub keeps the last MaxEpisodes episodes, each thinned to about MaxPoints steps with its
// terminal step, and writes unknown values as null.
func TestHubSeriesBounded(t *testing.T) {
	const steps = 1000
	h := controlHub(steps)
	for ep := 0; ep < 5; ep++ {
		for st := 0; st <= steps; st++ {
			r := trace.ControlRecord{Episode: ep, Step: st, X: []float64{1, 2, 3, 4, 5}, Ref: []float64{0, 0, 0, 0, 0}}
			if st > 3 {
				r.EveX0 = []float64{1, 2, 3, 4, 5}
			}
			h.Control(0, &r)
		}
	}
	st, err := h.State()
	require.NoError(t, err)
	require.Len(t, st.Episodes, MaxEpisodes)
	require.Equal(t, 2, st.Episodes[0].Episode)
	s := st.Episodes[2]
	require.True(t, s.Complete)
	require.LessOrEqual(t, len(s.T), MaxPoints+1)
	require.Equal(t, steps, s.T[len(s.T)-1])
	require.Len(t, s.X, MaxComponents)
	require.InDelta(t, math.Sqrt(55), s.TrackingError[0], 1e-4) // 6 significant digits in JSON
	require.InDelta(t, 55, s.SqTrackingError[0], 1e-4)
	_, b := h.JSON(0)
	var raw struct {
		Episodes []struct {
			EveError []*float64 `json:"eve_error"`
		} `json:"episodes"`
	}
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Nil(t, raw.Episodes[0].EveError[0], "not identifiable yet: null")
	require.Equal(t, 0.0, *raw.Episodes[0].EveError[len(raw.Episodes[0].EveError)-1])
}

// Progress, links, processes and the end.
func TestHubProgressAndEnd(t *testing.T) {
	h := controlHub(10)
	h.BeginPoint(0)
	h.Progress(4)
	h.Ready(0, []string{"plant.0", "cloud.0"})
	h.ProcessDone(Proc{Point: 0, Name: "plant.0", State: "ok", PeakRSSBytes: 1 << 20, Invalid: map[string]uint64{"late": 2}})
	h.PointDone(0, 10, []fault.LinkStats{{Link: "plant.0->cloud.0", Sent: 110, Delivered: 110}})
	st, err := h.State()
	require.NoError(t, err)
	require.Equal(t, 10, st.EpisodesDone)
	require.Equal(t, 100, st.StepsDone)
	require.NotNil(t, st.RemainingSec)
	require.Len(t, st.Processes, 2)
	require.Equal(t, "ok", st.Processes[0].State)
	require.Equal(t, "ready", st.Processes[1].State)
	require.Len(t, st.Links, 1)
	select {
	case <-h.Ended():
		t.Fatal("ended before Finish")
	default:
	}
	h.Finish("ok", "")
	<-h.Ended()
	var nilHub *Hub // the launcher without --ui
	nilHub.Progress(1)
	nilHub.Control(0, &trace.ControlRecord{})
}

// A started process's resident set is sampled while it runs (this test process stands in for
// a child), kept at its last sample once gone, and shown on /metrics while running.
func TestHubSamplesRSS(t *testing.T) {
	h := controlHub(10)
	h.BeginPoint(0)
	h.Started(0, []string{"plant.0", "cloud.0"}, []int{os.Getpid(), 1 << 30})
	h.SampleRSS()
	st, err := h.State()
	require.NoError(t, err)
	require.Equal(t, os.Getpid(), st.Processes[0].PID)
	if runtime.GOOS == "linux" {
		require.Greater(t, st.Processes[0].RSSBytes, int64(1<<20))
		// the peak is the largest sample so far (a sampler of the hub's own may have sampled
		// before, when the process was larger)
		require.GreaterOrEqual(t, st.Processes[0].RSSMaxBytes, st.Processes[0].RSSBytes)
		body := scrapeHub(t, h)
		require.Contains(t, body, `dpsim_process_rss_bytes{process="plant.0"}`)
		require.NotContains(t, body, `dpsim_process_rss_bytes{process="cloud.0"}`, "no such process: nothing sampled")
	}
	require.Zero(t, st.Processes[1].RSSBytes)
	h.ProcessDone(Proc{Point: 0, Name: "plant.0", State: "ok", PeakRSSBytes: 1 << 20})
	st, err = h.State()
	require.NoError(t, err)
	require.True(t, st.Processes[0].Finished)
	require.Equal(t, os.Getpid(), st.Processes[0].PID, "the samples outlive the process")
}

// The lateness histogram: counts per bucket (a release before its tick is on time), its
// summary in the state and a Prometheus histogram on /metrics.
func TestHubLatenessHistogram(t *testing.T) {
	h := controlHub(10)
	st, err := h.State()
	require.NoError(t, err)
	require.Nil(t, st.Lateness, "none observed")
	for _, s := range []float64{-0.001, 0.00005, 0.0015, 0.0015, 0.3, 7} {
		h.Released("plant.0", 0, 0, []float64{1}, s)
	}
	h.Released("cloud.0", 0, 0, []float64{1}, 0.001)
	st, err = h.State()
	require.NoError(t, err)
	require.Len(t, st.Lateness, 2)
	l := st.Lateness["plant"]
	require.Equal(t, uint64(6), l.N)
	require.Equal(t, 7.0, l.MaxSec)
	require.Len(t, l.Counts, len(LatenessBuckets)+1)
	require.Equal(t, uint64(2), l.Counts[0], "<= 100 us")
	require.Equal(t, uint64(2), l.Counts[4], "(1 ms, 2 ms]")
	require.Equal(t, uint64(1), l.Counts[len(l.Counts)-1], "+Inf")
	body := scrapeHub(t, h)
	require.Contains(t, body, `dpsim_step_lateness_seconds_bucket{role="plant",le="0.002"} 4`)
	require.Contains(t, body, `dpsim_step_lateness_seconds_bucket{role="plant",le="+Inf"} 6`)
	require.Contains(t, body, `dpsim_step_lateness_seconds_count{role="plant"} 6`)
	require.Contains(t, body, `dpsim_step_lateness_seconds_count{role="cloud"} 1`)
}

func scrapeHub(t *testing.T, h *Hub) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(h.registry(), promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	return rec.Body.String()
}

// The stream of a realtime run: the episode in progress, step by step as its messages are
// published, one line per publisher (its first value), thinned, reset by the next episode.
func TestHubStream(t *testing.T) {
	h := controlHub(1000) // stride 3
	for step := 0; step < 10; step++ {
		if step < 9 { // the cloud's first message comes first: the plant's line is still first
			h.Released("cloud.0", 4, step, []float64{-float64(step), 7}, 0)
		}
		h.Released("plant.0", 4, step, []float64{float64(step)}, 0)
	}
	h.Released("plant.0", 3, 12, []float64{1}, 0) // a late copy of the previous episode
	st, err := h.State()
	require.NoError(t, err)
	s := st.Stream
	require.Equal(t, 4, s.Episode)
	require.Equal(t, []int{0, 3, 6, 9}, s.T)
	require.Equal(t, []string{"plant.0", "cloud.0"}, s.Senders)
	require.Equal(t, 9.0, s.Values[0][3])
	require.Equal(t, -6.0, s.Values[1][2])
	require.True(t, math.IsNaN(h.stream.Values[1][3]), "step 9 of the cloud not yet (null in JSON)")
	for _, n := range []string{"agent.10", "agent.2", "host.0"} {
		h.Released(n, 4, 0, []float64{1}, 0)
	}
	require.Equal(t, []string{"plant.0", "cloud.0", "agent.2", "agent.10"}, h.stream.Senders, "MaxComponents, in order")
	require.Equal(t, 1.0, h.stream.Values[3][0])
	h.Released("plant.0", 5, 0, []float64{2}, 0)
	st, err = h.State()
	require.NoError(t, err)
	require.Equal(t, 5, st.Stream.Episode)
	require.Equal(t, []int{0}, st.Stream.T)
}
