package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dpsim/dpsim/internal/farm/kinds"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/trace"
)

// pointEngine plays the episodes of one point of a run. The run's loop (playPoints) is the same
// over the three engines: the fast engine in-process (fastEngine over engine.Run), the worker
// farm (fastEngine over the farm's coordinator: the same episodes played by `dpsim worker`
// processes, bit for bit the same Results and traces), and the role processes over NATS
// (natsEngine: launch.PlayPoint).
type pointEngine interface {
	// play plays point k of plan p: what it learns on the way that is not the point's (the
	// processes, connections, problems) goes into the summary; the point itself is returned.
	play(ctx context.Context, k int, p *plan.Plan) (pointPlayed, error)
}

// pointPlayed is what an engine returns of a point.
type pointPlayed struct {
	summary record.PointSummary
	results *metrics.Results
	// started is false when nothing of the point ran (its processes did not start, its
	// trace file could not be made): there is then no point to record.
	started bool
	// episodes were played now (a resumed point: those after the resume) in busy time: the
	// run's steps per second.
	episodes int
	busy     time.Duration
}

// playPoints is the run's loop: every point not completed yet (a resumed run skips those it
// completed), one after the other, on eng. The observers (observe.go: the summary, the live
// view, the progress display, the resume state) are told as each begins and ends, and the
// run's steps per second is kept up to date.
func (l *launcher) playPoints(ctx context.Context, eng pointEngine) error {
	var steps int
	var busy time.Duration
	for k, p := range l.plans {
		if l.pointDone(k) {
			continue
		}
		for _, ob := range l.observers {
			ob.pointBegin(k)
		}
		pp, err := eng.play(ctx, k, p)
		if !pp.started {
			return err
		}
		steps += pp.episodes * p.Steps
		busy += pp.busy
		if busy > 0 {
			l.sum.Timing.StepsPerSec = float64(steps) / busy.Seconds()
		}
		if err != nil {
			pp.summary.Error = err.Error()
		}
		for _, ob := range l.observers {
			ob.pointEnd(k, pp.summary, pp.results, err == nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// openEngine makes the run's engine: --engine fast in-process, or with --dispatch over the
// workers' farm; --engine nats over the embedded server (or cluster) it starts or the external
// one of --nats-url. close releases what it started.
func (l *launcher) openEngine(ctx context.Context) (eng pointEngine, close func(), err error) {
	if l.o.shardParts != nil { // dpsim merge: the parts' chunks folded (shard.go)
		return l.shardsEngine(), func() {}, nil
	}
	if l.o.Engine == "fast" {
		if err := l.startDispatch(ctx); err != nil {
			return nil, nil, err
		}
		fe := &fastEngine{l: l, episodes: func(ctx context.Context, _ int, p *plan.Plan, opts engine.Options) (*metrics.Results, error) {
			res, _, err := engine.Run(ctx, p, l.seeds, opts)
			return res, err
		}}
		if c := l.farm; c != nil {
			fe.episodes = func(ctx context.Context, k int, p *plan.Plan, opts engine.Options) (*metrics.Results, error) {
				res, _, err := kinds.Run(c, ctx, k, p, l.seeds, opts)
				return res, err
			}
		}
		return fe, l.stopDispatch, nil
	}
	ne, err := l.startNATS()
	if err != nil {
		return nil, nil, err
	}
	return ne, ne.srv.Close, nil
}

// fastEngine plays a point's episodes with the fast engine's arithmetic: episodes is engine.Run
// in-process or the worker farm's run of the same chunks.
type fastEngine struct {
	l        *launcher
	episodes func(ctx context.Context, k int, p *plan.Plan, opts engine.Options) (*metrics.Results, error)
}

func (e *fastEngine) play(ctx context.Context, k int, p *plan.Plan) (pointPlayed, error) {
	l := e.l
	start := time.Now()
	done := 0
	opts := engine.Options{Runs: l.runs, AgentsPerBlock: l.o.AgentsPerProcess, Progress: func(d, _ int) { l.tick(d - done); done = d },
		EpisodeSink: l.episodeSink(k), Bus: l.recordBus()}
	pp := pointPlayed{summary: record.PointSummary{Index: k, Name: l.points[k].Name, Requested: l.runs}}
	pp.summary.SetGuarantee(p)
	var out *launch.TraceOut
	if t := l.traced(); !t.None() {
		var err error
		if out, err = launch.CreateTrace(l.o.Out, l.traceName(k), l.outMode(l.traceName(k))); err != nil {
			return pp, err
		}
		opts.TraceEpisodes, opts.TraceSink = t, out.Write
		if l.hub != nil {
			opts.TraceSink = func(tr *trace.Traces) error { l.hub.Traces(k, tr); return out.Write(tr) }
		}
	}
	pp.started = true
	res, err := e.episodes(ctx, k, p, opts)
	el := time.Since(start)
	pp.summary.ElapsedSec = el.Seconds()
	if res != nil {
		pp.summary.Episodes, pp.episodes, pp.busy = res.Runs, res.Runs, el
		if el > 0 {
			pp.summary.StepsPerSec = float64(res.Runs*p.Steps) / el.Seconds()
		}
	}
	if out != nil {
		if werr := out.Close(); werr != nil && err == nil {
			err = werr
		}
		pp.summary.TraceFile, pp.summary.TraceEpisodes = out.Name(), out.Episodes()
		l.sum.Files.Traces = append(l.sum.Files.Traces, out.Name())
	}
	pp.results = res
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w: %v", launch.ErrInterrupted, err)
	}
	return pp, err
}

// natsEngine plays a point's episodes over its own role processes (spawned from exe, or
// started elsewhere with --attach) connected to srv.
type natsEngine struct {
	l   *launcher
	exe string
	srv *launch.Server
}

// ObserverFile is the NATS CLI context of the embedded server's read-only observer, in OUT for
// the run's lifetime (the server and its account end with the run).
const ObserverFile = "observer.context.json"

// startNATS starts the run's server (embedded, or connects to the external one), records it in
// the summary and says on stderr where it is.
func (l *launcher) startNATS() (*natsEngine, error) {
	sc := launch.ServerConfig{URL: bus.ResolveURL(l.o.NATSURL), Plans: l.plans, AgentsPerProcess: l.o.AgentsPerProcess,
		Cluster: l.o.Cluster, AutoTLS: l.o.TLS == "auto", TLS: l.o.TLSFiles, ConnectRetry: l.o.ConnectRetry}
	for k := range l.plans {
		sc.RunIDs = append(sc.RunIDs, l.pointRunID(k))
	}
	if l.o.Listen != "" {
		sc.Host, sc.Port, _ = splitListen(l.o.Listen) // checked by Options.Check
	}
	sc.ObserverFile = filepath.Join(l.o.Out, ObserverFile)
	sc.Monitor = l.o.NATSMonitor
	srv, err := launch.StartServer(sc)
	if err != nil {
		return nil, err
	}
	l.announceServer(srv)
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
		srv.Close()
		return nil, fmt.Errorf("cannot find the dpsim binary to spawn the roles: %w", err)
	}
	l.sum.Files.Procs = "procs"
	l.srv = srv
	return &natsEngine{l: l, exe: exe, srv: srv}, nil
}

// announceServer says on stderr, before the first episode, where the run's server is and the
// exact command that watches it.
func (l *launcher) announceServer(srv *launch.Server) {
	if srv.ObserverFile == "" {
		fmt.Fprintf(l.stderr, "dpsim run: NATS server %s (external); watch with that server's credentials: nats --server %s sub 'dpsim.%s.>'\n",
			srv.URL, srv.URL, l.o.RunID)
		return
	}
	fmt.Fprintf(l.stderr, "dpsim run: NATS server %s (embedded, until the run ends); watch: nats --context %s sub 'dpsim.>'\n",
		srv.URL, srv.ObserverFile)
	if srv.MonitorURL != "" {
		fmt.Fprintf(l.stderr, "dpsim run: NATS monitoring %s/varz (also /connz, /healthz; until the run ends)\n", srv.MonitorURL)
	}
}

// sessionConfig is the session of point k's processes.
func (e *natsEngine) sessionConfig(k int, p *plan.Plan) launch.SessionConfig {
	l := e.l
	dir := filepath.Join(l.o.Out, "procs")
	if len(l.plans) > 1 {
		dir = filepath.Join(dir, fmt.Sprintf("p%02d", k))
	}
	cfg := launch.SessionConfig{
		Exe: e.exe, ScenarioPath: l.o.ScenarioPath, Point: k, Plan: p, Seeds: l.seeds, Runs: l.runs, Run: l.pointRunID(k),
		Dir: dir, Mode: l.o.Mode, Period: l.o.Period, Timeout: l.o.Timeout, AgentsPerProcess: l.o.AgentsPerProcess,
		Encoding: l.o.Encoding, LogLevel: l.o.LogLevel, Transcript: l.o.Transcript, GOMAXPROCS: l.o.ChildProcs, Log: l.log,
		Timeline: l.tl, PointIndex: k, Sign: l.o.Sign, Attach: l.o.Attach, Announce: l.announce(),
		StartTimeout: l.startTimeout(), Inflight: l.o.Inflight, Programs: l.o.Roles, KeepSecrets: l.o.KeepSecrets, ShareOutputs: l.o.ShareOutputs,
	}
	e.srv.Configure(&cfg, k)
	return cfg
}

// play plays point k over its processes (launch.PlayPoint: from the episode a resumed run
// stopped at, into the point's trace file) and records its processes in the summary.
func (e *natsEngine) play(ctx context.Context, k int, p *plan.Plan) (pointPlayed, error) {
	l := e.l
	cfg := e.sessionConfig(k, p)
	start := time.Now()
	l.log.Info().Str("point", l.points[k].Name).Str("run", cfg.Run).Int("runs", l.runs).Msg("starting processes")
	first, acc, rerr := l.resumePoint(ctx, k, p) // 0 unless a resumed run was in this point
	if rerr != nil {
		return pointPlayed{}, rerr
	}
	out, err := l.pointTrace(k, first)
	if err != nil {
		return pointPlayed{}, err
	}
	po, runErr := launch.PlayPoint(ctx, cfg, launch.PlayOptions{
		Runs: l.runs, Start: first, Folded: acc, FoldedLinks: l.resume.replayed[k],
		TraceEpisodes: l.traced(), Trace: out, Started: start, Progress: l.tick, Watch: l.watcher(), Ready: l.hubReady(k), Data: l.hubData(),
		Aggregate: l.hubAggregate(k), Episodes: l.episodeSink(k),
		Checkpoint:    func(episodes int, col *launch.Collector, final bool) { l.checkpoint(k, episodes, col, out, final) },
		Interventions: l.iv, Stall: (&stallReporter{l: l}).report,
	})
	if po == nil { // the processes did not start
		return pointPlayed{}, runErr
	}
	pp := pointPlayed{summary: l.recordSession(po, k, p, cfg), results: po.Results, started: true, episodes: po.Played, busy: po.EpisodeNS}
	if out != nil {
		pp.summary.TraceFile, pp.summary.TraceEpisodes = out.Name(), po.TracedEpisodes
		l.sum.Files.Traces = append(l.sum.Files.Traces, out.Name())
	}
	if po.Results != nil {
		l.recordResults(po, &pp.summary)
	}
	return pp, runErr
}
