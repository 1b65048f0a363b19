package bus

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// An inbox of episode 3 hands on a valid copy of an earlier episode only with PassStale (its
// receiver counts it stale and compares it); without, it is dropped as episode. A later
// episode is wrong either way, and every drop is counted once.
func TestInboxPassStale(t *testing.T) {
	srv := startServer(t)
	s, _ := wire.NewSubjects("st1")
	tx := connect(t, srv.URL(), "tx")
	for _, pass := range []bool{false, true} {
		rx := connect(t, srv.URL(), "rx")
		var counters wire.Counters
		logged := 0
		in := rx.NewInbox(InboxOptions{Counters: &counters, PassStale: pass, OnInvalid: func(string, error) { logged++ }})
		in.Expect(s.PlantYhat(0), wire.Expect{Run: "st1", Steps: 10, Sender: "plant.0", Kind: endpoint.StreamYhat, Dim: 1})
		require.NoError(t, in.Subscribe())
		require.NoError(t, rx.Flush(time.Second))
		in.SetEpisode(3)
		for _, ep := range []int{2, 0, 4, 3} {
			m := &wire.Message{V: wire.Version, Run: "st1", Episode: ep, Step: 1, Sender: "plant.0", Kind: endpoint.StreamYhat, Values: []float64{1}}
			require.NoError(t, tx.Publish(s.PlantYhat(0), m))
		}
		require.NoError(t, tx.Flush(time.Second))
		var got []int
		for {
			m, err := in.Next(time.Now().Add(300 * time.Millisecond))
			if errors.Is(err, ErrTimeout) {
				break
			}
			require.NoError(t, err)
			got = append(got, m.Episode)
		}
		snap := counters.Snapshot()
		if pass {
			require.Equal(t, []int{2, 0, 3}, got)
			require.Equal(t, uint64(1), snap.Dropped, "%+v", snap)
		} else {
			require.Equal(t, []int{3}, got)
			require.Equal(t, uint64(3), snap.ByReason["episode"], "%+v", snap)
		}
		require.Equal(t, uint64(4), snap.Received)
		require.Equal(t, snap.Received-snap.Dropped, snap.Accepted)
		require.Equal(t, int(snap.Dropped), logged, "OnInvalid hears of every drop once")
	}
}
