package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/runner"
	"github.com/dpsim/dpsim/pkg/bus"
)

// A default run (embedded server) prints its server and the exact watch command when it starts,
// and writes a read-only observer's NATS CLI context: nats.go connecting with that file's
// credentials reads the run's data, is refused on the challenger's line and on every publish,
// and the file is gone when the run ends (the server and its account end with it).
func TestObserverWatchesTheRun(t *testing.T) {
	dir := t.TempDir()
	// enough episodes for a few seconds of traffic to watch
	l := start(t, "run", scenarioPath("cloud-vehicle"), "--runs", "2000", "--trace-episodes", "2",
		"--out", dir, "--log-level", "warn", "--run-id", "watched")
	ctxFile := filepath.Join(dir, runner.ObserverFile)
	var c bus.ObserverContext
	require.Eventually(t, func() bool {
		var err error
		c, err = bus.ReadObserverContext(ctxFile)
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "the observer context is written when the server starts")
	st, err := os.Stat(ctxFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "it holds a password")
	// printed right after the server started (the file is written a moment before)
	watch := "watch: nats --context " + ctxFile + " sub 'dpsim.>'"
	require.Eventually(t, func() bool { return strings.Contains(l.stderr.String(), watch) }, 10*time.Second, 10*time.Millisecond,
		"the exact command, printed at start: %s", l.stderr.String())
	require.Contains(t, l.stderr.String(), c.URL)

	errs := make(chan error, 16)
	nc, err := nats.Connect(c.URL, nats.UserInfo(c.User, c.Password), nats.Name("test-observer"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	require.NoError(t, err)
	defer nc.Close()
	var mu sync.Mutex
	subjects := map[string]int{}
	_, err = nc.Subscribe("dpsim.>", func(m *nats.Msg) {
		mu.Lock()
		subjects[m.Subject]++
		mu.Unlock()
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return subjects["dpsim.watched.plant.0.yhat"] > 0 && subjects["dpsim.watched.cloud.0.u"] > 0
	}, 20*time.Second, 20*time.Millisecond, "the observer reads the run's data")

	// Refused: the challenger's line (it carries secrets) and any publish.
	_, err = nc.Subscribe("dpsim-challenger.>", func(*nats.Msg) {})
	require.NoError(t, err) // the refusal comes back asynchronously
	require.NoError(t, nc.Publish("dpsim.watched.cloud.0.u", []byte("{}")))
	require.NoError(t, nc.Flush())
	var refused []string
	deadline := time.After(5 * time.Second)
	for len(refused) < 2 {
		select {
		case err := <-errs:
			refused = append(refused, err.Error())
		case <-deadline:
			t.Fatalf("refusals: %v", refused)
		}
	}
	joined := strings.Join(refused, "; ")
	require.Contains(t, joined, `Subscription to "dpsim-challenger.>"`)
	require.Contains(t, joined, `Publish to "dpsim.watched.cloud.0.u"`)

	require.Equal(t, 0, l.wait(t, 60*time.Second), l.stderr.String())
	sum := readSummary(t, dir)
	require.Equal(t, "ok", sum.Status, "the observer's refused publish changed nothing")
	_, err = os.Stat(ctxFile)
	require.ErrorIs(t, err, os.ErrNotExist, "the observer's account ended with the run")
}
