package run

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

const synopsis = `dpsim run SCENARIO [--out DIR] [--seed N] [--nats-url URL] [--mode lockstep|realtime] [--period D]
                 [--ui[=ADDR] [--ui-hold D] [--ui-public]] [--engine nats|fast] [--runs N] [--inflight K] [--trace-episodes N] [--timeout D] [--agents-per-process K] [--json]
                 [--engine fast --dispatch [--spawn-workers N] [--worker-listen ADDR] [--worker-creds N] [--verify-share P] [--chunk-timeout D]]
       dpsim run SCENARIO --resume OUT [--nats-url URL] [the run's --role and --attach, given again]`

const description = `Runs the scenario's Monte Carlo episodes and writes DIR/summary.json, the per-step traces and the report.

The default engine (nats) starts an embedded NATS server on a random loopback port (unless --nats-url
or $NATS_URL names one), spawns every role as its own OS process (this binary: dpsim plant, cloud,
agent, eavesdropper), runs the episodes reusing the same processes (fresh noise per episode; in
lockstep --inflight episodes at once, with the same numbers as one at a time),
collects the processes' result files, merges them with the same aggregation as the fast engine and
stops the children. Ctrl-C stops the children cleanly, writes what was recorded and exits non-zero.
Watch a run with the read-only observer the run writes: nats --context OUT/observer.context.json
sub 'dpsim.>' (the embedded server admits no one else). Subjects, the protocol and the files:
go doc github.com/dpsim/dpsim/internal/launch

--engine fast runs the same role cores in-process without NATS (for large Monte Carlo counts); for
the same seed it gives the same numbers as the NATS run.

The seed is --seed, else the scenario's seed, else drawn from crypto/rand; it is recorded in
summary.json. A scenario with a sweep runs every point (one entry per point in summary.json).

Memory does not grow with --runs: the metrics are aggregated as episodes complete, and the merged
per-step records of the first --trace-episodes episodes (default 100) are streamed to trace.jsonl.

--out is reused safely: before it writes, dpsim removes what an earlier run wrote there - summary.json,
report.md, trace.jsonl, trace-pNN.jsonl, the report's figures (tracking-error.png/.svg, ...) and the
processes' files in procs/ (*.log, *.trace.jsonl, *.result.json, *.transcript.jsonl) - so no file of
another run (a former sweep's trace-p03.jsonl, procs/p03/) is left to be mistaken for this one's.
Every other file in DIR is left alone.

report.md opens with the run's status: after a failure or Ctrl-C it says so, with the error, the
episodes completed of those requested and what is missing, and its verdict is marked partial.
report.md and summary.json never disagree: a file that cannot be written is named as the run's
failure in the other (or, when neither can be written, the error is on stderr and neither is left).

A partial episode is in no metric: every count (points[].episodes, metrics.runs, the report) covers
the episodes every process finished. When the run stopped in an episode, trace.jsonl (trace-pNN.jsonl)
ends with that episode's records followed by one line {"unfinished_episode": {"episode": E,
"records": R, "note": ...}}: the R records above it are what the processes wrote of episode E.

While a run goes on, and after it was killed, failed or interrupted before every episode completed,
OUT/resume.json (mode 0600) marks the outputs as partial: the trace bytes beyond the offset it records
are not of a completed episode. dpsim run --resume OUT continues such a run from its last recorded
episode and sweep point (the episodes folded before are rebuilt by the fast engine from the same
per-episode random streams and checked against the recorded digest) and its final results equal an
uninterrupted run's; options that decide the results are the run's own (others given are refused).
A completed run removes resume.json.

resume.json is read as input from whoever can write OUT: it holds no command and no path. SCENARIO is
given again (its sha256 must be the run's), as are --role and --attach (resume.json keeps their
sha256 only; given otherwise, the resumption is refused); only plain result-deciding values (seed,
--engine, --runs, --mode, --period, --timeout, --agents-per-process, --trace-episodes, --encoding,
--transcript, --sign, --strict, --max-missed-fraction) are taken from it. The trace it continues
is a bare name in OUT, opened without following a link and checked against its recorded sha256.
Its last member is an HMAC-SHA256 keyed by OUT/resume.key (mode 0600, the user's own): an edited
file is refused; someone able to read that key could sign an edit, but still not make dpsim run a
command or write outside OUT.`

// DefaultTraceEpisodes is the default of --trace-episodes: the episodes whose merged
// per-step records go to trace.jsonl.
const DefaultTraceEpisodes = 100

// Options are the parsed flags of `dpsim run`.
type Options struct {
	ScenarioPath     string
	Out              string
	Seed             uint64
	SeedSet          bool
	NATSURL          string
	Mode             wire.Mode
	ModeSet          bool
	TimeoutSet       bool // --timeout given (else the scenario's transport.timeout, if any)
	Period           time.Duration
	Engine           string
	Runs             int
	Timeout          time.Duration
	AgentsPerProcess int
	TraceEpisodes    int // the traced episodes, written as trace.Episodes: first N, 0 none, -1 all
	Encoding         string
	RunID            string
	LogLevel         string
	Transcript       bool
	ChildProcs       int
	JSON             bool
	Progress         bool
	// MaxMissedFraction fails a run in which more than this fraction of the processes' steps
	// completed without all their messages by the deadline (1: never fail, only degrade).
	MaxMissedFraction float64
	// TLS is "auto" (the embedded server with a throwaway CA) or "" (off, unless TLSFiles
	// name the files of an external server's TLS).
	TLS      string
	TLSFiles bus.TLSFiles
	// Sign turns on per-process message signing: --sign, or by default with an external
	// server (whose permissions the launcher cannot see: anyone may be able to publish as a
	// process of the run); NoSign (--no-sign) turns that default off.
	Sign, NoSign bool
	// ConnectRetry bounds the retries of an unreachable external server.
	ConnectRetry time.Duration
	// Strict fails a run with conflicting messages (forged or corrupted traffic) instead of
	// ending it degraded.
	Strict bool
	// Cluster > 1 starts that many embedded servers joined by routes and spreads the
	// processes over them.
	Cluster int
	// Attach waits for role processes started by someone else instead of spawning them,
	// up to AttachTimeout per point.
	Attach        bool
	AttachTimeout time.Duration
	// Listen is the embedded server's address (host:port; "" loopback, a random port).
	Listen string
	// Budget is the memory a run may be estimated to need (bytes; 0: engine.DefaultMemoryBudget);
	// a run estimated above it is refused with its estimate (engine.EstimateCost).
	Budget int64
	// Resume is the OUT of a run to continue (--resume; see ResumeFile).
	Resume string
	// KeepSecrets keeps the files holding secrets when the run ends (--keep-secrets; see
	// launch.SecretFiles): else they are removed.
	KeepSecrets bool
	// ShareOutputs (--share-outputs) writes the outputs holding secrets (launch.SecretOutputs)
	// 0644 and their folders 0755, instead of 0600 and 0700.
	ShareOutputs bool
	// Inflight is --inflight: the episodes kept in flight at once over the same processes
	// (launch.NextGroup); InflightSet says it was given (else the mode's default: resolveInflight).
	Inflight    int
	InflightSet bool
	// Farm is --dispatch, --spawn-workers, --worker-listen: the fast engine's episodes played by
	// `dpsim worker` processes (internal/farm).
	Farm farm.Flags
	// Roles are --role: the users' programs that play roles in place of dpsim's.
	Roles launch.Programs
	// UI is --ui: the live view's address ("": none; live.DefaultAddr for --ui alone), and UIHold
	// how long it stays up after the run.
	UI     string
	UIHold time.Duration
	// UIPublic is --ui-public: the opt-in to a --ui address other than loopback.
	UIPublic bool
	// NATSMonitor is --nats-monitor: the embedded server's HTTP monitoring address ("": none).
	NATSMonitor string
	flags       *flag.FlagSet // the parsed flags (what was given: the resume state records it)
	args        []string      // the command line they were parsed from (--resume parses it again)
}

// parseOptions parses the flags and the SCENARIO argument of `dpsim run` and checks them: each on
// its own and against each other (checkServer, checkProcesses, checkLimits).
func parseOptions(args []string, stdout, stderr io.Writer) (*Options, error) {
	fs := cli.NewCommandFlagSet("run", synopsis, description, stdout, stderr)
	o := &Options{}
	var seed, mode, budget string
	defineFlags(fs, o, &seed, &mode, &budget)
	path, err := scenarioArg(fs, args, o)
	if err != nil {
		return nil, err
	}
	o.ScenarioPath, o.flags, o.args = path, fs, args
	if o.Seed, o.SeedSet, err = cli.ParseSeed(seed); err != nil {
		return nil, err
	}
	if mode != "" {
		m, err := wire.ParseMode(mode)
		if err != nil {
			return nil, cli.UsageError("--mode: %v", err)
		}
		o.Mode, o.ModeSet = m, true
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "timeout":
			o.TimeoutSet = true
		case "inflight":
			o.InflightSet = true
		}
	})
	if err := o.checkServer(); err != nil {
		return nil, err
	}
	if err := o.checkProcesses(); err != nil {
		return nil, err
	}
	if err := o.checkLimits(budget); err != nil {
		return nil, err
	}
	if err := o.Farm.Check(o.Engine == "fast", "--engine fast"); err != nil {
		return nil, err
	}
	if err := o.checkUI(); err != nil {
		return nil, err
	}
	return o, nil
}

// defineFlags defines the flags of `dpsim run` on fs: into o, and into seed, mode and budget the
// ones parseOptions parses further.
func defineFlags(fs *flag.FlagSet, o *Options, seed, mode, budget *string) {
	fs.StringVar(budget, "budget", "", "memory budget (bytes, or with a unit: 512MiB, 4GiB, 2GB; default 2GiB): the run's memory, summary.json size and CPU time are estimated before it starts, and a run estimated above the budget is refused with its estimate")
	fs.StringVar(&o.Out, "out", "", "output directory (default out/<scenario name>); created if missing; the files an earlier dpsim run wrote there are removed first (see above), other files are kept")
	fs.StringVar(seed, "seed", "", "run seed (uint64); default the scenario's seed, else one drawn from crypto/rand (recorded in summary.json)")
	fs.StringVar(&o.NATSURL, "nats-url", "", "external NATS server URL, or a comma-separated list of a cluster's servers (process i connects to the i-th first, the others on failure) (default $"+bus.EnvURL+"; if both are empty an embedded server is started on a random loopback port)")
	fs.BoolVar(&o.Attach, "attach", false, "start no role process: write each process's command (OUT/procs/attach/commands.sh, with a credentials file per process, mode 0600, that --credentials reads) and print them on stderr, then wait up to --attach-timeout for the processes to be started elsewhere (by hand, docker-compose, a job scheduler) and run the episodes with them; they must see OUT at the same path (a shared directory or volume)")
	fs.BoolVar(&o.KeepSecrets, "keep-secrets", false, "keep the files holding secrets when the run ends: the plant's and the agents' plan files in OUT/procs (their x(0) and the run seed), crashed processes' checkpoints (their noise draw) and the attach credentials files; by default they are removed when the run ends, however it ends (summary.json secrets says which)")
	fs.BoolVar(&o.ShareOutputs, "share-outputs", false, "write the outputs that hold the run's secrets (summary.json, the traces, the figures and their data, report.md, the processes' traces: x(0), the seed, the true states) readable by all (0644, folders procs/ and figures/ 0755) instead of by you alone (0600, 0700); plan files, checkpoints, credentials and the resume state stay 0600")
	fs.DurationVar(&o.AttachTimeout, "attach-timeout", 10*time.Minute, "with --attach: how long to wait for every role process of a point to announce itself")
	fs.StringVar(&o.Listen, "listen", "", "the embedded NATS server's client address host:port, e.g. 0.0.0.0:4222 for processes on other hosts (--attach); default 127.0.0.1 on a random free port")
	fs.IntVar(&o.Cluster, "cluster", 0, "start N embedded NATS servers joined by routes on loopback (a cluster; 0 or 1: one server) and spread the processes over them: process i connects to server i mod N first and to the others when it fails")
	fs.StringVar(mode, "mode", "", "time mode: lockstep (each step when its messages arrived, as fast as possible) or realtime (period Ts on the wall clock); default the scenario's transport.mode")
	fs.DurationVar(&o.Period, "period", 0, "realtime step period Ts, e.g. 100ms (default the scenario's transport.period)")
	fs.StringVar(&o.Engine, "engine", "nats", "nats (every role its own process over NATS) or fast (in-process, no NATS; same numbers for the same seed)")
	fs.IntVar(&o.Runs, "runs", 0, "number of Monte Carlo episodes per point (0, the default: the scenario's runs)")
	fs.DurationVar(&o.Timeout, "timeout", contract.DefaultTimeout, "longest wait for one step's messages (lockstep) in every process (at least 1ms; NATS flushes and a private x(0) wait max(--timeout, 10s)); a step that times out goes on with the missing-input rules, is counted, and makes the run degraded (see --max-missed-fraction)")
	fs.IntVar(&o.AgentsPerProcess, "agents-per-process", 1, "consensus: agents hosted per agent process (1 = one process per agent; e.g. 25 runs 100 agents in 4 processes). Unless the scenario has link faults or crashes (which act per agent), each process publishes one message per step carrying all its agents' outputs (dpsim.<run>.host.<i>.y), so a step costs O(processes) messages; --engine fast groups its agents the same way, so both engines report the same links")
	fs.IntVar(&o.TraceEpisodes, "trace-episodes", DefaultTraceEpisodes, "write the merged per-step records of the first N episodes to trace.jsonl (0 = no trace file, -1 = every episode: about 25 KB per cloud-control episode of 100 steps, 2.5 GB for 100000 runs); it also bounds the disk of the NATS engine: each process keeps its trace, transcript and fault log for these N episodes only (plus the episode in progress), and the metrics still cover every episode")
	fs.StringVar(&o.Encoding, "encoding", "json", "wire encoding of the data messages: json (readable with nats sub) or binary")
	fs.StringVar(&o.RunID, "run-id", "", "run id, the <run> of the subjects dpsim.<run>.* (default a random r<hex>; sweep point k appends -p<k>)")
	fs.StringVar(&o.LogLevel, "log-level", "info", "zerolog level of the launcher's log on stderr and of the children's logs (DIR/procs/*.log): trace, debug, info, warn, error")
	fs.BoolVar(&o.Transcript, "transcript", true, "the eavesdropper writes every message it saw to its transcript file")
	fs.IntVar(&o.ChildProcs, "child-gomaxprocs", 1, "GOMAXPROCS of every role process (0 = Go's default: one thread per core); 1 is fastest for the lockstep loops")
	fs.BoolVar(&o.JSON, "json", false, "print summary.json on stdout instead of the short table")
	fs.BoolVar(&o.Progress, "progress", true, "show progress: a bar when stderr is a terminal, else a plain line every 5 s (piped output, CI logs)")
	fs.StringVar(&o.TLS, "tls", "", "auto: the embedded server requires TLS with a certificate of a throwaway CA made for this run (every process trusts it); default off")
	fs.StringVar(&o.TLSFiles.CA, "tls-ca", "", "external server over TLS: the CA file (PEM) that signed its certificate; every process trusts it")
	fs.StringVar(&o.TLSFiles.Cert, "tls-cert", "", "external server with mutual TLS: the client certificate (PEM) every process presents")
	fs.StringVar(&o.TLSFiles.Key, "tls-key", "", "external server with mutual TLS: the key (PEM) of --tls-cert")
	fs.DurationVar(&o.ConnectRetry, "connect-retry", 20*time.Second, "an external NATS server (--nats-url) that cannot be reached is retried every 0.5 s for this long before the run fails (with report.md and summary.json saying why)")
	fs.BoolVar(&o.Sign, "sign", false, "every process signs its data messages with its own ed25519 key (seed through its environment) and every receiver drops, counted as signature, what does not verify: nobody can speak for another sender (costs about 40 us to sign and 45 us to verify per message); on by default with an external server (--nats-url / $"+bus.EnvURL+"), whose permissions dpsim cannot see; the embedded server restricts every process to its own subjects, so there it is off unless given")
	fs.BoolVar(&o.NoSign, "no-sign", false, "with an external server: do not sign (the default there is to sign; see --sign): anyone who can publish on the server can then feed the processes forged data, which is only detected as conflicts (summary.json security.authenticated is false)")
	fs.BoolVar(&o.Strict, "strict", false, "fail the run (exit 1) when a receiver got two different messages for the same sender, episode and step (forged or corrupted traffic; counted as conflicts per link) instead of ending it degraded")
	fs.Float64Var(&o.MaxMissedFraction, "max-missed-fraction", 1, "fail the run (exit 1) when more than this fraction of the processes' steps went on without all their messages at the deadline (realtime: a missed tick; lockstep: a --timeout); below it such a run ends with status degraded, exit 0")
	fs.IntVar(&o.Inflight, "inflight", launch.DefaultInflight, inflightHelp)
	o.Roles = launch.Programs{}
	fs.Func("role", "ENDPOINT=COMMAND: start COMMAND (through sh) in place of dpsim's own process ENDPOINT (cloud.0, plant.0, eavesdropper.0, agent.<first agent of a host>), with the arguments after the role name and the environment dpsim's own would get; it must follow docs/protocol.md, and every problem it causes is named with it (repeatable; NATS engine, not with --attach)", o.Roles.ParseProgram)
	o.Farm.Define(fs)
	fs.Var(live.AddrFlag{Addr: &o.UI}, "ui", uiHelp)
	fs.StringVar(&o.NATSMonitor, "nats-monitor", "", "serve the embedded NATS server's own HTTP monitoring (/varz, /connz, /healthz, /subsz, ...) on host:port (port 0: a free one; an empty host is 127.0.0.1), printed at the start, until the run ends; with --cluster, its first server's; not with an external server (--nats-url)")
	fs.DurationVar(&o.UIHold, "ui-hold", 0, "with --ui: keep the live view up this long after the run ended (its final state and /metrics; Ctrl-C ends it sooner)")
	fs.BoolVar(&o.UIPublic, "ui-public", false, uiPublicHelp)
	fs.StringVar(&o.Resume, "resume", "", "continue the run whose outputs are in this directory (its "+ResumeFile+": a run killed, failed or interrupted before every episode completed) from its last completed episode and sweep point, with the results of an uninterrupted run; give SCENARIO again (the file holds only its sha256) and --role and --attach as the run had them; the flags that decide the results may be left out (given, they must be the run's); the NATS connection and TLS flags are not recorded and are given again. --engine fast resumes at the last completed point")
}

// checkServer checks the NATS server flags against each other: --cluster, --tls auto (the embedded
// servers) against --nats-url, and the TLS files of an external server (which must exist).
func (o *Options) checkServer() error {
	switch {
	case o.Cluster < 0 || o.Cluster > 16:
		return cli.UsageError("--cluster %d: want 0..16 servers", o.Cluster)
	case o.Cluster > 1 && bus.ResolveURL(o.NATSURL) != "":
		return cli.UsageError("--cluster starts embedded servers; for an external cluster give its servers to --nats-url as a list")
	case o.TLS != "" && o.TLS != "auto":
		return cli.UsageError("--tls %q: want auto (or leave it out)", o.TLS)
	case o.TLS == "auto" && bus.ResolveURL(o.NATSURL) != "":
		return cli.UsageError("--tls auto secures the embedded server; for an external server give --tls-ca (and --tls-cert, --tls-key)")
	case o.TLSFiles.Enabled() && bus.ResolveURL(o.NATSURL) == "":
		return cli.UsageError("--tls-ca, --tls-cert and --tls-key are for an external server (--nats-url); the embedded one uses --tls auto")
	case (o.TLSFiles.Cert == "") != (o.TLSFiles.Key == ""):
		return cli.UsageError("--tls-cert and --tls-key go together")
	}
	for _, f := range []string{o.TLSFiles.CA, o.TLSFiles.Cert, o.TLSFiles.Key} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return cli.UsageError("TLS file: %v", err)
		}
	}
	return nil
}

// checkProcesses checks how the role processes run: --engine, the signing flags (resolveSigning),
// --attach and --listen.
func (o *Options) checkProcesses() error {
	if o.Engine != "nats" && o.Engine != "fast" {
		return cli.UsageError("--engine %q: want nats or fast", o.Engine)
	}
	if err := o.resolveSigning(); err != nil {
		return err
	}
	switch {
	case len(o.Roles) > 0 && o.Engine != "nats":
		return cli.UsageError("--role starts a program in place of a role process; the fast engine has none (drop --engine fast)")
	case len(o.Roles) > 0 && o.Attach:
		return cli.UsageError("--role starts a program in place of a role process; with --attach the launcher starts none (start your program with the command it prints)")
	case o.Attach && o.Engine == "fast":
		return cli.UsageError("--attach waits for role processes; the fast engine has none (drop --engine fast)")
	case o.AttachTimeout <= 0:
		return cli.UsageError("--attach-timeout %v: must be > 0", o.AttachTimeout)
	case o.NATSMonitor != "" && (bus.ResolveURL(o.NATSURL) != "" || o.Engine == "fast"):
		return cli.UsageError("--nats-monitor serves the embedded NATS server's monitoring: not with an external server (--nats-url or $%s: use its own monitoring) nor --engine fast", bus.EnvURL)
	case o.Listen != "" && (bus.ResolveURL(o.NATSURL) != "" || o.Cluster > 1):
		return cli.UsageError("--listen is the address of the one embedded server: not with --nats-url or --cluster")
	}
	if o.NATSMonitor != "" {
		if _, _, err := splitListen(o.NATSMonitor); err != nil {
			return cli.UsageError("--nats-monitor %q: %v", o.NATSMonitor, err)
		}
	}
	if o.Listen != "" {
		if _, _, err := splitListen(o.Listen); err != nil {
			return cli.UsageError("--listen %q: %v", o.Listen, err)
		}
	}
	return nil
}

// checkLimits parses --budget and checks the ranges of the numeric flags, --encoding and --run-id.
func (o *Options) checkLimits(budget string) error {
	if budget != "" {
		b, err := engine.ParseBytes(budget)
		if err != nil {
			return cli.UsageError("--budget: %v", err)
		}
		o.Budget = b
	}
	if o.Runs < 0 || o.Runs > scenario.MaxRuns {
		return cli.UsageError("--runs %d: want 1..%d (0 = the scenario's)", o.Runs, scenario.MaxRuns)
	}
	if o.Timeout < contract.MinTimeout {
		return cli.UsageError("--timeout %v: must be at least %v (it bounds every wait for a step's messages)", o.Timeout, contract.MinTimeout)
	}
	if o.Period < 0 {
		return cli.UsageError("--period %v: must be >= 0", o.Period)
	}
	if o.AgentsPerProcess < 1 {
		return cli.UsageError("--agents-per-process %d: want >= 1", o.AgentsPerProcess)
	}
	if o.Inflight < 1 || o.Inflight > contract.MaxInflight {
		return cli.UsageError("--inflight %d: want 1..%d episodes in flight", o.Inflight, contract.MaxInflight)
	}
	if o.InflightSet && o.Engine == "fast" {
		return cli.UsageError("--inflight keeps episodes in flight over the role processes; the fast engine has none (it plays episodes on every core): drop it or --engine fast")
	}
	if !(o.MaxMissedFraction >= 0 && o.MaxMissedFraction <= 1) {
		return cli.UsageError("--max-missed-fraction %v: want a fraction in [0, 1]", o.MaxMissedFraction)
	}
	if o.ChildProcs < 0 {
		return cli.UsageError("--child-gomaxprocs %d: want >= 0", o.ChildProcs)
	}
	if _, err := trace.EpisodesOf(o.TraceEpisodes); err != nil {
		return cli.UsageError("--trace-episodes %v", err)
	}
	if _, err := wire.ParseEncoding(o.Encoding); err != nil {
		return cli.UsageError("--encoding: %v", err)
	}
	if o.RunID != "" {
		if err := wire.ValidToken(o.RunID); err != nil {
			return cli.UsageError("--run-id: %v", err)
		}
	}
	return nil
}

// resolveSigning refuses contradictory signing flags and turns signing on by default with an
// external server (--nats-url or $NATS_URL) unless --no-sign.
func (o *Options) resolveSigning() error {
	external := bus.ResolveURL(o.NATSURL) != ""
	switch {
	case o.Sign && o.NoSign:
		return cli.UsageError("--sign and --no-sign contradict each other: give one")
	case (o.Sign || o.NoSign) && o.Engine == "fast":
		return cli.UsageError("--sign and --no-sign secure NATS traffic; the fast engine has none (drop them or --engine fast)")
	case o.NoSign && !external:
		return cli.UsageError("--no-sign turns off the signing an external server gets by default; the embedded server signs only with --sign (drop --no-sign)")
	}
	if external && !o.NoSign && o.Engine == "nats" {
		o.Sign = true
	}
	return nil
}

// splitListen parses --listen host:port (port 0: a random free one).
func splitListen(s string) (string, int, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("port %q: want 0..65535", port)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, p, nil
}
