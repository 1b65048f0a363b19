package contract

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// Every ctl message built by the constructors passes its receiver's typed subscription;
// a wrong kind, run or sender, a forged pid and garbage are counted and never handed on.
func TestCtlProtocol(t *testing.T) {
	srv := startServer(t)
	launcher := connect(t, srv.URL(), "launcher")
	proc := connect(t, srv.URL(), "proc")
	subj, err := wire.NewSubjects("ctl1")
	require.NoError(t, err)

	var mu sync.Mutex
	var got []*wire.Message
	var counters wire.Counters
	var invalid []wire.Reason
	o := bus.CtlOptions{Expect: wire.Expect{Run: "ctl1", Episode: wire.AnyEpisode}, Counters: &counters,
		OnInvalid: func(_ string, err error) { mu.Lock(); invalid = append(invalid, wire.ReasonOf(err)); mu.Unlock() }}
	sub, err := proc.SubscribeCtl(subj.CtlEpisode(), o, func(_ string, m *wire.Message) {
		mu.Lock()
		defer mu.Unlock()
		c := *m
		got = append(got, &c)
	})
	require.NoError(t, err)
	require.NoError(t, proc.Flush(time.Second))

	require.NoError(t, launcher.Publish(subj.CtlEpisode(), EpisodeMessage("ctl1", 0, false)))
	require.NoError(t, launcher.Publish(subj.CtlEpisode(), EpisodeMessage("ctl1", 1, true)))
	require.NoError(t, launcher.Publish(subj.CtlEpisode(), EpisodeMessage("other-run", 2, false)))
	require.NoError(t, launcher.PublishRaw(subj.CtlEpisode(), []byte("not a message")))
	require.NoError(t, launcher.Flush(time.Second))
	// Received counts a message before its handler or OnInvalid runs: wait for all three.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return counters.Received() == 4 && len(invalid) == 2 && len(got) == 2
	}, 2*time.Second, 5*time.Millisecond)
	mu.Lock()
	require.Len(t, got, 2)
	assert.Equal(t, wire.CtlEpisode, got[0].Kind)
	assert.Equal(t, wire.CtlEpisodeX0, got[1].Kind)
	assert.Empty(t, got[1].Values, "the public message of a private episode carries no x(0)")
	assert.Equal(t, wire.LauncherSender, got[0].Sender)
	assert.ElementsMatch(t, []wire.Reason{wire.ReasonRun, wire.ReasonDecode}, invalid)
	mu.Unlock()
	require.NoError(t, sub.Unsubscribe())

	// ready and done carry the pid; a forged sender is refused by the wire.Expect.
	var dones []*wire.Message
	od := bus.CtlOptions{Expect: wire.Expect{Run: "ctl1", Episode: wire.AnyEpisode, Kind: wire.CtlDone, Sender: "plant.0"}, Counters: &counters}
	_, err = launcher.SubscribeCtl(subj.CtlDone(endpoint.Plant, 0), od, func(_ string, m *wire.Message) {
		mu.Lock()
		c := *m
		dones = append(dones, &c)
		mu.Unlock()
	})
	require.NoError(t, err)
	require.NoError(t, launcher.Flush(time.Second))
	require.NoError(t, proc.Publish(subj.CtlDone(endpoint.Plant, 0), Done{Steps: 100, Missed: 2, PID: 4242}.Message("ctl1", "plant.0", 3)))
	require.NoError(t, proc.Publish(subj.CtlDone(endpoint.Plant, 0), Done{Steps: 100, Missed: 2, PID: 4242}.Message("ctl1", "cloud.0", 3)))
	require.NoError(t, proc.Publish(subj.CtlDone(endpoint.Plant, 0), Ready{PID: 4242, Plan: 0}.Message("ctl1", "plant.0")))
	require.NoError(t, proc.Flush(time.Second))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return counters.Received() == 7 && len(dones) == 1
	}, 2*time.Second, 5*time.Millisecond)
	mu.Lock()
	require.Len(t, dones, 1)
	pid, err := PID(dones[0])
	mu.Unlock()
	require.NoError(t, err)
	assert.Equal(t, 4242, pid)
	assert.Equal(t, uint64(1), counters.Dropped(wire.ReasonSender))
	assert.Equal(t, uint64(1), counters.Dropped(wire.ReasonKind))

	for _, m := range []*wire.Message{Ready{PID: 0, Plan: 0}.Message("r", "agent.1"), {Kind: wire.CtlDone, Values: []float64{1, 2, 3.5}}, {Kind: wire.CtlReady}} {
		_, err := PID(m)
		assert.Error(t, err, "%+v", m)
	}
	r, err := PID(Ready{PID: 77, Plan: 0}.Message("r", "agent.1"))
	require.NoError(t, err)
	assert.Equal(t, 77, r)
	assert.False(t, proc.IsClosed())
}

func startServer(t testing.TB) *bus.Embedded {
	t.Helper()
	e, err := bus.StartEmbedded(bus.EmbeddedOptions{})
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	return e
}

func connect(t testing.TB, url, name string) *bus.Conn {
	t.Helper()
	c, err := bus.Connect(url, name)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func TestEpisodesMessageRoundTrip(t *testing.T) {
	for _, private := range []bool{false, true} {
		m := EpisodesMessage("r1", 48, 16, private)
		first, count, err := ParseEpisodes(m)
		require.NoError(t, err)
		require.Equal(t, [2]int{48, 16}, [2]int{first, count})
		if private {
			require.Equal(t, wire.CtlEpisodesX0, m.Kind)
		} else {
			require.Equal(t, wire.CtlEpisodes, m.Kind)
		}
	}
	for _, bad := range [][]float64{nil, {0}, {-1}, {1.5}, {MaxInflight + 1}, {math.NaN()}, {1, 2}} {
		m := EpisodesMessage("r1", 0, 1, false)
		m.Values = bad
		_, _, err := ParseEpisodes(m)
		require.Error(t, err, "values %v", bad)
		var inv *wire.InvalidError
		require.ErrorAs(t, err, &inv)
	}
}
