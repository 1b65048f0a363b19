package run

import (
	"context"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/farm/kinds"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/trace"
)

// startDispatch starts the workers' coordinator with --dispatch (credentials under --out) and
// says how other hosts join.
func (l *launcher) startDispatch(ctx context.Context) error {
	if !l.o.Farm.Enabled() {
		return nil
	}
	cfg, err := l.o.Farm.Config(l.o.ScenarioPath, l.points, bus.ResolveURL(l.o.NATSURL), l.o.Out, l.stderr, l.log)
	if err != nil {
		return err
	}
	if l.farm, err = farm.Start(ctx, cfg); err != nil {
		return err
	}
	l.log.Info().Str("command", l.farm.WorkerCommand).Int("local_workers", cfg.Spawn).Msg("dispatching episodes: workers on other hosts join with this command")
	return nil
}

// stopDispatch ends the workers' session and records what the dispatch did in summary.json
// (its degradations among the run's).
func (l *launcher) stopDispatch() {
	if l.farm == nil {
		return
	}
	l.farm.Close()
	l.sum.Dispatch = l.farm.Report()
	l.sum.Degraded = append(l.sum.Degraded, l.sum.Dispatch.Lines()...)
}

// fastPoint plays point k with the fast engine: in-process, or by the workers with --dispatch
// (the same Results and traces, bit for bit).
func (l *launcher) fastPoint(ctx context.Context, k int, p *plan.Plan, opts engine.Options) (*metrics.Results, *trace.Traces, error) {
	if l.farm == nil {
		return engine.Run(ctx, p, l.seeds, opts)
	}
	return kinds.Run(l.farm, ctx, k, p, l.seeds, opts)
}
