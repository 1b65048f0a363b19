package kinds

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/pkg/audit"
)

// AuditChunk is the number of consecutive trials of an audit a worker plays at a time: four of
// PlayFast's chunks (audit.ChunkTrials), about 20 ms of a core for the vehicle. A chunk costs the
// coordinator a request, an answer to decode and fold and a lease whatever its size, and with
// chunks of 1,024 trials that cost was a tenth of a core (two workers then reached 1.68-1.72x
// one; 1.94x with 4,096).
const AuditChunk = 4 * audit.ChunkTrials

// AuditParams are an audit job's parameters (farm.Job.Params, farm.EncodeParams): the game's seed and
// the options the game is built from (the worker builds the same game).
type AuditParams struct {
	Seed uint64
	Game audit.GameOptions
}

// AuditKind plays audit jobs: a chunk's result is audit.PlayChunk's scores (EncodeScores).
var AuditKind farm.Kind = auditKind{}

type auditKind struct{}

func (auditKind) Name() string { return AuditName }

func (auditKind) Prepare(j *farm.Job) (farm.Player, error) {
	var ps AuditParams
	if err := farm.DecodeParams(j.Params, &ps); err != nil {
		return nil, err
	}
	p, err := Plan(j)
	if err != nil {
		return nil, err
	}
	g, err := audit.NewGame(p, ps.Game)
	if err != nil {
		return nil, err
	}
	return &auditPlayer{game: g, seed: ps.Seed}, nil
}

type auditPlayer struct {
	game *audit.Game
	seed uint64
}

func (pl *auditPlayer) Play(ctx context.Context, lo, hi, threads int) ([]byte, error) {
	scores, err := audit.PlayChunk(ctx, pl.game, pl.seed, lo, hi, threads)
	if err != nil {
		return nil, err
	}
	return EncodeScores(scores), nil
}

// EncodeScores is an audit chunk's result: its scores' bits, little endian, 8 bytes each (exact,
// and canonical: two computations agree when their bytes do).
func EncodeScores(scores []float64) []byte {
	b := make([]byte, 8*len(scores))
	for i, v := range scores {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	return b
}

// DecodeScores decodes EncodeScores.
func DecodeScores(b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%d bytes of scores, not a multiple of 8", len(b))
	}
	scores := make([]float64, len(b)/8)
	for i := range scores {
		scores[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return scores, nil
}

// auditJudge checks an audit chunk's scores against the outcome they fold into.
type auditJudge struct{ out *audit.Outcome }

func (j auditJudge) Check(lo, hi int, result []byte) (any, error) {
	scores, err := DecodeScores(result)
	if err != nil {
		return nil, err
	}
	return scores, j.out.CheckChunk(lo, hi, scores)
}

func (auditJudge) Digest(checked any) []byte {
	scores, _ := checked.([]float64)
	return EncodeScores(scores)
}

// Audit plays the game g of point (its index in the scenario's Expand()) with c's workers, as
// audit.PlayFast plays it in-process: trials per value of the secret bit, the game built from
// opts (the worker builds the same), chunks of AuditChunk trials. The outcome is PlayFast's, bit
// for bit, for any number of workers; progress (if set) hears the trials folded.
func Audit(c *farm.Coordinator, ctx context.Context, point int, g *audit.Game, opts audit.GameOptions, seed uint64, trials int, progress func(done, total int)) (*audit.Outcome, error) {
	if trials < 1 {
		return nil, fmt.Errorf("farm: audit: %d trials per value of the secret bit, want >= 1", trials)
	}
	params, err := farm.EncodeParams(AuditParams{Seed: seed, Game: opts})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	out := g.NewOutcome(audit.EngineFast, seed, trials)
	total := 2 * trials
	report := func(done int) {
		if progress != nil {
			progress(done, total)
		}
	}
	results, err := c.Play(ctx, farm.Work{Kind: AuditKind, Point: point, Params: params, Spans: farm.Spans(total, AuditChunk),
		Judge: auditJudge{out}, Progress: report})
	for _, r := range results { // in chunk order; when the job failed, the chunks decided (an interrupted audit reports them)
		if r != nil {
			if ferr := out.AddChunk(r.Lo, r.Hi, r.Checked.([]float64)); ferr != nil && err == nil {
				err = ferr
			}
		}
	}
	out.Elapsed = time.Since(start)
	if err != nil {
		return out, fmt.Errorf("audit: dispatched to workers: %w", err)
	}
	return out, nil
}
