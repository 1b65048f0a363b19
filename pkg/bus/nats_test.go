package bus

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nats-io/nats.go"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// startServer starts a real embedded server on a random loopback port.

// numReasons is no reason (wire.Reasons holds them all): a test case that validates.
var numReasons = wire.Reason(len(wire.Reasons()))

func startServer(t testing.TB) *Embedded {
	t.Helper()
	e, err := StartEmbedded(EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	if !strings.HasPrefix(e.URL(), "nats://127.0.0.1:") || e.Port() <= 0 {
		t.Fatalf("embedded server URL %q port %d", e.URL(), e.Port())
	}
	return e
}

func connect(t testing.TB, url, name string, opts ...Option) *Conn {
	t.Helper()
	c, err := Connect(url, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// watcher is a separate raw NATS client subscribed to "dpsim.>", like `nats sub 'dpsim.>'`.
type watcher struct {
	mu   sync.Mutex
	msgs []*nats.Msg
}

func watch(t *testing.T, url string) *watcher {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name("test-watcher"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w := &watcher{}
	if _, err := nc.Subscribe(wire.AllRuns(), func(m *nats.Msg) {
		w.mu.Lock()
		w.msgs = append(w.msgs, m)
		w.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

// waitFor polls cond until it holds or 5 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A lockstep plant <-> cloud exchange and an agent over the documented subjects; a
// separate client subscribed to "dpsim.>" sees every subject.
func TestClosedLoopOnDocumentedSubjects(t *testing.T) {
	for _, enc := range []wire.Encoding{wire.JSON, wire.Binary} {
		t.Run(enc.String(), func(t *testing.T) {
			srv := startServer(t)
			w := watch(t, srv.URL())
			subj, _ := wire.NewSubjects("loop-" + enc.String())
			const steps = 5
			plant := connect(t, srv.URL(), "dpsim-plant-0", WithEncoding(enc))
			cloud := connect(t, srv.URL(), "dpsim-cloud-0", WithEncoding(enc))
			exp := wire.Expect{Run: subj.Run(), Dim: 1, Steps: steps, Episode: wire.AnyEpisode}

			yIn, err := cloud.Receive(subj.PlantYhat(0), ReceiverOptions{Expect: exp, MatchSubject: true})
			if err != nil {
				t.Fatal(err)
			}
			uIn, err := plant.Receive(subj.CloudU(0), ReceiverOptions{Expect: exp, MatchSubject: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := cloud.Flush(time.Second); err != nil {
				t.Fatal(err)
			}
			if err := plant.Flush(time.Second); err != nil {
				t.Fatal(err)
			}
			cloudDone := make(chan error, 1)
			go func() { // cloud: u(t) = -2 yhat(t)
				pub := cloud.Publisher(subj.CloudU(0), subj.Run(), endpoint.Endpoint{Role: endpoint.Cloud, ID: 0}.String(), endpoint.StreamU)
				u := make([]float64, 1)
				for k := range steps {
					m, err := await(yIn, 0, k)
					if err != nil {
						cloudDone <- err
						return
					}
					u[0] = -2 * m.Values[0]
					if err := pub.Send(0, k, u); err != nil {
						cloudDone <- err
						return
					}
				}
				cloudDone <- nil
			}()
			pub := plant.Publisher(subj.PlantYhat(0), subj.Run(), endpoint.Endpoint{Role: endpoint.Plant, ID: 0}.String(), endpoint.StreamYhat)
			for k := range steps {
				if err := pub.Send(0, k, []float64{float64(k) + 0.5}); err != nil {
					t.Fatal(err)
				}
				m, err := await(uIn, 0, k)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := m.Values[0], -2*(float64(k)+0.5); got != want {
					t.Fatalf("step %d: u = %v, want %v", k, got, want)
				}
			}
			if err := <-cloudDone; err != nil {
				t.Fatal(err)
			}
			agent := connect(t, srv.URL(), "dpsim-agent-3", WithEncoding(enc))
			if err := agent.Publisher(subj.AgentY(3), subj.Run(), endpoint.Endpoint{Role: endpoint.Agent, ID: 3}.String(), endpoint.StreamY).Send(0, 0, []float64{7}); err != nil {
				t.Fatal(err)
			}
			ready := &wire.Message{V: wire.Version, Run: subj.Run(), Sender: endpoint.Endpoint{Role: endpoint.Agent, ID: 3}.String(), Kind: wire.CtlReady}
			if err := agent.Publish(subj.CtlReady(endpoint.Agent, 3), ready); err != nil {
				t.Fatal(err)
			}
			for _, c := range []*Conn{plant, cloud, agent} {
				if err := c.Flush(time.Second); err != nil {
					t.Fatal(err)
				}
			}
			wantSubjects := []string{subj.PlantYhat(0), subj.CloudU(0), subj.AgentY(3), subj.CtlReady(endpoint.Agent, 3)}
			waitFor(t, "the watcher to see 2*steps+2 messages", func() bool {
				w.mu.Lock()
				defer w.mu.Unlock()
				return len(w.msgs) >= 2*steps+2
			})
			w.mu.Lock()
			defer w.mu.Unlock()
			seen := map[string]int{}
			for _, m := range w.msgs {
				seen[m.Subject]++
				var dm wire.Message
				if err := wire.Decode(m.Data, &dm); err != nil {
					t.Errorf("watcher cannot decode %s: %v", m.Subject, err)
				}
				if enc == wire.JSON && !strings.HasPrefix(string(m.Data), `{"v":1,"run":"loop-json",`) {
					t.Errorf("JSON payload is not readable: %q", m.Data)
				}
				if p, err := wire.ParseSubject(m.Subject); err != nil || (!p.IsCtl() && p.Sender() != dm.Sender) {
					t.Errorf("subject %s: parse %v, sender %q vs from %q", m.Subject, err, p.Sender(), dm.Sender)
				}
			}
			for _, s := range wantSubjects {
				if seen[s] == 0 {
					t.Errorf("watcher did not see %s (saw %v)", s, seen)
				}
			}
			if seen[subj.PlantYhat(0)] != steps || seen[subj.CloudU(0)] != steps {
				t.Errorf("watcher saw %v, want %d yhat and u", seen, steps)
			}
			if s := yIn.Counters().Snapshot(); s.Received != steps || s.Dropped != 0 {
				t.Errorf("cloud counters %+v", s)
			}
		})
	}
}

func TestInvalidMessagesCountedAndDropped(t *testing.T) {
	srv := startServer(t)
	subj, _ := wire.NewSubjects("r1")
	rx := connect(t, srv.URL(), "dpsim-cloud-0")
	tx := connect(t, srv.URL(), "dpsim-plant-0")
	var logged atomic.Int64
	var logLines []string
	in, err := rx.Receive(subj.PlantYhat(0), ReceiverOptions{
		Expect:       wire.Expect{Run: "r1", Dim: 1, Steps: 10, Episode: wire.AnyEpisode},
		MatchSubject: true,
		OnInvalid: func(subject string, err error) {
			logged.Add(1)
			logLines = append(logLines, subject+": "+err.Error())
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rx.Flush(time.Second); err != nil {
		t.Fatal(err)
	}
	valid := func(step int) *wire.Message {
		return &wire.Message{V: 1, Run: "r1", Step: step, Sender: "plant.0", Values: []float64{float64(step)}}
	}
	bin := func(m *wire.Message) []byte { b, _ := wire.EncodeBinary(nil, m); return b }
	js := func(m *wire.Message) []byte { b, _ := wire.EncodeJSON(nil, m); return b }
	mod := func(f func(*wire.Message)) *wire.Message { m := valid(1); f(m); return m }
	sends := []struct {
		data   []byte
		reason wire.Reason // numReasons: valid
	}{
		{js(valid(0)), numReasons},
		{[]byte("\x00\xffgarbage"), wire.ReasonDecode},
		{[]byte(`{"v":1,"run":"r1"`), wire.ReasonDecode},
		{js(mod(func(m *wire.Message) { m.V = 2 })), wire.ReasonVersion},
		{[]byte{wire.BinaryMagic, 9, 0, 0, 0}, wire.ReasonDecode}, // too short to carry a version we trust
		{js(mod(func(m *wire.Message) { m.Run = "r2" })), wire.ReasonRun},
		{bin(mod(func(m *wire.Message) { m.Values[0] = math.NaN() })), wire.ReasonNonFinite},
		{[]byte(`{"v":1,"run":"r1","ep":0,"step":1,"from":"plant.0","sent":0,"vals":[1e999]}`), wire.ReasonNonFinite},
		{js(mod(func(m *wire.Message) { m.Values = []float64{1, 2} })), wire.ReasonDim},
		{js(mod(func(m *wire.Message) { m.Step = 10 })), wire.ReasonStep},
		{js(mod(func(m *wire.Message) { m.Step = -3 })), wire.ReasonStep},
		{js(mod(func(m *wire.Message) { m.Episode = -1 })), wire.ReasonEpisode},
		{js(mod(func(m *wire.Message) { m.Sender = "plant.1" })), wire.ReasonSender}, // speaks for another plant
		{bin(valid(1)), numReasons},
		{js(valid(2)), numReasons},
	}
	wantDrops := map[string]uint64{}
	nValid := 0
	for _, s := range sends {
		if err := tx.PublishRaw(subj.PlantYhat(0), s.data); err != nil {
			t.Fatal(err)
		}
		if s.reason == numReasons {
			nValid++
		} else {
			wantDrops[s.reason.String()]++
		}
	}
	for i := range nValid {
		m, err := in.Next(time.Now().Add(5 * time.Second))
		if err != nil {
			t.Fatalf("valid message %d: %v", i, err)
		}
		if m.Step != i || m.Values[0] != float64(i) {
			t.Fatalf("valid message %d: got step %d values %v", i, m.Step, m.Values)
		}
	}
	if m, err := in.Next(time.Now().Add(20 * time.Millisecond)); !errors.Is(err, ErrTimeout) {
		t.Fatalf("after the valid messages: %+v, %v; want a timeout", m, err)
	}
	s := in.Counters().Snapshot()
	if s.Received != uint64(len(sends)) || s.Accepted != uint64(nValid) || s.Dropped != uint64(len(sends)-nValid) {
		t.Errorf("counters %+v, want %d received, %d accepted", s, len(sends), nValid)
	}
	if fmt.Sprint(s.ByReason) != fmt.Sprint(wantDrops) {
		t.Errorf("drops by reason %v, want %v", s.ByReason, wantDrops)
	}
	if int(logged.Load()) != len(sends)-nValid {
		t.Errorf("OnInvalid called %d times, want %d", logged.Load(), len(sends)-nValid)
	}
	for _, l := range logLines {
		if !strings.HasPrefix(l, subj.PlantYhat(0)+": wire: ") {
			t.Errorf("log line %q lacks subject or context", l)
		}
	}
}

func TestReconnectAfterServerRestart(t *testing.T) {
	srv, err := StartEmbedded(EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := srv.Port()
	var events sync.Map
	client := connect(t, srv.URL(), "dpsim-agent-0", WithReconnect(-1, 20*time.Millisecond), WithEvents(func(e Event) {
		n, _ := events.LoadOrStore(e.Kind, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}))
	subj, _ := wire.NewSubjects("restart")
	in, err := client.Receive(subj.AgentY(1), ReceiverOptions{Expect: wire.Expect{Run: "restart", Episode: wire.AnyEpisode}})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Flush(time.Second); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	waitFor(t, "the disconnect", func() bool { return client.Stats().Disconnects >= 1 })

	srv2, err := StartEmbedded(EmbeddedOptions{Port: port})
	if err != nil {
		t.Fatalf("restart on port %d: %v", port, err)
	}
	t.Cleanup(srv2.Shutdown)
	if srv2.URL() != srv.URL() {
		t.Fatalf("restarted server at %s, want %s", srv2.URL(), srv.URL())
	}
	waitFor(t, "the reconnect", func() bool { return client.Stats().Reconnects == 1 })
	if err := client.Flush(time.Second); err != nil { // the subscription is re-sent on reconnect
		t.Fatal(err)
	}
	peer := connect(t, srv2.URL(), "dpsim-agent-1")
	if err := peer.Publisher(subj.AgentY(1), "restart", "agent.1", endpoint.StreamY).Send(0, 0, []float64{42}); err != nil {
		t.Fatal(err)
	}
	m, err := in.Next(time.Now().Add(5 * time.Second))
	if err != nil || m.Values[0] != 42 {
		t.Fatalf("after reconnect: %+v, %v", m, err)
	}
	st := client.Stats()
	if st.Disconnects < 1 || st.Reconnects != 1 || st.URL != srv2.URL() {
		t.Errorf("stats %+v", st)
	}
	for _, k := range []EventKind{EventDisconnected, EventReconnected} {
		if n, ok := events.Load(k); !ok || n.(*atomic.Int64).Load() < 1 {
			t.Errorf("no %v event reported", k)
		}
	}
}

func TestDrain(t *testing.T) {
	srv := startServer(t)
	subj, _ := wire.NewSubjects("drain")
	rx := connect(t, srv.URL(), "rx")
	in, err := rx.Receive(subj.AgentY(0), ReceiverOptions{Expect: wire.Expect{Run: "drain", Episode: wire.AnyEpisode, Dim: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rx.Flush(time.Second); err != nil {
		t.Fatal(err)
	}
	tx := connect(t, srv.URL(), "tx", WithEncoding(wire.Binary))
	pub := tx.Publisher(subj.AgentY(0), "drain", "agent.0", endpoint.StreamY)
	const n = 500
	for k := range n {
		if err := pub.Send(0, k, []float64{float64(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Drain(time.Minute); err != nil { // flushes the buffered publications
		t.Fatal(err)
	}
	select {
	case <-tx.Closed():
	default:
		t.Fatal("Closed() not closed after Drain")
	}
	if err := tx.Drain(time.Second); err != nil {
		t.Errorf("second Drain: %v", err)
	}
	if err := pub.Send(0, n, []float64{0}); err == nil {
		t.Error("publish after drain succeeded")
	}
	for k := range n {
		m, err := in.Next(time.Now().Add(5 * time.Second))
		if err != nil {
			t.Fatalf("message %d of %d after the sender drained: %v", k, n, err)
		}
		if m.Step != k {
			t.Fatalf("message %d has step %d", k, m.Step)
		}
	}
	if err := rx.Drain(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Next(time.Now().Add(time.Second)); !errors.Is(err, ErrClosed) {
		t.Errorf("Next on a drained connection: %v, want ErrClosed", err)
	}
}

func TestConnectErrorsAndResolveURL(t *testing.T) {
	if _, err := Connect("", "x"); err == nil {
		t.Error("Connect with an empty URL succeeded")
	}
	srv, err := StartEmbedded(EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL()
	srv.Shutdown()
	if _, err := Connect(url, "dpsim-plant-0", WithConnectTimeout(200*time.Millisecond)); err == nil ||
		!strings.Contains(err.Error(), "dpsim-plant-0") || !strings.Contains(err.Error(), url) {
		t.Errorf("Connect to a stopped server: %v (want the name and URL in the error)", err)
	}
	if _, err := StartEmbedded(EmbeddedOptions{Port: 70000}); err == nil {
		t.Error("port 70000 accepted")
	}

	t.Setenv(EnvURL, "nats://env:4222")
	if got := ResolveURL("nats://flag:4222"); got != "nats://flag:4222" {
		t.Errorf("flag not preferred: %q", got)
	}
	if got := ResolveURL(""); got != "nats://env:4222" {
		t.Errorf("env not used: %q", got)
	}
	t.Setenv(EnvURL, "")
	if got := ResolveURL(""); got != "" {
		t.Errorf("no flag, no env: %q, want \"\" (start embedded)", got)
	}
}

// Two embedded servers on the same fixed port cannot both run: the second start fails
// with an error instead of hanging.
func TestEmbeddedPortInUse(t *testing.T) {
	srv := startServer(t)
	done := make(chan error, 1)
	go func() {
		e, err := StartEmbedded(EmbeddedOptions{Port: srv.Port(), ReadyTimeout: 500 * time.Millisecond})
		if err == nil {
			e.Shutdown()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("second server on a used port started")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("StartEmbedded on a used port hung")
	}
}

func TestEmbeddedJetStreamOptional(t *testing.T) {
	e, err := StartEmbedded(EmbeddedOptions{JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	if !e.server().JetStreamEnabled() {
		t.Error("JetStream requested but not enabled")
	}
	plain := startServer(t)
	if plain.server().JetStreamEnabled() {
		t.Error("JetStream enabled by default")
	}
}

// A restart of the embedded server on the same port: a client reconnects by itself, its
// subscription survives, and messages flow again; the reconnect is counted.
func TestEmbeddedRestart(t *testing.T) {
	srv, err := StartEmbedded(EmbeddedOptions{})
	require.NoError(t, err)
	defer srv.Shutdown()
	port := srv.Port()
	sub, err := Connect(srv.URL(), "sub", WithReconnect(-1, 20*time.Millisecond))
	require.NoError(t, err)
	defer sub.Close()
	pub, err := Connect(srv.URL(), "pub", WithReconnect(-1, 20*time.Millisecond))
	require.NoError(t, err)
	defer pub.Close()
	got := make(chan string, 16)
	s, err := sub.SubscribeDocuments("test.restart", nil, func(_ string, data []byte) { got <- string(data) })
	require.NoError(t, err)
	defer s.Unsubscribe()
	require.NoError(t, sub.Flush(time.Second))
	require.NoError(t, srv.Restart(200*time.Millisecond))
	require.Equal(t, port, srv.Port())
	deadline := time.Now().Add(5 * time.Second)
	for {
		require.True(t, time.Now().Before(deadline), "no message after the restart")
		_ = pub.PublishRaw("test.restart", []byte("after"))
		_ = pub.Flush(200 * time.Millisecond)
		select {
		case m := <-got:
			require.Equal(t, "after", m)
			require.GreaterOrEqual(t, sub.Stats().Reconnects, uint64(1))
			require.GreaterOrEqual(t, sub.Stats().Disconnects, uint64(1))
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
