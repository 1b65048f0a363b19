package auditrun

import (
	"context"
	"io"

	"github.com/dpsim/dpsim/pkg/audit"
)

// FastPlayer plays in-process (audit.PlayFast): the role cores of pkg/sim on every core,
// deterministic for a seed whatever Workers.
type FastPlayer struct {
	Seed    uint64
	Workers int // goroutines (0: every core)
}

// Play plays point k's game with audit.PlayFast.
func (f FastPlayer) Play(ctx context.Context, _ int, g *audit.Game, trials int, feed Feed) (*audit.Outcome, error) {
	return audit.PlayFast(ctx, g, audit.FastOptions{Trials: trials, Seed: f.Seed, Workers: f.Workers, Progress: feed.Progress, Chunk: feed.Chunk, Enough: feed.Enough})
}

// NewPlayer returns the player of the audit's --engine: the wire player (problems the launcher
// attributes printed on stderr), the worker farm with --dispatch (started here), else the fast
// player. close releases what it started.
func NewPlayer(ctx context.Context, a *Audit, stderr io.Writer) (p Player, close func(), err error) {
	if a.Opts.Engine == audit.EngineWire {
		return NewWirePlayer(a, stderr), func() {}, nil
	}
	f, err := StartFarm(ctx, a, stderr)
	if err != nil {
		return nil, nil, err
	}
	if f != nil {
		return f, f.Close, nil
	}
	return FastPlayer{Seed: a.Seed, Workers: a.Opts.Workers}, func() {}, nil
}
