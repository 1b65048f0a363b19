package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/endpoint"
)

func TestValidToken(t *testing.T) {
	tests := []struct {
		tok string
		ok  bool
	}{
		{"r1", true},
		{"cloud-vehicle_20260101T120000-3f9a", true},
		{"ünïcode", true},
		{"", false},
		{"a.b", false},
		{"a*", false},
		{">", false},
		{"a b", false},
		{"a\tb", false},
		{"a\nb", false},
		{"a\x00b", false},
		{"\xff", false},
		{strings.Repeat("x", MaxTokenLen), true},
		{strings.Repeat("x", MaxTokenLen+1), false},
	}
	for _, tc := range tests {
		err := ValidToken(tc.tok)
		if (err == nil) != tc.ok {
			t.Errorf("ValidToken(%q) = %v, want ok=%v", tc.tok, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrToken) {
			t.Errorf("ValidToken(%q) error %v does not wrap ErrToken", tc.tok, err)
		}
	}
}

func TestSubjects(t *testing.T) {
	if _, err := NewSubjects("bad.run"); err == nil {
		t.Fatal("NewSubjects accepted a run id with a dot")
	}
	s, err := NewSubjects("r7")
	if err != nil {
		t.Fatal(err)
	}
	mustCtl := func(toks ...string) string {
		t.Helper()
		subj, err := s.Ctl(toks...)
		if err != nil {
			t.Fatal(err)
		}
		return subj
	}
	tests := []struct{ got, want string }{
		{AllRuns(), "dpsim.>"},
		{s.All(), "dpsim.r7.>"},
		{s.PlantYhat(0), "dpsim.r7.plant.0.yhat"},
		{s.AllPlantYhat(), "dpsim.r7.plant.*.yhat"},
		{s.CloudU(2), "dpsim.r7.cloud.2.u"},
		{s.AllCloudU(), "dpsim.r7.cloud.*.u"},
		{s.AgentY(17), "dpsim.r7.agent.17.y"},
		{s.AllAgentY(), "dpsim.r7.agent.*.y"},
		{s.AllCtl(), "dpsim.r7.ctl.>"},
		{s.CtlStart(), "dpsim.r7.ctl.start"},
		{s.CtlEpisode(), "dpsim.r7.ctl.episode"},
		{s.CtlStop(), "dpsim.r7.ctl.stop"},
		{s.CtlReady(endpoint.Agent, 3), "dpsim.r7.ctl.ready.agent.3"},
		{s.CtlDone(endpoint.Plant, 0), "dpsim.r7.ctl.done.plant.0"},
		{s.CtlResult(endpoint.Eavesdropper, 0), "dpsim.r7.ctl.result.eavesdropper.0"},
		{s.AllCtlWord(CtlDone), "dpsim.r7.ctl.done.>"},
		{mustCtl("fault", "drop"), "dpsim.r7.ctl.fault.drop"},
		{endpoint.Endpoint{Role: endpoint.Plant, ID: 4}.String(), "plant.4"},
		{s.Data(endpoint.Endpoint{Role: endpoint.Block, ID: 4}), "dpsim.r7.host.4.y"},
		{s.Data(endpoint.Endpoint{Role: endpoint.Cloud, ID: 0}), s.CloudU(0)},
		{LauncherSender, endpoint.Endpoint{Role: endpoint.Launcher, ID: 0}.String()},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for _, bad := range [][]string{nil, {"a.b"}, {"*"}, {"ok", ">"}, {""}} {
		if subj, err := s.Ctl(bad...); err == nil {
			t.Errorf("Ctl(%q) = %q, want an error", bad, subj)
		}
	}
}

func TestParseSubject(t *testing.T) {
	s, _ := NewSubjects("run-1")
	tests := []struct {
		subj   string
		want   Subject
		sender string
		bad    bool
	}{
		{subj: s.PlantYhat(0), want: Subject{Run: "run-1", Role: endpoint.Plant, ID: 0, Stream: endpoint.StreamYhat}, sender: "plant.0"},
		{subj: s.CloudU(3), want: Subject{Run: "run-1", Role: endpoint.Cloud, ID: 3, Stream: endpoint.StreamU}, sender: "cloud.3"},
		{subj: s.AgentY(99), want: Subject{Run: "run-1", Role: endpoint.Agent, ID: 99, Stream: endpoint.StreamY}, sender: "agent.99"},
		{subj: s.CtlDone(endpoint.Agent, 5), want: Subject{Run: "run-1", Ctl: []string{"done", "agent", "5"}}},
		{subj: "nats.run-1.plant.0.yhat", bad: true},
		{subj: "dpsim.run-1", bad: true},
		{subj: "dpsim.run-1.ctl", bad: true},
		{subj: "dpsim.run-1.plant.x.yhat", bad: true},
		{subj: "dpsim.run-1.plant.-1.yhat", bad: true},
		{subj: "dpsim.run-1.plant.01.yhat", bad: true},
		{subj: "dpsim.run-1.plant.0", bad: true},
		{subj: "dpsim.run-1.plant.*.yhat", bad: true},
		{subj: "dpsim..plant.0.yhat", bad: true},
		{subj: "dpsim.run-1.king.0.yhat", bad: true},
	}
	for _, tc := range tests {
		got, err := ParseSubject(tc.subj)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseSubject(%q) = %+v, want an error", tc.subj, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSubject(%q): %v", tc.subj, err)
			continue
		}
		if got.Run != tc.want.Run || got.Role != tc.want.Role || got.ID != tc.want.ID || got.Stream != tc.want.Stream ||
			strings.Join(got.Ctl, ".") != strings.Join(tc.want.Ctl, ".") || got.IsCtl() != tc.want.IsCtl() {
			t.Errorf("ParseSubject(%q) = %+v, want %+v", tc.subj, got, tc.want)
		}
		if got.Sender() != tc.sender {
			t.Errorf("ParseSubject(%q).Sender() = %q, want %q", tc.subj, got.Sender(), tc.sender)
		}
		if !got.IsCtl() && SenderOfSubject(tc.subj) != tc.sender {
			t.Errorf("SenderOfSubject(%q) = %q, want %q", tc.subj, SenderOfSubject(tc.subj), tc.sender)
		}
	}
	for _, subj := range []string{"", "dpsim", "dpsim.r", "dpsim.r.x", "dpsim.r.a.b.c.d"} {
		if got := SenderOfSubject(subj); got != "" {
			t.Errorf("SenderOfSubject(%q) = %q, want empty", subj, got)
		}
	}
}
