package contract

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/wire"
)

// ResultVersion is the version of the ProcessResult JSON.
const ResultVersion = 1

// ProcessResult is what a role process reports when it ends: written to
// <out>/<name>.result.json and published on dpsim.<run>.ctl.result.<role>.<id>.
type ProcessResult struct {
	V      int    `json:"v"`                // ResultVersion
	Run    string `json:"run"`              // the run id (--run)
	Role   string `json:"role"`             // plant, cloud, agent or eavesdropper
	ID     int    `json:"id"`               // --id (an agent host: its first agent)
	Agents []int  `json:"agents,omitempty"` // agent hosts: the first and last agent index hosted
	Name   string `json:"name"`             // ProcName: the stem of its file names
	PID    int    `json:"pid"`              // its process id
	Point  int    `json:"point"`            // the scenario point it ran (--point)

	// Status is ok (stopped by ctl.stop after its episodes), interrupted (SIGINT/SIGTERM, or
	// its launcher went away) or failed; Error says why when not ok.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`

	Episodes    int     `json:"episodes"`      // episodes completed
	Steps       int     `json:"steps"`         // steps completed, all episodes
	BusySeconds float64 `json:"busy_seconds"`  // wall time inside episodes
	StepsPerSec float64 `json:"steps_per_sec"` // Steps / BusySeconds

	// Invalid counts the data messages received and dropped (by reason: decode, dim,
	// nonfinite, late, ...); CtlInvalid the coordination messages that were dropped.
	Invalid    wire.CountersSnapshot `json:"invalid"`
	CtlInvalid wire.CountersSnapshot `json:"ctl_invalid"`
	Timing     wire.TimingStats      `json:"timing"`
	Conn       wire.ConnStats        `json:"conn"`

	// PeakRSSBytes is the process's own peak resident set size in bytes, read when it ends;
	// PeakRSSSource says from where: rss.VmHWM (/proc/self/status, Linux) or rss.Getrusage
	// (elsewhere). The launcher reports it in summary.json instead of the wait4 rusage of
	// the child, which on Linux includes the launcher's own memory at fork/exec.
	PeakRSSBytes  int64  `json:"peak_rss_bytes"`
	PeakRSSSource string `json:"peak_rss_source,omitempty"`

	TraceFile      string `json:"trace_file,omitempty"`
	Records        int    `json:"records"`
	TranscriptFile string `json:"transcript_file,omitempty"`
	// FaultsFile is the injector's record of this process's messages: one line per message
	// whose fate on a link was not "on time, once" (fault.Event).
	FaultsFile string `json:"faults_file,omitempty"`
	Messages   int    `json:"messages,omitempty"` // eavesdropper: every message seen
	// SlowConsumerDropped counts the messages the process's NATS client dropped because the
	// process fell behind (slow consumer): messages, not events.
	SlowConsumerDropped int `json:"slow_consumer_dropped"`

	// Unexpected counts the deliveries its cores dropped as not theirs: another episode, a
	// sender they do not hear, a step beyond the horizon, a flood of early ones.
	Unexpected uint64 `json:"unexpected"`
	// Stale counts the data messages that came for an episode its cores had finished (late
	// copies of the previous episode, copies after the end): a timing effect, not wrong
	// messages (those are in Invalid). Each was compared with the copy used: a differing one
	// is a conflict in Links.
	Stale uint64 `json:"stale"`
	// Links are this process's per-link counters (fault.LinkStats): its publishers' injector
	// side and its cores' receive side. The launcher merges every process's.
	Links []fault.LinkStats `json:"links,omitempty"`

	// ConnEvents are the NATS connection's events (disconnected, reconnected, closed; async
	// errors are counted in Conn), the first MaxConnEvents of them, with when they happened.
	ConnEvents []ConnEvent `json:"conn_events,omitempty"`
	// Restarted says the process was started again after a crash (faults.crashes): it
	// resumed episode RestartEpisode from its checkpoint at step RestartStep.
	Restarted      bool `json:"restarted,omitempty"`
	RestartEpisode int  `json:"restart_episode,omitempty"`
	RestartStep    int  `json:"restart_step,omitempty"`
}

// MaxConnEvents bounds ProcessResult.ConnEvents.
const MaxConnEvents = 100

// ConnEvent is one connection event of a process.
type ConnEvent struct {
	UnixNano int64  `json:"t"`
	Event    string `json:"event"`           // disconnected, reconnected, closed
	Episode  int    `json:"episode"`         // the episode the process was in (-1: none yet)
	Error    string `json:"error,omitempty"` // why, when the client said
	URL      string `json:"url,omitempty"`   // the server (redacted of credentials)
}

// Statuses of a ProcessResult.
const (
	StatusOK          = "ok"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// DecodeResult parses a ctl.result payload (or a result file) and checks its version and run.
func DecodeResult(data []byte, run string) (*ProcessResult, error) {
	var r ProcessResult
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("process result: %w", err)
	}
	if r.V != ResultVersion {
		return nil, fmt.Errorf("process result: version %d, want %d", r.V, ResultVersion)
	}
	if run != "" && r.Run != run {
		return nil, fmt.Errorf("process result: run %q, want %q", r.Run, run)
	}
	return &r, nil
}

// ReadResultFile reads <out>/<name>.result.json.
func ReadResultFile(path, run string) (*ProcessResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := DecodeResult(data, run)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
