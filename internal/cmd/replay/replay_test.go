package replay_test

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/busrec"
	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/wire"
)

var dpsimBin string

func TestMain(m *testing.M) { os.Exit(dpsimtest.Main(m, &dpsimBin)) }

func dpsim(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(dpsimBin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Env = append(os.Environ(), "NATS_URL=")
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); !ok {
		require.NoError(t, err)
	}
	return cmd.ProcessState.ExitCode(), o.String(), e.String()
}

// recording records a small run over NATS and returns the file.
func recording(t *testing.T) string {
	dir := t.TempDir()
	code, _, stderr := dpsim(t, "run", dpsimtest.Scenario("cloud-vehicle"), "--episodes", "3", "--out", dir, "--record", "bus.mcap",
		"--log-level", "warn", "--progress=false")
	require.Equal(t, 0, code, stderr)
	return filepath.Join(dir, "bus.mcap")
}

type heard struct {
	subject string
	header  map[string][]string
	data    []byte
}

// listen subscribes to every run's subjects on the server at url and collects what it hears,
// with the NATS headers.
func listen(t *testing.T, url string) func() []heard {
	conn, err := bus.Connect(url, "test-subscriber")
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	var mu sync.Mutex
	var got []heard
	_, err = conn.SubscribeDocumentsHeaders(wire.AllRuns(), nil, func(subject string, header map[string][]string, data []byte) {
		mu.Lock()
		got = append(got, heard{subject, maps.Clone(header), append([]byte(nil), data...)})
		mu.Unlock()
	})
	require.NoError(t, err)
	require.NoError(t, conn.Flush(5*time.Second))
	return func() []heard {
		require.NoError(t, conn.Flush(5*time.Second))
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// recorded is what a replay of the recording at path publishes: every message with its headers
// (busrec.ReplayHeader).
func recorded(t *testing.T, path string) []heard {
	var want []heard
	_, err := busrec.Scan(path, func(m busrec.Message) error {
		want = append(want, heard{m.Topic, busrec.ReplayHeader(m.Header), append([]byte(nil), m.Data...)})
		return nil
	})
	require.NoError(t, err)
	return want
}

// Replayed as fast as possible onto a fresh server, every recorded message is heard by a
// subscriber of dpsim.>, in the recorded order, with its recorded payload and headers (the
// run keeps episodes in flight: its data messages carry Dpsim-Episodes).
func TestReplay(t *testing.T) {
	path := recording(t)
	want := recorded(t, path)
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	got := listen(t, srv.URL())

	code, stdout, stderr := dpsim(t, "replay", path, "--nats-url", srv.URL(), "--speed", "0")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "published 217 messages")
	require.Eventually(t, func() bool { return len(got()) >= len(want) }, time.Minute, 10*time.Millisecond)
	require.Equal(t, want, got())
	require.Positive(t, withHeader(want, wire.HeaderEpisodes), "a group of episodes in flight")
}

// withHeader counts the messages of hs that carry the header name.
func withHeader(hs []heard, name string) int {
	n := 0
	for _, h := range hs {
		if len(h.header[name]) > 0 {
			n++
		}
	}
	return n
}

// --check passes a closed recording (its re-run too) and reads a cut one to its last chunk
// (without a re-run: its end is lost); --recover makes a closed recording of the cut one with
// every message read.
func TestCheckRecover(t *testing.T) {
	path := recording(t)
	code, stdout, stderr := dpsim(t, "replay", path, "--check")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "closed (summary section present)")
	require.Contains(t, stdout, "a fresh eavesdropper gives the recorded eavesdropper metrics bit for bit (3 episodes)", "cloud control re-runs too")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	cut := filepath.Join(t.TempDir(), "cut.mcap")
	require.NoError(t, os.WriteFile(cut, data[:len(data)-100], 0o600)) // the summary section gone
	c, err := busrec.Scan(cut, nil)
	require.NoError(t, err)
	require.False(t, c.Complete)
	code, stdout, stderr = dpsim(t, "replay", cut, "--check")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "not closed")
	require.Contains(t, stdout, "re-run: skipped: the recording was not closed")

	dst := filepath.Join(t.TempDir(), "recovered.mcap")
	code, stdout, stderr = dpsim(t, "replay", cut, "--recover", dst)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "recovered")
	r, err := busrec.Scan(dst, nil)
	require.NoError(t, err)
	require.True(t, r.Complete)
	require.Equal(t, c.Messages, r.Messages)
	require.Equal(t, c.Metadata[busrec.MetadataName], r.Metadata[busrec.MetadataName])

	for _, args := range [][]string{{"replay"}, {"replay", path}, {"replay", path, "--check", "--recover", dst}, {"replay", path, "--speed", "-1", "--check"}, {"replay", path, "--out", t.TempDir()}} {
		code, _, stderr := dpsim(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
	}
}
