package runner

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/record"
)

// The tests of the run's loop play in-process on the fast engine, in seconds: a sweep of 4
// points (2 epsilons x 2 noise kinds) of 8 episodes of 20 steps.

func smallSweep(t *testing.T) string {
	return dpsimtest.ScenarioVariant(t, "cloud-vehicle-sweep",
		`values: \[1e-2, 5e-2, 1e-1, 5e-1, 1, 5, 10\]`, "values: [0.5, 1]",
		`values: \[structured, iid-calibrated, iid-naive\]`, "values: [structured, iid-naive]",
		`(?m)^steps: 100$`, "steps: 20", `(?m)^episodes: 500$`, "episodes: 8")
}

// watcher is an observer of the loop that records what it is told, and may act on it.
type watcher struct {
	mu        sync.Mutex
	begun     []int
	ended     []int
	completed []bool
	episodes  int
	onEnd     func(k int)
	onEpisode func(total int)
}

func (w *watcher) pointBegin(k int) { w.mu.Lock(); w.begun = append(w.begun, k); w.mu.Unlock() }
func (w *watcher) episodesDone(n int) {
	w.mu.Lock()
	w.episodes += n
	total := w.episodes
	w.mu.Unlock()
	if w.onEpisode != nil {
		w.onEpisode(total)
	}
}
func (w *watcher) pointEnd(k int, _ record.PointSummary, _ *metrics.Results, completed bool) {
	w.mu.Lock()
	w.ended, w.completed = append(w.ended, k), append(w.completed, completed)
	w.mu.Unlock()
	if w.onEnd != nil {
		w.onEnd(k)
	}
}

func execute(t *testing.T, ctx context.Context, w *watcher, args ...string) (*Outcome, error) {
	t.Helper()
	o, err := testParse(args, nil, nil)
	require.NoError(t, err)
	o.observers = []observer{w}
	return Execute(ctx, o, io.Discard, zerolog.Nop())
}

func pointMetrics(t *testing.T, s *record.Summary) []string {
	t.Helper()
	var out []string
	for _, p := range s.Points {
		b, err := json.Marshal(p.Metrics)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	return out
}

// The loop plays every point once, in order, tells every observer, and the summary has them.
func TestLoopPlaysEveryPointOnce(t *testing.T) {
	scn, out := smallSweep(t), t.TempDir()
	w := &watcher{}
	res, err := execute(t, context.Background(), w, scn, "--engine", "fast", "--seed", "7", "--out", out)
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 2, 3}, w.begun)
	require.Equal(t, []int{0, 1, 2, 3}, w.ended)
	require.Equal(t, []bool{true, true, true, true}, w.completed)
	require.Equal(t, 4*8, w.episodes, "progress reaches the run's total")
	require.True(t, res.Written)
	require.Equal(t, record.StatusOK, res.Summary.Status)
	require.Len(t, res.Summary.Points, 4)
	for k, p := range res.Summary.Points {
		require.Equal(t, k, p.Index)
		require.Equal(t, 8, p.Episodes)
		require.NotNil(t, p.Metrics)
	}
	require.NoFileExists(t, filepath.Join(out, ResumeFile), "a completed run leaves no resume state")
	require.FileExists(t, filepath.Join(out, record.FileName))
}

// A run interrupted after its second point keeps a resume state with the two points completed
// (the checkpoint of a completed point); resumed, it plays the other two only, and its results
// are an uninterrupted run's, bit for bit.
func TestLoopResumesWhereInterrupted(t *testing.T) {
	scn := smallSweep(t)
	whole, err := execute(t, context.Background(), &watcher{}, scn, "--engine", "fast", "--seed", "7", "--out", t.TempDir())
	require.NoError(t, err)

	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &watcher{onEnd: func(k int) {
		if k == 1 {
			cancel()
		}
	}}
	res, err := execute(t, ctx, w, scn, "--engine", "fast", "--seed", "7", "--out", out)
	require.ErrorIs(t, err, launch.ErrInterrupted)
	require.Equal(t, record.StatusInterrupted, res.Summary.Status)
	require.Equal(t, []bool{true, true, false}, w.completed, "the third point stopped by the interruption")
	data, err := os.ReadFile(filepath.Join(out, ResumeFile))
	require.NoError(t, err)
	var st struct {
		Done []json.RawMessage `json:"done"`
	}
	require.NoError(t, json.Unmarshal(data, &st))
	require.Len(t, st.Done, 2, "the resume state holds the points completed")

	again := &watcher{}
	res, err = execute(t, context.Background(), again, scn, "--resume", out)
	require.NoError(t, err)
	require.Equal(t, []int{2, 3}, again.begun, "a resumed run plays only the points not completed")
	require.Equal(t, record.StatusOK, res.Summary.Status)
	require.Equal(t, pointMetrics(t, whole.Summary), pointMetrics(t, res.Summary), "the resumed run's results are the uninterrupted run's")
	require.NoFileExists(t, filepath.Join(out, ResumeFile))
}

// A run cancelled within a point stops with ErrInterrupted, says so in its summary and still
// writes it (the partial results with the status).
func TestLoopInterruptedWithinAPoint(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &watcher{onEpisode: func(total int) {
		if total >= 3 {
			cancel()
		}
	}}
	res, err := execute(t, ctx, w, smallSweep(t), "--engine", "fast", "--seed", "7", "--out", out)
	require.True(t, errors.Is(err, launch.ErrInterrupted), "%v", err)
	require.NotNil(t, res)
	require.True(t, res.Written)
	require.Equal(t, record.StatusInterrupted, res.Summary.Status)
	require.Equal(t, []int{0}, w.begun, "nothing after the interrupted point")
	require.Equal(t, []bool{false}, w.completed)
	var onDisk record.Summary
	data, err := os.ReadFile(filepath.Join(out, record.FileName))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &onDisk))
	require.Equal(t, record.StatusInterrupted, onDisk.Status)
	require.NotEmpty(t, onDisk.Error)
}
