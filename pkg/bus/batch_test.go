package bus

import (
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
)

// A message batching episodes (Route.Episodes) validates against the episodes in flight and
// Dim values per episode; the single-episode rules are unchanged.
func TestValidateBatched(t *testing.T) {
	exp := Expect{Run: "r1", Dim: 2, Steps: 10, Episode: 5, Episodes: 3, Sender: "plant.0", Kind: "yhat"}
	msg := func(ep, n, vals int) *Message {
		m := &Message{V: Version, Run: "r1", Episode: ep, Step: 1, Sender: "plant.0", Kind: "yhat", Route: Route{Episodes: n}}
		for i := range vals {
			m.Values = append(m.Values, float64(i))
		}
		return m
	}
	for _, tc := range []struct {
		name string
		m    *Message
		exp  Expect
		want Reason // numReasons: valid
	}{
		{"all three", msg(5, 3, 6), exp, numReasons},
		{"the last two", msg(6, 2, 4), exp, numReasons},
		{"one of them", msg(7, 0, 2), exp, numReasons},
		{"too few values", msg(5, 3, 5), exp, ReasonDim},
		{"values of one episode", msg(5, 3, 2), exp, ReasonDim},
		{"past the last episode", msg(6, 3, 6), exp, ReasonEpisode},
		{"before the first", msg(4, 2, 4), exp, ReasonEpisode},
		{"batch where one episode is expected", msg(5, 2, 4), Expect{Run: "r1", Dim: 2, Episode: 5}, ReasonEpisode},
		{"single where one is expected", msg(5, 1, 2), Expect{Run: "r1", Dim: 2, Episode: 5}, numReasons},
		{"any episode", msg(40, 3, 6), Expect{Run: "r1", Dim: 2, Episode: AnyEpisode}, numReasons},
		{"any length: must split", msg(5, 3, 7), Expect{Run: "r1", Episode: 5, Episodes: 3}, ReasonDim},
		{"another sender", func() *Message { m := msg(5, 3, 6); m.Sender = "plant.1"; return m }(), exp, ReasonSender},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.m, tc.exp)
			if tc.want == numReasons {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Equal(t, tc.want, ReasonOf(err), "%v", err)
		})
	}
}

// The count of a batch travels in its own header, only on a plain broadcast.
func TestRouteEpisodesHeader(t *testing.T) {
	r, err := routeOf(Route{Episodes: 16}.header())
	require.NoError(t, err)
	require.Equal(t, Route{Episodes: 16}, r)
	require.Nil(t, Route{Episodes: 1}.header(), "one episode: a plain message")
	for _, h := range []nats.Header{
		{HeaderEpisodes: []string{"1"}},
		{HeaderEpisodes: []string{"x"}},
		{HeaderEpisodes: []string{strconv.Itoa(MaxEpisodes + 1)}},
		{HeaderEpisodes: []string{"3"}, HeaderTo: []string{"cloud.0"}},
		{HeaderEpisodes: []string{"3"}, HeaderGap: []string{"1"}},
	} {
		_, err := routeOf(h)
		require.Error(t, err, "%v", h)
		require.Equal(t, ReasonDim, ReasonOf(err))
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
	s, _ := NewSubjects("b1")
	rx := connect(t, srv.URL(), "rx")
	var counters Counters
	in := rx.NewInbox(InboxOptions{Counters: &counters, Verify: v})
	in.Expect(s.PlantYhat(0), Expect{Run: "b1", Steps: 10, Sender: "plant.0", Kind: endpoint.StreamYhat, Dim: 2})
	require.NoError(t, in.Subscribe())
	require.NoError(t, rx.Flush(time.Second))
	in.SetEpisodes(5, 3)
	vals := []float64{1, 2, 3, 4, 5, 6}
	for _, enc := range []Encoding{JSON, Binary} {
		tx := connect(t, srv.URL(), "tx-"+enc.String(), WithSigner(key.Seed), WithEncoding(enc))
		pub := tx.Publisher(s.PlantYhat(0), "b1", "plant.0", endpoint.StreamYhat)
		require.NoError(t, pub.SendRouted(5, 1, vals, Route{Episodes: 3}))
		require.NoError(t, pub.SendRouted(5, 2, vals[:4], Route{Episodes: 3}))            // dim
		require.NoError(t, pub.SendRouted(6, 2, vals, Route{Episodes: 3}))                // episode 8 is not in flight
		require.NoError(t, pub.SendRouted(5, 2, vals, Route{To: "cloud.0", Episodes: 3})) // not a broadcast
		other := tx.Publisher(s.PlantYhat(0), "b1", "plant.1", endpoint.StreamYhat)
		require.NoError(t, other.SendRouted(5, 2, vals, Route{Episodes: 3})) // speaks for plant.0
		// a genuine signed batch of 3 re-sent with the count header changed to 2
		m := &Message{V: Version, Run: "b1", Episode: 5, Step: 3, Sender: "plant.0", Kind: endpoint.StreamYhat, Values: vals}
		data, err := Encode(nil, m, enc)
		require.NoError(t, err)
		sig, err := sign(tx.signer, data)
		require.NoError(t, err)
		h := Route{Episodes: 2}.header()
		h.Set(HeaderSig, sig)
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
