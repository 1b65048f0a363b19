package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/schollz/progressbar/v3"

	"github.com/dpsim/dpsim/internal/busrec"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/internal/rss"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/report"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

// security says how the run's traffic is secured (summary.json "security", report.md).
func (l *launcher) security(embedded bool) *record.Security {
	s := &record.Security{Server: "external", Signed: l.o.Sign, Authenticated: l.o.Sign, TLS: "off", Strict: l.o.Strict}
	if embedded {
		s.Server, s.Permissions, s.Cluster = "embedded", true, max(l.o.Cluster, 1)
	}
	if l.sum.TLS != "" {
		s.TLS = l.sum.TLS
	}
	return s
}

// launcher is one `dpsim run`.
type launcher struct {
	o      *Options
	seeds  sim.Seeds // of the resolved run seed (o.Seed)
	log    zerolog.Logger
	stderr io.Writer
	scn    *scenario.Scenario
	points []*scenario.Scenario
	plans  []*plan.Plan
	runs   int
	sum    *record.Summary
	cost   engine.Cost // the run's estimate (checkCost)
	// reportWarnings are report.md's warnings, printed with the final table.
	reportWarnings []string
	bar            *progressbar.ProgressBar
	plain          *plainProgress
	started        time.Time
	tl             *launch.Timeline
	resume         resumer
	farm           *farm.Coordinator // --dispatch: the workers' coordinator (nil: in-process)
	hub            *live.Hub         // --ui: the live view's state (nil: none)
	ui             *live.Server
	iv             *launch.Interventions // --ui: the live changes of the faults (interventions.go)
	observers      []observer            // of the loop (observe.go)
	srv            *launch.Server        // the NATS engine's server (nil: the fast engine)
	rec            *busrec.Recorder      // --record (recording.go; nil: none)
	recListen      recListener
	recTap         *busrec.Tap  // --record with the fast engine (nil: none)
	episodes       episodeTable // --parquet: the rows of episodes.parquet (parquet.go)
}

// Outcome is what a run leaves its caller besides OUT: the summary (summary.json, when Written),
// where the outputs are, and report.md's warnings and interventions, one sentence each.
type Outcome struct {
	Summary        *record.Summary
	Out            string
	Written        bool // summary.json was written
	ReportWarnings []string
	Interventions  []string
}

// Execute runs the scenario with parsed options until done or ctx ends (then it stops the
// children, writes what was recorded and returns an error). Its Outcome is nil when the run
// never started (invalid options or scenario, a refused estimate).
func Execute(ctx context.Context, o *Options, stderr io.Writer, log zerolog.Logger) (*Outcome, error) {
	l := &launcher{o: o, log: log, stderr: stderr, started: time.Now()}
	l.tl = launch.NewTimeline(l.started)
	if err := o.checkShard(); err != nil {
		return nil, err
	}
	if err := l.prepare(); err != nil {
		return nil, err
	}
	if o.Shard.Enabled() { // a slice of the chunks into a part, not a run's outputs (shard.go)
		return l.executeShard(ctx)
	}
	if err := l.startUI(); err != nil {
		return nil, err
	}
	defer l.stopUI(ctx) // after the outputs: the live view's end agrees with summary.json
	runErr := l.runAll(ctx)
	l.finishInterventions()
	l.sum.ElapsedSec = time.Since(l.started).Seconds()
	l.sum.LauncherMaxRSSBytes, _ = rss.Peak()
	l.sum.Timeline = l.tl.Sorted()
	if runErr == nil {
		runErr = l.degradation()
	}
	switch {
	case runErr == nil && l.intervened(): // never "ok": the faults are not the scenario's (degraded named too)
		l.sum.Status = record.StatusIntervened
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
	l.removeSecrets()
	runErr, written := l.writeOutputs(runErr)
	l.resumeEnd()
	return &Outcome{Summary: l.sum, Out: l.o.Out, Written: written, ReportWarnings: l.reportWarnings,
		Interventions: l.interventionLines()}, runErr
}

// degradation names what went wrong without failing the run - steps the processes completed
// without all their messages at the deadline (realtime: missed ticks; lockstep: timeouts),
// conflicts, slow consumers, disconnects (launch.Degradation, summed over the points) - in
// summary.json "degraded", and fails the run when the missed steps exceed
// --max-missed-fraction, or on a conflict with --strict. Faults the scenario injects on
// purpose (faults.links) are the experiment, not a degradation: they are counted per link in
// the metrics.
func (l *launcher) degradation() error {
	d := launch.Degradation{Realtime: l.sum.Mode == wire.Realtime.String(), Missed: l.sum.Timing.Missed,
		Disconnects: l.sum.Connections.Disconnects, Reconnects: l.sum.Connections.Reconnects, ServerRestarts: l.sum.Connections.ServerRestarts}
	for _, p := range l.sum.Processes {
		cores := 1
		if len(p.Agents) == 2 {
			cores = p.Agents[1] - p.Agents[0] + 1
		}
		d.CoreSteps += cores * p.Steps
		if p.SlowConsumerDropped > 0 {
			d.SlowDropped += uint64(p.SlowConsumerDropped)
			d.SlowProcs = append(d.SlowProcs, fmt.Sprintf("%s %d", p.Name, p.SlowConsumerDropped))
		}
	}
	for _, ps := range l.sum.Points {
		if ps.Metrics != nil {
			for _, lk := range ps.Metrics.Links {
				d.Conflicts += lk.Conflicts
			}
			d.LostInTransport += fault.LostInTransport(ps.Metrics.Links)
		}
	}
	for _, ev := range l.sum.Timeline {
		if ev.Event == launch.EvServerStopped {
			d.ServerDown = append(d.ServerDown, fmt.Sprintf("episode %d step %d (%s)", ev.Episode, ev.Step, ev.Detail))
		}
	}
	l.sum.Degraded = append(l.sum.Degraded, d.Reasons()...)
	if d.Conflicts > 0 && l.o.Strict {
		return fmt.Errorf("%s: --strict", d.ConflictReason())
	}
	if d.Missed == 0 {
		return nil
	}
	l.sum.MissedFraction = d.MissedFraction()
	if l.sum.MissedFraction > l.o.MaxMissedFraction {
		return fmt.Errorf("%s: more than --max-missed-fraction %v", d.MissedReason(), l.o.MaxMissedFraction)
	}
	return nil
}

// checkCost refuses a run whose estimated memory exceeds --budget, or its summary.json
// 1/16 of it (engine.EstimateCost, engine.CheckCost), before any plan is built or process
// started. The estimate is recorded in summary.json (estimated_memory_bytes).
func (l *launcher) checkCost() error {
	o := engine.CostOptions{Runs: l.scn.Runs, Workers: 1, AgentsPerBlock: l.o.AgentsPerProcess} // the NATS launcher aggregates; its processes hold one set of cores
	if l.o.Runs > 0 {
		o.Runs = l.o.Runs
	}
	if l.o.Engine == "fast" {
		o.Workers = 0 // GOMAXPROCS, as engine.Run
		// the fast engine holds a traced episode's records whole until it ends (the NATS
		// launcher streams the processes' traces into the file)
		o.Traced = l.o.TraceEpisodes
	}
	c, err := engine.EstimateCost(l.points, o)
	if err != nil {
		return err
	}
	l.cost = c
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
	for _, p := range l.plans {
		if err := o.Roles.Check(p, o.AgentsPerProcess); err != nil {
			return cli.UsageError("%v", err)
		}
	}
	if err := l.applyScenarioSettings(s); err != nil {
		return err
	}
	if err := l.checkParquet(); err != nil {
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
	l.sum.EstimatedMemoryBytes = l.cost.MemoryBytes
	// the scenario's and its plans' warnings (an unstable loop, weights that sum to 1 or more)
	// are on the terminal before the run, not in report.md only
	for _, w := range l.sum.Warnings {
		fmt.Fprintf(l.stderr, "dpsim run: warning: %s\n", cli.OneLine(w))
	}
	if seedSource == cli.SeedFromCrypto {
		l.log.Info().Msg("no seed given: drew one (recorded in summary.json only: the seed decides the noise)")
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
		o.Mode = wire.Realtime
	}
	if o.Period == 0 {
		o.Period = s.Transport.Period
	}
	if !o.TimeoutSet && s.Transport.Timeout > 0 {
		o.Timeout = s.Transport.Timeout
	}
	if o.Mode == wire.Realtime && o.Period <= 0 {
		return cli.UsageError("realtime mode needs a period: pass --period or set transport.period in the scenario")
	}
	if err := l.resolveInflight(); err != nil {
		return err
	}
	if f := s.Faults; len(f.Crashes) > 0 && o.Engine == "nats" {
		switch {
		case o.Mode == wire.Realtime:
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
// it came from, the settings, and the warnings of every point's plan (its dynamics checks).
func (l *launcher) newSummary(s *scenario.Scenario, seed uint64, seedSource string) *record.Summary {
	o := l.o
	sum := &record.Summary{
		Scenario: s.Name, ScenarioFile: o.ScenarioPath, Description: s.Description, Kind: string(s.Kind),
		Seed: seed, SeedString: strconv.FormatUint(seed, 10), SeedSource: seedSource, Runs: l.runs, Steps: s.Steps, Engine: o.Engine,
		Mode: o.Mode.String(), RunID: o.RunID, Started: l.started.UTC().Format(time.RFC3339),
		Warnings: s.Warnings, Processes: []record.ProcessSummary{}, Invalid: map[string]wire.CountersSnapshot{},
		Files: record.Files{Summary: "summary.json", Traces: []string{}}, Attached: o.Attach,
	}
	if o.Mode == wire.Realtime {
		sum.PeriodNS = int64(o.Period)
	}
	sum.Timing = record.TimingSummary{Mode: sum.Mode, PeriodNS: sum.PeriodNS}
	if o.Engine == "fast" {
		sum.Mode = "none (fast engine: no pacing)"
		sum.Timing.Mode = sum.Mode
	} else {
		sum.Encoding = o.Encoding
	}
	for _, p := range l.plans {
		sum.Warnings = report.MergePlanWarnings(sum.Warnings, p)
	}
	if len(l.plans) > 0 { // the sampler is the scenario's, the grid the first point's (each point has its own)
		sum.Sampler, sum.Granularity = l.plans[0].Sampler, l.plans[0].Granularity
	}
	return sum
}

func (l *launcher) traceName(k int) string {
	if len(l.points) == 1 {
		return "trace.jsonl"
	}
	return fmt.Sprintf("trace-p%02d.jsonl", k)
}

func (l *launcher) addPoint(ps record.PointSummary, res *metrics.Results) {
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

// removeSecrets removes the files holding secrets that the processes left in OUT/procs (or,
// with --keep-secrets, lists them) and records which in summary.json. It runs however the run
// ended - completed, failed, interrupted - and a run it cleaned needs none of them: --resume
// writes every plan file again.
func (l *launcher) removeSecrets() {
	if l.sum.Files.Procs == "" { // the fast engine: no processes, no files
		return
	}
	s := &record.SecretFiles{}
	if err := launch.RemoveSecrets(s, l.o.Out, filepath.Join(l.o.Out, l.sum.Files.Procs), l.o.KeepSecrets); err != nil {
		l.log.Warn().Err(err).Msg("removing the files holding secrets")
	}
	l.sum.Secrets = s
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

// pointRunID is the run id of point k: --run-id, with -p<k> in a sweep.
func (l *launcher) pointRunID(k int) string {
	if len(l.plans) > 1 {
		return fmt.Sprintf("%s-p%d", l.o.RunID, k)
	}
	return l.o.RunID
}

// pointTrace opens point k's trace file when episodes are traced (nil: none): created, or for
// a resumed point (first, its first episode played, > 0) opened to append after the episodes
// already folded (prepareOutputs cut it there).
func (l *launcher) pointTrace(k, first int) (*launch.TraceOut, error) {
	if l.traced().None() {
		return nil, nil
	}
	if first == 0 {
		return launch.CreateTrace(l.o.Out, l.traceName(k), l.outMode(l.traceName(k)))
	}
	return launch.AppendTrace(l.o.Out, l.traceName(k), l.outMode(l.traceName(k)))
}

// recordSession adds the stopped session's connection counters, processes and ctl counters to
// the summary and returns the point's summary so far (its episodes, time and speed).
func (l *launcher) recordSession(po *launch.PointOutcome, k int, p *plan.Plan, cfg launch.SessionConfig) record.PointSummary {
	l.sum.Connections.ServerRestarts += po.ServerRestarts
	l.sum.Connections.Crashes += po.Crashes
	l.sum.Connections.Restarts += po.Restarts
	l.noteInflight(po.Inflight)
	ps := record.PointSummary{Index: k, Name: l.points[k].Name, RunID: cfg.Run, Requested: l.runs, Episodes: po.Episodes,
		ElapsedSec: po.Elapsed.Seconds()}
	ps.SetGuarantee(p)
	if po.EpisodeNS > 0 {
		ps.StepsPerSec = float64(po.Played*p.Steps) / po.EpisodeNS.Seconds()
	}
	rel, _ := filepath.Rel(l.o.Out, cfg.Dir)
	for _, pr := range po.Procs {
		l.addProcess(pr, k, rel, po.Attached)
	}
	l.sum.Connections.Disconnects += po.Disconnects
	l.sum.Connections.Reconnects += po.Reconnects
	l.sum.LauncherCtlInvalid = addCounters(l.sum.LauncherCtlInvalid, po.CtlInvalid)
	l.recordProblems(k, po.Problems)
	l.sum.LeftoverProcesses = append(l.sum.LeftoverProcesses, po.Leftovers...)
	return ps
}

// recordProblems puts what the processes of point k did wrong in summary.json (problems) and
// on stderr. The fatal ones are the point's error already; the others change the status only
// through their effects (timeouts, conflicts, losses: degradation).
func (l *launcher) recordProblems(k int, problems []record.Problem) {
	for _, pb := range problems {
		l.sum.Problems = append(l.sum.Problems, record.PointProblem{Point: k, Problem: pb})
		fmt.Fprintf(l.stderr, "dpsim run: problem: %s\n", pb) // whatever the log level: a role broke the contract
	}
}

// recordResults adds the point's late messages (its links' counters) to the summary and
// records its missing record pieces in ps.
func (l *launcher) recordResults(po *launch.PointOutcome, ps *record.PointSummary) {
	for _, lk := range po.Results.Links {
		l.sum.Timing.LateMessages += lk.Late // delivered after their step
	}
	ps.Missing = po.MissingCount
	for i, m := range po.Missing {
		if i == 5 {
			break
		}
		ps.MissingHead = append(ps.MissingHead, m.String())
	}
}

func addCounters(a, b wire.CountersSnapshot) wire.CountersSnapshot {
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

// addProcess adds the process pr of point k (its files in rel, relative to OUT; attached: not
// started by the launcher) to the summary's processes, invalid and stale counts and timing.
func (l *launcher) addProcess(pr launch.ProcOutcome, point int, rel string, attached bool) {
	ps := record.ProcessSummary{Role: pr.Role.String(), ID: pr.ID, PID: pr.PID, Name: pr.Name, Program: pr.Program, Point: point, ExitCode: pr.ExitCode,
		LogFile: filepath.Join(rel, contract.LogFile(pr.Name))}
	if attached {
		ps.LogFile = "" // an attached process logs where whoever started it sends its stderr
	}
	if pr.Role == endpoint.Agent {
		ps.Agents = []int{pr.ID, pr.LastAgent}
	}
	ps.WaitMaxRSSBytes, ps.UserCPUSec, ps.SysCPUSec = pr.WaitMaxRSSBytes, pr.UserCPUSec, pr.SysCPUSec
	if ps.WaitMaxRSSBytes > 0 {
		ps.MaxRSSBytes, ps.MaxRSSSource = ps.WaitMaxRSSBytes, record.RSSWait
	}
	if pr.Failure != "" {
		ps.Status, ps.Error = contract.StatusFailed, pr.Failure
	}
	if r := pr.Result; r != nil {
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
	var stale uint64
	if r := pr.Result; r != nil {
		stale = r.Stale
	}
	l.noteProcess(ps, stale)
}

// noteProcess adds the process ps (stale: its stale messages) to the summary's processes,
// invalid and stale counts and timing, and to the live view.
func (l *launcher) noteProcess(ps record.ProcessSummary, stale uint64) {
	l.sum.Processes = append(l.sum.Processes, ps)
	key := l.processKey(ps)
	l.sum.Invalid[key] = ps.Invalid
	if stale > 0 {
		if l.sum.Stale == nil {
			l.sum.Stale = map[string]uint64{}
		}
		l.sum.Stale[key] = stale
	}
	l.sum.Timing.Add(ps)
	l.hubProcess(ps)
}

// processKey is the key of a process in summary.json's invalid map.
func (l *launcher) processKey(p record.ProcessSummary) string {
	if len(l.points) > 1 {
		return fmt.Sprintf("p%02d/%s", p.Point, p.Name)
	}
	return p.Name
}
