package roleproc

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// The transport's unit tests drive it through an in-memory inbox and wire (the interfaces of
// transport_io.go): no NATS server. The end-to-end tests (internal/cmd/run) use real servers.

// memInbox is deliveries from a list: each Next hands out the next message, then times out.
type memInbox struct {
	msgs    []*wire.Message
	stopped bool
	ep      int
	count   int // episodes in flight from ep
}

func (in *memInbox) Next(time.Time) (*wire.Message, error) {
	if in.stopped {
		return nil, bus.ErrStopped
	}
	if len(in.msgs) == 0 {
		return nil, bus.ErrTimeout
	}
	m := in.msgs[0]
	in.msgs = in.msgs[1:]
	return m, nil
}

func (in *memInbox) SetEpisode(ep int) { in.SetEpisodes(ep, 1) }

func (in *memInbox) SetEpisodes(first, count int) { in.ep, in.count = first, count }

// sent is one message the transport put on the in-memory wire.
type sent struct {
	Subject string
	Ep      int
	Step    int
	Values  []float64
	Route   wire.Route
}

// memWire records what the transport publishes: its streams' routed sends and the delayed
// copies published on the connection.
type memWire struct {
	mu   sync.Mutex
	sent []sent
	at   []time.Time // when each was published
}

func (w *memWire) add(s sent) {
	s.Values = slices.Clone(s.Values)
	s.Route.Except = slices.Clone(s.Route.Except)
	w.mu.Lock()
	w.sent, w.at = append(w.sent, s), append(w.at, time.Now())
	w.mu.Unlock()
}

func (w *memWire) take() []sent {
	out, _ := w.takeTimed()
	return out
}

func (w *memWire) takeTimed() ([]sent, []time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out, at := w.sent, w.at
	w.sent, w.at = nil, nil
	return out, at
}

func (w *memWire) PublishRouted(subject string, m *wire.Message, r wire.Route) error {
	w.add(sent{Subject: subject, Ep: m.Episode, Step: m.Step, Values: m.Values, Route: r})
	return nil
}

type memStream struct {
	w       *memWire
	subject string
}

func (s memStream) SendRouted(ep, step int, vals []float64, r wire.Route) error {
	s.w.add(sent{Subject: s.subject, Ep: ep, Step: step, Values: vals, Route: r})
	return nil
}

// plantTransport is the transport of a cloud-vehicle plant process (publishing yhat to
// cloud.0 and eavesdropper.0, hearing cloud.0) over memory, with the link faults and
// crashes of faults.
func plantTransport(t *testing.T, faults scenario.FaultsSpec, realtime bool) (*natsTransport, *memInbox, *memWire, chan struct{}) {
	t.Helper()
	_, p, err := LoadPoint("../../scenarios/cloud-vehicle.yaml", 0)
	require.NoError(t, err)
	inj, err := fault.New(&faults, 7)
	require.NoError(t, err)
	plant, err := sim.NewPlantCore(p, 7)
	require.NoError(t, err)
	subj, err := wire.NewSubjects("r1")
	require.NoError(t, err)
	in, w, stop := &memInbox{}, &memWire{}, make(chan struct{})
	tio := transportIO{run: "r1", realtime: realtime, in: in, conn: w, stop: stop,
		publisher: func(subject, _, _ string) streamSender { return memStream{w, subject} }}
	tr := newTransport(tio, subj, sim.NewTopology(p, sim.NewBlocks(p, 1)), []sim.Core{plant}, inj, faults.Crashes)
	t.Cleanup(tr.close)
	return tr, in, w, stop
}

const yhat = "dpsim.r1.plant.0.yhat"

// Each delivery the outbox decides becomes one routed message: a broadcast, a broadcast but
// to some (Except), a copy for one subscriber (To) delivered late (At), a gap notice - which
// realtime, where a loss gives no notice, does not send.
func TestTransportSend(t *testing.T) {
	dropEve := scenario.LinkFault{Name: "l", From: "plant.0", To: "eavesdropper.0", Drop: 1}
	delayCloud := scenario.LinkFault{Name: "l", From: "plant.0", To: "cloud.0", Delay: 2}
	for _, tc := range []struct {
		name     string
		links    []scenario.LinkFault
		realtime bool
		want     []sent
	}{
		{"clear links", nil, false, []sent{{Subject: yhat, Ep: 4, Step: 3, Values: []float64{1.5}}}},
		{"clear links realtime", nil, true, []sent{{Subject: yhat, Ep: 4, Step: 3, Values: []float64{1.5}}}},
		{"lost to the eavesdropper", []scenario.LinkFault{dropEve}, false, []sent{
			{Subject: yhat, Ep: 4, Step: 3, Values: []float64{1.5}, Route: wire.Route{Except: []string{"eavesdropper.0"}}},
			{Subject: yhat, Ep: 4, Step: 3, Route: wire.Route{To: "eavesdropper.0", Gap: true}},
		}},
		{"lost to the eavesdropper realtime", []scenario.LinkFault{dropEve}, true, []sent{
			{Subject: yhat, Ep: 4, Step: 3, Values: []float64{1.5}, Route: wire.Route{Except: []string{"eavesdropper.0"}}},
		}},
		{"late to the cloud", []scenario.LinkFault{delayCloud}, false, []sent{
			{Subject: yhat, Ep: 4, Step: 3, Values: []float64{1.5}, Route: wire.Route{Except: []string{"cloud.0"}}},
			{Subject: yhat, Ep: 4, Step: 3, Route: wire.Route{To: "cloud.0", Gap: true}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, in, w, _ := plantTransport(t, scenario.FaultsSpec{Links: tc.links}, tc.realtime)
			tr.begin(4)
			require.Equal(t, 4, in.ep, "the inbox takes the episode's messages only")
			require.NoError(t, tr.Send(&sim.Out{From: sim.PlantEndpoint, Step: 3, Values: []float64{1.5}}))
			require.Equal(t, tc.want, w.take())
			require.NoError(t, tr.end())
		})
	}
}

// A copy delayed by two steps goes out when its step comes, routed to its subscriber for that
// step (At), after the broadcast of the step it is released at.
func TestTransportSendLate(t *testing.T) {
	tr, _, w, _ := plantTransport(t, scenario.FaultsSpec{Links: []scenario.LinkFault{{From: "plant.0", To: "cloud.0", Delay: 2}}}, false)
	tr.begin(0)
	for k := range 3 {
		require.NoError(t, tr.Send(&sim.Out{From: sim.PlantEndpoint, Step: k, Values: []float64{float64(k)}}))
	}
	var late []sent
	for _, s := range w.take() {
		if s.Route.To == "cloud.0" && !s.Route.Gap {
			late = append(late, s)
		}
	}
	require.Equal(t, []sent{{Subject: yhat, Ep: 0, Step: 0, Values: []float64{0}, Route: wire.Route{To: "cloud.0", At: 2}}}, late)
	require.NoError(t, tr.end())
}

// Wall-clock (ms) delays go through one delay line per subscriber: each copy is published on
// the connection, to its subscriber, not before its time and in the subscriber's order; end
// waits for the lines to empty.
func TestTransportDelayLines(t *testing.T) {
	const delay = 40 * time.Millisecond
	tr, _, w, _ := plantTransport(t, scenario.FaultsSpec{Links: []scenario.LinkFault{
		{From: "plant.0", To: "cloud.0", Unit: scenario.UnitMS, Delay: float64(delay / time.Millisecond)}}}, true)
	tr.begin(2)
	start := time.Now()
	for k := range 3 {
		require.NoError(t, tr.Send(&sim.Out{From: sim.PlantEndpoint, Step: k, Values: []float64{float64(k)}}))
	}
	require.NoError(t, tr.end())
	got, at := w.takeTimed()
	perSub := map[string][]int{}
	for i, s := range got {
		require.Equal(t, yhat, s.Subject)
		require.Equal(t, 2, s.Ep)
		require.Empty(t, s.Route.Except, "a line carries one subscriber's copies")
		perSub[s.Route.To] = append(perSub[s.Route.To], s.Step)
		if s.Route.To == "cloud.0" {
			require.GreaterOrEqual(t, at[i].Sub(start), delay, "step %d published before its time", s.Step)
		}
	}
	require.Equal(t, map[string][]int{"cloud.0": {0, 1, 2}, "eavesdropper.0": {0, 1, 2}}, perSub)
}

// Recv hands the hosted cores what is theirs - a broadcast, a copy routed to them (late:
// At), a gap notice, a broadcast but to some - and skips copies for another subscriber of
// the subject (stale when of an episode already finished) and senders no core hears.
func TestTransportRecv(t *testing.T) {
	msg := func(sender string, ep, step int, r wire.Route, vals ...float64) *wire.Message {
		return &wire.Message{V: wire.Version, Run: "r1", Episode: ep, Step: step, Sender: sender, Kind: "u", Values: vals, Route: r}
	}
	for _, tc := range []struct {
		name  string
		in    *wire.Message
		want  *sim.Msg // nil: skipped
		stale uint64
	}{
		{"broadcast", msg("cloud.0", 5, 3, wire.Route{}, 0.25),
			&sim.Msg{From: sim.CloudEndpoint, ToAll: true, Episode: 5, Step: 3, At: 3, Values: []float64{0.25}}, 0},
		{"late copy for the plant", msg("cloud.0", 5, 3, wire.Route{To: "plant.0", At: 6, More: true}, 0.25),
			&sim.Msg{From: sim.CloudEndpoint, To: sim.PlantEndpoint, Episode: 5, Step: 3, At: 6, More: true, Values: []float64{0.25}}, 0},
		{"gap notice", msg("cloud.0", 5, 3, wire.Route{To: "plant.0", Gap: true}),
			&sim.Msg{From: sim.CloudEndpoint, To: sim.PlantEndpoint, Episode: 5, Step: 3, At: 3, Gap: true}, 0},
		{"broadcast but to the eavesdropper", msg("cloud.0", 5, 3, wire.Route{Except: []string{"eavesdropper.0"}}, 0.25),
			&sim.Msg{From: sim.CloudEndpoint, ToAll: true, Except: []endpoint.Endpoint{sim.EavesdropperEndpoint}, Episode: 5, Step: 3, At: 3, Values: []float64{0.25}}, 0},
		{"for another subscriber", msg("cloud.0", 5, 3, wire.Route{To: "eavesdropper.0"}, 0.25), nil, 0},
		{"for another subscriber, stale", msg("cloud.0", 4, 3, wire.Route{To: "eavesdropper.0"}, 0.25), nil, 1},
		{"a sender no core hears", msg("agent.3", 5, 3, wire.Route{}, 0.25), nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, in, _, _ := plantTransport(t, scenario.FaultsSpec{}, false)
			tr.begin(5)
			in.msgs = []*wire.Message{tc.in}
			got, err := tr.Recv(time.Now().Add(time.Second))
			if tc.want == nil {
				require.ErrorIs(t, err, sim.ErrIdle, "skipped, then idle")
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
			}
			require.Equal(t, tc.stale, tr.stale)
		})
	}
	tr, in, _, _ := plantTransport(t, scenario.FaultsSpec{}, false)
	in.stopped = true
	_, err := tr.Recv(time.Now().Add(time.Second))
	require.ErrorIs(t, err, errStopped)
}

// After a crash of the cloud that restarts at step 4, a delivery due to it from step 4 on
// waits for its ctl.rejoin (the restarted process is subscribed again); earlier ones, and
// other episodes', go at once. A stop ends the wait.
func TestTransportAwaitsRejoin(t *testing.T) {
	crash := scenario.Crash{Proc: "cloud.0", Episode: 1, Step: 2, Restart: 4}
	faults := scenario.FaultsSpec{Crashes: []scenario.Crash{crash}}
	for _, tc := range []struct {
		name  string
		ep    int
		step  int
		waits bool
	}{
		{"before the restart step", 1, 3, false},
		{"at the restart step", 1, 4, true},
		{"after it", 1, 9, true},
		{"another episode", 2, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, _, w, _ := plantTransport(t, faults, false)
			tr.begin(tc.ep)
			done := make(chan error, 1)
			go func() { done <- tr.Send(&sim.Out{From: sim.PlantEndpoint, Step: tc.step, Values: []float64{1}}) }()
			if tc.waits {
				select {
				case err := <-done:
					t.Fatalf("sent before the rejoin (%v)", err)
				case <-time.After(50 * time.Millisecond):
				}
				require.Empty(t, w.take())
				tr.rejoins.note("cloud.0", tc.ep)
			}
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("still waiting after the rejoin")
			}
			require.Len(t, w.take(), 1)
		})
	}
	tr, _, _, stop := plantTransport(t, faults, false)
	tr.begin(1)
	close(stop)
	require.ErrorIs(t, tr.Send(&sim.Out{From: sim.PlantEndpoint, Step: 5, Values: []float64{1}}), errStopped)
}
