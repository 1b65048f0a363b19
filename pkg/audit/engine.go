package audit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/sim"
)

// Engine names.
const (
	EngineFast = "fast" // in-process: the role cores of pkg/sim, parallel over cores
	EngineWire = "wire" // the real processes over NATS (internal/auditrun.WirePlayer)
)

// Outcome is what an engine recorded: one Trials per score of the game (Game.ScoreNames order),
// every trial numbered by its episode index (its trial index when a trial plays several episodes).
type Outcome struct {
	Engine string
	Seed   uint64
	N      int // trials per value of the secret bit
	Trials []*Trials
	// Episodes counts the trials recorded; each played Game.EpisodesPerTrial episodes
	// (GameReport.Episodes counts those).
	Episodes int
	Elapsed  time.Duration
	names    []string
	// trial holds the trial numbers of the bit's trials, in the order of every Trials' scores
	// of that bit (Add appends to all together, Merge under mu): what EachTrial exports.
	trial [2][]uint64
	mu    sync.Mutex
}

// NewOutcome returns an empty outcome for n trials per value of the secret bit of game g.
func (g *Game) NewOutcome(engine string, seed uint64, n int) *Outcome {
	o := &Outcome{Engine: engine, Seed: seed, N: n, names: g.ScoreNames()}
	for range o.names {
		o.Trials = append(o.Trials, NewTrials(n))
	}
	for b := range o.trial {
		o.trial[b] = make([]uint64, 0, n)
	}
	return o
}

// Add records one trial: its number (= its episode), secret bit and the game's scores (len of
// ScoreNames). Not safe for concurrent use (engines merge per-worker outcomes with Merge).
func (o *Outcome) Add(trial uint64, bit int, scores []float64) {
	for k, t := range o.Trials {
		t.AddTrial(trial, bit, scores[k])
	}
	if bit == 0 || bit == 1 {
		o.trial[bit] = append(o.trial[bit], trial)
	}
	o.Episodes++
}

// Merge appends the trials of w (a worker's outcome of the same game). Safe for concurrent use:
// one merge at a time, so that every score's trials and the trial numbers keep the same order.
func (o *Outcome) Merge(w *Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, t := range o.Trials {
		t.Merge(w.Trials[k])
	}
	for b := range o.trial {
		o.trial[b] = append(o.trial[b], w.trial[b]...)
	}
	o.Episodes += w.Episodes
}

// Reset empties the outcome, keeping its capacity (a chunk's buffer reused after Merge).
func (o *Outcome) Reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.Trials {
		t.Reset()
	}
	for b := range o.trial {
		o.trial[b] = o.trial[b][:0]
	}
	o.Episodes = 0
}

// FastOptions configure PlayFast.
type FastOptions struct {
	// Trials per value of the secret bit: 2*Trials episodes are played.
	Trials int
	// Seed of the run: the noise of episode e is rng(seed, "plant", 0, e) (agents: rng(seed,
	// "agent", i, e)), the challenger's bits Bit(seed, e).
	Seed uint64
	// Workers is the number of goroutines (<= 0: GOMAXPROCS). The outcome does not depend on it.
	Workers int
	// Progress, when set, is called with the episodes done and the total, from one goroutine at a
	// time, about every chunk of episodes.
	Progress func(done, total int)
	// Chunk, when set, is called after each chunk of trials a worker finished, with an outcome
	// holding those trials only: a view valid during the call (Merge it to keep it), from the
	// worker's goroutine - several workers may call it at once. The live view of dpsim audit
	// --ui recomputes the bounds from them as they come. It changes nothing recorded; without
	// it the engine does no extra work (one nil check per chunk).
	Chunk func(part *Outcome)
	// Enough, when set, is asked before each chunk: true ends the game there, the trials played
	// returned without an error (the sequential audit decided).
	Enough func() bool
}

// fastChunk is the number of consecutive trials a worker takes at a time.
const fastChunk = engine.AuditChunk // the chunk dpsim audit's cost estimate counts

// AuditBatch is the number of episodes the fast engine plays at a time through the episode-batch
// cores (engine.BatchPlayer) when the plan allows it (sim.EpisodeBatchable): the bookkeeping of a
// step is paid once per batch, and a batch's state (64 episodes of a small plant) stays in cache.
var AuditBatch = engine.AuditBatchWidth // the width dpsim audit's cost estimate counts

// challengerLabel is rng.Label("challenger") (Bit's stream), hashed once.
var challengerLabel = rng.Label("challenger")

// challenger draws the secret bits Bit draws, from one source reseeded per pair of trials
// (rng.Reseed: the stream rng.New starts, without allocating), for a worker's own use.
type challenger struct {
	seed uint64
	pcg  rand.PCG
}

// bit is Bit(seed, trial).
func (c *challenger) bit(trial uint64) int {
	rng.Reseed(&c.pcg, c.seed, challengerLabel, trial&^1)
	return int(c.pcg.Uint64()>>63) ^ int(trial&1)
}

// PlayFast plays the game in-process (the fast engine): for every trial e = 0 .. 2*Trials-1 the
// challenger draws the secret bit (Bit(seed, e), balanced), the system runs ONE episode e (or, with
// Game.EpisodesPerTrial k > 1, the k episodes e*k .. e*k+k-1) from the
// chosen initial state with the same role cores as the NATS processes (engine.Player: plant, cloud and
// eavesdropper, or agents and eavesdropper; noise from episode e's contract stream), and the
// adversary's scores are computed from the eavesdropper's estimate alone. Workers take chunks of
// consecutive trials, record into their own buffers and merge at the end: trial e depends only on
// (plan, pair, seed, e), and the statistics only on the multiset of trials, so the outcome and the
// report are identical for any number of workers. No allocation per episode.
//
// Every core: the workers share nothing while playing but a chunk counter (one atomic add per
// 1024 trials), draw the challenger's bits without allocating (no garbage: the collector never
// runs during the game), and each builds its own player on its own goroutine, so that the
// small state vectors its cores write at every step come from its own allocation spans, not
// from cache lines shared with another worker's. BenchmarkFastEngineScaling compares the CPU
// time per episode of two workers with one worker's.
//
// On ctx cancellation it returns the trials finished so far with an error wrapping the cause.
func PlayFast(ctx context.Context, g *Game, o FastOptions) (*Outcome, error) {
	if g == nil {
		return nil, errors.New("audit: fast engine: game is nil")
	}
	if o.Trials < 1 {
		return nil, fmt.Errorf("audit: fast engine: %d trials per value of the secret bit, want >= 1", o.Trials)
	}
	total := 2 * o.Trials
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, (total+fastChunk-1)/fastChunk))
	// Every player is built here, one after the other, before any worker starts: a player built
	// by its worker while another worker already plays gets its small objects interleaved with
	// the other's in the same allocator spans, and two workers then write the same cache lines
	// at every delivery (measured: 2.7-3.4x the CPU of one worker, slower than one worker in wall
	// time; built here: 1.6-1.7x). A plan the engine cannot play fails here, before any worker.
	players := make([]*trialPlayer, workers)
	for w := range players {
		p, err := newTrialPlayer(g, sim.NewSeeds(o.Seed))
		if err != nil {
			return nil, err
		}
		players[w] = p
	}
	start := time.Now()
	out := g.NewOutcome(EngineFast, o.Seed, o.Trials)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f := &fastRun{g: g, o: o, total: total, workers: workers, out: out, cancel: cancel}
	var wg sync.WaitGroup
	for _, player := range players {
		wg.Go(func() { f.work(ctx, player) })
	}
	wg.Wait()
	out.Elapsed = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return out, err
	}
	if out.Episodes != total && (o.Enough == nil || !o.Enough()) {
		return out, fmt.Errorf("audit: fast engine: %d of %d episodes played", out.Episodes, total)
	}
	return out, nil
}

// newFastPlayer returns a worker's player of the game's plan.
func newFastPlayer(g *Game, seeds sim.Seeds) (*engine.Player, error) {
	l, err := engine.NewPlayer(g.Plan, seeds)
	if err != nil {
		return nil, fmt.Errorf("audit: fast engine: %w", err)
	}
	if l.EstimateDim() != g.EstimateDim() {
		return nil, fmt.Errorf("audit: fast engine: the eavesdropper estimates %d values, the game scores %d", l.EstimateDim(), g.EstimateDim())
	}
	return l, nil
}

// fastRun is what PlayFast's workers share: the chunk counter, the progress and the outcome.
type fastRun struct {
	g          *Game
	o          FastOptions
	total      int
	workers    int
	out        *Outcome
	cancel     context.CancelCauseFunc
	next, done atomic.Int64
	progMu     sync.Mutex
}

// work plays chunks of trials on player until none is left or ctx ends, recording into its own
// outcome, merged at the end.
func (f *fastRun) work(ctx context.Context, player *trialPlayer) {
	g, o := f.g, f.o
	local := g.NewOutcome(EngineFast, o.Seed, o.Trials/f.workers+fastChunk)
	rec := local // where the trials are recorded: with a Chunk hook, the chunk's own outcome
	var part *Outcome
	if o.Chunk != nil {
		part = g.NewOutcome(EngineFast, o.Seed, fastChunk)
		rec = part
	}
	defer func() {
		if part != nil { // a chunk cut short by an error: its trials are kept as without the hook
			local.Merge(part)
		}
		f.out.Merge(local)
	}()
	ch := &challenger{seed: o.Seed}
	bit := func(e int) int { return ch.bit(uint64(e)) }
	add := func(e, bit int, scores []float64) { rec.Add(uint64(e), bit, scores) }
	for {
		if o.Enough != nil && o.Enough() {
			return
		}
		lo := int(f.next.Add(fastChunk)) - fastChunk
		if lo >= f.total || ctx.Err() != nil {
			return
		}
		hi := min(lo+fastChunk, f.total)
		if err := player.play(lo, hi, bit, add); err != nil {
			f.cancel(fmt.Errorf("audit: fast engine: %w", err))
			return
		}
		if part != nil {
			o.Chunk(part)
			local.Merge(part)
			part.Reset()
		}
		d := f.done.Add(int64(hi - lo))
		if o.Progress != nil {
			f.progMu.Lock()
			o.Progress(int(d), f.total)
			f.progMu.Unlock()
		}
	}
}

// trialPlayer is a worker's player of the game's trials: the batch player (engine.BatchPlayer,
// AuditBatch episodes at a time) when the plan allows it and a trial is one episode, else the
// one-episode player. Both give every episode the same estimate, bit for bit, so the outcome does
// not depend on which plays. Not safe for concurrent use.
type trialPlayer struct {
	g      *Game
	one    *engine.Player
	batch  *engine.BatchPlayer
	sc     *Scorer
	trk    *PrecisionTracker   // the one-episode player's precision tests (nil: none)
	trks   []*PrecisionTracker // the batch's, per slot
	est    []float64           // one episode's estimate (the one-episode player)
	avg    []float64
	scores []float64
	// the batch's scratch: initial states, estimates (views of ests) and flags
	x0s  [][]float64
	ests [][]float64
	oks  []bool
}

// newTrialPlayer builds a worker's trial player of g with the run's seeds.
func newTrialPlayer(g *Game, seeds sim.Seeds) (*trialPlayer, error) {
	one, err := newFastPlayer(g, seeds)
	if err != nil {
		return nil, err
	}
	dim := g.EstimateDim()
	tp := &trialPlayer{g: g, one: one, sc: g.Scorer(), est: make([]float64, dim), avg: make([]float64, dim),
		scores: make([]float64, len(g.names)), trk: g.PrecisionTracker()}
	if tp.trk != nil {
		one.SetTap(tp.trk)
	}
	if g.k == 1 && AuditBatch > 1 && sim.EpisodeBatchable(g.Plan) {
		bp, err := engine.NewBatchPlayer(g.Plan, seeds, AuditBatch)
		if err != nil {
			return nil, fmt.Errorf("audit: fast engine: %w", err)
		}
		if bp.EstimateDim() != dim {
			return nil, fmt.Errorf("audit: fast engine: the batch's eavesdropper estimates %d values, the game scores %d", bp.EstimateDim(), dim)
		}
		tp.batch, tp.x0s, tp.oks = bp, make([][]float64, AuditBatch), make([]bool, AuditBatch)
		tp.ests = make([][]float64, AuditBatch)
		if g.prec != nil {
			tp.trks = make([]*PrecisionTracker, AuditBatch)
			for j := range tp.trks {
				tp.trks[j] = g.PrecisionTracker()
				bp.SetTap(j, tp.trks[j])
			}
		}
		buf := make([]float64, AuditBatch*dim)
		for j := range tp.ests {
			tp.ests[j] = buf[j*dim : (j+1)*dim : (j+1)*dim]
		}
	}
	return tp, nil
}

// play plays trials lo..hi-1 (trial e's secret bit(e)) and hands each trial's scores to add, in
// trial order (add must not keep the slice). No allocation.
func (tp *trialPlayer) play(lo, hi int, bit func(e int) int, add func(e, bit int, scores []float64)) error {
	g := tp.g
	if tp.batch == nil {
		for e := lo; e < hi; e++ {
			b := bit(e)
			if err := g.playTrial(tp.one, tp.sc, tp.trk, e, b, tp.est, tp.avg, tp.scores); err != nil {
				return err
			}
			add(e, b, tp.scores)
		}
		return nil
	}
	for from := lo; from < hi; from += AuditBatch {
		n := min(AuditBatch, hi-from)
		for j := 0; j < n; j++ {
			tp.x0s[j] = g.X0(bit(from + j))
		}
		if err := tp.batch.Play(from, tp.x0s[:n], tp.ests[:n], tp.oks[:n]); err != nil {
			return fmt.Errorf("episodes %d..%d: %w", from, from+n-1, err)
		}
		for j := 0; j < n; j++ {
			if !tp.oks[j] {
				return fmt.Errorf("episode %d: the transcript does not determine the initial state (no estimate)", from+j)
			}
			var ev PrecisionEvidence
			if tp.trks != nil {
				ev = tp.trks[j].Evidence()
			}
			tp.sc.ScoresEvidence(tp.ests[j], ev, tp.scores)
			add(from+j, bit(from+j), tp.scores)
		}
	}
	return nil
}

// playTrial plays trial e with secret bit on player and writes its scores: one episode e (k = 1),
// or the k episodes e*k .. e*k+k-1 from the same initial state, whose estimates the scorer
// combines (Game.EpisodesPerTrial); trk (nil: none) is the player's precision tracker (its tap).
// est and avg are scratch of len EstimateDim. No allocation.
func (g *Game) playTrial(player *engine.Player, sc *Scorer, trk *PrecisionTracker, e, bit int, est, avg, scores []float64) error {
	x0 := g.X0(bit)
	if g.k == 1 {
		if err := playEpisode(player, e, x0, est); err != nil {
			return fmt.Errorf("episode %d: %w", e, err)
		}
		sc.ScoresEvidence(est, trk.Evidence(), scores)
		return nil
	}
	for j := 0; j < g.k; j++ {
		if err := playEpisode(player, e*g.k+j, x0, est); err != nil {
			sc.n = 0
			return fmt.Errorf("trial %d, episode %d: %w", e, e*g.k+j, err)
		}
		sc.AddEvidence(est, trk.Evidence())
	}
	sc.Trial(avg, scores)
	return nil
}

// playEpisode plays episode ep from x0 into est.
func playEpisode(player *engine.Player, ep int, x0, est []float64) error {
	ok, err := player.Play(ep, x0, est)
	if err == nil && !ok {
		err = errors.New("the transcript does not determine the initial state (no estimate)")
	}
	return err
}

// Prefix returns the outcome of the trials of the first pairs pairs (trials 0 .. 2 pairs - 1) of
// o, an outcome of game g: what a sequential audit's decision rests on.
func (o *Outcome) Prefix(g *Game, pairs int) (*Outcome, error) {
	p := g.NewOutcome(o.Engine, o.Seed, pairs)
	err := o.EachTrial(func(trial uint64, bit int, scores []float64) error {
		if trial < 2*uint64(pairs) {
			p.Add(trial, bit, scores)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if p.Episodes != 2*pairs {
		return nil, fmt.Errorf("audit: %d of the %d trials of the first %d pairs were played", p.Episodes, 2*pairs, pairs)
	}
	p.Elapsed = o.Elapsed
	return p, nil
}
