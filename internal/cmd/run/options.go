package run

import (
	"errors"
	"flag"
	"io"
	"time"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/internal/runner"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/wire"
)

const synopsis = `dpsim run SCENARIO [--out DIR] [--seed N] [--nats-url URL] [--mode lockstep|realtime] [--period D]
                 [--ui[=ADDR] [--ui-hold D] [--ui-public]] [--engine nats|fast] [--episodes N] [--inflight K] [--trace-episodes N] [--timeout D] [--agents-per-process K] [--json]
                 [--record FILE.mcap [--record-limit BYTES]]
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

Memory does not grow with --episodes: the metrics are aggregated as episodes complete, and the merged
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
--engine, --episodes, --mode, --period, --timeout, --agents-per-process, --trace-episodes, --encoding,
--transcript, --sign, --strict, --max-missed-fraction) are taken from it. The trace it continues
is a bare name in OUT, opened without following a link and checked against its recorded sha256.
Its last member is an HMAC-SHA256 keyed by OUT/resume.key (mode 0600, the user's own): an edited
file is refused; someone able to read that key could sign an edit, but still not make dpsim run a
command or write outside OUT.`

// parseOptions parses the flags and the SCENARIO argument of `dpsim run` and checks them: each on
// its own and against each other (checkServer, checkProcesses, checkLimits).
func parseOptions(args []string, stdout, stderr io.Writer) (*runner.Options, error) {
	fs := cli.NewCommandFlagSet("run", synopsis, description, stdout, stderr)
	o := &runner.Options{}
	var seed, mode, budget string
	defineFlags(fs, o, &seed, &mode, &budget)
	path, err := scenarioArg(fs, args, o)
	if err != nil {
		return nil, err
	}
	o.ScenarioPath, o.Flags, o.Args = path, fs, args
	o.Reparse = func(args []string) (*runner.Options, error) { return parseOptions(args, io.Discard, io.Discard) }
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
	if given := givenFlags(fs); given["episodes"] && given["runs"] {
		return nil, cli.UsageError("--episodes and --runs (its old name) are both given: keep --episodes")
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "timeout":
			o.TimeoutSet = true
		case "inflight":
			o.InflightSet = true
		}
	})
	if err := o.Check(budget); err != nil {
		return nil, err
	}
	return o, nil
}

// defineFlags defines the flags of `dpsim run` on fs: into o, and into seed, mode and budget the
// ones parseOptions parses further.
func defineFlags(fs *flag.FlagSet, o *runner.Options, seed, mode, budget *string) {
	fs.StringVar(&o.Record, "record", "", "record every message on the run's bus (dpsim.<run>.>: data, ctl, results; not the challenger's private x(0) line) into this MCAP file (.mcap: one channel per subject, JSON with its docs/schema schema, zstd chunks; a bare name is written in OUT, a path where it says); with --engine fast the messages the NATS run would publish: the data subjects message for message, the launcher's ctl.episode and ctl.stop, at a simulated clock of 1ms per step, not the processes' ctl.ready/done/result (not with --dispatch, --spawn-workers or --shard)")
	fs.Func("record-limit", "with --record: the most the recording holds (bytes, or with a unit: 64MiB; default 256MiB); past it messages are dropped and counted (summary.json recording.dropped)", func(s string) error {
		b, err := engine.ParseBytes(s)
		o.RecordLimit = b
		return err
	})
	fs.StringVar(budget, "budget", "", "memory budget (bytes, or with a unit: 512MiB, 4GiB, 2GB; default 2GiB): the run's memory, summary.json size and CPU time are estimated before it starts, and a run estimated above the budget is refused with its estimate")
	defineShard(fs, o)
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
	fs.IntVar(&o.Runs, "episodes", 0, "number of Monte Carlo episodes per point (0, the default: the scenario's episodes)")
	fs.IntVar(&o.Runs, "runs", 0, "the old name of --episodes, still read")
	fs.DurationVar(&o.Timeout, "timeout", contract.DefaultTimeout, "longest wait for one step's messages (lockstep) in every process (at least 1ms; NATS flushes and a private x(0) wait max(--timeout, 10s)); a step that times out goes on with the missing-input rules, is counted, and makes the run degraded (see --max-missed-fraction)")
	fs.IntVar(&o.AgentsPerProcess, "agents-per-process", 1, "consensus: agents hosted per agent process (1 = one process per agent; e.g. 25 runs 100 agents in 4 processes). Unless the scenario has link faults or crashes (which act per agent), each process publishes one message per step carrying all its agents' outputs (dpsim.<run>.host.<i>.y), so a step costs O(processes) messages; --engine fast groups its agents the same way, so both engines report the same links")
	fs.IntVar(&o.TraceEpisodes, "trace-episodes", runner.DefaultTraceEpisodes, "write the merged per-step records of the first N episodes to trace.jsonl (0 = no trace file, -1 = every episode: about 25 KB per cloud-control episode of 100 steps, 2.5 GB for 100000 runs); it also bounds the disk of the NATS engine: each process keeps its trace, transcript and fault log for these N episodes only (plus the episode in progress), and the metrics still cover every episode")
	fs.StringVar(&o.Encoding, "encoding", "json", "wire encoding of the data messages: json (readable with nats sub) or binary")
	fs.StringVar(&o.RunID, "run-id", "", "run id, the <run> of the subjects dpsim.<run>.* (default a random r<hex>; sweep point k appends -p<k>)")
	fs.StringVar(&o.LogLevel, "log-level", "info", "zerolog level of the launcher's log on stderr and of the children's logs (DIR/procs/*.log): trace, debug, info, warn, error")
	fs.BoolVar(&o.Transcript, "transcript", true, "the eavesdropper writes every message it saw to its transcript file")
	fs.IntVar(&o.ChildProcs, "child-gomaxprocs", 1, "GOMAXPROCS of every role process (0 = Go's default: one thread per core); 1 is fastest for the lockstep loops")
	fs.BoolVar(&o.JSON, "json", false, "print summary.json on stdout instead of the short table")
	fs.BoolVar(&o.Parquet, "parquet", false, "also write Parquet tables beside summary.json: episodes.parquet (one row per point and episode: the per-episode values the metrics aggregate) and trace.parquet (the records of the trace files, flattened; none when no episode is traced); both 0600 unless --share-outputs, columns in docs/outputs.md; counted in the --budget estimate; not with --resume")
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
	fs.StringVar(&o.Resume, "resume", "", "continue the run whose outputs are in this directory (its "+runner.ResumeFile+": a run killed, failed or interrupted before every episode completed) from its last completed episode and sweep point, with the results of an uninterrupted run; give SCENARIO again (the file holds only its sha256) and --role and --attach as the run had them; the flags that decide the results may be left out (given, they must be the run's); the NATS connection and TLS flags are not recorded and are given again. --engine fast resumes at the last completed point")
}

// scenarioArg is cli.ParseScenarioArgs, except that with --resume a missing SCENARIO is left to
// applyResume, which says why it is needed.
func scenarioArg(fs *flag.FlagSet, args []string, o *runner.Options) (string, error) {
	path, err := cli.ParseScenarioArgs(fs, args, "scenarios/cloud-vehicle.yaml")
	if errors.Is(err, cli.ErrMissingScenario) && o.Resume != "" {
		return "", nil
	}
	return path, err
}

// inflightHelp is the help of --inflight.
const inflightHelp = "episodes kept in flight at once over the same role processes (1.." +
	"1024): each process runs one set of cores per episode in flight and, where no per-message fault applies, " +
	"sends one message per step for all of them, so a lockstep step's messaging cost is shared by K episodes; " +
	"results do not depend on K (every episode has its own random streams and cores). An episode with a " +
	"process crash, a server restart or a proxy reset scheduled in it runs alone (summary.json inflight says " +
	"how many and why). Realtime mode keeps 1 (more is refused there). The lockstep default (128) was measured: " +
	"the vehicle's whole run (500 episodes) 0.50-0.53 s at K=128 against 0.62-0.66 s at K=32, the 21-point " +
	"cloud-vehicle-sweep 8.0 s against 10.5 s (K=256: 8.1 s); consensus agent hosts get 128 / agents per process " +
	"(at least 1), so each process holds about 128 cores"

const uiHelp = "serve a live view of the run while it goes: --ui alone serves on 127.0.0.1 at a free port, --ui=HOST:PORT there (an empty host is 127.0.0.1; an address other than loopback, e.g. 0.0.0.0, shows the plant's true state to the network and takes interventions from it: it needs --ui-public). The URL is printed on stderr at the start, with a random token (http://HOST:PORT/?token=...) that every request needs: the page keeps it as a cookie, other clients send it as ?token= or Authorization: Bearer (so does a Prometheus scraper of /metrics); a page of another site can neither read the view nor change the run (its Host, Origin and Content-Type are checked). The page (/) plots the Monte Carlo mean square over the completed episodes with its 95% band against the paper's bound (as the launcher folds them), the latest traced episode, saying which (see --trace-episodes; in realtime also the episode in progress, step by step), the links (the injector side replayed live, the rest when a point finishes), the processes (memory sampled every second) and the timeline; /api/state is its JSON, /events its Server-Sent Events, /metrics Prometheus metrics. It stops when the run ends (see --ui-hold)"

const uiPublicHelp = "with --ui=HOST:PORT: allow an address other than loopback (0.0.0.0, ::, a LAN address or name): the live view then serves the network, over plain HTTP - whoever can reach it and learns the URL with its token sees the true state and can change the run's faults (a warning is printed)"

// givenFlags is the set of flags given on the command line.
func givenFlags(fs *flag.FlagSet) map[string]bool {
	m := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { m[f.Name] = true })
	return m
}
