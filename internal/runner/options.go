package runner

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/shard"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

// DefaultTraceEpisodes is the default of --trace-episodes: the episodes whose merged
// per-step records go to trace.jsonl.
const DefaultTraceEpisodes = 100

// Options are what a run is asked to do: the flags of `dpsim run`, parsed by the command.
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
	// Parquet is --parquet: episodes.parquet and trace.parquet beside summary.json (parquet.go).
	Parquet bool
	// Flags are the parsed flags (what was given: the resume state records it), Args the
	// command line they were parsed from, and Reparse the command's parser: --resume parses
	// the command line again after the recorded values of the flags that decide the results.
	Flags   *flag.FlagSet
	Args    []string
	Reparse func(args []string) (*Options, error)
	// Record is --record: the MCAP file recording the run's bus traffic ("": none; a bare file
	// name lies in OUT), RecordLimit --record-limit (bytes; 0: busrec.DefaultLimit).
	Record      string
	RecordLimit int64
	// observers are added to the run's own (tests watch the loop with them).
	observers []observer
	// Shard is --shard I/N: play chunks i mod N == I and write them into --out, a part of
	// dpsim merge (shard.go); shardParts, the parts a merge folds instead of playing.
	Shard      shard.Shard
	shardParts []*RunShardPart
}

// Check checks the options, each on its own and against each other (the server, the
// processes, the limits, the worker farm, the live view); budget is --budget as given.
func (o *Options) Check(budget string) error {
	if err := o.checkServer(); err != nil {
		return err
	}
	if err := o.checkProcesses(); err != nil {
		return err
	}
	if err := o.checkLimits(budget); err != nil {
		return err
	}
	if err := o.Farm.Check(o.Engine == "fast", "--engine fast"); err != nil {
		return err
	}
	if err := o.checkRecord(); err != nil {
		return err
	}
	if o.Parquet && o.Resume != "" {
		return cli.UsageError("--parquet cannot be combined with --resume: the points the interrupted run completed kept no per-episode rows; run again with --parquet")
	}
	return o.checkUI()
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
		return cli.UsageError("--episodes (--runs) %d: want 1..%d (0 = the scenario's)", o.Runs, scenario.MaxRuns)
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
