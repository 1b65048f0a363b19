package auditrun

import (
	"context"
	"io"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/farm/kinds"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/bus"
)

// The worker farm (internal/farm) is reached from this file only.

// FarmFlags are --dispatch, --spawn-workers, --worker-listen and the farm's other flags.
type FarmFlags = farm.Flags

// Farm is the player of --dispatch: the fast engine's trials played in chunks by `dpsim worker`
// processes, merged bit for bit into the in-process result (internal/farm).
type Farm struct {
	c    *farm.Coordinator
	opts audit.GameOptions // what every point's game was built with: a worker builds the same
	seed uint64
}

// StartFarm starts the workers' coordinator with --dispatch (credentials under --out, else a
// temporary directory) and says how other hosts join; nil without --dispatch.
func StartFarm(ctx context.Context, a *Audit, stderr io.Writer) (*Farm, error) {
	o := a.Opts
	if !o.Farm.Enabled() {
		return nil, nil
	}
	cfg, err := o.Farm.Config(o.ScenarioPath, a.Points, bus.ResolveURL(o.NATSURL), o.Out, stderr, a.Log)
	if err != nil {
		return nil, err
	}
	c, err := farm.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a.Log.Info().Str("command", c.WorkerCommand).Int("local_workers", cfg.Spawn).Msg("dispatching trials: workers on other hosts join with this command")
	return &Farm{c: c, opts: a.GameOpts, seed: a.Seed}, nil
}

// Close stops the coordinator and the workers it spawned.
func (f *Farm) Close() { f.c.Close() }

// Play plays point k's game on the workers (no live feed of trials: only the progress).
func (f *Farm) Play(ctx context.Context, k int, g *audit.Game, trials int, feed Feed) (*audit.Outcome, error) {
	return kinds.Audit(f.c, ctx, k, g, f.opts, f.seed, trials, feed.Progress)
}

// Annotate adds the dispatch so far to a complete point's report: the "dispatch" object and,
// when it degraded, a note naming the workers.
func (f *Farm) Annotate(rep *audit.GameReport, complete bool) {
	if !complete {
		return
	}
	r := f.c.Report()
	rep.Dispatch = r
	rep.Notes = append(rep.Notes, r.Lines()...)
}

// encodeScores and decodeScores are the farm's encoding of a chunk's scores (kinds.EncodeScores):
// a shard's part holds its trials' scores as a worker's answer holds a chunk's.
func encodeScores(scores []float64) []byte { return kinds.EncodeScores(scores) }

func decodeScores(b []byte) ([]float64, error) { return kinds.DecodeScores(b) }
