package launch

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

// PlayOptions say which episodes of a point PlayPoint plays and where their records go.
type PlayOptions struct {
	// Runs is the number of episodes of the point; Start the first one played. A resumed
	// point starts after the episodes 0..Start-1 a killed run folded: Folded holds their
	// metrics (ReplayEpisodes) and FoldedLinks their link counters (nil for a fresh point).
	Runs, Start int
	Folded      *metrics.Accumulator
	FoldedLinks []fault.LinkStats
	// Episodes, if set, receives each aggregated episode's per-run values
	// (CollectOptions.Episodes).
	Episodes func(ep int, values []float64)
	// TraceEpisodes are the traced episodes: the processes keep their per-step records only
	// (SessionConfig.KeepEpisodes) and the collector writes them, merged, to Trace (nil: no
	// trace file). PlayPoint closes Trace.
	TraceEpisodes trace.Episodes
	Trace         *TraceOut
	// Started is when the point started: PointOutcome.Elapsed counts from it (zero: from the
	// call of PlayPoint).
	Started time.Time
	// Progress, if set, is called with the episodes of each group played.
	Progress func(episodes int)
	// Watch, if set, sees the merged records of the traced episodes as they are written to
	// Trace (CollectOptions.Watch); Ready, if set, is called with the names of the point's
	// processes and their pids (0: not known) once every one of them is ready; Data, if set,
	// in realtime mode sees every data message as it is published, with how late it was after
	// its step's tick (latenessTap). They feed the live view (internal/live).
	Watch RecordWatcher
	Ready func(procs []string, pids []int)
	Data  func(DataMessage)
	// Aggregate, if set, is called after each group of episodes is merged with the mean
	// square the paper bounds over the point's episodes folded so far and their number
	// (Collector.BoundSeries): the live view's Monte Carlo aggregate.
	Aggregate func(runs int, s metrics.Series)
	// Checkpoint, if set, is called when episodes 0..episodes-1 are folded by col (and written
	// to Trace): after each group of episodes in flight collected (final false; a group is
	// complete or not done at all, so a resumed point starts after the last complete group)
	// and, when the point stops early, once more before the unfinished episodes' records reach
	// the trace (final true).
	Checkpoint func(episodes int, col *Collector, final bool)
	// Stall, if set, is called while a group of episodes makes no progress for longer than
	// StallAfter (or what such a group took before), about every stallCheck, with what the
	// launcher waits for; with nil once the progress resumed.
	Stall func(*Stall)
	// Interventions, if set, are the live changes of the point's faults (dpsim run --ui):
	// the pending ones take effect at the first episode of the next group (interventions.go).
	Interventions *Interventions
	// Ranges, if set, are the only episodes played, in increasing order, instead of
	// Start..Runs-1 (Start is then 0): a shard of the run plays its chunks (ranges.go).
	Ranges []EpisodeRange
	// Reduced, if set, receives each complete episode as the fast engine's chunks hold it -
	// reduced on its own (CollectOptions.Reduced) with, when traced, its merged records - in
	// episode order (ranges.go).
	Reduced func(ep int, episode []byte, tr *trace.Traces) error
}

// PointOutcome is what PlayPoint did: the session's counts, its processes and the point's
// results.
type PointOutcome struct {
	FaultCounts                       // the process faults executed
	Inflight    record.InflightCounts // how the played episodes were grouped (NextGroup)
	Played      int                   // episodes played by every process, from PlayOptions.Start
	Episodes    int                   // Start + Played: the point's completed episodes
	EpisodeNS   time.Duration         // wall time inside the played episodes (Session.EpisodeNS)
	Elapsed     time.Duration         // from PlayOptions.Started to the stop of the processes
	Attached    bool                  // the processes were started by someone else (SessionConfig.Attach)
	Procs       []ProcOutcome         // every process, in the session's order
	Disconnects uint64                // the processes' NATS disconnects, summed
	Reconnects  uint64                // and reconnects
	CtlInvalid  wire.CountersSnapshot // the launcher's dropped ctl messages
	// Results are the point's metrics with the link counters of every process (and of the
	// folded episodes) merged in; nil when nothing was collected. Missing (the first
	// MaxMissingListed), MissingCount and TracedEpisodes are the collection's (Collected).
	Results        *metrics.Results
	Missing        []trace.Missing
	MissingCount   int
	TracedEpisodes int
	// Problems are what the processes did wrong, each attributed to its process (attribute);
	// the fatal ones are in the point's error.
	Problems []record.Problem
	// Leftovers are the processes that outlived their role and were killed at the stop.
	Leftovers []record.Leftover
	forgedBy  map[string]map[string]uint64 // claimed sender -> receiver -> forged messages dropped
}

// ProcOutcome is one process of a played point: who it was, how it exited and what it
// reported.
type ProcOutcome struct {
	Role      endpoint.Role
	ID        int
	LastAgent int // an agent host's last agent (ID for one agent)
	PID       int
	Name      string
	Program   string // the user's command that played the role (--role; "": dpsim's own)
	// ExitCode is the child's exit code: -1 when unknown (killed by a signal, still running,
	// or attached). WaitMaxRSSBytes, UserCPUSec and SysCPUSec are the rusage of the exited
	// child (ResourceUsage; 0 when it did not exit).
	ExitCode        int
	WaitMaxRSSBytes int64
	UserCPUSec      float64
	SysCPUSec       float64
	// Failure says how the launcher saw the child fail ("": it did not); Result is its
	// ctl.result (nil: none came).
	Failure string
	Result  *contract.ProcessResult
}

// PlayPoint plays one point over its processes: it starts the session (StartSession), plays
// the episodes o.Start..o.Runs-1 in groups of up to cfg.Inflight in flight (NextGroup),
// collecting each group as soon as it is done (the traced episodes to o.Trace), stops the
// processes and collects what they wrote after the last complete group.
// The outcome is nil when the processes did not start (the error says why); otherwise the
// error, if any, is the point's (a failed episode, the stop, the trace, missing records).
func PlayPoint(ctx context.Context, cfg SessionConfig, o PlayOptions) (*PointOutcome, error) {
	if o.Started.IsZero() {
		o.Started = time.Now()
	}
	cfg.KeepEpisodes = o.keepEpisodes()
	copts := CollectOptions{Episodes: o.Episodes}
	if o.Trace != nil {
		copts.Trace, copts.TraceEpisodes = o.Trace.Writer(), o.TraceEpisodes
		copts.Watch, copts.Point = o.Watch, cfg.PointIndex
	}
	o.reduce(&copts)
	cfg.Timeline.AddStatic(cfg.PointIndex, &cfg.Plan.Scenario.Faults)
	sess, col, runErr := playEpisodes(ctx, cfg, copts, o)
	if sess == nil {
		if o.Trace != nil {
			_ = o.Trace.Close()
		}
		return nil, runErr
	}
	if err := sess.Stop(); err != nil && runErr == nil {
		runErr = err
	}
	out := newOutcome(sess, cfg, o)
	var collected *Collected
	var err error
	if col != nil {
		collected, err = finishCollection(col, o.nextEpisode(out.Played), runErr != nil, cfg, o)
	}
	if o.Trace != nil {
		if werr := o.Trace.Close(); werr != nil && runErr == nil {
			runErr = werr
		}
	}
	if collected != nil {
		out.addResults(sess, collected, o.FoldedLinks)
	}
	// What a process did wrong is the cause, and says who: it comes before its consequences
	// (missing records, a wait that timed out, a process that failed on what it was sent), as
	// the headline of the error.
	out.Problems = out.attribute(sess, cfg)
	if perr := ProblemsError(out.Problems); perr != nil {
		if runErr != nil {
			runErr = fmt.Errorf("point %s: %v; what followed: %w", cfg.Plan.Scenario.Name, perr, runErr)
		} else {
			runErr = fmt.Errorf("point %s: %w", cfg.Plan.Scenario.Name, perr)
		}
	} else if runErr != nil && len(out.Problems) > 0 {
		// no problem is fatal, but a failure may be their consequence: they say what was seen
		var seen []string
		for _, p := range out.Problems {
			seen = append(seen, p.String())
		}
		runErr = fmt.Errorf("%w; problems seen: %s", runErr, strings.Join(seen, "; "))
	}
	if collected != nil && runErr == nil && (collected.MissingCount > 0 || len(out.Results.IncompleteEpisodes) > 0) {
		runErr = fmt.Errorf("point %s: %w", cfg.Plan.Scenario.Name, trace.MissingErrorN(collected.Missing, collected.MissingCount))
	}
	if runErr == nil && err != nil {
		runErr = err
	}
	return out, runErr
}

// playEpisodes starts the point's processes and plays episodes o.Start..o.Runs-1 in groups
// (NextGroup), collecting and checkpointing each group as soon as it is done (o.Folded: the
// metrics of a resumed point's earlier episodes). It stops at the first failed group; sess is
// nil when the processes did not start.
func playEpisodes(ctx context.Context, cfg SessionConfig, copts CollectOptions, o PlayOptions) (sess *Session, col *Collector, runErr error) {
	sess, runErr = StartSession(ctx, cfg)
	if runErr != nil {
		return sess, nil, runErr
	}
	sess.onStall = o.Stall
	if o.Ready != nil {
		names, pids := make([]string, 0, len(sess.procs)), make([]int, 0, len(sess.procs))
		for _, pr := range sess.Procs() {
			names, pids = append(names, pr.Name), append(pids, pr.PID())
		}
		o.Ready(names, pids)
	}
	if runErr = sess.startLatenessTap(o.Data); runErr != nil {
		return sess, nil, runErr
	}
	if col, runErr = sess.NewCollector(copts); runErr != nil {
		return sess, col, runErr
	}
	if o.Folded != nil {
		col.ResumeAt(o.Start, o.Folded)
	}
	gc := &groupCollector{col: col, cfg: cfg, o: o}
	for _, r := range o.ranges() {
		if runErr = gc.play(ctx, sess, r); runErr != nil {
			break
		}
	}
	gc.wait()
	o.Interventions.end()
	return sess, col, runErr
}

// groupCollector merges each group's records while the next group plays: before the next
// group starts (when the processes may cut their bounded traces back) what the trace files
// gained is read into memory (Collector.Snapshot) and merged in the background, then
// checkpointed once merged. The merges run one after the other, in episode order, so the
// results are those of merging each group at once; a group too large for memory
// (MaxSnapshotBytes) is merged from the files before the next starts (Poll).
type groupCollector struct {
	col     *Collector
	cfg     SessionConfig
	o       PlayOptions
	pending chan error // the merge in flight (nil: none), of the group g
	g       Group
}

// play plays the episodes of r in groups, collecting each while the next plays.
func (gc *groupCollector) play(ctx context.Context, sess *Session, r EpisodeRange) error {
	for ep := r.Lo; ep < r.Hi; {
		// the pending interventions take effect at ep, and the group is made on the faults as
		// they left them (startGroup says why no process has begun ep when they reach it)
		g, err := gc.o.Interventions.startGroup(sess, ep, r.Hi, sess.maxGroup())
		if err != nil {
			return err
		}
		err = sess.Group(ctx, g, nil)
		gc.wait() // the previous group was merged while g played
		if err != nil {
			return err
		}
		ep += g.Count
		gc.collect(g)
	}
	return nil
}

// collect merges the records of the group g just played (in the background when they fit).
func (gc *groupCollector) collect(g Group) {
	gc.wait()
	snap, ok := gc.col.Snapshot(MaxSnapshotBytes)
	if !ok {
		gc.merged(g, gc.col.Poll())
		return
	}
	done := make(chan error, 1)
	gc.pending, gc.g = done, g
	go func() {
		backgroundThread() // it yields the cores to the group in flight
		done <- gc.col.Merge(snap)
	}()
}

// wait waits for the merge in flight, if any, and checkpoints its group.
func (gc *groupCollector) wait() {
	if gc.pending == nil {
		return
	}
	err := <-gc.pending
	gc.pending = nil
	gc.merged(gc.g, err)
}

// merged checkpoints the group g, whose records were merged (err: not all of them), and counts
// its episodes played.
func (gc *groupCollector) merged(g Group, err error) {
	if err != nil {
		gc.cfg.Log.Warn().Err(err).Stringer("episodes", g).Msg("collect")
	} else if gc.o.Checkpoint != nil {
		gc.o.Checkpoint(g.Last()+1, gc.col, false)
	}
	if gc.o.Aggregate != nil {
		gc.o.Aggregate(gc.col.BoundSeries())
	}
	if gc.o.Progress != nil {
		gc.o.Progress(g.Count)
	}
}

// finishCollection collects what the processes wrote after the last complete episode (done
// episodes in all; failed: the point stopped early, so a final checkpoint is made first) and
// returns the point's collected results.
func finishCollection(col *Collector, done int, failed bool, cfg SessionConfig, o PlayOptions) (*Collected, error) {
	if failed && o.Checkpoint != nil { // before the unfinished episode's records reach the trace
		o.Checkpoint(done, col, true)
	}
	// What the processes wrote after the last complete episode (an interrupted one).
	col.Unfinished(done)
	if perr := col.Poll(); perr != nil {
		cfg.Log.Warn().Err(perr).Msg("collect")
	}
	return col.Finish()
}

// newOutcome gathers what the stopped session did: its counts, and every process (whose
// connection events go on the timeline).
func newOutcome(sess *Session, cfg SessionConfig, o PlayOptions) *PointOutcome {
	out := &PointOutcome{FaultCounts: sess.FaultCounts, Inflight: sess.Inflight, Played: sess.Episodes, Episodes: o.Start + sess.Episodes,
		EpisodeNS: sess.EpisodeNS, Elapsed: time.Since(o.Started), Attached: sess.Attached(), Leftovers: sess.Leftovers()}
	for _, pr := range sess.Procs() {
		out.Procs = append(out.Procs, procOutcome(sess, pr))
		if r := sess.Result(pr); r != nil {
			cfg.Timeline.AddConnEvents(cfg.PointIndex, r)
			out.Disconnects += r.Conn.Disconnects
			out.Reconnects += r.Conn.Reconnects
		}
	}
	out.CtlInvalid = sess.CtlInvalid()
	return out
}

// Outcome is what the stopped session did, for a launcher that starts its episodes itself and
// merges no records (the audit's wire engine, which reads the eavesdropper's estimates from its
// trace): its processes, the link counters of their results merged (Results holds only Links),
// and the problems attributed to each process as PlayPoint attributes them. Call it after Stop;
// started is when the session started (PointOutcome.Elapsed counts from it).
func (s *Session) Outcome(started time.Time) *PointOutcome {
	out := newOutcome(s, s.cfg, PlayOptions{Started: started})
	var links [][]fault.LinkStats
	for _, pr := range s.Procs() {
		if r := s.Result(pr); r != nil {
			links = append(links, r.Links)
		}
	}
	out.Results = &metrics.Results{Links: sim.MergeLinkStats(links...)}
	out.Problems = out.attribute(s, s.cfg)
	return out
}

// procOutcome is what the launcher knows of the process pr once its session stopped.
func procOutcome(sess *Session, pr *Proc) ProcOutcome {
	po := ProcOutcome{Role: pr.Role, ID: pr.ID, LastAgent: pr.LastAgent, PID: pr.PID(), Name: pr.Name, Program: pr.Program,
		ExitCode: -1, Failure: pr.Failure(), Result: sess.Result(pr)}
	if st := pr.ExitState(); st != nil {
		po.ExitCode = st.ExitCode()
		po.WaitMaxRSSBytes, po.UserCPUSec, po.SysCPUSec = ResourceUsage(st)
	}
	return po
}

// addResults sets the point's results from collected, with the per-link counters of every
// process (its injector side and its receive side) and of the folded episodes merged in.
func (out *PointOutcome) addResults(sess *Session, collected *Collected, folded []fault.LinkStats) {
	res := collected.Results
	links := [][]fault.LinkStats{folded}
	for _, pr := range sess.Procs() {
		if r := sess.Result(pr); r != nil {
			links = append(links, r.Links)
		}
	}
	res.Links = sim.MergeLinkStats(links...)
	out.Results = res
	out.Missing, out.MissingCount, out.TracedEpisodes = collected.Missing, collected.MissingCount, collected.TracedEpisodes
}
