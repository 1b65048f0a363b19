package run_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/internal/launch"
)

// stallState is the live view's state as a stall test reads it.
type stallState struct {
	Status    string `json:"status"`
	Processes []struct {
		Key string `json:"key"`
		PID int    `json:"pid"`
	} `json:"processes"`
	Stall *struct {
		SinceSec float64           `json:"since_sec"`
		Awaiting []string          `json:"awaiting"`
		Last     map[string]string `json:"last"`
		Line     string            `json:"line"`
	} `json:"stall"`
}

func getStallState(t *testing.T, url string) stallState {
	t.Helper()
	resp, err := http.Get(dpsimtest.LivePath(url, "api/state"))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var st stallState
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

// A run whose process stops answering must not look healthy: with the eavesdropper
// stopped (SIGSTOP) the launcher says, on stderr and in the live view's state, that it waits
// for eavesdropper-0 and what it last saw of it; continued (SIGCONT), the run completes ok.
func TestStallNamesTheStoppedProcess(t *testing.T) {
	dir := t.TempDir()
	// one episode in flight: the run is long enough (hundreds of ctl round trips) that the
	// eavesdropper is stopped while it goes
	l := startLive(t, "run", scenarioPath("cloud-vehicle"), "--runs", "400", "--inflight", "1", "--out", dir,
		"--log-level", "warn", "--progress=false", "--ui")
	url := l.await(t, uiURL, 60*time.Second)

	var pid int
	for pid == 0 {
		for _, p := range getStallState(t, url).Processes {
			if p.Key == "eavesdropper-0" {
				pid = p.PID
			}
		}
		select {
		case <-l.done:
			t.Fatalf("the run ended before its processes were seen:\n%s", l.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	stopped := true
	defer func() {
		if stopped {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()

	// the wait derives from the stall's bound: the first line comes after launch.StallAfter
	// (or three times an episode's time) and a check; a busy machine gets many times that
	limit := 20 * launch.StallAfter
	line := l.await(t, regexp.MustCompile(`(?m)^dpsim run: stalled: (.*)$`), limit)
	require.Contains(t, line, "waiting for eavesdropper-0", line)
	require.Contains(t, line, "stopped", "its process state is named: %s", line)
	require.NotContains(t, line, "waiting for plant-0")

	st := getStallState(t, url)
	require.Equal(t, "running", st.Status)
	require.NotNil(t, st.Stall, "/api/state has no stall while stderr has: %s", line)
	require.Equal(t, []string{"eavesdropper-0"}, st.Stall.Awaiting)
	// what was last seen of it: its ready, or the done of an episode (when the stop landed)
	require.Regexp(t, `ctl\.(done of episode \d+|ready) [0-9.]+ s ago`, st.Stall.Last["eavesdropper-0"])
	require.Positive(t, st.Stall.SinceSec)
	require.NotEmpty(t, st.Stall.Line)

	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	stopped = false
	l.await(t, regexp.MustCompile(`(?m)^dpsim run: (progress resumed)`), limit)
	require.Equal(t, 0, l.exit(t, 5*time.Minute), l.stderr.String())
	sum := readSummary(t, dir)
	require.Equal(t, "ok", sum.Status, sum.Error)
}
