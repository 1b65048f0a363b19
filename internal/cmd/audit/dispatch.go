package auditcmd

import (
	"context"
	"io"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/bus"
)

// startDispatch starts the workers' coordinator with --dispatch (credentials under --out, else a
// temporary directory) and says how other hosts join.
func (a *auditRun) startDispatch(ctx context.Context, stderr io.Writer) error {
	if !a.o.Farm.Enabled() {
		return nil
	}
	cfg, err := a.o.Farm.Config(a.o.ScenarioPath, a.points, bus.ResolveURL(a.o.NATSURL), a.o.Out, stderr, a.log)
	if err != nil {
		return err
	}
	if a.farm, err = farm.Start(ctx, cfg); err != nil {
		return err
	}
	a.log.Info().Str("command", a.farm.WorkerCommand).Int("local_workers", cfg.Spawn).Msg("dispatching trials: workers on other hosts join with this command")
	return nil
}

func (a *auditRun) stopDispatch() {
	if a.farm != nil {
		a.farm.Close()
	}
}

// noteDispatch adds the dispatch so far to a point's report: the "dispatch" object and, when it
// degraded, a note naming the workers.
func (a *auditRun) noteDispatch(rep *audit.GameReport) {
	if a.farm == nil {
		return
	}
	r := a.farm.Report()
	rep.Dispatch = r
	rep.Notes = append(rep.Notes, r.Lines()...)
}
