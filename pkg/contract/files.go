package contract

import (
	"strconv"

	"github.com/dpsim/dpsim/pkg/endpoint"
)

// ProcName is the file and log name of a process: plant-0, cloud-0, eavesdropper-0, agent-3
// (one agent) or agents-0-24 (a host of agents 0..24).
func ProcName(role endpoint.Role, id, lastAgent int) string {
	if role == endpoint.Agent && lastAgent > id {
		return "agents-" + strconv.Itoa(id) + "-" + strconv.Itoa(lastAgent)
	}
	return role.String() + "-" + strconv.Itoa(id)
}

// The files of process name in its --out directory.

// PlanFile is the plan the launcher writes for the process (plan.File; its digest is in the
// process's Ready).
func PlanFile(name string) string { return name + ".plan.json" }

// TraceFile holds the process's per-step records (the pkg/trace format, JSON lines), episode
// after episode; the launcher merges every process's.
func TraceFile(name string) string { return name + ".trace.jsonl" }

// ResultFile holds the ProcessResult the process writes when it ends.
func ResultFile(name string) string { return name + ".result.json" }

// TranscriptFile holds the eavesdropper's transcript: one line per message it received.
func TranscriptFile(name string) string { return name + ".transcript.jsonl" }

// FaultsFile is the fault log: what the process's injector did to its messages, one line per
// message whose fate on a link was not "on time, once" (fault.Event).
func FaultsFile(name string) string { return name + ".faults.jsonl" }

// CheckpointFile is the checkpoint a process writes before it is killed by a scenario's crash
// and reads back when it is started again with --resume (mode 0600: it holds a noise draw).
func CheckpointFile(name string) string { return name + ".checkpoint.json" }

// LogFile is where the launcher sends the process's stderr (its zerolog lines).
func LogFile(name string) string { return name + ".log" }
