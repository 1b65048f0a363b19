package launch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
)

// A Degradation says in words what went wrong without failing a run - the one wording of
// dpsim run's summary.json "degraded" and of the audit's - and a point's outcome counts it from
// its processes' results: an agent host's steps once per agent, conflicts from the links.
func TestDegradation(t *testing.T) {
	require.Empty(t, (&Degradation{CoreSteps: 100}).Reasons(), "nothing went wrong: no reason")

	d := Degradation{CoreSteps: 400, Missed: 4, Conflicts: 2, SlowDropped: 3, SlowProcs: []string{"cloud-0 3"}}
	require.Equal(t, []string{
		"3 message(s) dropped by NATS clients that fell behind (slow consumers: cloud-0 3)",
		"2 conflicting message(s): a receiver got two different messages for the same sender, episode and step (forged or corrupted traffic; the first was used; metrics.links[].conflicts)",
		"4 of 400 process steps (1%) timed out (--timeout) and went on without all their messages (the missing-input rules applied)",
	}, d.Reasons())
	require.Equal(t, 0.01, d.MissedFraction())
	d.Realtime = true
	require.Contains(t, d.MissedReason(), "missed their realtime deadline")

	d = Degradation{ServerRestarts: 1, Disconnects: 3, Reconnects: 3, ServerDown: []string{"episode 2 step 50 (1s)"}, LostInTransport: 7}
	require.Equal(t, []string{"the NATS server was restarted 1 time(s) (faults.server_restarts): 3 NATS disconnect(s) and 3 reconnect(s) across the processes; " +
		"server down from episode 2 step 50 (1s); 7 data message(s) lost in transport"}, d.Reasons())

	out := &PointOutcome{Procs: []ProcOutcome{
		{Role: endpoint.Agent, ID: 0, LastAgent: 4, Name: "agents-0-4", Result: &contract.ProcessResult{Steps: 10}},
		{Role: endpoint.Eavesdropper, Name: "eavesdropper-0", Result: &contract.ProcessResult{Steps: 10, SlowConsumerDropped: 2}},
		{Role: endpoint.Agent, ID: 5, LastAgent: 5, Name: "agent-5"}, // no result: nothing to count
	}, Results: &metrics.Results{Links: []fault.LinkStats{{Link: "agent.0->agent.5", Conflicts: 1}}}}
	out.Procs[0].Result.Timing.Missed = 3
	got := out.Degradation(false)
	require.Equal(t, 60, got.CoreSteps, "5 agents x 10 steps + the eavesdropper's 10")
	require.Equal(t, 3, got.Missed)
	require.Equal(t, uint64(1), got.Conflicts)
	require.Equal(t, []string{"eavesdropper-0 2"}, got.SlowProcs)
}

// An error about a process names the user's program that played it (--role): what to fix.
func TestProcWhoNamesTheProgram(t *testing.T) {
	p := &Proc{Role: endpoint.Plant, Name: "plant-0", pid: 42}
	require.Equal(t, "plant-0 (pid 42)", p.who())
	p.Program = "node plant.js"
	require.Equal(t, `plant-0 (pid 42; --role plant.0="node plant.js")`, p.who())
	s := &Session{byKey: map[string]*Proc{"plant.0": p, "cloud.0": {Role: endpoint.Cloud, Name: "cloud-0"}}}
	require.Equal(t, `cloud.0, plant.0 (--role plant.0="node plant.js")`, s.joinSenders(map[string]bool{"plant.0": true, "cloud.0": true}))
}
