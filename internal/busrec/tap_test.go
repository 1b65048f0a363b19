package busrec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/foxglove/mcap/go/mcap"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

var (
	tapPlant = endpoint.Endpoint{Role: endpoint.Plant}
	tapCloud = endpoint.Endpoint{Role: endpoint.Cloud}
)

// tapEpisode is a two-step episode of a plant and a cloud, the cloud's step-0 message lost
// (a gap notice to the plant) and the plant's step 0 delayed to step 1 for the cloud (its
// broadcast for all but the cloud, then a copy for the cloud alone at step 1, more to follow).
func tapEpisode(ep int) []sim.Publication {
	return []sim.Publication{
		{From: tapPlant, Episode: ep, Release: 0, Step: 0, Values: []float64{0.1 + float64(ep), -3}, Except: []endpoint.Endpoint{tapCloud}},
		{From: tapCloud, Episode: ep, Release: 0, Step: 0, Gap: true, ToOne: true, To: tapPlant},
		{From: tapPlant, Episode: ep, Release: 1, Step: 1, Values: []float64{1e-300, 2}, At: 1},
		{From: tapPlant, Episode: ep, Release: 1, Step: 0, Values: []float64{0.1 + float64(ep), -3}, ToOne: true, To: tapCloud, At: 1, More: true},
		{From: tapCloud, Episode: ep, Release: 1, Step: 1, Values: []float64{0.30000000000000004}, At: 1},
	}
}

// tapRoutes are the NATS headers of tapEpisode's publications, as internal/roleproc's
// transport sends them.
var tapRoutes = []map[string][]string{
	{wire.HeaderExcept: {"cloud.0"}},
	{wire.HeaderTo: {"plant.0"}, wire.HeaderGap: {"1"}},
	nil,
	{wire.HeaderTo: {"cloud.0"}, wire.HeaderAt: {"1"}, wire.HeaderMore: {"1"}},
	nil,
}

// The tap writes, per point, ctl.episode before each episode's publications and ctl.stop
// after them: each on its subject of the point's run id with its schema, the publications as
// wire messages of their sender, stream, step and values (bit for bit through JSON), at the
// simulated clock (StepClock per step, the episodes T+3 steps apart), the log times strictly
// increasing in the file's order, which an MCAP reader ordering by log time reads back.
func TestTap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bus.mcap")
	rec, err := Create(Options{Path: path, Perm: 0o600})
	require.NoError(t, err)
	start := time.Unix(1_800_000_000, 0)
	tap := NewTap(rec, start)
	const steps = 2
	for _, run := range []string{"r1-p0", "r1-p1"} {
		require.NoError(t, tap.Point(run, steps))
		for ep := range 2 {
			tap.Episode(ep, tapEpisode(ep))
		}
		tap.Stop()
	}
	st, err := rec.Close()
	require.NoError(t, err)
	require.Equal(t, uint64(2*(2*6+1)), st.Messages)
	require.Equal(t, 2*4, st.Channels, "ctl.episode, ctl.stop and the two data subjects, per point")

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rd, err := mcap.NewReader(f)
	require.NoError(t, err)
	info, err := rd.Info()
	require.NoError(t, err)
	require.NotNil(t, info.Statistics)
	const routed = 2 * 2 * 3 // per point and episode: the broadcast, the gap notice, the copy
	require.Equal(t, st.Messages+routed, info.Statistics.MessageCount, "the messages and their header records")
	for _, ch := range info.Channels {
		require.NotNil(t, info.Schemas[ch.SchemaID], ch.Topic)
		if _, ok := IsHeaders(ch.Topic); ok {
			require.Equal(t, HeadersSchemaName, info.Schemas[ch.SchemaID].Name)
			continue
		}
		require.Equal(t, "dpsim/"+SchemaFor(ch.Topic)[:len(SchemaFor(ch.Topic))-5], info.Schemas[ch.SchemaID].Name)
	}

	type got struct {
		topic    string
		m        wire.Message
		pub, log uint64
		headers  map[string][]string
	}
	var msgs []got
	var pending *HeaderRecord // the header record of the next message on its subject
	it, err := rd.Messages(mcap.InOrder(mcap.LogTimeOrder))
	require.NoError(t, err)
	for {
		_, ch, m, err := it.NextInto(nil)
		if err != nil {
			break
		}
		if subject, ok := IsHeaders(ch.Topic); ok {
			pending = &HeaderRecord{}
			require.NoError(t, json.Unmarshal(m.Data, pending))
			require.Equal(t, subject+HeadersSuffix, ch.Topic)
			continue
		}
		var w wire.Message
		require.NoError(t, wire.Decode(m.Data, &w))
		g := got{topic: ch.Topic, m: w, pub: m.PublishTime, log: m.LogTime}
		if pending != nil {
			require.True(t, pending.AsSent)
			g.headers, pending = pending.Headers, nil
		}
		msgs = append(msgs, g)
	}
	require.Len(t, msgs, int(st.Messages))
	ms := uint64(StepClock)
	base := uint64(start.UnixNano())
	i := 0
	for p, run := range []string{"r1-p0", "r1-p1"} {
		pbase := base + uint64(p)*(2*(steps+3)+1)*ms
		for ep := range 2 {
			e := msgs[i]
			require.Equal(t, "dpsim."+run+".ctl.episode", e.topic)
			require.Equal(t, wire.CtlEpisode, e.m.Kind)
			require.Equal(t, wire.LauncherSender, e.m.Sender)
			require.Equal(t, ep, e.m.Episode)
			require.Equal(t, pbase+uint64(ep)*(steps+3)*ms, e.pub)
			i++
			for k, pb := range tapEpisode(ep) {
				g := msgs[i]
				require.Equal(t, "dpsim."+run+"."+pb.From.String()+"."+pb.From.Role.Stream(), g.topic)
				require.Equal(t, run, g.m.Run)
				require.Equal(t, pb.From.String(), g.m.Sender)
				require.Equal(t, pb.From.Role.Stream(), g.m.Kind)
				require.Equal(t, pb.Step, g.m.Step)
				require.Equal(t, ep, g.m.Episode)
				if pb.Gap {
					require.Empty(t, g.m.Values)
				} else {
					require.Equal(t, pb.Values, g.m.Values, "bit for bit")
				}
				require.Equal(t, pbase+(uint64(ep)*(steps+3)+1+uint64(pb.Release))*ms, g.pub)
				require.Equal(t, g.pub, uint64(g.m.SentUnixNano))
				require.Equal(t, tapRoutes[k], g.headers, "%s: its route in NATS headers", g.topic)
				i++
			}
		}
		s := msgs[i]
		require.Equal(t, "dpsim."+run+".ctl.stop", s.topic)
		require.Equal(t, pbase+2*(steps+3)*ms, s.pub)
		i++
	}
	for k := 1; k < len(msgs); k++ {
		require.Greater(t, msgs[k].log, msgs[k-1].log, "log times strictly increase")
		require.GreaterOrEqual(t, msgs[k].log, msgs[k].pub)
	}
}

// The tap's recording is bounded by the recorder's limit: past it messages are counted as
// dropped, and the file still closes with its summary.
func TestTapLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bus.mcap")
	rec, err := Create(Options{Path: path, Perm: 0o600, Limit: 2 << 10})
	require.NoError(t, err)
	tap := NewTap(rec, time.Unix(1_800_000_000, 0))
	require.NoError(t, tap.Point("r1", 2))
	for ep := range 100 {
		tap.Episode(ep, tapEpisode(ep))
	}
	tap.Stop()
	st, err := rec.Close()
	require.NoError(t, err)
	require.Positive(t, st.Dropped)
	require.Equal(t, uint64(100*6+1), st.Messages+st.Dropped)
	require.LessOrEqual(t, st.Bytes, int64(2<<10))
	c, err := Scan(path, nil)
	require.NoError(t, err)
	require.True(t, c.Complete)
	require.Equal(t, st.Messages, c.Messages)
}

// A point's run id must be a subject token.
func TestTapRunID(t *testing.T) {
	rec, err := Create(Options{Path: filepath.Join(t.TempDir(), "bus.mcap"), Perm: 0o600})
	require.NoError(t, err)
	defer rec.Close()
	require.Error(t, NewTap(rec, time.Now()).Point("a.b", 2))
}
