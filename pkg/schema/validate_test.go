package schema_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/schema"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

func load(t *testing.T) *schema.Set {
	t.Helper()
	set, err := schema.Load(schemaDir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func encode(t *testing.T, m *wire.Message) []byte {
	t.Helper()
	b, err := wire.EncodeJSON(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func data(from endpoint.Endpoint, vals ...float64) *wire.Message {
	return &wire.Message{V: wire.Version, Run: "r1", Episode: 3, Step: 7, Sender: from.String(), SentUnixNano: 1700000000123456789, Kind: from.Role.Stream(), Values: vals}
}

// Every message the Go side builds - the contract's constructors, the data streams - is valid
// on its subject, in both encodings.
func TestGoMessagesValid(t *testing.T) {
	set := load(t)
	subj, _ := wire.NewSubjects("r1")
	plant, cloud := endpoint.Endpoint{Role: endpoint.Plant}, endpoint.Endpoint{Role: endpoint.Cloud}
	agent, host := endpoint.Endpoint{Role: endpoint.Agent, ID: 4}, endpoint.Endpoint{Role: endpoint.Block, ID: 8}
	cases := []struct {
		subject string
		m       *wire.Message
		header  map[string][]string
	}{
		{subj.PlantYhat(0), data(plant, 0.5), nil},
		{subj.CloudU(0), data(cloud, -1.25), map[string][]string{wire.HeaderTo: {"plant.0"}, wire.HeaderAt: {"9"}, wire.HeaderMore: {"1"}}},
		{subj.AgentY(4), data(agent, 2), map[string][]string{wire.HeaderExcept: {"agent.3,eavesdropper.0"}, wire.HeaderSig: {"abc-_09"}}},
		{subj.AgentY(4), data(agent), map[string][]string{wire.HeaderTo: {"agent.5"}, wire.HeaderGap: {"1"}}},
		{subj.HostY(8), data(host, 1, 2, 3, 4, 5, 6, 7, 8), map[string][]string{wire.HeaderEpisodes: {"2"}}},
		{subj.CtlReady(endpoint.Plant, 0), contract.Ready{PID: 4242, Plan: 1 << 47}.Message("r1", "plant.0"), nil},
		{subj.CtlDone(endpoint.Agent, 3), contract.Done{Steps: 30, Missed: 0, PID: 1234567, TraceNext: 1 << 40}.Message("r1", "agent.3", 5), nil},
		{subj.CtlRejoin(endpoint.Cloud, 0), contract.Rejoin{Step: 17, PID: 99}.Message("r1", "cloud.0", 2), nil},
		{subj.CtlEpisode(), contract.EpisodeMessage("r1", 0, false), nil},
		{subj.CtlEpisode(), contract.EpisodeMessage("r1", 1, true), nil},
		{subj.CtlEpisode(), contract.EpisodesMessage("r1", 2, 32, false), nil},
		{subj.CtlEpisode(), contract.EpisodesMessage("r1", 34, 8, true), nil},
		{subj.ChallengerX0(), sealedX0(t), nil},
		{subj.CtlStop(), contract.StopMessage("r1"), nil},
	}
	for _, c := range cases {
		if err := set.ValidateMessage(c.subject, encode(t, c.m), c.header); err != nil {
			t.Errorf("JSON: %v", err)
		}
		b, err := wire.EncodeBinary(nil, c.m)
		if err != nil {
			t.Fatal(err)
		}
		if err := set.ValidateMessage(c.subject, b, c.header); err != nil {
			t.Errorf("binary: %v", err)
		}
	}
	res, err := json.Marshal(&contract.ProcessResult{V: contract.ResultVersion, Run: "r1", Role: "plant", Name: "plant-0", PID: 7, Status: contract.StatusOK,
		Invalid: wire.CountersSnapshot{ByReason: map[string]uint64{"late": 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.ValidateMessage(subj.CtlResult(endpoint.Plant, 0), res, nil); err != nil {
		t.Error(err)
	}
}

// The trace lines the Go writers produce are valid for their role.
func TestGoTraceLinesValid(t *testing.T) {
	set := load(t)
	y := 1.5
	lines := func(t *testing.T, write func(*bytes.Buffer) error) [][]byte {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		return bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	}
	cases := map[string][][]byte{
		"trace-plant.json": lines(t, func(b *bytes.Buffer) error {
			return trace.Write(b, []trace.ControlRecord{{Episode: 0, Step: 0, X: []float64{0, 0}, Yhat: []float64{0.1}}, {Episode: 0, Step: 100, X: []float64{1, 0}}})
		}),
		"trace-cloud.json": lines(t, func(b *bytes.Buffer) error {
			return trace.Write(b, []trace.ControlRecord{{Step: 3, U: []float64{1}, Xhat: []float64{0.5, 0.25}}, {Step: 4, Down: []string{"cloud"}}})
		}),
		"trace-eavesdropper-control.json": lines(t, func(b *bytes.Buffer) error {
			return trace.Write(b, []trace.ControlRecord{{Step: 3, EveX0: []float64{1, 2}, EveMissing: 1}})
		}),
		"trace-agent.json": lines(t, func(b *bytes.Buffer) error {
			return trace.Write(b, []trace.AgentRecord{{Step: 3, Agent: 4, X: 2, Y: &y}, {Step: 30, Agent: 4, X: 2}})
		}),
		"trace-consensus.json": lines(t, func(b *bytes.Buffer) error {
			return trace.Write(b, []trace.ConsensusRecord{{Step: 3, X: []float64{1, 2}, Y: []float64{1, 2}, EveX0: []float64{0, 0}, Down: []int{1}}})
		}),
	}
	for name, ls := range cases {
		for _, l := range ls {
			if err := set.Validate(name, l); err != nil {
				t.Errorf("%s: %v", l, err)
			}
		}
	}
}

// A message that breaks the contract fails validation, naming why.
func TestBrokenMessagesFail(t *testing.T) {
	set := load(t)
	ok := `{"v":1,"run":"r1","ep":0,"step":3,"from":"plant.0","sent":17,"kind":"yhat","vals":[0.5]}`
	if err := set.ValidateMessage("dpsim.r1.plant.0.yhat", []byte(ok), nil); err != nil {
		t.Fatalf("the valid message: %v", err)
	}
	cases := []struct{ why, subject, doc string }{
		{"no kind", "dpsim.r1.plant.0.yhat", `{"v":1,"run":"r1","ep":0,"step":3,"from":"plant.0","sent":17,"vals":[0.5]}`},
		{"version 2", "dpsim.r1.plant.0.yhat", strings.Replace(ok, `"v":1`, `"v":2`, 1)},
		{"another stream's kind", "dpsim.r1.plant.0.yhat", strings.Replace(ok, `"yhat"`, `"u"`, 1)},
		{"sender not the subject's", "dpsim.r1.plant.1.yhat", ok},
		{"run not the subject's", "dpsim.r2.plant.0.yhat", ok},
		{"cloud sender of yhat", "dpsim.r1.plant.0.yhat", strings.Replace(ok, `plant.0`, `cloud.0`, 1)},
		{"negative step", "dpsim.r1.plant.0.yhat", strings.Replace(ok, `"step":3`, `"step":-1`, 1)},
		{"fractional episode", "dpsim.r1.plant.0.yhat", strings.Replace(ok, `"ep":0`, `"ep":0.5`, 1)},
		{"string value", "dpsim.r1.plant.0.yhat", strings.Replace(ok, `[0.5]`, `["0.5"]`, 1)},
		{"no vals", "dpsim.r1.plant.0.yhat", strings.Replace(ok, `,"vals":[0.5]`, ``, 1)},
		{"ready without pid", "dpsim.r1.ctl.ready.plant.0", `{"v":1,"run":"r1","ep":0,"step":0,"from":"plant.0","sent":17,"kind":"ready","vals":[]}`},
		{"ready with pid 0", "dpsim.r1.ctl.ready.plant.0", `{"v":1,"run":"r1","ep":0,"step":0,"from":"plant.0","sent":17,"kind":"ready","vals":[0,5]}`},
		{"done of 3 values", "dpsim.r1.ctl.done.cloud.0", `{"v":1,"run":"r1","ep":0,"step":0,"from":"cloud.0","sent":17,"kind":"done","vals":[100,0,77]}`},
		{"done on the ready subject", "dpsim.r1.ctl.ready.cloud.0", `{"v":1,"run":"r1","ep":0,"step":0,"from":"cloud.0","sent":17,"kind":"done","vals":[100,0,77,0]}`},
		{"episode-x0 revealing x(0)", "dpsim.r1.ctl.episode", `{"v":1,"run":"r1","ep":0,"step":0,"from":"launcher.0","sent":17,"kind":"episode-x0","vals":[1,2]}`},
		{"episodes of 2000", "dpsim.r1.ctl.episode", `{"v":1,"run":"r1","ep":0,"step":0,"from":"launcher.0","sent":17,"kind":"episodes","vals":[2000]}`},
		{"episode from a process", "dpsim.r1.ctl.episode", `{"v":1,"run":"r1","ep":0,"step":0,"from":"plant.0","sent":17,"kind":"episode","vals":[]}`},
		{"stop with values", "dpsim.r1.ctl.stop", `{"v":1,"run":"r1","ep":0,"step":0,"from":"launcher.0","sent":17,"kind":"stop","vals":[1]}`},
		{"run with a dot", "dpsim.r1.plant.0.yhat", strings.Replace(ok, `"run":"r1"`, `"run":"r.1"`, 1)},
		{"unknown ctl word", "dpsim.r1.ctl.hello", `{"v":1,"run":"r1","ep":0,"step":0,"from":"launcher.0","sent":17,"kind":"stop","vals":[]}`},
		{"result without status", "dpsim.r1.ctl.result.plant.0", `{"v":1,"run":"r1","role":"plant","id":0,"name":"plant-0","pid":7,"point":0}`},
		{"not JSON", "dpsim.r1.plant.0.yhat", `{"v":1,`},
	}
	for _, c := range cases {
		if err := set.ValidateMessage(c.subject, []byte(c.doc), nil); err == nil {
			t.Errorf("%s: valid", c.why)
		} else {
			t.Logf("%s: %v", c.why, strings.SplitN(err.Error(), "\n", 2)[0])
		}
	}
	headers := []struct {
		why string
		h   map[string][]string
	}{
		{"batch for one subscriber", map[string][]string{wire.HeaderEpisodes: {"4"}, wire.HeaderTo: {"plant.0"}}},
		{"exceptions for one subscriber", map[string][]string{wire.HeaderExcept: {"agent.1"}, wire.HeaderTo: {"agent.2"}}},
		{"step that is no number", map[string][]string{wire.HeaderAt: {"soon"}}},
		{"gap of 2", map[string][]string{wire.HeaderGap: {"2"}}},
		{"to no sender", map[string][]string{wire.HeaderTo: {"plant"}}},
	}
	for _, c := range headers {
		if err := set.ValidateMessage("dpsim.r1.plant.0.yhat", []byte(ok), c.h); err == nil {
			t.Errorf("headers %s: valid", c.why)
		}
	}
	for name, line := range map[string]string{
		"trace-plant.json": `{"episode":0,"step":3,"x":[1,2],"u":[1]}`, // the cloud's field
		"trace-agent.json": `{"episode":0,"step":3,"agent":1}`,         // no x
		"trace-cloud.json": `{"episode":0,"step":3,"U":[1]}`,           // another case
	} {
		if err := set.Validate(name, []byte(line)); err == nil {
			t.Errorf("%s: %s valid", name, line)
		}
	}
}

// sealedX0 is the x0 message of episode 34 with x(0) = (0.5, -2), sealed to a plant.
func sealedX0(t *testing.T) *wire.Message {
	t.Helper()
	launcher, err := bus.NewCurveKey()
	if err != nil {
		t.Fatal(err)
	}
	plant, err := bus.NewCurveKey()
	if err != nil {
		t.Fatal(err)
	}
	m, err := contract.X0Message("r1", 34, []float64{0.5, -2}, launcher,
		[]contract.X0Recipient{{Endpoint: endpoint.Endpoint{Role: endpoint.Plant, ID: 0}, First: 0, Last: 1, Public: plant.Public}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
