package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/dpsim/dpsim/pkg/sim"
)

// ChunkTrials is the number of consecutive trials a distributed worker plays at a time: PlayFast's
// chunk, so a worker's share of the game is cut as the in-process engine cuts it.
const ChunkTrials = fastChunk

// PlayChunk plays trials lo..hi-1 of game g with seed as PlayFast plays them (trial e: the secret
// bit Bit(seed, e), one episode e (engine.Player, or engine.BatchPlayer: the same estimates) from g.X0(bit) - or its Game.EpisodesPerTrial
// episodes - the scorer on the eavesdropper's estimate), on workers goroutines (<= 0: GOMAXPROCS), and returns their scores in
// trial order: scores[(e-lo)*len(g.ScoreNames()) + k] is score k of trial e. Trial e depends only
// on (plan, pair, seed, e), so a chunk is the same on any host; AddChunk records it.
func PlayChunk(ctx context.Context, g *Game, seed uint64, lo, hi, workers int) ([]float64, error) {
	if g == nil {
		return nil, errors.New("audit: chunk: game is nil")
	}
	if lo < 0 || hi <= lo {
		return nil, fmt.Errorf("audit: chunk %d..%d: want 0 <= lo < hi", lo, hi)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	const slice = 64 // trials a goroutine takes at a time: small, as a chunk is one PlayFast chunk
	workers = max(1, min(workers, (hi-lo+slice-1)/slice))
	k := len(g.ScoreNames())
	scores := make([]float64, (hi-lo)*k)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	next.Store(int64(lo))
	var wg sync.WaitGroup
	for range workers {
		tp, err := chunkPlayers.take(g, seed)
		if err != nil {
			return nil, fmt.Errorf("audit: chunk: %w", err)
		}
		wg.Go(func() {
			defer chunkPlayers.put(g, seed, tp)
			ch := &challenger{seed: seed} // Bit, without its allocation per trial
			bit := func(e int) int { return ch.bit(uint64(e)) }
			add := func(e, _ int, s []float64) { copy(scores[(e-lo)*k:(e-lo+1)*k], s) }
			for {
				from := int(next.Add(slice)) - slice
				if from >= hi || ctx.Err() != nil {
					return
				}
				if err := tp.play(from, min(from+slice, hi), bit, add); err != nil {
					cancel(fmt.Errorf("audit: chunk: %w", err))
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return scores, nil
}

// AddChunk records the scores of trials lo..hi-1 (PlayChunk's, from any host) with their secret
// bits recomputed from the outcome's seed: the trials PlayFast would have recorded, as it records
// them. It refuses, without recording any, scores that CheckChunk refuses: of the wrong length or
// range, or not finite (in-process a non-finite score is a rejected trial that makes Analyze
// fail; from another host it is refused before it can reach a bound or a JSON file). Not safe
// for concurrent use.
func (o *Outcome) AddChunk(lo, hi int, scores []float64) error {
	if err := o.CheckChunk(lo, hi, scores); err != nil {
		return err
	}
	k := len(o.names)
	ch := &challenger{seed: o.Seed} // Bit without its allocation per trial
	for e := lo; e < hi; e++ {
		o.Add(uint64(e), ch.bit(uint64(e)), scores[(e-lo)*k:(e-lo+1)*k])
	}
	return nil
}

// CheckChunk checks the scores of trials lo..hi-1 that came from a host not trusted to compute
// them: within the outcome's 2N trials, len(ScoreNames) scores a trial, every one finite (the
// scores have no other range known in advance). It records nothing.
func (o *Outcome) CheckChunk(lo, hi int, scores []float64) error {
	k := len(o.names)
	if lo < 0 || hi <= lo || hi > 2*o.N || len(scores) != (hi-lo)*k {
		return fmt.Errorf("audit: chunk %d..%d with %d scores does not fit %d trials of %d scores", lo, hi, len(scores), 2*o.N, k)
	}
	for i, v := range scores {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("audit: chunk %d..%d: score %s of trial %d is %v, not finite", lo, hi, o.names[i%k], lo+i/k, v)
		}
	}
	return nil
}

// chunkPlayers keeps the trial players of the last game and seed PlayChunk played, for its next
// chunk: a worker plays chunk after chunk of one game, and building a player (a batch of 64 episodes'
// cores) costs as much as playing a few hundred episodes.
var chunkPlayers playerCache

// playerCache holds idle trial players of one (game, seed); another game or seed empties it.
type playerCache struct {
	mu   sync.Mutex
	g    *Game
	seed uint64
	free []*trialPlayer
}

// take returns an idle player of (g, seed), or a new one.
func (c *playerCache) take(g *Game, seed uint64) (*trialPlayer, error) {
	c.mu.Lock()
	if c.g == g && c.seed == seed && len(c.free) > 0 {
		tp := c.free[len(c.free)-1]
		c.free = c.free[:len(c.free)-1]
		c.mu.Unlock()
		return tp, nil
	}
	c.mu.Unlock()
	return newTrialPlayer(g, sim.NewSeeds(seed))
}

// put keeps tp, a player of (g, seed), for the next chunk (dropping those of another game).
func (c *playerCache) put(g *Game, seed uint64, tp *trialPlayer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.g != g || c.seed != seed {
		c.g, c.seed, c.free = g, seed, c.free[:0]
	}
	if len(c.free) < 8 {
		c.free = append(c.free, tp)
	}
}
