package run_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/foxglove/mcap/go/mcap"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/busrec"
	"github.com/dpsim/dpsim/pkg/wire"
)

// recorded is a recording read back with the MCAP reader: its summary section's statistics,
// and each channel's messages (decoded, their sent time cleared) in the file's order, and the
// subjects in the order of the log times. The companion channels of NATS headers
// ("<subject>#headers") are counted apart: headers and headerChans.
type recorded struct {
	info        *mcap.Info
	byChan      map[string][]wire.Message
	order       []string // the subjects in log-time order
	times       []uint64 // their log times
	headers     uint64   // header records
	headerChans int
	// routes are each subject's header records but their signatures (sequence number:
	// headers).
	routes   map[string]map[uint32]map[string][]string
	subjects int // channels of subjects
}

// readRecording reads the recording at path: every channel has its schema (the one of its
// subject, JSON Schema) and JSON messages, and the summary section is present.
func readRecording(t *testing.T, path string) recorded {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rd, err := mcap.NewReader(f)
	require.NoError(t, err)
	info, err := rd.Info()
	require.NoError(t, err)
	require.NotNil(t, info.Statistics, "the summary section")
	r := recorded{info: info, byChan: map[string][]wire.Message{}, routes: map[string]map[uint32]map[string][]string{}}
	for _, ch := range info.Channels {
		s := info.Schemas[ch.SchemaID]
		require.NotNil(t, s, "%s: its schema", ch.Topic)
		require.Equal(t, "jsonschema", s.Encoding)
		require.Equal(t, "json", ch.MessageEncoding)
		if _, ok := busrec.IsHeaders(ch.Topic); ok {
			require.Equal(t, busrec.HeadersSchemaName, s.Name, ch.Topic)
			r.headerChans++
			continue
		}
		require.Equal(t, "dpsim/"+strings.TrimSuffix(busrec.SchemaFor(ch.Topic), ".json"), s.Name)
		r.subjects++
	}
	it, err := rd.Messages(mcap.InOrder(mcap.LogTimeOrder))
	require.NoError(t, err)
	for {
		_, ch, m, err := it.NextInto(nil)
		if err != nil {
			break
		}
		if subject, ok := busrec.IsHeaders(ch.Topic); ok {
			r.headers++
			var h busrec.HeaderRecord
			require.NoError(t, json.Unmarshal(m.Data, &h), ch.Topic)
			delete(h.Headers, wire.HeaderSig)
			if r.routes[subject] == nil {
				r.routes[subject] = map[uint32]map[string][]string{}
			}
			r.routes[subject][h.Seq] = h.Headers
			continue
		}
		r.order, r.times = append(r.order, ch.Topic), append(r.times, m.LogTime)
		if busrec.SchemaFor(ch.Topic) == "result.json" {
			continue
		}
		var w wire.Message
		require.NoError(t, wire.Decode(m.Data, &w), ch.Topic)
		require.Equal(t, uint64(w.SentUnixNano), m.PublishTime)
		w.SentUnixNano = 0
		r.byChan[ch.Topic] = append(r.byChan[ch.Topic], w)
	}
	require.Equal(t, info.Statistics.MessageCount, uint64(len(r.order))+r.headers)
	return r
}

// fastRecords reports whether the fast engine records subject: every data subject, the
// launcher's ctl.episode and ctl.stop; not the processes' ctl.ready, ctl.done, ctl.rejoin and
// ctl.result.
func fastRecords(t *testing.T, subject string) bool {
	sub, err := wire.ParseSubject(subject)
	require.NoError(t, err)
	return !sub.IsCtl() || (len(sub.Ctl) == 1 && (sub.Ctl[0] == wire.CtlEpisode || sub.Ctl[0] == wire.CtlStop))
}

// The same scenario and seed recorded over NATS (one episode in flight) and with the fast
// engine: both files read back with the MCAP reader with every subject a channel with its
// schema, their message counts those summary.json says were published and recorded, and the
// summary section present; the fast file holds every data subject of the NATS one with the same
// messages in the same order (values bit for bit, sequence numbers, steps, episodes; only the
// sent times differ: simulated), and the launcher's ctl.episode alike, but none of the
// processes' ctl subjects. Its log times put ctl.episode before each episode's data and
// ctl.stop last in each point.
func TestRecordFastMatchesNATS(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		points int
	}{
		{"cloud-vehicle", []string{scenarioPath("cloud-vehicle"), "--episodes", "3"}, 1},
		{"consensus-blocks", []string{scenarioPath("consensus-gaussian"), "--episodes", "2", "--agents-per-process", "3"}, 3},
		{"consensus-loss-sweep", []string{scenarioPath("faults-consensus-loss"), "--episodes", "2"}, 8},
		{"vehicle-delay-sweep", []string{scenarioPath("faults-vehicle-latency"), "--episodes", "1"}, 11},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := map[string]recorded{}
			pub := map[string]uint64{}
			for _, eng := range []string{"nats", "fast"} {
				dir := t.TempDir()
				args := append([]string{"run"}, c.args...)
				args = append(args, "--engine", eng, "--seed", "7", "--run-id", "rcmp", "--out", dir, "--record", "bus.mcap",
					"--log-level", "warn", "--progress=false")
				if eng == "nats" {
					args = append(args, "--inflight", "1", "--encoding", "binary")
				}
				code, _, stderr := runDpsim(t, 3*time.Minute, args...)
				require.Equal(t, 0, code, stderr)
				sum := readRecordSummary(t, dir)
				require.True(t, sum.Recording.Complete, sum.Recording.Error)
				require.Zero(t, sum.Recording.Dropped)
				r := readRecording(t, filepath.Join(dir, "bus.mcap"))
				msgs := r.info.Statistics.MessageCount - r.headers // MCAP counts the header records too
				require.Equal(t, sum.Recording.Messages, msgs, eng)
				require.Equal(t, sum.Recording.Published, msgs, "%s: every message published was recorded", eng)
				require.Equal(t, sum.Recording.Channels, r.subjects, eng)

				rec[eng], pub[eng] = r, sum.Recording.Published
			}
			nats, fast := rec["nats"], rec["fast"]
			want, stops := uint64(0), 0
			for topic, msgs := range nats.byChan {
				if !fastRecords(t, topic) {
					require.NotContains(t, fast.byChan, topic, "no process, no %s", topic)
					continue
				}
				if strings.HasSuffix(topic, ".ctl.stop") {
					stops++
					require.Len(t, fast.byChan[topic], 1, "%s: once after the point's last episode", topic)
					continue
				}
				want += uint64(len(msgs))
				require.Equal(t, msgs, fast.byChan[topic], "%s: message by message", topic)
				require.Equal(t, nats.routes[topic], fast.routes[topic], "%s: the routes (NATS headers), message by message", topic)
			}
			for topic := range fast.byChan {
				require.Contains(t, nats.byChan, topic)
			}
			require.Equal(t, want+uint64(stops), pub["fast"], "the fast run published what the NATS processes and launcher did, one ctl.stop per point")
			require.Equal(t, c.points, stops, "a ctl.stop per point")
			checkFastOrder(t, fast)
		})
	}
}

// checkFastOrder checks the fast recording's global order, read by log time (strictly
// increasing): in each point ctl.episode e, then episode e's data, ..., ctl.stop.
func checkFastOrder(t *testing.T, r recorded) {
	t.Helper()
	var run string
	ep, idx := -1, map[string]int{}
	for i, topic := range r.order {
		if i > 0 {
			require.Greater(t, r.times[i], r.times[i-1])
		}
		sub, err := wire.ParseSubject(topic)
		require.NoError(t, err)
		m := r.byChan[topic][idx[topic]]
		idx[topic]++
		switch {
		case sub.IsCtl() && sub.Ctl[0] == wire.CtlEpisode:
			if sub.Run != run {
				require.Equal(t, -1, ep, "%s began before the point before it stopped", sub.Run)
				run = sub.Run
			}
			require.Equal(t, ep+1, m.Episode, "episodes in order")
			ep = m.Episode
		case sub.IsCtl():
			require.Equal(t, wire.CtlStop, sub.Ctl[0])
			require.Equal(t, run, sub.Run)
			ep = -1
		default:
			require.Equal(t, run, sub.Run)
			require.Equal(t, ep, m.Episode, "%s: within its episode", topic)
		}
	}
	require.Equal(t, -1, ep, "the last point stopped")
}

// The fast engine's recording is bounded by --record-limit like the NATS one: past it messages
// are dropped and counted, the file closes with its summary section, and what was published
// is what was written and dropped.
func TestRecordFastLimit(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 2*time.Minute, "run", scenarioPath("cloud-vehicle"), "--engine", "fast", "--episodes", "3", "--out", dir,
		"--record", "bus.mcap", "--record-limit", "8KiB", "--log-level", "warn", "--progress=false")
	require.Equal(t, 0, code, stderr)
	sum := readRecordSummary(t, dir)
	r := sum.Recording
	require.True(t, r.Complete, r.Error)
	require.Positive(t, r.Dropped)
	require.LessOrEqual(t, r.Bytes, int64(8<<10))
	require.Equal(t, uint64(3*100*2+3+1), r.Published, "yhat and u at each of 100 steps of 3 episodes, 3 ctl.episode, 1 ctl.stop")
	require.Equal(t, r.Published, r.Messages+r.Dropped)
	rd := readRecording(t, filepath.Join(dir, "bus.mcap"))
	require.Equal(t, r.Messages, rd.info.Statistics.MessageCount-rd.headers)
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "dropped past --record-limit")
}
