package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/internal/live"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// checkUI checks the live view's flags.
func (o *Options) checkUI() error {
	switch {
	case o.UIHold < 0:
		return cli.UsageError("--ui-hold %v: must be >= 0", o.UIHold)
	case o.UIHold > 0 && o.UI == "":
		return cli.UsageError("--ui-hold keeps the live view up after the run: give --ui")
	case o.UIPublic && o.UI == "":
		return cli.UsageError("--ui-public allows a live view on the network: give --ui=HOST:PORT")
	}
	if o.UI != "" {
		if _, err := live.PublicAddr(o.UI, "--ui-public", o.UIPublic); err != nil {
			return cli.UsageError("--ui %s: %v", o.UI, err)
		}
	}
	return nil
}

// startUI starts the live view of --ui (nothing without it) and says its URL on stderr.
func (l *launcher) startUI() error {
	if l.o.UI == "" {
		return nil
	}
	info := live.Info{Scenario: l.scn.Name, Kind: string(l.scn.Kind), Engine: l.o.Engine, Mode: l.sum.Mode, Runs: l.runs, TraceEpisodes: l.o.TraceEpisodes}
	for k, p := range l.plans {
		pi := live.PointInfo{Name: l.points[k].Name, Steps: p.Steps}
		switch {
		case l.points[k].Kind == scenario.Consensus && p.Graph != nil:
			pi.Bound = float64(p.Graph.N) * p.NoiseVariance() // Proposition 1 (metrics.ConsensusMetrics.Prop1Bound)
		case p.PaperVehicle() && p.ConstantOffset():
			pi.Bound = p.NoiseVariance() // E||x(t) - x_r(t)||^2 -> Var(gamma): the report's position-offset check
		}
		info.Points = append(info.Points, pi)
	}
	l.hub = live.NewHub(info, l.started)
	l.hub.SetTimeline(l.tl.Sorted)
	warn, err := live.PublicAddr(l.o.UI, "--ui-public", l.o.UIPublic)
	if err != nil {
		return cli.UsageError("--ui %s: %v", l.o.UI, err)
	}
	srv, err := live.Serve(l.o.UI, l.hub)
	if err != nil {
		return cli.UsageError("--ui %s: %v", l.o.UI, err)
	}
	l.ui = srv
	if warn != "" {
		fmt.Fprintf(l.stderr, "dpsim run: %s\n", warn)
	}
	if err := l.startInterventions(); err != nil {
		return err
	}
	l.hub.SampleRSSEvery(live.RSSInterval)
	// The token goes to the terminal only (never the log file or summary.json).
	fmt.Fprintf(l.stderr, "dpsim run: live view %s (until the run ends; metrics %smetrics with the token)\n", srv.TokenURL(), srv.URL())
	return nil
}

// stopUI ends the live view when the run ended with status: after --ui-hold (or Ctrl-C).
func (l *launcher) stopUI(ctx context.Context) {
	if l.hub == nil {
		return
	}
	l.hub.Finish(l.sum.Status, l.sum.Error)
	if l.o.UIHold > 0 && ctx.Err() == nil {
		fmt.Fprintf(l.stderr, "dpsim run: live view %s stays up for %v (--ui-hold; Ctrl-C ends it)\n", l.ui.TokenURL(), l.o.UIHold)
		select {
		case <-ctx.Done():
		case <-time.After(l.o.UIHold):
		}
	}
	_ = l.ui.Close()
}

// watcher is the hub as the collector's record watcher (nil without --ui).
func (l *launcher) watcher() launch.RecordWatcher {
	if l.hub == nil {
		return nil
	}
	return l.hub
}

// hubReady marks point k's processes ready on the live view, their resident sets sampled
// from then on (nil without --ui).
func (l *launcher) hubReady(k int) func([]string, []int) {
	if l.hub == nil {
		return nil
	}
	return func(names []string, pids []int) { l.hub.Started(k, names, pids) }
}

// hubData feeds the live view the data messages of a realtime run as they are published: its
// per-step stream and the lateness histogram (nil without --ui).
func (l *launcher) hubData() func(launch.DataMessage) {
	if l.hub == nil {
		return nil
	}
	return func(m launch.DataMessage) { l.hub.Released(m.Sender, m.Episode, m.Step, m.Values, m.LateSec) }
}

// hubBegin says point k starts playing, its links replayed while it runs (live.LinkReplay).
func (l *launcher) hubBegin(k int) {
	if l.hub == nil {
		return
	}
	l.hub.BeginPoint(k)
	r, err := live.NewLinkReplay(l.plans[k], l.seeds.Fault, l.o.AgentsPerProcess)
	if err != nil {
		l.log.Warn().Err(err).Msg("live view: links not replayed")
	}
	l.hub.SetLinks(k, r)
}

// hubPoint gives the live view point k's final counts.
func (l *launcher) hubPoint(k int, ps record.PointSummary, res *metrics.Results) {
	if l.hub == nil {
		return
	}
	if res != nil {
		l.hub.Aggregate(k, res.Runs, res.BoundSeries())
		l.hub.PointDone(k, ps.Episodes, res.Links)
	} else {
		l.hub.PointDone(k, ps.Episodes, nil)
	}
}

// hubAggregate gives the live view point k's Monte Carlo mean square as its episodes are
// folded, group by group (nil without --ui).
func (l *launcher) hubAggregate(k int) func(int, metrics.Series) {
	if l.hub == nil {
		return nil
	}
	return func(runs int, s metrics.Series) { l.hub.Aggregate(k, runs, &s) }
}

// hubProcess gives the live view what a process of a finished point reported.
func (l *launcher) hubProcess(ps record.ProcessSummary) {
	if l.hub == nil {
		return
	}
	state := ps.Status
	if state == "" {
		state = contract.StatusOK
	}
	l.hub.ProcessDone(live.Proc{Point: ps.Point, Name: ps.Name, State: state, Error: ps.Error, ExitCode: ps.ExitCode,
		PeakRSSBytes: ps.MaxRSSBytes, Episodes: ps.Episodes, Steps: ps.Steps, Disconnects: ps.Conn.Disconnects,
		Reconnects: ps.Conn.Reconnects, AsyncErrors: ps.Conn.AsyncErrors, SlowConsumers: uint64(ps.SlowConsumerDropped),
		Invalid: ps.Invalid.ByReason, Missed: ps.Timing.Missed, Overruns: ps.Timing.Overruns,
		JitterMaxSec: ps.Timing.Jitter.Max.Seconds()})
}
