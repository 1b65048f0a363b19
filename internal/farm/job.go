package farm

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// Job kinds.
const (
	KindAudit = "audit" // the distinguishing game of pkg/audit (audit.PlayChunk)
	KindRun   = "run"   // the fast engine's episodes (engine.PlayChunk)
)

// Job is everything a worker needs to play any chunk of one point: the scenario file as the
// coordinator read it (so the worker resolves the point and its plan exactly as the coordinator
// did, on any host), the seed and the engine's options. It travels to authenticated workers
// only, never on argv or in a log.
type Job struct {
	ID       string
	Kind     string
	Scenario []byte    // the scenario's YAML
	Source   string    // its name in messages (the path on the coordinator's host)
	Point    int       // the index in Expand()
	Seeds    sim.Seeds // the run's seeds (an audit uses Seeds.Run, the game's seed)
	// audit
	Game audit.GameOptions
	// run
	Traces        bool // keep the records of the traced episodes
	TraceEpisodes int  // trace.Episodes.Int
	AgentsPerHost int
}

// player is a job resolved on a worker: the plan and, for an audit, the game.
type player struct {
	job  *Job
	plan *plan.Plan
	game *audit.Game
}

// resolve parses the job's scenario and builds its point's plan (and game).
func (j *Job) resolve() (*player, error) {
	s, err := scenario.Parse(j.Scenario, j.Source)
	if err != nil {
		return nil, err
	}
	points := s.Expand()
	if j.Point < 0 || j.Point >= len(points) {
		return nil, fmt.Errorf("farm: job %s: point %d of %d", j.ID, j.Point, len(points))
	}
	p, err := plan.New(points[j.Point], plan.Options{})
	if err != nil {
		return nil, err
	}
	pl := &player{job: j, plan: p}
	switch j.Kind {
	case KindAudit:
		if pl.game, err = audit.NewGame(p, j.Game); err != nil {
			return nil, err
		}
	case KindRun:
	default:
		return nil, fmt.Errorf("farm: job %s: unknown kind %q", j.ID, j.Kind)
	}
	return pl, nil
}

// play plays episodes lo..hi-1 of the job on threads goroutines into a.
func (pl *player) play(ctx context.Context, lo, hi, threads int, a *answer) error {
	var err error
	switch pl.job.Kind {
	case KindAudit:
		a.Scores, err = audit.PlayChunk(ctx, pl.game, pl.job.Seeds.Run, lo, hi, threads)
	case KindRun:
		a.Run, err = engine.PlayChunk(ctx, pl.plan, pl.job.Seeds, lo, hi, engine.ChunkOptions{
			Workers: threads, Traces: pl.job.Traces, TraceEpisodes: trace.FirstEpisodes(pl.job.TraceEpisodes),
			AgentsPerHost: pl.job.AgentsPerHost})
	default:
		err = errors.New("farm: unknown job kind")
	}
	return err
}
