package role

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/roleproc"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// roleDoc is a role's usage text (synopsis, description) and which of the optional flags it
// takes (--seed; --id as an agent index and --agents).
type roleDoc struct {
	synopsis, description string
	seed, agents          bool
}

var docs = map[endpoint.Role]roleDoc{
	endpoint.Plant: {
		synopsis: "dpsim plant --run ID (--scenario FILE | --plan FILE) [--nats-url URL] [--seed N] [--id K] [--out DIR] [--mode lockstep|realtime] [--period D] [--timeout D]",
		description: `The plant of a cloud-control run (eq. 23) as its own process. It holds the true state x(t),
computes yhat(t) = C x(t) + gamma(t) inside the process (the privacy noise is injected at its edge,
from the random stream rng(seed, "plant", 0, episode)), publishes yhat on dpsim.<run>.plant.<id>.yhat,
waits for u(t) on dpsim.<run>.cloud.<id>.u and steps; a u(t) that does not come (lost, late, past
--timeout or the realtime tick) is replaced by the scenario's rule faults.missing.plant (hold the
newest u received, or zero). The true state never goes on
the bus: it is written only to the plant's trace file <out>/plant-<id>.trace.jsonl.

Episodes are started by the launcher (dpsim run) over dpsim.<run>.ctl.episode; see the protocol in
'go doc github.com/dpsim/dpsim/pkg/contract' and its ctl messages in 'go doc
github.com/dpsim/dpsim/internal/launch'. Run by hand against a NATS server and start an
episode yourself, e.g.
  nats pub dpsim.r1.ctl.episode '{"v":1,"run":"r1","ep":0,"step":0,"from":"launcher.0","sent":0,"kind":"episode","vals":[]}'
and stop with kind "stop" on dpsim.r1.ctl.stop.`,
		seed: true,
	},
	endpoint.Cloud: {
		synopsis: "dpsim cloud --run ID (--scenario FILE | --plan FILE) [--nats-url URL] [--id K] [--out DIR] [--mode lockstep|realtime] [--period D] [--timeout D]",
		description: `The cloud controller of a cloud-control run as its own process: the observer-based tracking
controller of eq. (24). It subscribes to the plant's noisy output dpsim.<run>.plant.<id>.yhat and
publishes u(t) on dpsim.<run>.cloud.<id>.u. It sees only yhat, and draws no randomness (no --seed).
A yhat(t) that does not come is replaced by the observer's prediction C xhat(t).
It writes u(t) and its estimate xhat(t) to <out>/cloud-<id>.trace.jsonl.`,
	},
	endpoint.Agent: {
		synopsis: "dpsim agent --run ID (--scenario FILE | --plan FILE) [--nats-url URL] [--seed N] (--id I | --agents I..J) [--out DIR] [--mode lockstep|realtime] [--period D] [--timeout D]",
		description: `Consensus agent(s) of a consensus run (eq. 25) as a process. Agent i publishes
y_i(t) = x_i(t) + gamma_i(t) on dpsim.<run>.agent.<i>.y (noise from rng(seed, "agent", i, episode)),
collects its neighbours' y_j(t) for the same step and updates x_i(t+1) = x_i + sum_j w_ij (y_j - y_i);
a y_j(t) that does not come is replaced by the rule faults.missing.agent (reuse-last or skip).
One agent per process by default (--id I); --agents I..J hosts agents I to J (inclusive) in one
process - they still talk only over NATS. Writes <out>/agent-<i>.trace.jsonl (or agents-<i>-<j>).
A host of agents I..J announces itself under its first agent: its ctl.ready, ctl.done and
ctl.result subjects end in agent.<I>.`,
		seed:   true,
		agents: true,
	},
	endpoint.Eavesdropper: {
		synopsis: "dpsim eavesdropper --run ID (--scenario FILE | --plan FILE) [--nats-url URL] [--id K] [--out DIR] [--timeout D] [--transcript=false]",
		description: `The eavesdropper as its own process. It subscribes to everything of the run (dpsim.<run>.>),
records every message (<out>/eavesdropper-<id>.transcript.jsonl), validates the data messages and
estimates the private initial state from what it saw: for cloud control the least-squares x(0) on
the affine manifold from (yhat, u); for consensus every x_i(0) from the broadcast y. It never sees
the truth and gets no seed; the launcher scores its estimates (<out>/eavesdropper-<id>.trace.jsonl).
It only listens to the loop with id 0 (plant.0, cloud.0) or to every agent, and never paces
itself: it waits for each step's messages for --timeout (plus --period and the 50 ms grid lead in
realtime). A message it misses is left out of its least squares (a missing u(t) is replaced by
what the plant's rule applies); its records say how many it missed (eve_missing).`,
	},
}

// parseConfig parses a role's flags. It returns flag.ErrHelp for -h (the usage went to stdout).
func parseConfig(role endpoint.Role, args []string, stdout, stderr io.Writer) (*roleproc.Config, error) {
	d := docs[role]
	synopsis := d.synopsis
	if name := program[role]; name != "" {
		synopsis = strings.Replace(synopsis, "dpsim "+role.String(), name, 1)
	}
	fs := cli.NewCommandFlagSet(role.String(), synopsis, d.description, stdout, stderr)
	cfg := &roleproc.Config{Role: role}
	rf := defineRunFlags(fs, cfg, d)
	defineProcessFlags(fs, cfg, d, &rf.agents)
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, cli.UsageError("unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := applyRunFlags(cfg, rf); err != nil {
		return nil, err
	}
	if err := applyProcessFlags(cfg, rf, set); err != nil {
		return nil, err
	}
	if err := checkDurations(cfg); err != nil {
		return nil, err
	}
	if err := readCredentials(cfg); err != nil {
		return nil, err
	}
	if cfg.IdleTimeout <= 0 {
		return nil, cli.UsageError("--idle-timeout %v: must be > 0", cfg.IdleTimeout)
	}
	if _, err := cli.Logger(io.Discard, cfg.LogLevel); err != nil {
		return nil, err
	}
	return cfg, nil
}

// roleFlags holds the flag values that parseConfig parses further before they go into a Config.
type roleFlags struct {
	natsURL, mode, encoding *string
	seed, faultSeed, agents string // --seed, --fault-seed, --agents as given ("" when absent)
}

// defineRunFlags defines on fs the flags that say which run this process joins and on what: the
// server, run id, scenario or plan, point, seeds, time mode and encoding (d: the role's docs).
func defineRunFlags(fs *flag.FlagSet, cfg *roleproc.Config, d roleDoc) *roleFlags {
	rf := &roleFlags{}
	role := cfg.Role
	modeHelp := "time mode: lockstep (each step when its messages arrived) or realtime (one step per --period on the wall clock); default the scenario's transport.mode"
	if role == endpoint.Eavesdropper {
		modeHelp = "time mode of the run: the eavesdropper never paces itself; in realtime a step whose messages miss the wait is counted as missed (not a failure); default the scenario's transport.mode"
	}
	rf.natsURL = fs.String("nats-url", "", "NATS server URL, e.g. nats://127.0.0.1:4222 (default $"+bus.EnvURL+"); credentials come from $"+bus.EnvUser+" and $"+bus.EnvPassword+" (the launcher sets them; credentials written in the URL are taken out of every log and output, but stay visible in this process's argv)")
	rf.mode = fs.String("mode", "", modeHelp)
	rf.encoding = fs.String("encoding", "json", "wire encoding of the messages this process publishes: json or binary (receivers accept both)")
	fs.StringVar(&cfg.Run, "run", "", "run id (required): one NATS subject token; subjects are dpsim.<run>.*")
	fs.StringVar(&cfg.ScenarioPath, "scenario", "", "scenario YAML file (required unless --plan); the same file the launcher runs: the process resolves the plan of --point itself (sensitivity, noise design, graph spectrum)")
	fs.StringVar(&cfg.PlanPath, "plan", "", "plan file written by the launcher for this process (<out>/<name>.plan.json): the scenario point resolved once, holding only this process's private values; replaces --scenario (--point then only numbers the results); a file not there yet is waited for as long as --connect-retry")
	fs.IntVar(&cfg.Point, "point", 0, "sweep point: index into the scenario's expanded sweep (0 when it does not sweep); with --plan, the point the file holds (recorded in the results)")
	if d.seed {
		fs.StringVar(&rf.seed, "seed", "", "run seed (uint64) of the noise streams; default the scenario's seed (required when the scenario has none)")
	}
	fs.StringVar(&rf.faultSeed, "fault-seed", "", "seed (uint64) of the scenario's link faults, the same in every process of a run (the launcher passes it; a hash of the run seed that does not reveal it); the plant and agents derive it from --seed when absent")
	return rf
}

// defineProcessFlags defines on fs the flags of this one process: which loop or agents it runs
// (agents receives --agents), where it writes, its timeouts, log, TLS, signing and credentials.
func defineProcessFlags(fs *flag.FlagSet, cfg *roleproc.Config, d roleDoc, agents *string) {
	role := cfg.Role
	if d.agents {
		fs.IntVar(&cfg.ID, "id", 0, "the agent index i (0-based) this process runs; see --agents")
		fs.StringVar(agents, "agents", "", "host agents I..J (inclusive, 0-based) in this one process instead of --id")
	}
	if d.agents || role == endpoint.Eavesdropper {
		fs.IntVar(&cfg.Batch, "batch", 0, "consensus: the agents publish in blocks of K: the process hosting agents I..I+K-1 sends one message per step on dpsim.<run>.host.<I>.y carrying all their outputs (each still checked and used per agent) instead of one per agent; --agents must then be one whole block (I a multiple of K). Applies only when the scenario has no link fault and no crash (those act per agent); the launcher passes its --agents-per-process. 0 or 1: one message per agent")
	}
	switch {
	case d.agents:
	case role == endpoint.Eavesdropper:
		fs.IntVar(&cfg.ID, "id", 0, "eavesdropper id: the <id> of its ctl subjects (ctl.ready.eavesdropper.<id>, ...) and of its file names; it listens to the loop with id 0 or to every agent whatever its own id")
	default:
		fs.IntVar(&cfg.ID, "id", 0, "loop id: the <id> of its subjects (the plant and the cloud of one loop share it: plant.<id>.yhat, cloud.<id>.u)")
	}
	fs.StringVar(&cfg.Out, "out", ".", "directory for this process's trace and result files (created if missing)")
	fs.DurationVar(&cfg.Period, "period", 0, "realtime step period Ts, e.g. 100ms; default the scenario's transport.period")
	fs.DurationVar(&cfg.Timeout, "timeout", contract.DefaultTimeout, "longest wait for one step's messages in lockstep (at least 1ms; NATS flushes and a private x(0) wait max(--timeout, 10s)); a step that times out goes on with the missing-input rules and is counted as missed")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", roleproc.DefaultIdleTimeout, "longest wait for the next ctl.episode (or ctl.stop) before giving up")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "zerolog level of the log on stderr: trace, debug, info, warn, error")
	fs.IntVar(&cfg.ParentPID, "parent-pid", 0, "exit (flushing results) when this process's parent is no longer this pid; the launcher sets it so no child outlives it")
	if role == endpoint.Eavesdropper {
		fs.BoolVar(&cfg.Transcript, "transcript", true, "write every received message (subject, payload, receive time) to <out>/eavesdropper-<id>.transcript.jsonl")
	}
	fs.Var(&cfg.KeepEpisodes, "keep-episodes", "bound the disk use: keep the trace records (and the transcript and fault log) of the first `N` episodes only; each later episode's trace replaces the previous one's once done (the launcher reads every episode before it starts the next); -1 (the default) keeps all")
	fs.StringVar(&cfg.TLS.CA, "tls-ca", "", "connect over TLS, trusting this CA file (PEM); the launcher passes its run's")
	fs.StringVar(&cfg.TLS.Cert, "tls-cert", "", "mutual TLS: the client certificate (PEM)")
	fs.StringVar(&cfg.TLS.Key, "tls-key", "", "mutual TLS: the key (PEM) of --tls-cert")
	fs.StringVar(&cfg.SignKeys, "sign-keys", "", "sign every data message with the ed25519 seed of $"+bus.EnvSignSeed+" and drop (counted as signature) any received data message that does not verify against this file of public keys ({\"plant.0\": \"U...\"}); the launcher sets both with --sign")
	fs.StringVar(&cfg.Credentials, "credentials", "", "file of this process's NATS credentials (and signing and x(0) curve keys): KEY=VALUE lines "+bus.EnvUser+", "+bus.EnvPassword+", "+bus.EnvSignSeed+", "+bus.EnvX0Seed+", "+bus.EnvX0Sender+"; must not be readable by others (chmod 600); dpsim run --attach writes one per process and prints the commands that use it; it wins over $"+bus.EnvUser+" and the URL's")
	fs.DurationVar(&cfg.ConnectRetry, "connect-retry", 20*time.Second, "retry a NATS server that cannot be reached yet every 0.5 s for this long at start (0: one try), so processes and servers may start in any order")
	fs.BoolVar(&cfg.Resume, "resume", false, "continue from <out>/<name>.checkpoint.json after this process was killed by a crash of the scenario (faults.crashes): the launcher restarts a killed process with it")
}

// applyRunFlags checks the flags that identify the run (server, run id, scenario or plan, point,
// seeds) and stores them in cfg.
func applyRunFlags(cfg *roleproc.Config, rf *roleFlags) error {
	seed, faultSeed := rf.seed, rf.faultSeed
	cfg.NATSURL, cfg.Secrets.NATSUser, cfg.Secrets.NATSPassword = bus.SplitURL(bus.ResolveURL(*rf.natsURL))
	if cfg.NATSURL == "" {
		return cli.UsageError("no NATS server: pass --nats-url or set $%s", bus.EnvURL)
	}
	if cfg.Run == "" {
		return cli.UsageError("--run is required")
	}
	if err := wire.ValidToken(cfg.Run); err != nil {
		return cli.UsageError("--run: %v", err)
	}
	switch {
	case cfg.ScenarioPath == "" && cfg.PlanPath == "":
		return cli.UsageError("--scenario or --plan is required")
	case cfg.ScenarioPath != "" && cfg.PlanPath != "":
		return cli.UsageError("give --scenario or --plan, not both")
	}
	if cfg.Point < 0 {
		return cli.UsageError("--point %d: must be >= 0", cfg.Point)
	}
	var err error
	if cfg.Seed, cfg.SeedSet, err = cli.ParseSeed(seed); err != nil {
		return err
	}
	if faultSeed != "" {
		v, err := strconv.ParseUint(faultSeed, 10, 64)
		if err != nil {
			return cli.UsageError("--fault-seed %q: want an unsigned 64-bit integer", faultSeed)
		}
		cfg.FaultSeed, cfg.FaultSeedSet = v, true
	}
	return nil
}

// applyProcessFlags checks the flags of this one process (its loop or agents, time mode, encoding;
// set holds the flags given) and stores them in cfg.
func applyProcessFlags(cfg *roleproc.Config, rf *roleFlags, set map[string]bool) error {
	agents, mode, encoding := rf.agents, rf.mode, rf.encoding
	if cfg.ID < 0 {
		return cli.UsageError("--id %d: must be >= 0", cfg.ID)
	}
	if cfg.Batch < 0 {
		return cli.UsageError("--batch %d: must be >= 0", cfg.Batch)
	}
	cfg.LastAgent = cfg.ID
	if agents != "" {
		if set["id"] {
			return cli.UsageError("give --id or --agents, not both")
		}
		lo, hi, err := ParseAgents(agents)
		if err != nil {
			return cli.UsageError("--agents: %v", err)
		}
		cfg.ID, cfg.LastAgent = lo, hi
	}
	if *mode != "" {
		m, err := wire.ParseMode(*mode)
		if err != nil {
			return cli.UsageError("--mode: %v", err)
		}
		cfg.Mode, cfg.ModeSet = m, true
	}
	enc, err := wire.ParseEncoding(*encoding)
	if err != nil {
		return cli.UsageError("--encoding: %v", err)
	}
	cfg.Encoding = enc
	return nil
}

// checkDurations checks the durations and the episode bound: --period >= 0, --timeout at least
// contract.MinTimeout, --connect-retry >= 0 (--keep-episodes is checked as it is parsed).
func checkDurations(cfg *roleproc.Config) error {
	if cfg.Period < 0 {
		return cli.UsageError("--period %v: must be > 0", cfg.Period)
	}
	if cfg.Timeout < contract.MinTimeout {
		return cli.UsageError("--timeout %v: must be at least %v (it bounds every wait for a step's messages)", cfg.Timeout, contract.MinTimeout)
	}
	if cfg.ConnectRetry < 0 {
		return cli.UsageError("--connect-retry %v: must be >= 0", cfg.ConnectRetry)
	}
	return nil
}

// readCredentials reads the --credentials file, if any: its user and password replace those of the
// URL and environment, and its signing seed is kept, and its curve seed replaces the
// environment's. A file it cannot use is a usage error.
func readCredentials(cfg *roleproc.Config) error {
	cfg.Secrets.X0Seed, cfg.Secrets.X0Sender = bus.EnvCurveKey()
	if cfg.Credentials != "" {
		c, err := bus.ReadCredentials(cfg.Credentials)
		if err != nil {
			return cli.UsageError("--credentials: %v", err)
		}
		if c.User != "" {
			cfg.Secrets.NATSUser, cfg.Secrets.NATSPassword = c.User, c.Password
		}
		cfg.Secrets.SignSeed = c.SignSeed
		if c.X0Seed != "" {
			cfg.Secrets.X0Seed, cfg.Secrets.X0Sender = c.X0Seed, c.X0Sender
		}
	}
	return nil
}

// ParseAgents parses an agent range "i..j" (inclusive) or a single index "i".
func ParseAgents(s string) (lo, hi int, err error) {
	a, b, found := strings.Cut(s, "..")
	if !found {
		b = a
	}
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("agent range %q: want i..j or i (0-based agent indices)", s)
	}
	if lo < 0 || hi < lo {
		return 0, 0, fmt.Errorf("agent range %q: want 0 <= i <= j", s)
	}
	return lo, hi, nil
}
