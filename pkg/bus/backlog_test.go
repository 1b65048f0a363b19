package bus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// A receiver that falls far behind its sender loses nothing: what finds the inbox's channel
// full waits in the client's pending list, in order (a channel subscription dropped it as a
// slow consumer, and a lockstep receiver then waited forever for the message).
func TestInboxBacklogLosesNothing(t *testing.T) {
	srv := startServer(t)
	s, _ := wire.NewSubjects("bl1")
	tx := connect(t, srv.URL(), "tx")
	rx := connect(t, srv.URL(), "rx")
	in := rx.NewInbox(InboxOptions{})
	in.Expect(s.PlantYhat(0), wire.Expect{Run: "bl1", Steps: 1 << 20, Sender: "plant.0", Kind: endpoint.StreamYhat, Dim: 1})
	require.NoError(t, in.Subscribe())
	require.NoError(t, rx.Flush(time.Minute))
	const n = 2 * DefaultInboxBuffer // twice the delivery channel, none of it read meanwhile
	for k := range n {
		m := &wire.Message{V: wire.Version, Run: "bl1", Step: k, Sender: "plant.0", Kind: endpoint.StreamYhat, Values: []float64{float64(k)}}
		require.NoError(t, tx.Publish(s.PlantYhat(0), m))
	}
	require.NoError(t, tx.Flush(time.Minute))
	require.NoError(t, rx.Flush(time.Minute)) // everything has reached the receiving client
	for k := range n {
		m, err := in.Next(time.Now().Add(time.Minute))
		require.NoError(t, err)
		require.Equal(t, k, m.Step, "in order")
	}
	require.Zero(t, in.Dropped())
	require.NoError(t, in.Close())
}

// Messages on several subjects keep the order the server delivered them in, across subjects
// (one NATS subscription per subject: a handler per subscription would interleave them at
// random, and a process's results depend on the order).
func TestInboxKeepsOrderAcrossSubjects(t *testing.T) {
	srv := startServer(t)
	s, _ := wire.NewSubjects("or1")
	tx := connect(t, srv.URL(), "tx")
	rx := connect(t, srv.URL(), "rx")
	in := rx.NewInbox(InboxOptions{})
	for i := range 4 {
		in.Expect(s.AgentY(i), wire.Expect{Run: "or1", Steps: 1 << 20, Sender: endpoint.Endpoint{Role: endpoint.Agent, ID: i}.String(), Kind: endpoint.StreamY, Dim: 1})
	}
	require.NoError(t, in.Subscribe())
	require.NoError(t, rx.Flush(time.Minute))
	const n = 20_000
	for k := range n {
		i := k % 4
		m := &wire.Message{V: wire.Version, Run: "or1", Step: k, Sender: endpoint.Endpoint{Role: endpoint.Agent, ID: i}.String(), Kind: endpoint.StreamY, Values: []float64{1}}
		require.NoError(t, tx.Publish(s.AgentY(i), m))
	}
	require.NoError(t, tx.Flush(time.Minute))
	for k := range n {
		m, err := in.Next(time.Now().Add(time.Minute))
		require.NoError(t, err)
		require.Equal(t, k, m.Step, "the server's order, across the four subjects")
	}
	require.NoError(t, in.Close())
}
