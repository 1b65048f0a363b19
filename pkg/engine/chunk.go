package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// Chunk is what Run would have computed for the episodes Lo..Hi-1 of a point before folding
// them: each episode reduced (metrics.Episode, encoded exactly), the links' counters of those
// episodes, and the records of the traced ones. A worker on another host plays it (PlayChunk) and
// a Fold on the coordinator folds it as Run folds its own, so the Results are bit-identical.
type Chunk struct {
	Lo, Hi   int
	Episodes [][]byte              // Episodes[i]: metrics.Accumulator.MarshalEpisode of episode Lo+i
	Links    []fault.LinkStats     // the counters of every link over these episodes
	Traces   map[int]*trace.Traces // the records of the traced episodes among them
}

// ChunkOptions configure PlayChunk: the options of Run that change what a chunk holds.
type ChunkOptions struct {
	Workers        int            // goroutines (<= 0: GOMAXPROCS); the chunk does not depend on it
	Traces         bool           // keep the records of the traced episodes (Run's KeepTraces or TraceSink)
	TraceEpisodes  trace.Episodes // which episodes are traced
	AgentsPerBlock int            // as Options.AgentsPerBlock
}

// PlayChunk plays episodes lo..hi-1 of plan p with the run's seeds on the cores Run builds
// (newNetSim, netSim.run: the same code path), and returns them unfolded. Episode e is a pure
// function of (plan, seeds, e), so a chunk is the same on any host and for any Workers.
func PlayChunk(ctx context.Context, p *plan.Plan, seeds sim.Seeds, lo, hi int, o ChunkOptions) (*Chunk, error) {
	if lo < 0 || hi <= lo {
		return nil, fmt.Errorf("engine: chunk %d..%d: want 0 <= lo < hi", lo, hi)
	}
	acc, err := metrics.NewAccumulator(p, seeds.Run)
	if err != nil {
		return nil, err
	}
	inj, err := fault.New(&p.Scenario.Faults, seeds.Fault)
	if err != nil {
		return nil, fmt.Errorf("engine: chunk: %w", err)
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	sims := make([]*netSim, max(1, min(workers, hi-lo)))
	for w := range sims {
		if sims[w], err = newNetSim(p, seeds.Run, acc, inj, sim.NewBlocks(p, o.AgentsPerBlock)); err != nil {
			return nil, fmt.Errorf("engine: chunk: %w", err)
		}
	}
	c := &Chunk{Lo: lo, Hi: hi, Episodes: make([][]byte, hi-lo), Traces: map[int]*trace.Traces{}}
	traces := make([]*trace.Traces, hi-lo)
	errs := make([]error, hi-lo)
	var next atomic.Int64
	next.Store(int64(lo))
	var wg sync.WaitGroup
	for _, ns := range sims {
		wg.Go(func() {
			for ep := int(next.Add(1)) - 1; ep < hi && ctx.Err() == nil; ep = int(next.Add(1)) - 1 {
				e := acc.NewEpisode(ep)
				traces[ep-lo], errs[ep-lo] = ns.run(ctx, ep, e, o.Traces && o.TraceEpisodes.Traced(ep))
				if errs[ep-lo] == nil {
					c.Episodes[ep-lo], errs[ep-lo] = acc.MarshalEpisode(e)
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("engine: chunk %d..%d: %w", lo, hi, err)
	}
	for i, err := range errs { // the lowest failing episode, as Run reports it
		if err != nil {
			return nil, fmt.Errorf("engine: chunk: episode %d: %w", lo+i, err)
		}
		if traces[i] != nil {
			c.Traces[lo+i] = traces[i]
		}
	}
	var links [][]fault.LinkStats
	for _, ns := range sims {
		links = append(links, ns.net.LinkStats(ns.cores))
	}
	c.Links = sim.MergeLinkStats(links...)
	return c, nil
}

// Fold folds the chunks of one point, in any order, as Run folds its episodes (run.fold: the
// accumulator in episode order, traces kept or streamed to the sink in episode order), so that
// Finish returns Run's Results and traces bit for bit. Not safe for concurrent use.
type Fold struct {
	r      *run
	ctx    context.Context
	cancel context.CancelFunc
	links  [][]fault.LinkStats
	seen   map[int]bool // the chunks' first episodes folded
}

// NewFold returns the fold of plan p's episodes with Run's options (Runs, KeepTraces,
// TraceEpisodes, TraceSink, Progress; Workers is not used).
func NewFold(ctx context.Context, p *plan.Plan, seeds sim.Seeds, opts Options) (*Fold, error) {
	opts.Workers = 1 // one set of cores, idle: its links' names (all zero) as Run's have them
	r, err := newRun(p, seeds, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Fold{r: r, ctx: ctx, cancel: cancel, seen: map[int]bool{}}, nil
}

// Runs is the number of episodes of the point (Options.Runs, else the scenario's).
func (f *Fold) Runs() int { return f.r.runs }

// Decode checks chunk c against the point and decodes its episodes, without folding anything: a
// malformed chunk (another range, another plan's shape, a chunk already folded) is refused whole.
func (f *Fold) Decode(c *Chunk) ([]*metrics.Episode, error) {
	if c == nil || c.Lo < 0 || c.Hi > f.r.runs || c.Hi <= c.Lo || len(c.Episodes) != c.Hi-c.Lo {
		return nil, errors.New("engine: fold: chunk range or episode count does not fit the point")
	}
	if f.seen[c.Lo] {
		return nil, fmt.Errorf("engine: fold: chunk %d..%d already folded", c.Lo, c.Hi)
	}
	eps := make([]*metrics.Episode, len(c.Episodes))
	for i, data := range c.Episodes {
		e, err := f.r.acc.UnmarshalEpisode(data)
		if err != nil {
			return nil, err
		}
		if e.Index() != c.Lo+i {
			return nil, fmt.Errorf("engine: fold: chunk %d..%d holds episode %d at %d", c.Lo, c.Hi, e.Index(), c.Lo+i)
		}
		eps[i] = e
	}
	for ep := range c.Traces {
		if ep < c.Lo || ep >= c.Hi {
			return nil, fmt.Errorf("engine: fold: chunk %d..%d holds the trace of episode %d", c.Lo, c.Hi, ep)
		}
	}
	return eps, nil
}

// Add folds chunk c (decoded by Decode into eps). An error stops the fold (the sink failed).
func (f *Fold) Add(c *Chunk, eps []*metrics.Episode) error {
	f.seen[c.Lo] = true
	for i, e := range eps {
		ep := c.Lo + i
		f.r.fold(f.ctx, f.cancel, episodeResult{ep: ep, e: e, tr: c.Traces[ep]})
	}
	f.links = append(f.links, c.Links)
	switch {
	case f.r.sinkErr != nil:
		return fmt.Errorf("engine: fold: trace: %w", f.r.sinkErr)
	case f.r.firstErr != nil:
		return fmt.Errorf("engine: fold: episode %d: %w", f.r.errEp, f.r.firstErr)
	}
	return nil
}

// Finish returns what Run returns: the Results with the links' counters of every chunk folded,
// the kept traces, and (cause) why the point stopped early, if it did.
func (f *Fold) Finish(cause error) (*metrics.Results, *trace.Traces, error) {
	defer f.cancel()
	if f.r.opts.TraceSink != nil {
		f.r.deliver(true)
	}
	ctx := f.ctx
	if cause != nil && f.r.done < f.r.runs {
		c, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		ctx = c
	}
	res, tr, err := f.r.finish(ctx)
	if res != nil {
		res.Links = sim.MergeLinkStats(append(f.links, res.Links)...)
	}
	return res, tr, err
}
