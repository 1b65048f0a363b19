package auditcmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/schollz/progressbar/v3"

	"github.com/dpsim/dpsim/internal/auditrun"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Command is the table entry for `dpsim audit`.
var Command = cli.Command{Name: "audit", Summary: "empirical privacy audit: lower bounds on epsilon from the distinguishing game", Run: Run}

// DefaultWireTrials and DefaultTrials are the default trial counts (auditrun.EffectiveTrials).
const (
	DefaultWireTrials = auditrun.DefaultWireTrials
	DefaultTrials     = auditrun.DefaultTrials
)

const synopsis = `dpsim audit SCENARIO [--engine fast|wire] [--trials N] [--audit-adjacency manifold|block]
                   [--episodes-per-trial K | --episodes-per-trial-sweep K1,K2,...]
                   [--confidence C] [--seed S] [--out DIR] [--json] [--workers W] [--nats-url URL]
                   [--fail-on-violation] [--dispatch] [--spawn-workers N] [--worker-listen ADDR]
                   [--worker-creds N] [--verify-share P] [--chunk-timeout D] [--budget B]
                   [--ui[=ADDR] [--ui-hold D] [--ui-public]] [--engine wire --role ENDPOINT=COMMAND ...]
                   [--write-scores FILE.csv|FILE.jsonl] [--shard I/N --out PART]
       dpsim audit --scores FILE.csv|FILE.jsonl|FILE.parquet --epsilon E [--delta D] [--mechanism gaussian|laplace] [--episodes-per-trial K] [--confidence C] [--json]
       dpsim audit --one-run SCENARIO [--guesses K] [--confidence C] [--seed S] [--json] [--fail-on-violation]`

const description = `Audits the scenario's privacy claim empirically: plays the distinguishing game and reports lower
bounds on epsilon with a verdict (docs/math.md section 6).

Per trial the challenger draws a secret bit (balanced: N trials with x, N with x'), the system runs
ONE episode from the chosen initial state with fresh noise, and the eavesdropper - which sees only
the transcript - outputs scores: its own least-squares estimate projected on the pair's difference,
and the likelihood ratio of that estimate where the noise law is known (Gaussian; Laplace with
structured noise). From the scores the auditor bounds the error rates of threshold tests with
Clopper-Pearson intervals and derives eps_lb_cp = the larger of ln((1 - delta - FNR_up)/FPR_up)
and ln((1 - delta - FPR_up)/FNR_up) (a lower bound on eps for any mechanism) and, for Gaussian noise,
eps_lb_gdp from the Gaussian-DP fit mu_gdp (kappa(eps_lb_gdp, mu_gdp) = delta; a lower bound only if
the trade-off curve is Gaussian), and eps_lb_fdp from the f-DP statistic (a joint confidence region
of both error rates of a test instead of two separate bounds, cross-fitted over the two halves of the
trials; the same assumption, tighter; docs/math.md section 6.1). All bounds of all scores hold
jointly at the confidence level: the f-DP statistic takes half of its error level, the single-threshold
bounds of the scores share the other half.
Verdict: violation when eps_lb_cp, eps_lb_gdp or eps_lb_fdp > eps (the claimed eps), else consistent (no
evidence against the claim - not a proof); the output states each comparison.

Composition (docs/math.md section 9): with --episodes-per-trial K each trial plays K episodes of
the same secret with fresh noise (episodes i*K .. i*K+K-1 of trial i) and the eavesdropper averages
its K least-squares estimates (the stacked least squares; for Gaussian noise the sqrt(K) mu-GDP
composition). The verdict is then judged against the claim composed over K episodes,
epsilon_claimed_run (Gaussian: sqrt(K) kappa_eps^{-1}(delta)-GDP at delta; Laplace: K eps), and the
output also states what the per-episode claim eps would say (verdict_episode). With
--episodes-per-trial-sweep 1,2,4,8,16 every K is audited as a point of a sweep (Bonferroni over the
points), and --out DIR adds the figure DIR/composition.png and .svg: the bounds against K beside
eps_run(K) and eps. Fast engine only.

The adjacent pair is, by default, the worst pair of the sensitivity computed for the adjacency
being audited (which may differ from the one the noise was calibrated for): the private model's
initial-state difference z, mapped to the plant (O_T(plant) dx = O_T(model) z, x' = x + mu dx);
for consensus agent 0's x_0(0) + mu. The scenario's audit section may give the pair, the trials,
the adjacency and the confidence; flags override it. A pair with x0 = x0prime runs a null game:
the system ignores the secret, the bounds must stay at 0.

Scores: projection (the eavesdropper's estimate on the pair's difference), llr (the likelihood
ratio of the estimate, where the noise law is known) and, by default, precision (docs/math.md
section 6.3): the published values are float64, and the eavesdropper reads their bits - under each
hypothesis it replays the plant's or agents' own float64 arithmetic from the transcript, asks
whether one noise value reproduces every published value bit for bit, and whether that value is
one the float sampler can return (Go's ziggurat, the inverse-CDF Laplace); precision = (yeses
under x0' - yeses under x0) 2^20 + llr. --precision=false leaves it out.

Engines: fast runs the same role cores in-process on every core (deterministic for a seed whatever
--workers); wire spawns the real role processes over NATS (dpsim run's launcher and roles, in
lockstep; an embedded server unless --nats-url or $NATS_URL) with the launcher as the challenger,
--inflight trials at once; for the same seed both engines play bit-identical episodes. The seed is
--seed, else the scenario's, else drawn from crypto/rand (reported). A sweep audits every point.

Your own mechanism or attack (--engine wire --role ENDPOINT=COMMAND, repeatable; as dpsim run
--role, docs/protocol.md section 2.3): COMMAND plays the role ENDPOINT - plant.0, cloud.0,
agent.<i> or eavesdropper.0 - in place of dpsim's own process, with the arguments and the
environment dpsim's own would get. A plant or agent program receives each trial's secret x(0)
sealed on the challenger's private line (docs/protocol.md section 7) and the verdict is about
its mechanism; an eavesdropper program's final estimates (eve_x0 at step T-1 in its trace file)
are what the audit scores (the precision score also reads its transcript: --transcript=true). The outputs name the programs; what a process did wrong (invalid
messages, missing files, steps that timed out) is counted and attributed to it in the table,
--json (processes, problems, degraded) and report.md, and a process that dies, or a fatal
problem, fails the audit (exit 1) naming it.

One-run audit (--one-run, consensus; docs/math.md section 6.2): ONE episode in which every agent's
x_i(0) is an independent canary (x_i or x_i + mu by a fair coin); the eavesdropper's estimate of each
x_i(0) is scored, the auditor guesses the canaries of the K highest and K lowest scores (K fixed from
the number of agents and the claim before the run, or --guesses) and a one-run bound turns the
correct guesses into a bound: Steinke, Nasr & Jagielski 2023 (Thm 3.1, Cor. 5.4), the verdict's for
Laplace (pure eps), and Mahloujifar, Melis & Chaudhuri 2024's f-DP bound against the mu-GDP curve.
For Gaussian claims of fault-free plans the verdict reads the Gauss statistic (after Agrawal et al.
2026): the scores standardised by the modelled variance, signed by the coins and summed, exactly
normal when each estimate's error is exactly Gaussian with that variance and independent across
agents (an assumption the output states), an exact lower bound on mu and so on eps. one_run_bound
names the verdict's bound, fixed before the run; the others are reported beside it (no maximum is
taken); the output states the bounds' assumptions (the canaries interfere through the dynamics).

With --ui the audit serves a live view while it plays (the URL on stderr): the progress, the lower
bounds recomputed from the trials so far by the same analysis as the result (threshold selection
included: the same function of the trials), the claim, the empirical trade-off curve against the
claim's, and the verdict at the end. Intermediate bounds are not a verdict: stopping when they
look good (optional stopping) voids the confidence level; only the planned trials' result counts.

With --out DIR: DIR/audit.json (the --json object), DIR/report.md and the trade-off plot
DIR/tradeoff.png and .svg (one set per sweep point: -pNN suffix). --write-scores FILE writes every
trial's secret bit and scores (.csv, .jsonl or .parquet); --scores FILE analyses such a file - from dpsim or any
other implementation, or the two arrays in_canary_scores and out_canary_scores of the canary-score auditors
(CSV or Parquet columns, a .json object) - against --epsilon/--delta/--mechanism (docs/howto-audit.md).

Shards (--shard I/N --out PART, for cluster nodes that cannot reach a coordinator): the 2N trials
are cut into N contiguous slices; shard I plays slice I (trial e is the same trial wherever it is
played: its bit audit.Bit(seed, e), its noise episode e's) and writes its trials' scores and a
manifest (scenario and its SHA-256, seed, I, N, trial range, the settings that change the result)
into PART. dpsim merge OUT PART... checks that the parts are the N slices of one audit and writes
OUT/audit.json, report.md and the figures the unsharded audit writes, bit for bit (but the
elapsed time). Exit status 0 whatever the
verdict (see --fail-on-violation), 1 if the audit fails, 2 on a usage error.`

// CompositionFigure is the base name of --episodes-per-trial-sweep's figure in --out.
const CompositionFigure = auditrun.CompositionFigure

// ErrViolation is returned (wrapped) with --fail-on-violation when the verdict is violation; a
// ViolationError's exit code is 3.
var ErrViolation = auditrun.ErrViolation

// ViolationError reports a violation verdict under --fail-on-violation (auditrun.ViolationError).
type ViolationError = auditrun.ViolationError

// Options are the parsed flags of `dpsim audit`: the audit's settings (auditrun.Options).
type Options = auditrun.Options

// Output is the --json object of a scenario with a sweep (auditrun.Output).
type Output = auditrun.Output

func parseOptions(args []string, stderr io.Writer) (*Options, error) {
	fs := cli.NewFlagSet("audit", synopsis, description, stderr)
	o := &Options{}
	var seed, adj, sel, ksweep, budget string
	fs.Func("shard", "I/N: play only slice I (0..N-1) of N deterministic slices of the trials and write them, with a manifest, into --out PART; `dpsim merge OUT PART...` folds the N parts into the unsharded audit's outputs, bit for bit (Slurm job arrays, Kubernetes Indexed Jobs: examples/slurm, examples/kubernetes). Needs a fixed seed", func(v string) (err error) {
		o.Shard, err = auditrun.ParseShard(v)
		return err
	})
	fs.StringVar(&o.Engine, "engine", audit.EngineFast, "fast (in-process role cores on every core) or wire (the real role processes over NATS)")
	fs.IntVar(&o.Trials, "trials", 0, fmt.Sprintf("trials for EACH value of the secret bit (N on x, N on x': 2N episodes); default the scenario's audit.trials, else %d", DefaultTrials))
	fs.StringVar(&adj, "audit-adjacency", "", "adjacency to audit: manifold or block; default the scenario's audit.adjacency, else the adjacency its noise is calibrated for (privacy.adjacency)")
	fs.Float64Var(&o.Confidence, "confidence", 0, "joint confidence level of every reported bound, in (0, 1); default the scenario's audit.confidence, else 0.95")
	fs.StringVar(&seed, "seed", "", "run seed (uint64): the noise of episode e and the challenger's bits; default the scenario's seed, else drawn from crypto/rand (reported)")
	fs.StringVar(&o.Out, "out", "", "output directory for audit.json, report.md and the trade-off plot (PNG and SVG); nothing is written without it")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object on stdout (epsilon_claimed, delta, epsilon_lb_cp, epsilon_lb_gdp, mu_gdp, epsilon_lb_fdp, mu_fdp, trials, engine, verdict, pair, adjacencies, scores, seed, ...) instead of the table")
	fs.IntVar(&o.Workers, "workers", 0, "fast engine: goroutines playing trials (0 = every core); the result does not depend on it")
	fs.StringVar(&o.NATSURL, "nats-url", "", "wire engine and --dispatch: NATS server URL (default $NATS_URL; if both are empty an embedded server is started on a random loopback port)")
	fs.BoolVar(&o.FailOnViolation, "fail-on-violation", false, "exit with status 3 when the verdict is violation (default: exit 0 whatever the verdict)")
	fs.StringVar(&sel, "selection", string(audit.SelectSplit), "how test thresholds are chosen: split (choose on half the trials, bound on the other half) or bonferroni (a fixed grid, corrected)")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "wire engine: longest wait for one step's messages in every role process")
	fs.StringVar(&o.Encoding, "encoding", "", "wire engine: encoding of the data messages, binary (faster; float64 bits exact) or json (readable with nats sub; also exact); default binary, json with --role (dpsim run's default: a program may refuse binary)")
	fs.StringVar(&o.LogLevel, "log-level", "info", "zerolog level of the log on stderr (and of the role processes' logs): trace, debug, info, warn, error")
	fs.BoolVar(&o.Progress, "progress", true, "show a progress bar while trials run (only when stderr is a terminal)")
	fs.IntVar(&o.EpisodesPerTrial, "episodes-per-trial", 1, fmt.Sprintf("episodes of the same secret each trial plays with fresh noise (1..%d), averaged by the eavesdropper; the verdict is judged against the claim composed over them (fast engine)", audit.MaxEpisodesPerTrial))
	fs.StringVar(&ksweep, "episodes-per-trial-sweep", "", "comma-separated episodes per trial, e.g. 1,2,4,8,16: one audit of each (a sweep's points), and with --out the figure composition.png/.svg (fast engine, a scenario without a sweep)")
	fs.BoolVar(&o.OneRun, "one-run", false, "consensus: audit from ONE episode: every agent's x_i(0) is an independent canary of the adjacent pair, the eavesdropper guesses the canaries from the transcript, and Steinke et al. 2023's bound (Laplace) or Mahloujifar et al. 2024's f-DP bound (Gaussian) gives epsilon_lb_one_run (docs/math.md section 6.2)")
	fs.BoolVar(&o.Sequential, "sequential", false, "play the trials in batches and stop as soon as the evidence decides: a violation, or with --target a lower bound on eps >= target x eps; --trials is then the cap. The error level holds over every look (test supermartingales by betting, Ville's inequality; docs/math.md section 6.4); --json key sequential says what it did")
	fs.Float64Var(&o.Target, "target", 0, "with --sequential: stop once an anytime-valid lower bound on eps reaches this fraction of the claimed eps, in (0, 1], e.g. 0.95 (default: stop only on a violation or at the cap)")
	fs.IntVar(&o.Guesses, "guesses", 0, "with --one-run: guesses on each side (0: the rule fixed from the number of agents and the claim)")
	o.Farm.Define(fs)
	fs.Var(live.AddrFlag{Addr: &o.UI}, "ui", uiHelp)
	fs.DurationVar(&o.UIHold, "ui-hold", 0, "with --ui: keep the live view up this long after the audit ended (its final state and /metrics; Ctrl-C ends it sooner)")
	fs.BoolVar(&o.UIPublic, "ui-public", false, uiPublicHelp)
	fs.IntVar(&o.Inflight, "inflight", launch.DefaultInflight, "wire engine: trials kept in flight at once over the same role processes (1..1024; each trial's x(0) still travels alone on the private line); the outcome does not depend on it, only the speed (see dpsim run --help)")
	fs.BoolVar(&o.Precision, "precision", true, "add the precision score: under each hypothesis the eavesdropper replays the system's float64 arithmetic from the transcript and tests whether one noise value reproduces the published bits and lies in the float sampler's image (docs/math.md section 6.3); --precision=false leaves it out")
	fs.StringVar(&budget, "budget", "", "memory budget (bytes, or with a unit: 512MiB, 4GiB, 2GB; default 2GiB): the audit's memory (the game's matrices, the players, the trials' scores), audit.json size and CPU time are estimated before it starts, as dpsim run's, and an audit estimated above the budget is refused with its estimate")
	o.Roles = launch.Programs{}
	fs.Func("role", "wire engine: ENDPOINT=COMMAND: start COMMAND (through sh) in place of dpsim's own process ENDPOINT (plant.0, cloud.0, eavesdropper.0, agent.<i>), with the arguments after the role name and the environment dpsim's own would get (docs/protocol.md); a plant or agent program gets each trial's secret x(0) sealed on the challenger's private line, an eavesdropper program's final estimates are scored; the outputs name the program and every problem it causes (repeatable)", o.Roles.ParseProgram)
	fs.BoolVar(&o.ShareOutputs, "share-outputs", false, "with --out: write audit.json and report.md (they hold the seed and the audited pair x(0), x'(0)) and the wire engine's process traces readable by all (0644, OUT/procs 0755) instead of by you alone (0600, 0700)")
	fs.BoolVar(&o.KeepSecrets, "keep-secrets", false, "wire engine with --out: keep the files holding secrets in OUT/procs when the audit ends (the plant's or agents' plan files: x(0) and the run seed); by default they are removed, however the audit ends")
	sf := defineScores(fs, o)
	path, err := cli.ParseScenarioArgs(fs, args, "scenarios/audit-vehicle-structured.yaml")
	if sf.path != "" && o.Shard.Enabled() {
		return nil, cli.UsageError("--shard and --scores exclude each other (a shard plays trials; --scores analyses a file)")
	}
	if sf.path != "" {
		return o, sf.check(fs, o, path, err)
	}
	if err != nil {
		return nil, err
	}
	o.ScenarioPath = path
	if o.Engine != audit.EngineFast && o.Engine != audit.EngineWire {
		return nil, cli.UsageError("--engine %q: want fast or wire", o.Engine)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := checkOptions(o, set, seed, adj, sel, ksweep, budget); err != nil {
		return nil, err
	}
	return o, nil
}

// checkOptions checks the parsed flags (set: those given) and parses the string ones into o.
func checkOptions(o *Options, set map[string]bool, seed, adj, sel, ksweep, budget string) error {
	if set["trials"] && o.Trials == 0 {
		return cli.UsageError("--trials 0: want %d..%d trials per value of the secret bit (omit the flag for the default)", scenario.MinAuditTrials, scenario.MaxAuditTrials)
	}
	if set["confidence"] && o.Confidence == 0 {
		return cli.UsageError("--confidence 0: want a level in (0, 1), e.g. 0.95 (omit the flag for the default)")
	}
	if o.Trials < 0 || (o.Trials > 0 && o.Trials < scenario.MinAuditTrials) || o.Trials > scenario.MaxAuditTrials {
		return cli.UsageError("--trials %d: want %d..%d trials per value of the secret bit", o.Trials, scenario.MinAuditTrials, scenario.MaxAuditTrials)
	}
	if adj != "" {
		a, err := privacy.ParseAdjacency(adj)
		if err != nil {
			return cli.UsageError("--audit-adjacency: %v", err)
		}
		o.Adjacency = a
	}
	if o.Confidence != 0 && !(o.Confidence > 0 && o.Confidence < 1) {
		return cli.UsageError("--confidence %v: want a level in (0, 1), e.g. 0.95", o.Confidence)
	}
	var err error
	if o.Seed, o.SeedSet, err = cli.ParseSeed(seed); err != nil {
		return err
	}
	if o.Workers < 0 {
		return cli.UsageError("--workers %d: want >= 0", o.Workers)
	}
	if budget != "" {
		if o.Budget, err = engine.ParseBytes(budget); err != nil {
			return cli.UsageError("--budget: %v", err)
		}
	}
	s, err := audit.ParseSelection(sel)
	if err != nil {
		return cli.UsageError("--selection: %v", err)
	}
	o.Selection = s
	if err := o.CheckWire(); err != nil {
		return err
	}
	if err := o.Farm.Check(o.Engine == audit.EngineFast, "--engine fast"); err != nil {
		return err
	}
	if err := parseEpisodes(o, set, ksweep); err != nil {
		return err
	}
	if err := o.CheckOneRun(set); err != nil {
		return err
	}
	if err := o.CheckWriteScores(); err != nil {
		return err
	}
	if err := o.CheckSequential(set); err != nil {
		return err
	}
	if err := o.CheckShard(set); err != nil {
		return err
	}
	return o.CheckUI()
}

// parseEpisodes checks --episodes-per-trial and parses --episodes-per-trial-sweep.
func parseEpisodes(o *Options, set map[string]bool, ksweep string) error {
	check := func(flag string, k int) error {
		if k < 1 || k > audit.MaxEpisodesPerTrial {
			return cli.UsageError("%s %d: want 1..%d episodes per trial", flag, k, audit.MaxEpisodesPerTrial)
		}
		return nil
	}
	if err := check("--episodes-per-trial", o.EpisodesPerTrial); err != nil {
		return err
	}
	if ksweep != "" {
		if set["episodes-per-trial"] {
			return cli.UsageError("--episodes-per-trial and --episodes-per-trial-sweep exclude each other")
		}
		for _, f := range strings.Split(ksweep, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return cli.UsageError("--episodes-per-trial-sweep %q: %q is not an integer", ksweep, f)
			}
			if err := check("--episodes-per-trial-sweep", k); err != nil {
				return err
			}
			if slices.Contains(o.EpisodesSweep, k) {
				return cli.UsageError("--episodes-per-trial-sweep %q: %d twice", ksweep, k)
			}
			o.EpisodesSweep = append(o.EpisodesSweep, k)
		}
		if o.Farm.Enabled() {
			return cli.UsageError("--episodes-per-trial-sweep plays in-process only (without --dispatch); --episodes-per-trial K works with workers")
		}
	}
	if o.Engine == audit.EngineWire && (o.EpisodesPerTrial > 1 || len(o.EpisodesSweep) > 0) {
		return cli.UsageError("--engine wire plays one episode per trial: --episodes-per-trial > 1 and --episodes-per-trial-sweep need --engine fast")
	}
	return nil
}

// Run executes `dpsim audit` with args (without the command name).
func Run(args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
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

// Execute runs the audit with parsed options: it loads the scenario and resolves the seed
// (auditrun.Load), builds the game of every point (auditrun.New), plays them in turn with the
// player of --engine (auditrun.NewPlayer, Audit.PlayAll; the progress bar, the live view and the
// files its observers) and prints the result (report).
func Execute(ctx context.Context, o *Options, stdout, stderr io.Writer, log zerolog.Logger) (err error) {
	if o.Scores.Path != "" {
		return executeScores(o, stdout)
	}
	start := time.Now()
	s, seed, err := auditrun.Load(o, log)
	if err != nil {
		return err
	}
	if err := auditrun.CheckCost(o, s); err != nil {
		return err
	}
	if o.OneRun {
		return executeOneRun(o, s, seed, stdout, stderr)
	}
	if err := o.CheckShardSeed(s); err != nil {
		return err
	}
	a, err := auditrun.New(o, s, seed, log)
	if err != nil {
		return err
	}
	for _, w := range a.Warnings { // as dpsim run: on the terminal before anything plays
		fmt.Fprintf(stderr, "dpsim audit: warning: %s\n", cli.OneLine(w))
	}
	if o.Shard.Enabled() {
		return executeShard(ctx, a, stdout, stderr)
	}
	player, closePlayer, err := auditrun.NewPlayer(ctx, a, stderr)
	if err != nil {
		return err
	}
	defer closePlayer()
	_, dispatch := player.(*auditrun.Farm)
	ui, err := auditrun.StartUI(a, dispatch, stderr, start)
	if err != nil {
		return err
	}
	var reports []*audit.GameReport
	var violations []string
	defer func() { ui.Stop(ctx, stderr, err, len(reports) == len(a.Points), violations) }()
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	obs := auditrun.Observer{Done: a.WriteReport, Partial: func(reps []*audit.GameReport) { printTable(stdout, reps, o.Out) }}
	bar := newProgressBar(stderr, o, s.Name, 2*a.Trials*len(a.Points))
	if bar != nil {
		defer func() { _ = bar.Finish() }()
		obs.Progress = func(k, done, _ int) { _ = bar.Set64(int64(2*a.Trials*k) + int64(done)) }
	}
	if reports, violations, err = a.PlayAll(ctx, player, ui.Observe(obs)); err != nil {
		return err
	}
	if bar != nil {
		_ = bar.Finish()
	}
	return a.Finish(stdout, reports, violations)
}

// newProgressBar returns a progress bar over all episodes on stderr, or nil when --progress is off
// or stderr is not a terminal.
func newProgressBar(stderr io.Writer, o *Options, name string, episodes int) *progressbar.ProgressBar {
	f, ok := stderr.(*os.File)
	if !ok || !o.Progress || !cli.IsTerminal(f) {
		return nil
	}
	return progressbar.NewOptions64(int64(episodes), progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("audit "+name), progressbar.OptionShowCount(),
		progressbar.OptionShowIts(), progressbar.OptionSetItsString("episodes"),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
}

// printTable and printComposition are auditrun's (PrintTable, PrintComposition).
var (
	printTable       = auditrun.PrintTable
	printComposition = auditrun.PrintComposition
)
