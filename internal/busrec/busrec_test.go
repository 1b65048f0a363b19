package busrec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/foxglove/mcap/go/mcap"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/wire"
)

// The copies in schemas/ are the files of docs/schema (go test ./pkg/schema -update rewrites
// those: copy them here after).
func TestSchemasMatchDocs(t *testing.T) {
	entries, err := schemaFiles.ReadDir("schemas")
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		mine, err := schemaData(e.Name())
		require.NoError(t, err)
		docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "schema", e.Name()))
		require.NoError(t, err)
		require.True(t, bytes.Equal(mine, docs), "internal/busrec/schemas/%s differs from docs/schema/%s: copy it", e.Name(), e.Name())
	}
}

func TestSchemaFor(t *testing.T) {
	for subject, want := range map[string]string{
		"dpsim.r1.plant.0.yhat":              "data-yhat.json",
		"dpsim.r1.cloud.2.u":                 "data-u.json",
		"dpsim.r1.agent.3.y":                 "data-y.json",
		"dpsim.r1.host.0.y":                  "data-y.json",
		"dpsim.r1.ctl.ready.plant.0":         "ctl-ready.json",
		"dpsim.r1.ctl.done.agent.1":          "ctl-done.json",
		"dpsim.r1.ctl.result.cloud.0":        "result.json",
		"dpsim.r1.ctl.stop":                  "ctl-stop.json",
		"dpsim.r1.ctl.episode":               "message.json",
		"dpsim-challenger.r1.x0":             "message.json",
		"dpsim.r1.ctl.rejoin.eavesdropper.0": "ctl-rejoin.json",
	} {
		require.Equal(t, want, SchemaFor(subject), subject)
		_, err := schemaData(want)
		require.NoError(t, err, want)
	}
}

func msg(t *testing.T, step int, enc wire.Encoding) []byte {
	m := wire.Message{V: 1, Run: "r1", Step: step, Sender: "plant.0", SentUnixNano: 1_700_000_000_000_000_000 + int64(step), Kind: "yhat", Values: []float64{0.5, float64(step)}}
	b, err := wire.Encode(nil, &m, enc)
	require.NoError(t, err)
	return b
}

// A binary message is recorded as its JSON encoding, with its sent time as publish time; the
// closed file has its summary; the limit drops and counts.
func TestRecordReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.mcap")
	one := int64(len(msg(t, 0, wire.JSON)) + perMessage)
	r, err := Create(Options{Path: path, Perm: 0o644, Limit: 10 * one, Metadata: map[string]string{"scenario": "s"}})
	require.NoError(t, err)
	recv := time.Unix(1_800_000_000, 0)
	for i := range 12 {
		enc := wire.JSON
		if i%2 == 1 {
			enc = wire.Binary
		}
		r.Record("dpsim.r1.plant.0.yhat", msg(t, i, enc), recv)
	}
	st, err := r.Close()
	require.NoError(t, err)
	require.Equal(t, uint64(10), st.Messages)
	require.Equal(t, uint64(2), st.Dropped)

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rd, err := mcap.NewReader(f)
	require.NoError(t, err)
	info, err := rd.Info()
	require.NoError(t, err)
	require.NotNil(t, info.Statistics, "summary section")
	require.Equal(t, uint64(10), info.Statistics.MessageCount)
	require.Len(t, info.Channels, 1)

	step := 0
	c, err := Scan(path, func(m Message) error {
		var w wire.Message
		require.NoError(t, json.Unmarshal(m.Data, &w), "JSON, also for a binary message")
		require.Equal(t, step, w.Step)
		require.Equal(t, uint64(w.SentUnixNano), m.PublishTime)
		require.Equal(t, uint64(recv.UnixNano()), m.LogTime)
		require.Equal(t, "dpsim/data-yhat", m.Schema)
		step++
		return nil
	})
	require.NoError(t, err)
	require.True(t, c.Complete, c.Truncated)
	require.Equal(t, "s", c.Metadata[MetadataName]["scenario"])
	require.Equal(t, "2", c.Metadata[MetadataName+"/counts"]["dropped"])
}

// A recording cut anywhere (a killed writer) reads back up to its last complete chunk.
func TestScanTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.mcap")
	r, err := Create(Options{Path: path, Perm: 0o644, ChunkSize: 1 << 10})
	require.NoError(t, err)
	for i := range 500 {
		r.Record(fmt.Sprintf("dpsim.r1.plant.%d.yhat", i%3), msg(t, i, wire.JSON), time.Now())
	}
	_, err = r.Close()
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	prev := uint64(0)
	for _, cut := range []int{len(data) / 4, len(data) / 2, len(data) * 3 / 4, len(data) - 20} {
		require.NoError(t, os.WriteFile(path, data[:cut], 0o644))
		c, err := Scan(path, nil)
		require.NoError(t, err)
		require.False(t, c.Complete)
		require.NotEmpty(t, c.Truncated)
		require.Greater(t, c.Messages, prev, "more of the file, more messages")
		require.LessOrEqual(t, c.Messages, uint64(500))
		prev = c.Messages
	}
}

// A message's NATS headers are recorded on the companion channel "<subject>#headers" and read
// back with it; a binary message's record says it is not as sent, and a replay of it drops
// its signature; a message without headers has none; the subject's channel keeps its schema.
func TestHeaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.mcap")
	r, err := Create(Options{Path: path, Perm: 0o600})
	require.NoError(t, err)
	const subj = "dpsim.r1.plant.0.yhat"
	group := map[string][]string{wire.HeaderEpisodes: {"4"}, wire.HeaderSig: {"c2ln"}}
	r.RecordHeaders(subj, group, msg(t, 0, wire.JSON), time.Now())
	r.RecordHeaders(subj, nil, msg(t, 1, wire.JSON), time.Now())
	r.RecordHeaders(subj, group, msg(t, 2, wire.Binary), time.Now())
	r.Record(subj, msg(t, 3, wire.JSON), time.Now())
	st, err := r.Close()
	require.NoError(t, err)
	require.Equal(t, uint64(4), st.Messages)
	require.Equal(t, uint64(2), st.Headers)
	require.Equal(t, 1, st.Channels, "the subjects: not their companion channels")

	var got []*HeaderRecord
	c, err := Scan(path, func(m Message) error {
		require.Equal(t, subj, m.Topic)
		require.Equal(t, uint32(len(got)+1), m.Sequence)
		got = append(got, m.Header)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, uint64(4), c.Messages)
	require.Equal(t, uint64(2), c.Headers)
	require.Len(t, c.Channels, 1)
	require.Equal(t, &HeaderRecord{Seq: 1, Headers: group, AsSent: true}, got[0])
	require.Nil(t, got[1])
	require.Equal(t, &HeaderRecord{Seq: 3, Headers: group, AsSent: false}, got[2])
	require.Nil(t, got[3])
	require.Equal(t, group, ReplayHeader(got[0]), "as sent: the signature verifies")
	require.Equal(t, map[string][]string{wire.HeaderEpisodes: {"4"}}, ReplayHeader(got[2]), "recorded as JSON: no signature")
	require.Nil(t, ReplayHeader(&HeaderRecord{Headers: map[string][]string{wire.HeaderSig: {"x"}}}))

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rd, err := mcap.NewReader(f)
	require.NoError(t, err)
	info, err := rd.Info()
	require.NoError(t, err)
	require.Equal(t, uint64(6), info.Statistics.MessageCount, "4 messages and 2 header records")
	for _, ch := range info.Channels {
		want := "dpsim/data-yhat"
		if ch.Topic == subj+HeadersSuffix {
			want = HeadersSchemaName
		} else {
			require.Equal(t, subj, ch.Topic)
		}
		require.Equal(t, want, info.Schemas[ch.SchemaID].Name)
		require.True(t, json.Valid(info.Schemas[ch.SchemaID].Data))
	}
}

// Recover keeps the headers (and whether each payload is as sent), the point metadata and the
// attachments.
func TestRecoverKeepsHeadersAttachments(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "a.mcap"), filepath.Join(dir, "b.mcap")
	r, err := Create(Options{Path: src, Perm: 0o600, Metadata: map[string]string{"seed": "5"}})
	require.NoError(t, err)
	require.NoError(t, r.Attach(ScenarioAttachment, ScenarioMediaType, []byte("name: s\n"), time.Now()))
	r.RecordHeaders("dpsim.r1.plant.0.yhat", map[string][]string{wire.HeaderGap: {"1"}}, msg(t, 0, wire.Binary), time.Now())
	require.NoError(t, r.WriteMetadata(PointMetadataName(0), map[string]string{"run_id": "r1"}))
	_, err = r.Close()
	require.NoError(t, err)
	_, st, err := Recover(src, dst, 0o600)
	require.NoError(t, err)
	require.Equal(t, uint64(1), st.Headers)
	var h *HeaderRecord
	c, err := Scan(dst, func(m Message) error { h = m.Header; return nil })
	require.NoError(t, err)
	require.Equal(t, &HeaderRecord{Seq: 1, Headers: map[string][]string{wire.HeaderGap: {"1"}}, AsSent: false}, h)
	require.Equal(t, Attachment{MediaType: ScenarioMediaType, Data: []byte("name: s\n")}, c.Attachments[ScenarioAttachment])
	require.Equal(t, "r1", c.Metadata[PointMetadataName(0)]["run_id"])
	require.Equal(t, "5", c.Metadata[MetadataName]["seed"])
}
