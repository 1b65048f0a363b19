package run

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/schollz/progressbar/v3"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/rss"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/report"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// Command is the table entry for `dpsim run`.
var Command = cli.Command{Name: "run", Summary: "run a scenario: every role its own process over NATS (or --engine fast)", Run: Run}

const synopsis = `dpsim run SCENARIO [--out DIR] [--seed N] [--nats-url URL] [--mode lockstep|realtime] [--period D]
                 [--engine nats|fast] [--runs N] [--trace-episodes N] [--timeout D] [--agents-per-process K] [--json]
       dpsim run --resume OUT [--nats-url URL]`

const description = `Runs the scenario's Monte Carlo episodes and writes DIR/summary.json, the per-step traces and the report.

The default engine (nats) starts an embedded NATS server on a random loopback port (unless --nats-url
or $NATS_URL names one), spawns every role as its own OS process (this binary: dpsim plant, cloud,
agent, eavesdropper), runs the episodes reusing the same processes (fresh noise per episode),
collects the processes' result files, merges them with the same aggregation as the fast engine and
stops the children. Ctrl-C stops the children cleanly, writes what was recorded and exits non-zero.
Watch a run with: nats sub 'dpsim.>'. Subjects, the coordination protocol and the files:
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
A completed run removes resume.json.`

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
	Mode             bus.Mode
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
	flags  *flag.FlagSet // the parsed flags (what was given: the resume state records it)
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
	o.ScenarioPath, o.flags = path, fs
	if o.Seed, o.SeedSet, err = cli.ParseSeed(seed); err != nil {
		return nil, err
	}
	if mode != "" {
		m, err := bus.ParseMode(mode)
		if err != nil {
			return nil, cli.UsageError("--mode: %v", err)
		}
		o.Mode, o.ModeSet = m, true
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "timeout" {
			o.TimeoutSet = true
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
	fs.DurationVar(&o.AttachTimeout, "attach-timeout", 10*time.Minute, "with --attach: how long to wait for every role process of a point to announce itself")
	fs.StringVar(&o.Listen, "listen", "", "the embedded NATS server's client address host:port, e.g. 0.0.0.0:4222 for processes on other hosts (--attach); default 127.0.0.1 on a random free port")
	fs.IntVar(&o.Cluster, "cluster", 0, "start N embedded NATS servers joined by routes on loopback (a cluster; 0 or 1: one server) and spread the processes over them: process i connects to server i mod N first and to the others when it fails")
	fs.StringVar(mode, "mode", "", "time mode: lockstep (each step when its messages arrived, as fast as possible) or realtime (period Ts on the wall clock); default the scenario's transport.mode")
	fs.DurationVar(&o.Period, "period", 0, "realtime step period Ts, e.g. 100ms (default the scenario's transport.period)")
	fs.StringVar(&o.Engine, "engine", "nats", "nats (every role its own process over NATS) or fast (in-process, no NATS; same numbers for the same seed)")
	fs.IntVar(&o.Runs, "runs", 0, "number of Monte Carlo episodes per point (default the scenario's runs)")
	fs.DurationVar(&o.Timeout, "timeout", contract.DefaultTimeout, "longest wait for one step's messages (lockstep) and for each NATS flush in every process (at least 1ms); a step that times out goes on with the missing-input rules, is counted, and makes the run degraded (see --max-missed-fraction)")
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
	fs.StringVar(&o.Resume, "resume", "", "continue the run whose outputs are in this directory (its "+ResumeFile+": a run killed, failed or interrupted before every episode completed) from its last completed episode and sweep point, with the results of an uninterrupted run; SCENARIO and the flags that decide the results may be left out (given, they must be the run's); the NATS connection and TLS flags are not recorded and are given again. --engine fast resumes at the last completed point")
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
	case o.Attach && o.Engine == "fast":
		return cli.UsageError("--attach waits for role processes; the fast engine has none (drop --engine fast)")
	case o.AttachTimeout <= 0:
		return cli.UsageError("--attach-timeout %v: must be > 0", o.AttachTimeout)
	case o.Listen != "" && (bus.ResolveURL(o.NATSURL) != "" || o.Cluster > 1):
		return cli.UsageError("--listen is the address of the one embedded server: not with --nats-url or --cluster")
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
		return cli.UsageError("--timeout %v: must be at least %v (it bounds every wait for a step's messages and every NATS flush of the processes)", o.Timeout, contract.MinTimeout)
	}
	if o.Period < 0 {
		return cli.UsageError("--period %v: must be >= 0", o.Period)
	}
	if o.AgentsPerProcess < 1 {
		return cli.UsageError("--agents-per-process %d: want >= 1", o.AgentsPerProcess)
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
	if _, err := bus.ParseEncoding(o.Encoding); err != nil {
		return cli.UsageError("--encoding: %v", err)
	}
	if o.RunID != "" {
		if err := bus.ValidToken(o.RunID); err != nil {
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

// security says how the run's traffic is secured (summary.json "security", report.md).
func (l *launcher) security(embedded bool) *report.Security {
	s := &report.Security{Server: "external", Signed: l.o.Sign, Authenticated: l.o.Sign, TLS: "off", Strict: l.o.Strict}
	if embedded {
		s.Server, s.Permissions, s.Cluster = "embedded", true, max(l.o.Cluster, 1)
	}
	if l.sum.TLS != "" {
		s.TLS = l.sum.TLS
	}
	return s
}

// Run executes `dpsim run` with args (without the command name).
func Run(args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stdout, stderr)
	if err != nil {
		return err
	}
	log, err := cli.Logger(stderr, o.LogLevel)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Execute(ctx, o, stdout, stderr, log)
}

// launcher is one `dpsim run`.
type launcher struct {
	o       *Options
	seeds   sim.Seeds // of the resolved run seed (o.Seed)
	log     zerolog.Logger
	stderr  io.Writer
	scn     *scenario.Scenario
	points  []*scenario.Scenario
	plans   []*plan.Plan
	runs    int
	sum     *Summary
	bar     *progressbar.ProgressBar
	plain   *plainProgress
	started time.Time
	tl      *launch.Timeline
	resume  resumer
}

// Execute runs the scenario with parsed options until done or ctx ends (then it stops the
// children, writes what was recorded and returns an error).
func Execute(ctx context.Context, o *Options, stdout, stderr io.Writer, log zerolog.Logger) error {
	l := &launcher{o: o, log: log, stderr: stderr, started: time.Now()}
	l.tl = launch.NewTimeline(l.started)
	if err := l.prepare(); err != nil {
		return err
	}
	runErr := l.runAll(ctx)
	l.sum.ElapsedSec = time.Since(l.started).Seconds()
	l.sum.LauncherMaxRSSBytes, _ = rss.Peak()
	l.sum.Timeline = l.tl.Sorted()
	if runErr == nil {
		runErr = l.degradation()
	}
	switch {
	case runErr == nil && len(l.sum.Degraded) > 0:
		l.sum.Status = "degraded"
	case runErr == nil:
		l.sum.Status = "ok"
	case errors.Is(runErr, launch.ErrInterrupted) || ctx.Err() != nil:
		l.sum.Status = "interrupted"
		l.sum.Error = runErr.Error()
		runErr = fmt.Errorf("%w: partial results written to %s", runErr, o.Out)
	default:
		l.sum.Status = "failed"
		l.sum.Error = runErr.Error()
		// A receiver that fell behind loses messages in its client: name it as a cause.
		var slow []string
		for _, p := range l.sum.Processes {
			if p.SlowConsumerDropped > 0 {
				slow = append(slow, fmt.Sprintf("%s dropped %d", p.Name, p.SlowConsumerDropped))
			}
		}
		if len(slow) > 0 {
			l.sum.Error += "; slow consumers (the NATS client dropped messages the process could not keep up with): " + strings.Join(slow, ", ")
			runErr = fmt.Errorf("%w; slow consumers: %s", runErr, strings.Join(slow, ", "))
		}
	}
	runErr, written := l.writeOutputs(runErr)
	l.resumeEnd()
	if !written {
		return runErr
	}
	if o.JSON {
		if err := cli.WriteJSON(stdout, l.sum); err != nil {
			return errors.Join(runErr, err)
		}
	} else {
		l.printTable(stdout)
	}
	return runErr
}

// degradation names what went wrong without failing the run - steps the processes completed
// without all their messages at the deadline (realtime: missed ticks; lockstep: timeouts) -
// in summary.json "degraded", and fails the run when they exceed --max-missed-fraction.
// Faults the scenario injects on purpose (faults.links) are the experiment, not a
// degradation: they are counted per link in the metrics.
func (l *launcher) degradation() error {
	var coreSteps int
	for _, p := range l.sum.Processes {
		cores := 1
		if len(p.Agents) == 2 {
			cores = p.Agents[1] - p.Agents[0] + 1
		}
		coreSteps += cores * p.Steps
	}
	var conflicts, slow uint64
	var slowProcs []string
	for _, ps := range l.sum.Points {
		if ps.Metrics != nil {
			for _, lk := range ps.Metrics.Links {
				conflicts += lk.Conflicts
			}
		}
	}
	for _, p := range l.sum.Processes {
		if p.SlowConsumerDropped > 0 {
			slow += uint64(p.SlowConsumerDropped)
			slowProcs = append(slowProcs, fmt.Sprintf("%s %d", p.Name, p.SlowConsumerDropped))
		}
	}
	if slow > 0 {
		l.sum.Degraded = append(l.sum.Degraded, fmt.Sprintf("%d message(s) dropped by NATS clients that fell behind (slow consumers: %s)", slow, strings.Join(slowProcs, ", ")))
	}
	if conflicts > 0 {
		msg := fmt.Sprintf("%d conflicting message(s): a receiver got two different messages for the same sender, episode and step (forged or corrupted traffic; the first was used; metrics.links[].conflicts)", conflicts)
		l.sum.Degraded = append(l.sum.Degraded, msg)
		if l.o.Strict {
			return fmt.Errorf("%s: --strict", msg)
		}
	}
	if c := l.sum.Connections; c.Disconnects > 0 || c.ServerRestarts > 0 {
		msg := fmt.Sprintf("%d NATS disconnect(s) and %d reconnect(s) across the processes", c.Disconnects, c.Reconnects)
		if c.ServerRestarts > 0 {
			msg = fmt.Sprintf("the NATS server was restarted %d time(s) (faults.server_restarts): %s", c.ServerRestarts, msg)
		}
		for _, ev := range l.sum.Timeline {
			if ev.Event == launch.EvServerStopped {
				msg += fmt.Sprintf("; server down from episode %d step %d (%s)", ev.Episode, ev.Step, ev.Detail)
			}
		}
		var lost uint64
		for _, ps := range l.sum.Points {
			if ps.Metrics != nil {
				lost += report.LostInTransport(ps.Metrics.Links)
			}
		}
		msg += fmt.Sprintf("; %d data message(s) lost in transport", lost)
		l.sum.Degraded = append(l.sum.Degraded, msg)
	}
	missed := l.sum.Timing.Missed
	if missed == 0 {
		return nil
	}
	frac := float64(missed) / float64(max(coreSteps, 1))
	what := "missed their realtime deadline"
	if l.sum.Mode != bus.Realtime.String() {
		what = "timed out (--timeout)"
	}
	msg := fmt.Sprintf("%d of %d process steps (%.3g%%) %s and went on without all their messages (the missing-input rules applied)",
		missed, coreSteps, 100*frac, what)
	l.sum.Degraded = append(l.sum.Degraded, msg)
	l.sum.MissedFraction = frac
	if frac > l.o.MaxMissedFraction {
		return fmt.Errorf("%s: more than --max-missed-fraction %v", msg, l.o.MaxMissedFraction)
	}
	return nil
}

// checkCost refuses a run whose estimated memory exceeds --budget, or its summary.json
// 1/16 of it (engine.EstimateCost, engine.CheckCost), before any plan is built or process started.
func (l *launcher) checkCost() error {
	runs, workers := l.scn.Runs, 1 // the NATS launcher aggregates; its processes hold one set of cores
	if l.o.Runs > 0 {
		runs = l.o.Runs
	}
	if l.o.Engine == "fast" {
		workers = 0 // GOMAXPROCS, as engine.Run
	}
	c, err := engine.EstimateCost(l.points, runs, workers, l.o.AgentsPerProcess)
	if err != nil {
		return err
	}
	return engine.CheckCost(c, l.o.Budget)
}

// prepare validates the scenario and every point, and fixes the seed, runs, mode and dirs.
func (l *launcher) prepare() error {
	if err := l.applyResume(); err != nil {
		return err
	}
	o := l.o
	if err := cli.CheckScenarioFile(o.ScenarioPath); err != nil {
		return err
	}
	s, err := scenario.Load(o.ScenarioPath)
	if err != nil {
		return err
	}
	l.scn = s
	seed, seedSource := cli.ResolveSeed(o.Seed, o.SeedSet, s.Seed)
	o.Seed = seed
	l.seeds = sim.NewSeeds(seed) // the one derivation of the fault seed, for both engines
	l.points = s.Expand()
	if err := l.checkCost(); err != nil {
		return err
	}
	if err := l.makePlans(); err != nil {
		return err
	}
	if err := l.applyScenarioSettings(s); err != nil {
		return err
	}
	if o.Out == "" {
		o.Out = filepath.Join("out", s.Name)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := l.prepareOutputs(); err != nil {
		return err
	}
	if o.RunID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.RunID = "r" + hex.EncodeToString(b[:])
	}
	l.sum = l.newSummary(s, seed, seedSource)
	if seedSource == cli.SeedFromCrypto {
		l.log.Info().Uint64("seed", seed).Msg("no seed given: drew one (recorded in summary.json)")
	}
	return nil
}

// makePlans resolves the plan of every point (an error names the sweep point).
func (l *launcher) makePlans() error {
	for k, pt := range l.points {
		p, err := plan.New(pt, plan.Options{})
		if err != nil {
			if len(l.points) > 1 {
				return fmt.Errorf("sweep point %d (%s): %w", k, pt.Name, err)
			}
			return err
		}
		l.plans = append(l.plans, p)
	}
	return nil
}

// applyScenarioSettings sets the runs, time mode, period and timeout the flags left to the
// scenario s, and refuses the combinations of scenario and flags that cannot run (realtime without
// a period; crashes in realtime or with several agents per process; --attach of a scenario that
// cannot; server restarts on an external server).
func (l *launcher) applyScenarioSettings(s *scenario.Scenario) error {
	o := l.o
	l.runs = s.Runs
	if o.Runs > 0 {
		l.runs = o.Runs
	}
	if !o.ModeSet && s.Transport.Mode == scenario.Realtime {
		o.Mode = bus.Realtime
	}
	if o.Period == 0 {
		o.Period = s.Transport.Period
	}
	if !o.TimeoutSet && s.Transport.Timeout > 0 {
		o.Timeout = s.Transport.Timeout
	}
	if o.Mode == bus.Realtime && o.Period <= 0 {
		return cli.UsageError("realtime mode needs a period: pass --period or set transport.period in the scenario")
	}
	if f := s.Faults; len(f.Crashes) > 0 && o.Engine == "nats" {
		switch {
		case o.Mode == bus.Realtime:
			return cli.UsageError("scenario %s: faults.crashes needs lockstep mode (a restarted process rejoins at a logical step)", o.ScenarioPath)
		case o.AgentsPerProcess > 1:
			return cli.UsageError("scenario %s: faults.crashes kills one agent's process: run with --agents-per-process 1", o.ScenarioPath)
		}
	}
	if o.Attach {
		if err := launch.CheckAttachable(s); err != nil {
			return cli.UsageError("%v", err)
		}
	}
	if len(s.Faults.ServerRestarts) > 0 && o.Engine == "nats" && bus.ResolveURL(o.NATSURL) != "" {
		return cli.UsageError("scenario %s: faults.server_restarts restarts the embedded NATS server: run without --nats-url", o.ScenarioPath)
	}
	return nil
}

// newSummary returns the run's summary before any point runs: the scenario s, the seed and where
// it came from, the settings, and the graph warnings of every point.
func (l *launcher) newSummary(s *scenario.Scenario, seed uint64, seedSource string) *Summary {
	o := l.o
	sum := &Summary{
		Scenario: s.Name, ScenarioFile: o.ScenarioPath, Description: s.Description, Kind: string(s.Kind),
		Seed: seed, SeedString: strconv.FormatUint(seed, 10), SeedSource: seedSource, Runs: l.runs, Steps: s.Steps, Engine: o.Engine,
		Mode: o.Mode.String(), RunID: o.RunID, Started: l.started.UTC().Format(time.RFC3339),
		Warnings: s.Warnings, Processes: []ProcessSummary{}, Invalid: map[string]bus.CountersSnapshot{},
		Files: Files{Summary: "summary.json", Traces: []string{}}, Attached: o.Attach,
	}
	if o.Mode == bus.Realtime {
		sum.PeriodNS = int64(o.Period)
	}
	sum.Timing = TimingSummary{Mode: sum.Mode, PeriodNS: sum.PeriodNS}
	if o.Engine == "fast" {
		sum.Mode = "none (fast engine: no pacing)"
		sum.Timing.Mode = sum.Mode
	} else {
		sum.Encoding = o.Encoding
	}
	for _, p := range l.plans {
		sum.Warnings = report.MergeGraphWarnings(sum.Warnings, p.GraphWarnings)
	}
	return sum
}

func (l *launcher) runAll(ctx context.Context) error {
	total := l.runs * len(l.points)
	if f, ok := l.stderr.(*os.File); ok && l.o.Progress && cli.IsTerminal(f) {
		l.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(l.stderr),
			progressbar.OptionSetDescription(l.scn.Name), progressbar.OptionShowCount(),
			progressbar.OptionShowIts(), progressbar.OptionSetItsString("episodes"),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		defer func() { _ = l.bar.Finish() }()
	} else if l.o.Progress {
		// Not a terminal (piped, a CI log): a plain line every few seconds instead of silence.
		l.plain = &plainProgress{w: l.stderr, total: total, start: time.Now(), last: time.Now(), name: l.scn.Name}
	}
	l.resumeBegin()
	if l.o.Engine == "fast" {
		return l.runFast(ctx)
	}
	return l.runNATS(ctx)
}

func (l *launcher) tick(n int) {
	if l.bar != nil {
		_ = l.bar.Add(n)
	}
	if l.plain != nil {
		l.plain.add(n)
	}
}

// PlainProgressEvery is how often a run that does not write to a terminal prints a progress line.
const PlainProgressEvery = 5 * time.Second

// plainProgress prints "dpsim run: NAME: 120/500 episodes (24%), 12.3 s" lines.
type plainProgress struct {
	mu          sync.Mutex
	w           io.Writer
	name        string
	total, done int
	start, last time.Time
}

func (p *plainProgress) add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if now := time.Now(); now.Sub(p.last) >= PlainProgressEvery || p.done == p.total {
		p.last = now
		fmt.Fprintf(p.w, "dpsim run: %s: %d/%d episodes (%.0f%%), %.1f s\n", p.name, p.done, p.total,
			100*float64(p.done)/float64(max(p.total, 1)), now.Sub(p.start).Seconds())
	}
}

func (l *launcher) traceName(k int) string {
	if len(l.points) == 1 {
		return "trace.jsonl"
	}
	return fmt.Sprintf("trace-p%02d.jsonl", k)
}

func (l *launcher) addPoint(ps PointSummary, res *metrics.Results) {
	ps.Metrics = res
	if res != nil && res.Point != nil {
		ps.Point = res.Point
	}
	l.sum.Points = append(l.sum.Points, ps)
	if len(l.points) == 1 {
		l.sum.Metrics = res
		return
	}
	list, _ := l.sum.Metrics.([]*metrics.Results)
	l.sum.Metrics = append(list, res)
}

// traced is --trace-episodes: the episodes whose merged records go to the point's trace
// file (engine.Options.TraceEpisodes, launch.CollectOptions.TraceEpisodes).
func (l *launcher) traced() trace.Episodes {
	return trace.FirstEpisodes(l.o.TraceEpisodes)
}

// traceOut streams merged records into DIR/<name> as episodes complete.
type traceOut struct {
	name     string
	dir      string
	f        *os.File
	faults   *os.File // faults.jsonl beside it, created at the first fault event
	fenc     *json.Encoder
	fbuf     *bufio.Writer
	ctl      *trace.Writer[trace.ControlRecord]
	cns      *trace.Writer[trace.ConsensusRecord]
	episodes int
}

func (l *launcher) createTrace(name string) (*traceOut, error) {
	f, err := os.Create(filepath.Join(l.o.Out, name))
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	return &traceOut{name: name, dir: l.o.Out, f: f}, nil
}

// FaultsName is the file beside a trace file (trace.jsonl, trace-pNN.jsonl) that records what
// the fault injector did to the traced episodes' messages (faults.jsonl, faults-pNN.jsonl).
func FaultsName(trace string) string { return "faults" + strings.TrimPrefix(trace, "trace") }

// write appends one episode's records (the sink of engine.Run).
func (t *traceOut) write(tr *trace.Traces) error {
	if len(tr.Control) > 0 {
		if t.ctl == nil {
			t.ctl = trace.NewWriter[trace.ControlRecord](t.f)
		}
		for i := range tr.Control {
			if err := t.ctl.Write(&tr.Control[i]); err != nil {
				return err
			}
		}
	}
	if len(tr.Consensus) > 0 {
		if t.cns == nil {
			t.cns = trace.NewWriter[trace.ConsensusRecord](t.f)
		}
		for i := range tr.Consensus {
			if err := t.cns.Write(&tr.Consensus[i]); err != nil {
				return err
			}
		}
	}
	if len(tr.Faults) > 0 {
		if t.faults == nil {
			f, err := os.Create(filepath.Join(t.dir, FaultsName(t.name)))
			if err != nil {
				return fmt.Errorf("fault record: %w", err)
			}
			t.faults, t.fbuf = f, bufio.NewWriterSize(f, 1<<16)
			t.fenc = json.NewEncoder(t.fbuf)
		}
		for i := range tr.Faults {
			if err := t.fenc.Encode(&tr.Faults[i]); err != nil {
				return fmt.Errorf("fault record: %w", err)
			}
		}
	}
	t.episodes++
	return nil
}

func (t *traceOut) close() error {
	var err error
	if t.ctl != nil {
		err = t.ctl.Flush()
	}
	if t.cns != nil {
		if ferr := t.cns.Flush(); err == nil {
			err = ferr
		}
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if t.faults != nil {
		if ferr := t.fbuf.Flush(); err == nil {
			err = ferr
		}
		if cerr := t.faults.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("trace %s: %w", t.name, err)
	}
	return nil
}

func (l *launcher) runFast(ctx context.Context) error {
	var steps int
	var busy time.Duration
	for k, p := range l.plans {
		if l.pointDone(k) {
			continue
		}
		start := time.Now()
		done := 0
		opts := engine.Options{Runs: l.runs, AgentsPerHost: l.o.AgentsPerProcess, Progress: func(d, _ int) { l.tick(d - done); done = d }}
		ps := PointSummary{Index: k, Name: l.points[k].Name, Requested: l.runs}
		var out *traceOut
		if t := l.traced(); !t.None() {
			var err error
			if out, err = l.createTrace(l.traceName(k)); err != nil {
				return err
			}
			opts.TraceEpisodes, opts.TraceSink = t, out.write
		}
		res, _, err := engine.Run(ctx, p, l.seeds, opts)
		el := time.Since(start)
		ps.ElapsedSec = el.Seconds()
		if res != nil {
			ps.Episodes = res.Runs
			steps += res.Runs * p.Steps
			busy += el
			if el > 0 {
				ps.StepsPerSec = float64(res.Runs*p.Steps) / el.Seconds()
			}
			if busy > 0 {
				l.sum.Timing.StepsPerSec = float64(steps) / busy.Seconds()
			}
		}
		if out != nil {
			if werr := out.close(); werr != nil && err == nil {
				err = werr
			}
			ps.TraceFile, ps.TraceEpisodes = out.name, out.episodes
			l.sum.Files.Traces = append(l.sum.Files.Traces, out.name)
		}
		if err != nil {
			ps.Error = err.Error()
		}
		l.addPoint(ps, res)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %v", launch.ErrInterrupted, err)
			}
			return err
		}
		l.completePoint(k)
	}
	return nil
}

// runNATS runs every point not done yet over NATS: on the embedded server (or cluster) it starts,
// or on the external server of --nats-url / $NATS_URL.
func (l *launcher) runNATS(ctx context.Context) error {
	sc := launch.ServerConfig{URL: bus.ResolveURL(l.o.NATSURL), Plans: l.plans, AgentsPerProcess: l.o.AgentsPerProcess,
		Cluster: l.o.Cluster, AutoTLS: l.o.TLS == "auto", TLS: l.o.TLSFiles, ConnectRetry: l.o.ConnectRetry}
	for k := range l.plans {
		sc.RunIDs = append(sc.RunIDs, l.pointRunID(k))
	}
	if l.o.Listen != "" {
		sc.Host, sc.Port, _ = splitListen(l.o.Listen) // checked by parseOptions
	}
	srv, err := launch.StartServer(sc)
	if err != nil {
		return err
	}
	defer srv.Close()
	if srv.Embedded != nil {
		l.sum.NATSEmbedded = true
		if srv.Cluster != nil {
			l.sum.NATSCluster = l.o.Cluster
		}
	}
	l.sum.NATSURL, l.sum.TLS = srv.URL, srv.TLSMode
	l.sum.Security = l.security(srv.Embedded != nil)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the dpsim binary to spawn the roles: %w", err)
	}
	l.sum.Files.Procs = "procs"
	return l.runNATSPoints(ctx, exe, srv)
}

// runNATSPoints runs the points not done yet, one after the other, each with its own processes
// (spawned from exe, or started elsewhere with --attach) connected to srv, and keeps the run's
// steps per second up to date.
func (l *launcher) runNATSPoints(ctx context.Context, exe string, srv *launch.Server) error {
	var steps int
	var busy time.Duration
	for k, p := range l.plans {
		if l.pointDone(k) {
			continue
		}
		runID, dir := l.pointRunID(k), filepath.Join(l.o.Out, "procs")
		if len(l.plans) > 1 {
			dir = filepath.Join(dir, fmt.Sprintf("p%02d", k))
		}
		cfg := launch.SessionConfig{
			Exe: exe, ScenarioPath: l.o.ScenarioPath, Point: k, Plan: p, Seeds: l.seeds, Run: runID,
			Dir: dir, Mode: l.o.Mode, Period: l.o.Period, Timeout: l.o.Timeout, AgentsPerProcess: l.o.AgentsPerProcess,
			Encoding: l.o.Encoding, LogLevel: l.o.LogLevel, Transcript: l.o.Transcript, GOMAXPROCS: l.o.ChildProcs, Log: l.log,
			Timeline: l.tl, PointIndex: k, Sign: l.o.Sign, Attach: l.o.Attach, Announce: l.announce(),
			StartTimeout: l.startTimeout(),
		}
		srv.Configure(&cfg, k)
		n, el, err := l.runPoint(ctx, k, p, cfg)
		steps += n * p.Steps
		busy += el
		if busy > 0 {
			l.sum.Timing.StepsPerSec = float64(steps) / busy.Seconds()
		}
		if err != nil {
			return err
		}
		l.completePoint(k)
	}
	return nil
}

// announce is where attach mode prints the commands of the processes to start (stderr).
func (l *launcher) announce() io.Writer {
	if l.o.Attach {
		return l.stderr
	}
	return nil
}

// startTimeout bounds the wait for the processes of a point: --attach-timeout in attach mode
// (a person may be starting them), else the session's default.
func (l *launcher) startTimeout() time.Duration {
	if l.o.Attach {
		return l.o.AttachTimeout
	}
	return 0
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

// pointRunID is the run id of point k: --run-id, with -p<k> in a sweep.
func (l *launcher) pointRunID(k int) string {
	if len(l.plans) > 1 {
		return fmt.Sprintf("%s-p%d", l.o.RunID, k)
	}
	return l.o.RunID
}

// runPoint runs one point's episodes over its processes and collects their results.
func (l *launcher) runPoint(ctx context.Context, k int, p *plan.Plan, cfg launch.SessionConfig) (int, time.Duration, error) {
	start := time.Now()
	l.log.Info().Str("point", l.points[k].Name).Str("run", cfg.Run).Int("runs", l.runs).Msg("starting processes")
	first, acc, rerr := l.resumePoint(ctx, k, p) // 0 unless a resumed run was in this point
	if rerr != nil {
		return 0, 0, rerr
	}
	out, opts, err := l.pointTrace(k, first, &cfg)
	if err != nil {
		return 0, 0, err
	}
	l.tl.AddStatic(k, &p.Scenario.Faults)
	sess, col, runErr := l.playEpisodes(ctx, k, cfg, opts, first, acc, out)
	if sess == nil {
		if out != nil {
			_ = out.close()
		}
		return 0, 0, runErr
	}
	if err := sess.Stop(); err != nil && runErr == nil {
		runErr = err
	}
	ps := l.recordSession(sess, k, p, cfg, start, first)
	var collected *launch.Collected
	if col != nil {
		collected, err = l.finishCollection(col, k, first+sess.Episodes, out, runErr != nil)
	}
	if out != nil {
		if werr := out.close(); werr != nil && runErr == nil {
			runErr = werr
		}
		ps.TraceFile = out.name
		if collected != nil {
			ps.TraceEpisodes = collected.TracedEpisodes
		}
		l.sum.Files.Traces = append(l.sum.Files.Traces, out.name)
	}
	var res *metrics.Results
	if collected != nil {
		res = l.pointResults(k, sess, collected, &ps)
		if runErr == nil && (collected.MissingCount > 0 || len(res.IncompleteEpisodes) > 0) {
			runErr = fmt.Errorf("point %s: %w", l.points[k].Name, trace.MissingErrorN(collected.Missing, collected.MissingCount))
		}
	}
	if runErr == nil && err != nil {
		runErr = err
	}
	if runErr != nil {
		ps.Error = runErr.Error()
	}
	l.addPoint(ps, res)
	return sess.Episodes, sess.EpisodeNS, runErr
}

// pointTrace sets how many episodes' per-step records the processes keep (cfg.KeepEpisodes)
// and opens the point's trace file when episodes are traced; first is the
// point's first episode (a resumed point's start). opts tells the collector where the trace goes.
func (l *launcher) pointTrace(k, first int, cfg *launch.SessionConfig) (*traceOut, launch.CollectOptions, error) {
	// The processes keep the per-step records of the traced episodes only; every episode is
	// folded into the metrics by the collector as soon as it is done.
	t := l.traced()
	// The processes keep the traced episodes among those they run (a resumed point's start
	// at first).
	cfg.KeepEpisodes = t.From(first)
	opts := launch.CollectOptions{}
	if t.None() {
		return nil, opts, nil
	}
	out, err := l.openPointTrace(k, first)
	if err != nil {
		return nil, opts, err
	}
	opts.Trace, opts.TraceEpisodes = out.f, t
	return out, opts, nil
}

// playEpisodes starts the point's processes and plays episodes first..runs-1, collecting and
// checkpointing each as soon as it is done (acc: the metrics of a resumed point's earlier
// episodes). It stops at the first failed episode; sess is nil when the processes did not start.
func (l *launcher) playEpisodes(ctx context.Context, k int, cfg launch.SessionConfig, opts launch.CollectOptions, first int, acc *metrics.Accumulator, out *traceOut) (sess *launch.Session, col *launch.Collector, runErr error) {
	sess, runErr = launch.StartSession(ctx, cfg)
	if runErr != nil {
		return sess, nil, runErr
	}
	if col, runErr = sess.NewCollector(opts); runErr != nil {
		return sess, col, runErr
	}
	if acc != nil {
		col.ResumeAt(first, acc)
	}
	for ep := first; ep < l.runs; ep++ {
		if runErr = sess.Episode(ctx, ep, nil); runErr != nil {
			break
		}
		if err := col.Poll(); err != nil {
			l.log.Warn().Err(err).Int("episode", ep).Msg("collect")
		} else {
			l.checkpoint(k, ep+1, col, out, false)
		}
		l.tick(1)
	}
	return sess, col, runErr
}

// recordSession adds the stopped session's connection counters, processes and ctl counters to
// the summary and returns the point's summary so far (its episodes, time and speed).
func (l *launcher) recordSession(sess *launch.Session, k int, p *plan.Plan, cfg launch.SessionConfig, start time.Time, first int) PointSummary {
	l.sum.Connections.ServerRestarts += sess.ServerRestarts
	l.sum.Connections.Crashes += sess.Crashes
	l.sum.Connections.Restarts += sess.Restarts
	ps := PointSummary{Index: k, Name: l.points[k].Name, RunID: cfg.Run, Requested: l.runs, Episodes: first + sess.Episodes,
		ElapsedSec: time.Since(start).Seconds()}
	if sess.EpisodeNS > 0 {
		ps.StepsPerSec = float64(sess.Episodes*p.Steps) / sess.EpisodeNS.Seconds()
	}
	rel, _ := filepath.Rel(l.o.Out, cfg.Dir)
	for _, pr := range sess.Procs() {
		l.addProcess(sess, pr, k, rel)
		if r := sess.Result(pr); r != nil {
			l.tl.AddConnEvents(k, r)
			l.sum.Connections.Disconnects += r.Conn.Disconnects
			l.sum.Connections.Reconnects += r.Conn.Reconnects
		}
	}
	l.sum.LauncherCtlInvalid = addCounters(l.sum.LauncherCtlInvalid, sess.CtlInvalid())
	return ps
}

// finishCollection collects what the processes wrote after the last complete episode (done
// episodes in all; failed: the run stopped early, so a final checkpoint is written first) and
// returns the point's collected results.
func (l *launcher) finishCollection(col *launch.Collector, k, done int, out *traceOut, failed bool) (*launch.Collected, error) {
	if failed { // before the unfinished episode's records reach the trace
		l.checkpoint(k, done, col, out, true)
	}
	// What the processes wrote after the last complete episode (an interrupted one).
	col.Unfinished(done)
	if perr := col.Poll(); perr != nil {
		l.log.Warn().Err(perr).Msg("collect")
	}
	return col.Finish()
}

// pointResults returns the point's results with the per-link counters of every process merged
// in, adds their late messages to the summary and records the missing messages in ps.
func (l *launcher) pointResults(k int, sess *launch.Session, collected *launch.Collected, ps *PointSummary) *metrics.Results {
	res := collected.Results
	// The per-link counters: every process's injector side and receive side, merged.
	links := [][]fault.LinkStats{l.resume.replayed[k]} // the replayed episodes' (resumed point)
	for _, pr := range sess.Procs() {
		if r := sess.Result(pr); r != nil {
			links = append(links, r.Links)
		}
	}
	res.Links = sim.MergeLinkStats(links...)
	for _, lk := range res.Links {
		l.sum.Timing.LateMessages += lk.Late // delivered after their step
	}
	ps.Missing = collected.MissingCount
	for i, m := range collected.Missing {
		if i == 5 {
			break
		}
		ps.MissingHead = append(ps.MissingHead, m.String())
	}
	return res
}

func addCounters(a, b bus.CountersSnapshot) bus.CountersSnapshot {
	a.Received += b.Received
	a.Accepted += b.Accepted
	a.Dropped += b.Dropped
	for k, v := range b.ByReason {
		if a.ByReason == nil {
			a.ByReason = map[string]uint64{}
		}
		a.ByReason[k] += v
	}
	return a
}

func (l *launcher) addProcess(sess *launch.Session, pr *launch.Proc, point int, rel string) {
	ps := ProcessSummary{Role: pr.Role.String(), ID: pr.ID, PID: pr.PID(), Name: pr.Name, Point: point, ExitCode: -1,
		LogFile: filepath.Join(rel, contract.LogFile(pr.Name))}
	if sess.Attached() {
		ps.LogFile = "" // an attached process logs where whoever started it sends its stderr
	}
	if pr.Role == endpoint.Agent {
		ps.Agents = []int{pr.ID, pr.LastAgent}
	}
	if st := pr.ExitState(); st != nil {
		ps.ExitCode = st.ExitCode()
		ps.WaitMaxRSSBytes, ps.UserCPUSec, ps.SysCPUSec = launch.ResourceUsage(st)
		if ps.WaitMaxRSSBytes > 0 {
			ps.MaxRSSBytes, ps.MaxRSSSource = ps.WaitMaxRSSBytes, RSSWait
		}
	}
	if f := pr.Failure(); f != "" {
		ps.Status, ps.Error = contract.StatusFailed, f
	}
	if r := sess.Result(pr); r != nil {
		if ps.Status == "" {
			ps.Status, ps.Error = r.Status, r.Error
		}
		ps.Episodes, ps.Steps, ps.StepsPerSec = r.Episodes, r.Steps, r.StepsPerSec
		ps.Invalid, ps.CtlInvalid, ps.Timing, ps.Conn, ps.Messages = r.Invalid, r.CtlInvalid, r.Timing, r.Conn, r.Messages
		ps.SlowConsumerDropped = r.SlowConsumerDropped
		ps.Unexpected = r.Unexpected
		if r.PeakRSSBytes > 0 { // the process's own measure: see ProcessSummary.MaxRSSSource
			ps.MaxRSSBytes, ps.MaxRSSSource = r.PeakRSSBytes, r.PeakRSSSource
		}
		if r.TraceFile != "" {
			ps.TraceFile = filepath.Join(rel, r.TraceFile)
		}
		ps.ResultFile = filepath.Join(rel, contract.ResultFile(pr.Name))
	} else if ps.Status == "" {
		ps.Status = "no result"
	}
	l.sum.Processes = append(l.sum.Processes, ps)
	key := ps.Name
	if len(l.points) > 1 {
		key = fmt.Sprintf("p%02d/%s", point, ps.Name)
	}
	l.sum.Invalid[key] = ps.Invalid
	if r := sess.Result(pr); r != nil && r.Stale > 0 {
		if l.sum.Stale == nil {
			l.sum.Stale = map[string]uint64{}
		}
		l.sum.Stale[key] = r.Stale
	}
	l.sum.Timing.add(ps)
}

// writeReport writes report.md and the figures (pkg/report) from the points that have
// Results (all of them after a successful run; those recorded after a failure or Ctrl-C, with
// the status banner saying so).
func (l *launcher) writeReport() error { return l.renderReport(report.Write) }

// renderReport builds the report's input from the summary and hands it to write (report.Write:
// figures and report.md; report.WriteMarkdown: report.md alone, for a status learnt after the
// figures were written).
func (l *launcher) renderReport(write func(dir string, in report.Input) error) error {
	in := report.Input{Scenario: l.scn, Seed: l.sum.Seed, SeedDrawn: l.sum.SeedSource == "crypto",
		Engine: l.sum.Engine, Mode: l.sum.Mode, NATSURL: l.sum.NATSURL, Timing: l.sum.Timing,
		Elapsed: time.Since(l.started), Status: l.sum.Status, Error: l.sum.Error, Degraded: l.sum.Degraded, PlannedPoints: len(l.points),
		Missed: l.sum.Timing.Missed, LateMessages: l.sum.Timing.LateMessages, Timeline: l.sum.Timeline}
	if l.sum.Engine == "fast" {
		in.Mode = "lockstep" // the fast engine runs the lockstep step order, unpaced
	}
	for _, ps := range l.sum.Points {
		if ps.Metrics == nil {
			continue
		}
		in.Points = append(in.Points, report.Point{Scenario: l.points[ps.Index], Plan: l.plans[ps.Index], Results: ps.Metrics,
			Requested: ps.Requested, Missing: ps.Missing, MissingFirst: ps.MissingHead, Error: ps.Error})
	}
	if len(in.Points) == 0 {
		if l.sum.Status == "ok" || l.sum.Status == "" {
			return nil
		}
		// Nothing completed (the server was unreachable, a process failed at once): the
		// report still says what happened.
		if err := os.MkdirAll(l.o.Out, 0o755); err != nil {
			return err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "# %s\n\n> **Status: %s** - no episode completed, so there are no results to report.\n>\n> - cause: %s\n\n",
			l.scn.Name, l.sum.Status, l.sum.Error)
		fmt.Fprintf(&b, "Scenario %s, engine %s, NATS %s. summary.json has the details.\n", l.o.ScenarioPath, l.sum.Engine, l.sum.NATSURL)
		return atomicfile.WriteFile(filepath.Join(l.o.Out, report.FileName), []byte(b.String()), 0o644)
	}
	if len(in.Points) < len(l.points) {
		in.Scenario = nil // a partial sweep: report the points that finished
	}
	for _, p := range l.sum.Processes {
		label := ""
		if len(l.points) > 1 {
			label = pointLabel(l.points[p.Point])
		}
		in.Processes = append(in.Processes, report.Process{Role: p.Role, ID: p.ID, PID: p.PID, PeakRSSBytes: p.MaxRSSBytes, Point: label})
	}
	if l.sum.Engine == "nats" {
		in.Invalid = map[string]any{}
		for k, v := range l.sum.Invalid {
			in.Invalid[k] = v.Dropped
		}
		in.Stale, in.Security = l.sum.Stale, l.sum.Security
	}
	if err := write(l.o.Out, in); err != nil {
		return err
	}
	l.sum.Files.Report = report.FileName
	return nil
}

// pointLabel names a sweep point as report.md does: "epsilon=1, noise=structured".
func pointLabel(pt *scenario.Scenario) string {
	parts := make([]string, 0, len(pt.Point))
	for _, v := range pt.Point {
		parts = append(parts, string(v.Param)+"="+v.Value)
	}
	if len(parts) == 0 {
		return pt.Name
	}
	return strings.Join(parts, ", ")
}

func (l *launcher) writeSummary() error {
	data, err := json.MarshalIndent(l.sum, "", "  ")
	if err != nil {
		return fmt.Errorf("summary.json: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(l.o.Out, "summary.json"), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("summary.json: %w", err)
	}
	return nil
}

func (l *launcher) printTable(w io.Writer) {
	s := l.sum
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\t%s (%s)\n", s.Scenario, s.Kind)
	fmt.Fprintf(tw, "engine\t%s, %s, seed %d (%s)\n", s.Engine, s.Mode, s.Seed, s.SeedSource)
	if s.Engine == "nats" {
		fmt.Fprintf(tw, "nats\t%s, run %s, %d processes\n", s.NATSURL, s.RunID, len(s.Processes))
		if sec := s.Security; sec != nil {
			fmt.Fprintf(tw, "security\t%s server, permissions %t, signed %t, authenticated %t, tls %s, strict %t\n",
				sec.Server, sec.Permissions, sec.Signed, sec.Authenticated, sec.TLS, sec.Strict)
		}
	}
	fmt.Fprintf(tw, "runs\t%d x %d steps per point, %d point(s), %.2f s, %.0f steps/s\n", s.Runs, s.Steps, len(s.Points), s.ElapsedSec, s.Timing.StepsPerSec)
	if s.Timing.Mode == "realtime" {
		fmt.Fprintf(tw, "timing\tlate %d, overruns %d, missed %d, jitter p99 %v\n", s.Timing.LateMessages, s.Timing.Overruns, s.Timing.Missed, s.Timing.JitterP99MaxNS)
	}
	var dropped uint64
	for _, c := range s.Invalid {
		dropped += c.Dropped
	}
	if s.Engine == "nats" {
		fmt.Fprintf(tw, "invalid\t%d message(s) dropped\n", dropped)
		var stale uint64
		for _, n := range s.Stale {
			stale += n
		}
		if stale > 0 {
			fmt.Fprintf(tw, "stale\t%d message(s) for an episode the receiver had finished (late, not wrong; compared, never used)\n", stale)
		}
	}
	for _, p := range s.Points {
		r := p.Metrics
		if r == nil {
			fmt.Fprintf(tw, "%s\tno results\n", p.Name)
			continue
		}
		if r.Runs == 0 {
			fmt.Fprintf(tw, "%s\tno complete episode (of %d requested): no metrics\n", p.Name, p.Requested)
			continue
		}
		partial := ""
		if p.Requested > 0 && r.Runs < p.Requested {
			partial = fmt.Sprintf(" (partial: of %d requested)", p.Requested)
		}
		switch {
		case r.Control != nil && len(r.Control.FinalSqError) > 0:
			fmt.Fprintf(tw, "%s\t%d runs%s: final mean-square error", p.Name, r.Runs, partial)
			for i, st := range r.Control.FinalSqError {
				fmt.Fprintf(tw, " x%d %.4g", i, st.Mean)
			}
			if n := r.Control.EveSqError.Len(); n > 0 {
				fmt.Fprintf(tw, "; eavesdropper ||x0_hat - x0||^2 at T-1 %.4g", r.Control.EveSqError.Mean[n-1])
			}
			fmt.Fprintln(tw)
		case r.Consensus != nil:
			c := r.Consensus
			fmt.Fprintf(tw, "%s\t%d runs%s: E||x(T) - 1x*||^2 %.4g (Prop. 1 bound %.4g), sum rel. dev. %.2g\n", p.Name, r.Runs, partial,
				c.FinalSqDeviation.Mean, c.Prop1Bound, c.SumRelDevMax)
		}
	}
	fmt.Fprintf(tw, "out\t%s\n", l.o.Out)
	if s.Status == "degraded" {
		fmt.Fprintf(tw, "status\tdegraded: %s\n", strings.Join(s.Degraded, "; "))
	} else if s.Status != "" && s.Status != "ok" {
		fmt.Fprintf(tw, "status\t%s (partial results)\n", s.Status)
	}
	if s.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", s.Error)
	}
	_ = tw.Flush()
}
