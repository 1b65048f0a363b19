package record

import (
	"time"

	"github.com/dpsim/dpsim/internal/finitejson"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/wire"
)

// FileName is the name of the run's summary in its output directory.
const FileName = "summary.json"

// The statuses of a run (Summary.Status).
const (
	StatusOK          = "ok"
	StatusDegraded    = "degraded"
	StatusIntervened  = "intervened" // completed with live changes of its faults: never "ok"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
)

// RSSWait is ProcessSummary.MaxRSSSource when the peak comes from wait4 (the process reported
// none of its own).
const RSSWait = "wait4"

// Summary is OUT/summary.json.
type Summary struct {
	Scenario     string `json:"scenario"`
	ScenarioFile string `json:"scenario_file"`
	Description  string `json:"description,omitempty"`
	Kind         string `json:"kind"`
	Seed         uint64 `json:"seed"`
	// SeedString is Seed in decimal: JSON readers that parse numbers as doubles (JavaScript,
	// jq) round a seed above 2^53, and a drawn seed usually is.
	SeedString string `json:"seed_string"`
	SeedSource string `json:"seed_source"` // flag, scenario or crypto (drawn: recorded here)
	// Sampler is how the noise became float64 values (secure or float, docs/math.md section 10),
	// Granularity the secure sampler's grid g (the first point's; each point states its own).
	Sampler      noise.Sampler `json:"sampler"`
	Granularity  float64       `json:"granularity"`
	Runs         int           `json:"runs"` // episodes asked for, per point
	Steps        int           `json:"steps"`
	Engine       string        `json:"engine"` // nats or fast
	Mode         string        `json:"mode"`   // lockstep or realtime (fast: the engine does not pace)
	PeriodNS     int64         `json:"period_ns,omitempty"`
	Encoding     string        `json:"encoding,omitempty"`
	NATSURL      string        `json:"nats_url"`
	NATSEmbedded bool          `json:"nats_embedded"`
	NATSCluster  int           `json:"nats_cluster,omitempty"` // embedded servers joined by routes (--cluster)
	// Attached: the role processes were started by someone else (--attach), not spawned.
	Attached   bool    `json:"attached,omitempty"`
	TLS        string  `json:"tls,omitempty"` // auto (the embedded server's throwaway CA) or external
	RunID      string  `json:"run_id"`
	Started    string  `json:"started"`
	ElapsedSec float64 `json:"elapsed_seconds"`
	// LauncherMaxRSSBytes is the launcher's own peak resident set (VmHWM; 0: unknown), the
	// role processes' is in processes[].max_rss_bytes.
	LauncherMaxRSSBytes int64 `json:"launcher_max_rss_bytes"`
	// EstimatedMemoryBytes is the estimate of the launcher's peak memory the run was checked
	// against --budget with before it started (engine.EstimateCost): an upper bound of
	// launcher_max_rss_bytes within a small factor.
	EstimatedMemoryBytes int64  `json:"estimated_memory_bytes"`
	Status               string `json:"status"` // StatusOK, StatusDegraded, StatusIntervened, StatusFailed or StatusInterrupted
	Error                string `json:"error,omitempty"`
	// Degraded names what made a completed run "degraded" (with the counts); MissedFraction is
	// the fraction of the processes' steps that went on without all their messages.
	Degraded       []string `json:"degraded,omitempty"`
	MissedFraction float64  `json:"missed_fraction"`
	// Problems are what a role process did wrong, each attributed to its process (an invalid
	// message, a missing result, trace or link counters, nothing delivered, a subject refused
	// by the server): the fatal ones failed the run, the others made it degraded.
	Problems []PointProblem `json:"problems,omitempty"`
	Warnings []string       `json:"warnings,omitempty"`
	// NonFinite names the values that overflowed float64 (an unstable loop): they are null in
	// this file (internal/finitejson).
	NonFinite *finitejson.Report `json:"non_finite,omitempty"`
	// LeftoverProcesses are processes the run started (or their descendants) that outlived
	// their role and were killed when it stopped (internal/launch, sweep).
	LeftoverProcesses []Leftover `json:"leftover_processes,omitempty"`

	// Processes is every role process of every point: {role, id, pid} and what it reported.
	Processes []ProcessSummary `json:"processes"`
	// Metrics are the sim Results: one object for a single point, a list (one per point, in
	// the order of Points) for a sweep.
	Metrics any `json:"metrics"`
	// Points has one entry per sweep point (one for a scenario without sweep).
	Points []PointSummary `json:"points"`
	Timing TimingSummary  `json:"timing"`
	// Invalid counts the dropped data messages per process name (decode, dim, nonfinite,
	// signature, ...: wrong messages); LauncherCtlInvalid the launcher's dropped coordination
	// messages. Stale counts per process the data messages that came for an episode its cores
	// had finished (late, not wrong: compared with the copy used, never used themselves).
	Invalid            map[string]wire.CountersSnapshot `json:"invalid"`
	LauncherCtlInvalid wire.CountersSnapshot            `json:"launcher_ctl_invalid"`
	Stale              map[string]uint64                `json:"stale,omitempty"`
	// Security says how the traffic was secured (NATS engine only).
	Security *Security `json:"security,omitempty"`
	// Secrets says which files holding secrets the processes left were removed when the run
	// ended, or kept (--keep-secrets) (NATS engine only).
	Secrets *SecretFiles `json:"secrets,omitempty"`
	// Recording is the MCAP recording of the run's bus traffic (dpsim run --record; nil without).
	Recording *Recording `json:"recording,omitempty"`
	// Inflight says how many episodes were kept in flight at once over the processes (NATS
	// engine; --inflight).
	Inflight *InflightSummary `json:"inflight,omitempty"`
	// Interventions are the live changes of the faults made through --ui.
	Interventions *InterventionsSummary `json:"interventions,omitempty"`
	// Dispatch is what --dispatch did: the workers that played the fast engine's episodes, the
	// chunks re-issued and the answers refused, each naming its worker.
	Dispatch *Dispatch `json:"dispatch,omitempty"`
	// Connections counts the processes' NATS connection events (a server outage shows here);
	// Timeline lists every fault as it happened.
	Connections ConnectionSummary `json:"connections"`
	Timeline    []TimelineEvent   `json:"timeline,omitempty"`
	Files       Files             `json:"files"`
}

// ConnectionSummary sums the processes' connection events.
type ConnectionSummary struct {
	Disconnects    uint64 `json:"disconnects"`
	Reconnects     uint64 `json:"reconnects"`
	ServerRestarts int    `json:"server_restarts"` // of the embedded server (faults.server_restarts)
	Crashes        int    `json:"crashes"`         // processes killed (faults.crashes)
	Restarts       int    `json:"restarts"`        // killed processes started again
}

// Files names the outputs, relative to OUT.
type Files struct {
	Summary string   `json:"summary"`
	Traces  []string `json:"traces"`
	Procs   string   `json:"procs,omitempty"` // the processes' own trace, result and log files
	Report  string   `json:"report,omitempty"`
	// Parquet are the Parquet tables of --parquet (episodes.parquet, trace.parquet).
	Parquet []string `json:"parquet,omitempty"`
}

// ProcessSummary is one role process.
type ProcessSummary struct {
	Role   string `json:"role"`
	ID     int    `json:"id"`
	PID    int    `json:"pid"`
	Name   string `json:"name"`
	Agents []int  `json:"agents,omitempty"`
	Point  int    `json:"point"`
	// Program is the user's command that played this role (--role); absent for dpsim's own.
	Program string `json:"program,omitempty"`
	// ExitCode is the child's exit code; -1 when unknown (killed by a signal, still running,
	// or attached: a process the launcher did not start, whose status comes from its result).
	ExitCode int    `json:"exit_code"`
	Status   string `json:"status"`
	Error    string `json:"error,omitempty"`
	// MaxRSSBytes is the process's peak resident set size and MaxRSSSource where it comes
	// from: "VmHWM" (the process read /proc/self/status at exit: Linux), "getrusage" (its
	// own ru_maxrss, elsewhere) or, when the process reported nothing (killed), "wait4" (the
	// rusage of the exited child: on Linux this includes the launcher's memory at fork/exec,
	// so it overstates a small child of a large launcher). WaitMaxRSSBytes is always that
	// wait4 value, for comparison.
	MaxRSSBytes     int64                 `json:"max_rss_bytes"`
	MaxRSSSource    string                `json:"max_rss_source"`
	WaitMaxRSSBytes int64                 `json:"wait_max_rss_bytes"`
	UserCPUSec      float64               `json:"user_cpu_seconds"`
	SysCPUSec       float64               `json:"sys_cpu_seconds"`
	Episodes        int                   `json:"episodes"`
	Steps           int                   `json:"steps"`
	StepsPerSec     float64               `json:"steps_per_sec"`
	Invalid         wire.CountersSnapshot `json:"invalid"`
	CtlInvalid      wire.CountersSnapshot `json:"ctl_invalid"`
	Unexpected      uint64                `json:"unexpected"` // deliveries its cores dropped as not theirs
	Timing          wire.TimingStats      `json:"timing"`
	Conn            wire.ConnStats        `json:"conn"`
	Messages        int                   `json:"messages,omitempty"`
	// SlowConsumerDropped counts the messages (not events) the process's NATS client dropped
	// because the process fell behind.
	SlowConsumerDropped int    `json:"slow_consumer_dropped"`
	LogFile             string `json:"log_file,omitempty"`
	TraceFile           string `json:"trace_file,omitempty"`
	ResultFile          string `json:"result_file,omitempty"`
}

// PointSummary is one sweep point.
type PointSummary struct {
	Index         int               `json:"index"`
	Name          string            `json:"name"`
	Point         map[string]string `json:"point,omitempty"`
	RunID         string            `json:"run_id,omitempty"`
	Requested     int               `json:"requested"` // episodes asked for
	Episodes      int               `json:"episodes"`  // completed by every process
	ElapsedSec    float64           `json:"elapsed_seconds"`
	StepsPerSec   float64           `json:"steps_per_sec"`        // launcher's view: T * episodes / time in episodes
	TraceFile     string            `json:"trace_file,omitempty"` // merged records of the traced episodes
	TraceEpisodes int               `json:"trace_episodes"`       // episodes written to TraceFile
	Missing       int               `json:"missing_pieces"`       // record pieces no process supplied
	MissingHead   []string          `json:"missing_first,omitempty"`
	Error         string            `json:"error,omitempty"`
	Metrics       *metrics.Results  `json:"metrics"`
	// Guarantee is the whole run's privacy: the Requested episodes release the same secret with
	// fresh noise, composed (docs/math.md section 9); absent for noise none.
	Guarantee *privacy.RunGuarantee `json:"guarantee,omitempty"`
	// GuaranteeError says why Guarantee could not be computed.
	GuaranteeError string `json:"guarantee_error,omitempty"`
	// DpEvent and DpEventCurve are Guarantee as privacy accountants' events (dp_accounting's
	// DpEvent tree, prv_accountant's mechanisms) and its eps(delta) at a few deltas
	// (privacy.NewDpEvent; docs/math.md section 9.1); DpEventError says why they are absent.
	DpEvent      *privacy.DpEventRecord `json:"dp_event,omitempty"`
	DpEventCurve []privacy.EpsDelta     `json:"dp_event_curve,omitempty"`
	DpEventError string                 `json:"dp_event_error,omitempty"`
	// Sampler states how the point's noise became float64 values and what that cost.
	Sampler *plan.SamplerInfo `json:"sampler,omitempty"`
}

// SetGuarantee composes the point's per-episode guarantee over its requested episodes
// (plan.RunGuarantee; docs/math.md section 9).
func (ps *PointSummary) SetGuarantee(p *plan.Plan) {
	if p == nil {
		return
	}
	si := p.SamplerInfo()
	ps.Sampler = &si
	if p.Noise == noise.None || ps.Requested < 1 {
		return
	}
	g, err := p.RunGuarantee(max(ps.Requested, ps.Episodes))
	if err != nil {
		ps.GuaranteeError = err.Error()
		return
	}
	ps.Guarantee = &g
	ps.DpEvent, ps.DpEventCurve, ps.DpEventError = g.DpEvent, g.DpEventCurve, g.DpEventError
}

// PointProblem is a problem of a role process of sweep point Point.
type PointProblem struct {
	Point int `json:"point"`
	Problem
}

// TimingSummary aggregates how the processes kept time; realtime problems are never hidden.
type TimingSummary struct {
	Mode            string        `json:"mode"`
	PeriodNS        int64         `json:"period_ns,omitempty"`
	StepsPerSec     float64       `json:"steps_per_sec"`      // launcher's view over all points
	LateMessages    uint64        `json:"late_messages"`      // delivered after their step (links' "late": lost ticks, injected delays)
	Overruns        int           `json:"overruns"`           // steps that began after their tick
	MaxOverrunNS    time.Duration `json:"max_overrun_ns"`     // worst lateness of a step start
	Missed          int           `json:"missed"`             // steps whose messages missed the deadline
	JitterMeanMaxNS time.Duration `json:"jitter_mean_max_ns"` // worst process mean jitter
	JitterP99MaxNS  time.Duration `json:"jitter_p99_max_ns"`
	JitterMaxNS     time.Duration `json:"jitter_max_ns"`
}

// Add folds the timing of process p into t.
func (t *TimingSummary) Add(p ProcessSummary) {
	t.Overruns += p.Timing.Overruns
	t.Missed += p.Timing.Missed
	t.MaxOverrunNS = max(t.MaxOverrunNS, p.Timing.MaxOverrun)
	t.JitterMeanMaxNS = max(t.JitterMeanMaxNS, p.Timing.Jitter.Mean)
	t.JitterP99MaxNS = max(t.JitterP99MaxNS, p.Timing.Jitter.P99)
	t.JitterMaxNS = max(t.JitterMaxNS, p.Timing.Jitter.Max)
}

// Recording is the MCAP recording of a run's bus traffic (dpsim run --record, internal/busrec):
// every message on dpsim.<run>.> of each point, one channel per subject.
type Recording struct {
	File     string `json:"file"`     // as given to --record, or its place in OUT
	Messages uint64 `json:"messages"` // written
	// Published are the messages published on the recorded subjects that reached the
	// recording: Messages + Dropped + Undecodable. Over NATS, what the recorder's subscription
	// received; with the fast engine, every message the run put out (busrec.Tap).
	Published uint64 `json:"published"`
	Channels  int    `json:"channels"` // subjects
	// Bytes are the recorded messages counted against LimitBytes (uncompressed, with their
	// records and index entries); FileBytes the file's size when closed.
	Bytes      int64 `json:"bytes"`
	FileBytes  int64 `json:"file_bytes"`
	LimitBytes int64 `json:"limit_bytes"`
	// Dropped are the messages not written because the limit was reached (or after a write
	// error); Undecodable those that were no wire message.
	Dropped     uint64 `json:"dropped"`
	Undecodable uint64 `json:"undecodable,omitempty"`
	// Complete: the file was closed with its summary section (else Error says why not).
	Complete bool   `json:"complete"`
	Error    string `json:"error,omitempty"`
}
