package bus

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every ctl message built by the constructors passes its receiver's typed subscription;
// a wrong kind, run or sender, a forged pid and garbage are counted and never handed on.
func TestCtlProtocol(t *testing.T) {
	srv := startServer(t)
	launcher := connect(t, srv.URL(), "launcher")
	proc := connect(t, srv.URL(), "proc")
	subj, err := NewSubjects("ctl1")
	require.NoError(t, err)

	var mu sync.Mutex
	var got []*Message
	var counters Counters
	var invalid []Reason
	o := CtlOptions{Expect: Expect{Run: "ctl1", Episode: AnyEpisode}, Counters: &counters,
		OnInvalid: func(_ string, err error) { mu.Lock(); invalid = append(invalid, ReasonOf(err)); mu.Unlock() }}
	sub, err := proc.SubscribeCtl(subj.CtlEpisode(), o, func(_ string, m *Message) {
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
	require.Eventually(t, func() bool { return counters.Received() == 4 }, 2*time.Second, 5*time.Millisecond)
	mu.Lock()
	require.Len(t, got, 2)
	assert.Equal(t, CtlEpisode, got[0].Kind)
	assert.Equal(t, CtlEpisodeX0, got[1].Kind)
	assert.Empty(t, got[1].Values, "the public message of a private episode carries no x(0)")
	assert.Equal(t, LauncherSender, got[0].Sender)
	assert.ElementsMatch(t, []Reason{ReasonRun, ReasonDecode}, invalid)
	mu.Unlock()
	require.NoError(t, sub.Unsubscribe())

	// ready and done carry the pid; a forged sender is refused by the Expect.
	var dones []*Message
	od := CtlOptions{Expect: Expect{Run: "ctl1", Episode: AnyEpisode, Kind: CtlDone, Sender: "plant.0"}, Counters: &counters}
	_, err = launcher.SubscribeCtl(subj.CtlDone(RolePlant, 0), od, func(_ string, m *Message) {
		mu.Lock()
		c := *m
		dones = append(dones, &c)
		mu.Unlock()
	})
	require.NoError(t, err)
	require.NoError(t, launcher.Flush(time.Second))
	require.NoError(t, proc.Publish(subj.CtlDone(RolePlant, 0), DoneMessage("ctl1", "plant.0", 3, 100, 2, 4242)))
	require.NoError(t, proc.Publish(subj.CtlDone(RolePlant, 0), DoneMessage("ctl1", "cloud.0", 3, 100, 2, 4242)))
	require.NoError(t, proc.Publish(subj.CtlDone(RolePlant, 0), ReadyMessage("ctl1", "plant.0", 4242, 0)))
	require.NoError(t, proc.Flush(time.Second))
	require.Eventually(t, func() bool { return counters.Received() == 7 }, 2*time.Second, 5*time.Millisecond)
	mu.Lock()
	require.Len(t, dones, 1)
	pid, err := CtlPID(dones[0])
	mu.Unlock()
	require.NoError(t, err)
	assert.Equal(t, 4242, pid)
	assert.Equal(t, uint64(1), counters.Dropped(ReasonSender))
	assert.Equal(t, uint64(1), counters.Dropped(ReasonKind))

	for _, m := range []*Message{ReadyMessage("r", "agent.1", 0, 0), {Kind: CtlDone, Values: []float64{1, 2, 3.5}}, {Kind: CtlReady}} {
		_, err := CtlPID(m)
		assert.Error(t, err, "%+v", m)
	}
	r, err := CtlPID(ReadyMessage("r", "agent.1", 77, 0))
	require.NoError(t, err)
	assert.Equal(t, 77, r)
	assert.False(t, proc.IsClosed())
}
