package contract

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

func TestProcName(t *testing.T) {
	require.Equal(t, "plant-0", ProcName(endpoint.Plant, 0, 0))
	require.Equal(t, "agent-3", ProcName(endpoint.Agent, 3, 3))
	require.Equal(t, "agents-0-24", ProcName(endpoint.Agent, 0, 24))
	require.Equal(t, "eavesdropper-1", ProcName(endpoint.Eavesdropper, 1, 1))
	require.Equal(t, "plant-0.trace.jsonl", TraceFile("plant-0"))
}

func TestDecodeResult(t *testing.T) {
	_, err := DecodeResult([]byte("garbage"), "r1")
	require.ErrorContains(t, err, "process result")
	_, err = DecodeResult([]byte(`{"v":2,"run":"r1"}`), "r1")
	require.ErrorContains(t, err, "version 2")
	_, err = DecodeResult([]byte(`{"v":1,"run":"r2"}`), "r1")
	require.ErrorContains(t, err, `run "r2"`)
	r, err := DecodeResult([]byte(`{"v":1,"run":"r1","role":"plant","id":0,"episodes":3}`), "r1")
	require.NoError(t, err)
	require.Equal(t, 3, r.Episodes)
}

// Each payload reads back what was written, in the order the protocol documents, from the
// wire form; a message without a valid pid is an error.
func TestCtlPayloads(t *testing.T) {
	roundTrip := func(m *wire.Message) *wire.Message {
		t.Helper()
		b, err := wire.EncodeJSON(nil, m)
		require.NoError(t, err)
		var out wire.Message
		require.NoError(t, wire.Decode(b, &out))
		return &out
	}
	for _, tc := range []struct {
		name string
		msg  *wire.Message
		vals []float64
		read func(*wire.Message) (any, error)
		want any
	}{
		{"ready", Ready{PID: 12, Plan: 1<<48 - 1}.Message("r", "plant.0"), []float64{12, 1<<48 - 1},
			func(m *wire.Message) (any, error) { return ParseReady(m) }, Ready{PID: 12, Plan: 1<<48 - 1}},
		{"ready without plan", &wire.Message{Kind: wire.CtlReady, Values: []float64{12}}, []float64{12},
			func(m *wire.Message) (any, error) { return ParseReady(m) }, Ready{PID: 12}},
		{"ready with a plan that is no digest", &wire.Message{Kind: wire.CtlReady, Values: []float64{12, 0.5}}, []float64{12, 0.5},
			func(m *wire.Message) (any, error) { return ParseReady(m) }, Ready{PID: 12}},
		{"done", Done{Steps: 100, Missed: 2, PID: 7, TraceNext: 1 << 40}.Message("r", "cloud.0", 3), []float64{100, 2, 7, 1 << 40},
			func(m *wire.Message) (any, error) { return ParseDone(m) }, Done{Steps: 100, Missed: 2, PID: 7, TraceNext: 1 << 40}},
		{"rejoin", Rejoin{Step: 40, PID: 9}.Message("r", "plant.0", 1), []float64{40, 9},
			func(m *wire.Message) (any, error) { return ParseRejoin(m) }, Rejoin{Step: 40, PID: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := roundTrip(tc.msg)
			require.Equal(t, tc.vals, m.Values)
			got, err := tc.read(m)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	for _, m := range []*wire.Message{
		{Kind: wire.CtlDone, Values: []float64{100, 2}}, {Kind: wire.CtlDone, Values: []float64{100, 2, 0}},
		{Kind: wire.CtlRejoin, Values: []float64{4}}, {Kind: wire.CtlReady, Values: []float64{-3, 1}},
	} {
		_, err := PID(m)
		require.Error(t, err, "%+v", m)
		require.Equal(t, wire.ReasonDim, wire.ReasonOf(err))
	}
	for _, vals := range [][]float64{{1}, {100, 2, 7}, {100, 2, 7, -1}, {100, 2, 7, 0.5}} {
		_, err := ParseDone(&wire.Message{Kind: wire.CtlDone, Values: vals})
		require.Error(t, err, "%v", vals)
	}
	_, err := ParseDone(&wire.Message{Kind: wire.CtlDone, Values: []float64{100, 2, 7, 0}})
	require.NoError(t, err)
	_, err = ParseRejoin(&wire.Message{Kind: wire.CtlRejoin})
	require.Error(t, err)
	_, err = ParseReady(&wire.Message{Kind: wire.CtlReady})
	require.Error(t, err)

	ep := EpisodeMessage("r", 4, false)
	require.Equal(t, wire.CtlEpisode, ep.Kind)
	require.Nil(t, X0(ep), "the scenario's x(0)")
	hand := withX0(EpisodeMessage("r", 4, false), 1, 2) // a hand-driven run's ctl.episode
	got := X0(hand)
	require.Equal(t, []float64{1, 2}, got)
	got[0] = 9
	require.Equal(t, 1.0, hand.Values[0], "X0 returns a copy")
	require.Equal(t, wire.CtlStop, StopMessage("r").Kind)
}

func withX0(m *wire.Message, x0 ...float64) *wire.Message {
	m.Values = x0
	return m
}

// The wire form of the messages that start episode 7 with an explicit initial state (the
// auditor's challenger): the public ctl.episode says only that the x(0) is private; the x(0)
// itself goes on the challenger's subject, outside dpsim.> where the eavesdropper listens,
// sealed to the plant: [id 0, the box's 91 bytes, its bytes six per value].
func ExampleEpisodeMessage() {
	launcher, _ := bus.NewCurveKey()
	plant, _ := bus.NewCurveKey()
	pub := EpisodeMessage("r1", 7, true)
	priv, _ := X0Message("r1", 7, []float64{0.5, 0}, launcher, []X0Recipient{{Endpoint: endpoint.Endpoint{Role: endpoint.Plant}, Last: 1, Public: plant.Public}})
	pub.SentUnixNano, priv.SentUnixNano = 1700000000000000000, 1700000000000000000 // fixed for the example
	subj, _ := wire.NewSubjects("r1")
	b, _ := wire.EncodeJSON(nil, pub)
	fmt.Println(subj.CtlEpisode(), string(b))
	fmt.Println(subj.ChallengerX0(), priv.Kind, priv.Values[:2], len(priv.Values))
	x0, _ := OpenX0(priv, endpoint.Endpoint{Role: endpoint.Plant}, plant, launcher.Public)
	fmt.Println("the plant opens", x0)
	// Output:
	// dpsim.r1.ctl.episode {"v":1,"run":"r1","ep":7,"step":0,"from":"launcher.0","sent":1700000000000000000,"kind":"episode-x0","vals":[]}
	// dpsim-challenger.r1.x0 x0 [0 91] 18
	// the plant opens [0.5 0]
}
