package replay_test

import (
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/busrec"
	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/wire"
)

// consensusRecording records a signed run of consensus-gaussian (three sweep points, three
// episodes each, in flight as one group) over NATS and returns the file and the eavesdropper
// metrics of each point in its summary.json.
func consensusRecording(t *testing.T) (string, []metrics.Series) {
	dir := t.TempDir()
	code, _, stderr := dpsim(t, "run", dpsimtest.Scenario("consensus-gaussian"), "--episodes", "3", "--inflight", "3", "--sign",
		"--out", dir, "--record", "bus.mcap", "--log-level", "warn", "--progress=false")
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var sum struct {
		Points []struct {
			Metrics metrics.Results `json:"metrics"`
		} `json:"points"`
	}
	require.NoError(t, json.Unmarshal(data, &sum))
	require.Len(t, sum.Points, 3)
	var eve []metrics.Series
	for _, p := range sum.Points {
		eve = append(eve, p.Metrics.Consensus.EveSqError)
	}
	return filepath.Join(dir, "bus.mcap"), eve
}

// The acceptance test: dpsim replay --check re-runs a recording into a fresh eavesdropper
// process and gets the recorded run's eavesdropper metrics bit for bit - the metrics of its
// summary.json, which the recording holds - and fails, naming the difference, on a copy of
// the recording with one data value changed.
func TestCheckRerun(t *testing.T) {
	path, eve := consensusRecording(t)
	c, err := busrec.Scan(path, nil)
	require.NoError(t, err)
	require.Contains(t, c.Attachments, busrec.ScenarioAttachment)
	for k, want := range eve {
		var got metrics.Series
		require.NoError(t, json.Unmarshal([]byte(c.Metadata[busrec.PointMetadataName(k)]["eve_sq_error"]), &got))
		require.Equal(t, bits(want.Mean), bits(got.Mean), "point %d: the recording holds summary.json's metrics", k)
		require.Equal(t, want.N, got.N)
		require.Positive(t, want.N[len(want.N)-1])
	}

	kept := filepath.Join(t.TempDir(), "check")
	code, stdout, stderr := dpsim(t, "replay", path, "--check", "--out", kept)
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	require.Equal(t, 3, strings.Count(stdout, "gives the recorded eavesdropper metrics bit for bit (3 episodes)"), stdout)
	// --out keeps the fresh eavesdropper's files, a folder per point, private
	fi, err := os.Stat(kept)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	points, err := os.ReadDir(kept)
	require.NoError(t, err)
	require.Len(t, points, 3, "a folder per point")
	code, _, stderr = dpsim(t, "replay", path, "--check", "--out", kept)
	require.Equal(t, 2, code, "a folder that is not empty is refused: %s", stderr)
	require.Contains(t, stderr, "not empty")

	bad := filepath.Join(t.TempDir(), "bad.mcap")
	what := corrupt(t, path, bad)
	code, stdout, stderr = dpsim(t, "replay", bad, "--check")
	t.Logf("changed %s:\n%s", what, stdout)
	require.Equal(t, 1, code, "%s\n%s", stdout, stderr)
	require.Contains(t, stdout, "point 0 (run "+c.Metadata[busrec.MetadataName]["run_id_p0"]+"): MISMATCH", what)
	require.Contains(t, stdout, "mismatch: eve_sq_error: step 2: mean = ", what)
	require.Contains(t, stderr, "the re-run differs from the recorded run")
	require.Equal(t, 2, strings.Count(stdout, "bit for bit"), "the other points are unchanged: %s", stdout)

	// without its headers a group's message is no message of the episodes in flight: the
	// eavesdropper drops it, and the re-run says so (with a short --timeout: the eavesdropper
	// waits it out at each step that lacks its messages)
	bare := filepath.Join(t.TempDir(), "bare.mcap")
	rewrite(t, path, bare, "100ms", func(m busrec.Message) (map[string][]string, []byte) { return nil, m.Data })
	code, stdout, stderr = dpsim(t, "replay", bare, "--check")
	require.Equal(t, 1, code, "%s\n%s", stdout, stderr)
	require.Contains(t, stdout, "0 with NATS headers")
	require.Equal(t, 3, strings.Count(stdout, ": MISMATCH"), stdout)
}

// A recording of a run with episodes in flight and signatures holds each data message's
// headers (Dpsim-Episodes, Dpsim-Sig, the JSON payload as sent), and a replay publishes them.
func TestReplayHeaders(t *testing.T) {
	path, _ := consensusRecording(t)
	want := recorded(t, path)
	data := 0
	_, err := busrec.Scan(path, func(m busrec.Message) error {
		sub, err := wire.ParseSubject(m.Topic)
		require.NoError(t, err)
		if !sub.IsCtl() {
			data++
			require.NotNil(t, m.Header, m.Topic)
			require.Equal(t, []string{"3"}, m.Header.Headers[wire.HeaderEpisodes], m.Topic)
			require.NotEmpty(t, m.Header.Headers[wire.HeaderSig], m.Topic)
			require.True(t, m.Header.AsSent)
		}
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, data)
	require.Equal(t, data, withHeader(want, wire.HeaderEpisodes))

	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	got := listen(t, srv.URL())
	code, _, stderr := dpsim(t, "replay", path, "--nats-url", srv.URL(), "--speed", "0")
	require.Equal(t, 0, code, stderr)
	require.Eventually(t, func() bool { return len(got()) >= len(want) }, time.Minute, 10*time.Millisecond)
	require.Equal(t, want, got())
}

func bits(v []float64) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = math.Float64bits(x)
	}
	return out
}

// corrupt writes a copy of the recording src to dst (rewrite) with one value changed: agent
// 3's y of step 2 of point 0's first episode, plus 1. It says what it changed.
func corrupt(t *testing.T, src, dst string) string {
	c, err := busrec.Scan(src, nil)
	require.NoError(t, err)
	run0 := c.Metadata[busrec.MetadataName]["run_id_p0"]
	what := ""
	rewrite(t, src, dst, "", func(m busrec.Message) (map[string][]string, []byte) {
		var h map[string][]string
		if m.Header != nil {
			h = m.Header.Headers
		}
		if what != "" || m.Topic != "dpsim."+run0+".agent.3.y" {
			return h, m.Data
		}
		var w wire.Message
		require.NoError(t, json.Unmarshal(m.Data, &w))
		if w.Step != 2 {
			return h, m.Data
		}
		what = m.Topic + " step 2 value " + string(mustJSON(t, w.Values[0]))
		w.Values[0]++
		data, err := wire.EncodeJSON(nil, &w)
		require.NoError(t, err)
		return h, data
	})
	require.NotEmpty(t, what, "no message to change")
	return what
}

// rewrite writes a copy of the recording src to dst with the busrec writer - its metadata (with
// the processes' timeout set to timeout, unless ""), attachments, and each message with the
// headers and payload edit returns for it.
func rewrite(t *testing.T, src, dst, timeout string, edit func(busrec.Message) (map[string][]string, []byte)) {
	head, err := busrec.Scan(src, nil)
	require.NoError(t, err)
	md := maps.Clone(head.Metadata[busrec.MetadataName])
	if timeout != "" {
		md["timeout"] = timeout
	}
	rec, err := busrec.Create(busrec.Options{Path: dst, Perm: 0o600, Limit: math.MaxInt64, Metadata: md})
	require.NoError(t, err)
	for name, md := range head.Metadata {
		if strings.HasPrefix(name, busrec.MetadataName+"/point/") {
			require.NoError(t, rec.WriteMetadata(name, md))
		}
	}
	for name, a := range head.Attachments {
		require.NoError(t, rec.Attach(name, a.MediaType, a.Data, time.Now()))
	}
	_, err = busrec.Scan(src, func(m busrec.Message) error {
		h, data := edit(m)
		rec.RecordHeaders(m.Topic, h, data, time.Unix(0, int64(m.LogTime)))
		return nil
	})
	require.NoError(t, err)
	_, err = rec.Close()
	require.NoError(t, err)
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// A group of episodes in flight larger than a session's default buffer of ctl events (40
// episodes at once: the eavesdropper answers 40 ctl.done together) re-runs bit for bit.
func TestCheckRerunLargeGroup(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := dpsim(t, "run", dpsimtest.Scenario("cloud-vehicle"), "--episodes", "40", "--inflight", "40",
		"--out", dir, "--record", "bus.mcap", "--log-level", "warn", "--progress=false")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr := dpsim(t, "replay", filepath.Join(dir, "bus.mcap"), "--check")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	require.Contains(t, stdout, "gives the recorded eavesdropper metrics bit for bit (40 episodes)")
}

// A recording cut by its size limit is not re-run (its traffic is incomplete): --check says
// why and passes on its messages alone.
func TestCheckLimitedNotRerun(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := dpsim(t, "run", dpsimtest.Scenario("cloud-vehicle"), "--episodes", "3", "--out", dir, "--record", "bus.mcap",
		"--record-limit", "8KiB", "--log-level", "warn", "--progress=false")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr := dpsim(t, "replay", filepath.Join(dir, "bus.mcap"), "--check")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	require.Contains(t, stdout, "re-run: skipped: the recording dropped ")
	require.NotContains(t, stdout, "bit for bit")
}
