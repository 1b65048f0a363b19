package bus

import (
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// A batched message's episode count (wire.Route.Episodes) travels in its own header.
func TestRouteEpisodesHeader(t *testing.T) {
	r, err := routeOf(routeHeader(wire.Route{Episodes: 16}))
	require.NoError(t, err)
	require.Equal(t, wire.Route{Episodes: 16}, r)
	require.Nil(t, routeHeader(wire.Route{Episodes: 1}), "one episode: a plain message")
	for _, h := range []nats.Header{
		{wire.HeaderEpisodes: []string{"1"}},
		{wire.HeaderEpisodes: []string{"x"}},
		{wire.HeaderEpisodes: []string{strconv.Itoa(wire.MaxEpisodes + 1)}},
		{wire.HeaderEpisodes: []string{"3"}, wire.HeaderTo: []string{"cloud.0"}},
		{wire.HeaderEpisodes: []string{"3"}, wire.HeaderGap: []string{"1"}},
	} {
		_, err := routeOf(h)
		require.Error(t, err, "%v", h)
		require.Equal(t, wire.ReasonDim, wire.ReasonOf(err))
	}
}

// Over a real server, in both encodings and signed: batched messages reach the inbox whole
// (the receiver splits them), and forged ones - a count that does not match the values, a
// signed batch whose count header was changed, episodes beyond those in flight, a sender
// speaking for another - are counted invalid and dropped.
func TestBatchedOverNATS(t *testing.T) {
	srv := startServer(t)
	key, err := NewSigningKey()
	require.NoError(t, err)
	v, err := NewVerifier(map[string]string{"plant.0": key.Public, "plant.1": key.Public})
	require.NoError(t, err)
	s, _ := wire.NewSubjects("b1")
	rx := connect(t, srv.URL(), "rx")
	var counters wire.Counters
	in := rx.NewInbox(InboxOptions{Counters: &counters, Verify: v})
	in.Expect(s.PlantYhat(0), wire.Expect{Run: "b1", Steps: 10, Sender: "plant.0", Kind: endpoint.StreamYhat, Dim: 2})
	require.NoError(t, in.Subscribe())
	require.NoError(t, rx.Flush(time.Second))
	in.SetEpisodes(5, 3)
	vals := []float64{1, 2, 3, 4, 5, 6}
	for _, enc := range []wire.Encoding{wire.JSON, wire.Binary} {
		tx := connect(t, srv.URL(), "tx-"+enc.String(), WithSigner(key.Seed), WithEncoding(enc))
		pub := tx.Publisher(s.PlantYhat(0), "b1", "plant.0", endpoint.StreamYhat)
		require.NoError(t, pub.SendRouted(5, 1, vals, wire.Route{Episodes: 3}))
		require.NoError(t, pub.SendRouted(5, 2, vals[:4], wire.Route{Episodes: 3}))            // dim
		require.NoError(t, pub.SendRouted(6, 2, vals, wire.Route{Episodes: 3}))                // episode 8 is not in flight
		require.NoError(t, pub.SendRouted(5, 2, vals, wire.Route{To: "cloud.0", Episodes: 3})) // not a broadcast
		other := tx.Publisher(s.PlantYhat(0), "b1", "plant.1", endpoint.StreamYhat)
		require.NoError(t, other.SendRouted(5, 2, vals, wire.Route{Episodes: 3})) // speaks for plant.0
		// a genuine signed batch of 3 re-sent with the count header changed to 2
		m := &wire.Message{V: wire.Version, Run: "b1", Episode: 5, Step: 3, Sender: "plant.0", Kind: endpoint.StreamYhat, Values: vals}
		data, err := wire.Encode(nil, m, enc)
		require.NoError(t, err)
		sig, err := sign(tx.signer, data)
		require.NoError(t, err)
		h := routeHeader(wire.Route{Episodes: 2})
		h.Set(wire.HeaderSig, sig)
		require.NoError(t, tx.nc.PublishMsg(&nats.Msg{Subject: s.PlantYhat(0), Data: data, Header: h}))
		require.NoError(t, tx.Flush(time.Second))

		got, err := in.Next(time.Now().Add(2 * time.Second))
		require.NoError(t, err, enc)
		require.Equal(t, [3]int{5, 1, 3}, [3]int{got.Episode, got.Step, got.Route.Episodes}, enc)
		require.Equal(t, vals, got.Values)
		_, err = in.Next(time.Now().Add(100 * time.Millisecond))
		require.ErrorIs(t, err, ErrTimeout, "only the genuine batch gets through (%v)", enc)
	}
	snap := counters.Snapshot()
	require.Equal(t, map[string]uint64{"dim": 6, "episode": 2, "sender": 2}, snap.ByReason, "%+v", snap)
	require.Equal(t, uint64(12), snap.Received)
}
