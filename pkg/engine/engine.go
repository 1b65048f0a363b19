package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// Options configure Run.
type Options struct {
	// Runs is the number of episodes (0: the scenario's runs).
	Runs int
	// Workers is the number of goroutines running episodes (<= 0: GOMAXPROCS). The metrics.Results do not
	// depend on it.
	Workers int
	// KeepTraces returns the per-step records of the episodes run, in memory: they grow with
	// Runs (about 4 KB per cloud-control episode of 100 steps), so use it for small runs or
	// with TraceEpisodes, and TraceSink to stream large ones to disk.
	KeepTraces bool
	// TraceEpisodes limits the traces (KeepTraces and TraceSink) to the traced episodes (the
	// zero value: all).
	TraceEpisodes trace.Episodes
	// TraceSink, when set, receives the records of every traced episode as soon as that
	// episode and all traced episodes before it finished: in increasing episode order, one
	// call per episode (steps 0..T), from one goroutine at a time. The records belong to the
	// sink. Nothing is accumulated (with KeepTraces unset the returned trace.Traces is nil), so
	// the memory of a run does not grow with the traced episodes. An error from the sink
	// stops the run and is returned.
	TraceSink func(tr *trace.Traces) error
	// Progress, when set, is called after every finished episode with the number done and the
	// total, from one goroutine at a time.
	Progress func(done, total int)
	// AgentsPerBlock groups consensus agents in blocks of that many, as the NATS run's
	// --agents-per-process does (sim.NewBlocks: batched when the plan allows it; <= 1: one core per
	// agent). The metrics.Results do not depend on it, except the link names (host.<i> -> host.<j>).
	AgentsPerBlock int
	// EpisodeSink, when set, receives each aggregated episode's per-run values
	// (metrics.Accumulator.SetEpisodeSink; their names: EpisodeColumns), from one goroutine at a
	// time: the rows of dpsim run --parquet's episodes.parquet.
	EpisodeSink func(ep int, values []float64)
	// Bus, when set, receives every message the episode's publishers put on the bus
	// (sim.Network.SetPublish: what the NATS processes of a lockstep run with one episode in
	// flight publish on their data subjects), in the order the network released them: one call
	// per episode, in increasing episode order, from one goroutine at a time (bus.go). The
	// publications are valid during the call only. An error from it stops the run and is
	// returned.
	Bus func(ep int, pubs []sim.Publication) error
}

// netSim is one worker of the fast engine: every core of the run on an in-memory sim.Network,
// driven by the one sim.Driver, with the join of pkg/trace joining the cores' partial records.
type netSim struct {
	acc    *metrics.Accumulator
	cores  []sim.Core
	net    *sim.Network
	drv    *sim.Driver
	recs   *records
	events []fault.Event // the traced episode's fault record
	logFn  func(*fault.Event)
	bus    *busTap // Options.Bus (nil: none)
}

func newNetSim(p *plan.Plan, seed uint64, acc *metrics.Accumulator, inj *fault.Injector, hs sim.Blocks) (*netSim, error) {
	cores, err := sim.NewCoresInBlocks(p, seed, hs)
	if err != nil {
		return nil, err
	}
	recs, err := newRecords(p, acc)
	if err != nil {
		return nil, err
	}
	s := &netSim{acc: acc, cores: cores, net: sim.NewNetwork(sim.NewTopology(p, hs), cores, inj), recs: recs}
	s.drv = sim.NewDriver(cores, s.net, nil, recs.sink)
	s.logFn = func(ev *fault.Event) { s.events = append(s.events, *ev) }
	return s, nil
}

// tapBus makes the worker collect its episodes' publications (Options.Bus): each run into the
// buffer set by collect.
func (s *netSim) tapBus() {
	s.bus = &busTap{}
	s.net.SetPublish(s.bus.add)
}

// collect sets the buffer the next run's publications go to (reset there).
func (s *netSim) collect(pubs *busEpisode) {
	if s.bus != nil {
		s.bus.next = pubs
	}
}

// run plays episode ep into e (a reset buffer) and, when keep, returns its records (and its
// publications to the buffer collect set).
func (s *netSim) run(ctx context.Context, ep int, e *metrics.Episode, keep bool) (*trace.Traces, error) {
	s.recs.begin(ep)
	if s.bus != nil {
		s.bus.begin()
		defer s.bus.end()
	}
	s.net.Begin(ep)
	s.events = nil
	if keep { // a traced episode also keeps what the injector did to its messages
		s.net.SetFaultLog(s.logFn)
	} else {
		s.net.SetFaultLog(nil)
	}
	err := s.drv.Episode(ep, nil, ctx.Err)
	s.net.End()
	if err != nil {
		return nil, err
	}
	tr, err := s.recs.put(e, keep)
	if tr != nil {
		tr.Faults = s.events
	}
	return tr, err
}

// Run runs the plan's Monte Carlo episodes in-process on every core: the same role cores as the
// NATS processes, in the same step order and with the same random stream paths, so the same
// seeds (sim.NewSeeds of the run seed, derived once by the caller and handed to both) give the
// same numbers in both engines. Episode e is a pure function of (plan, seeds, e); the Results
// are aggregated in episode order, so they do not depend on Workers or scheduling.
//
// Memory does not grow with the runs: the Results stream (metrics.Accumulator), and per-step
// records exist only for the traced episodes (KeepTraces keeps them, TraceSink streams them out).
//
// On ctx cancellation (or an episode error) it stops, and returns the Results of the episodes
// that finished, the traces kept so far (a TraceSink has received them), and an error wrapping
// the cause.
func Run(ctx context.Context, p *plan.Plan, seeds sim.Seeds, opts Options) (*metrics.Results, *trace.Traces, error) {
	r, err := newRun(p, seeds, opts)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for res := range r.start(ctx) {
		r.fold(ctx, cancel, res)
	}
	if opts.TraceSink != nil {
		r.deliver(true)
	}
	if opts.Bus != nil {
		_ = r.bus.add(-1, nil, true)
	}
	return r.finish(ctx)
}

// run is the state of one Run: the workers, the accumulator, and what came back.
type run struct {
	p       *plan.Plan
	opts    Options
	runs    int
	acc     *metrics.Accumulator
	runners []*netSim
	free    chan *metrics.Episode // folded episode buffers, for the workers to reuse
	traces  map[int]*trace.Traces // KeepTraces
	bus     busOrder              // Options.Bus
	// With a sink, finished episodes wait in held until every traced episode before them is
	// delivered (episodes finish out of order across workers; the wait is a few episodes).
	held      map[int]*trace.Traces
	nextTrace int
	sinkErr   error
	done      int
	errEp     int // the lowest episode that failed (-1: none), with its error
	firstErr  error
}

// episodeResult is what a worker returns for one episode.
type episodeResult struct {
	ep  int
	e   *metrics.Episode
	tr  *trace.Traces
	bus *busEpisode // Options.Bus
	err error
}

// newRun builds every worker's cores up front, so that configuration errors surface before
// any work.
func newRun(p *plan.Plan, seeds sim.Seeds, opts Options) (*run, error) {
	acc, err := metrics.NewAccumulator(p, seeds.Run)
	if err != nil {
		return nil, err
	}
	acc.SetEpisodeSink(opts.EpisodeSink)
	runs := opts.Runs
	if runs == 0 {
		runs = p.Scenario.Runs
	}
	if runs < 0 {
		return nil, fmt.Errorf("engine: %s: runs %d < 0", p.Scenario.Name, runs)
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, runs))
	inj, err := fault.New(&p.Scenario.Faults, seeds.Fault)
	if err != nil {
		return nil, fmt.Errorf("engine: %s: %w", p.Scenario.Name, err)
	}
	r := &run{p: p, opts: opts, runs: runs, acc: acc, runners: make([]*netSim, workers), errEp: -1,
		free: make(chan *metrics.Episode, 2*workers+2), held: map[int]*trace.Traces{}}
	for w := range r.runners {
		if r.runners[w], err = newNetSim(p, seeds.Run, acc, inj, sim.NewBlocks(p, opts.AgentsPerBlock)); err != nil {
			return nil, fmt.Errorf("engine: %s: %w", p.Scenario.Name, err)
		}
		if opts.Bus != nil {
			r.runners[w].tapBus()
		}
	}
	if opts.KeepTraces {
		r.traces = map[int]*trace.Traces{}
	}
	if opts.Bus != nil {
		r.bus = newBusOrder(opts.Bus, workers)
	}
	return r, nil
}

// keep reports whether episode ep's records are traced.
func (r *run) keep(ep int) bool {
	return (r.opts.KeepTraces || r.opts.TraceSink != nil) && r.opts.TraceEpisodes.Traced(ep)
}

// start hands the episodes 0..runs-1 to the workers and returns their results, closed when
// every worker stopped (at the end, or when ctx is done).
func (r *run) start(ctx context.Context) <-chan episodeResult {
	jobs := make(chan int)
	out := make(chan episodeResult, len(r.runners))
	go func() {
		defer close(jobs)
		for ep := 0; ep < r.runs; ep++ {
			select {
			case jobs <- ep:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for _, ns := range r.runners {
		wg.Go(func() { r.work(ctx, ns, jobs, out) })
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out
}

// work is one worker: it plays the episodes it is given into reused buffers.
func (r *run) work(ctx context.Context, ns *netSim, jobs <-chan int, out chan<- episodeResult) {
	for ep := range jobs {
		if ctx.Err() != nil {
			return
		}
		var e *metrics.Episode
		select {
		case e = <-r.free:
			e.Reset(ep)
		default:
			e = r.acc.NewEpisode(ep)
		}
		pubs := r.bus.buffer()
		ns.collect(pubs)
		tr, err := ns.run(ctx, ep, e, r.keep(ep))
		out <- episodeResult{ep: ep, e: e, tr: tr, bus: pubs, err: err}
	}
}

// fold takes one finished episode: its metrics into the accumulator, its records to the kept
// traces and the sink. On an error it stops the run (cancel).
func (r *run) fold(ctx context.Context, cancel context.CancelFunc, res episodeResult) {
	if res.err != nil {
		stopped := ctx.Err() != nil && (errors.Is(res.err, context.Canceled) || errors.Is(res.err, context.DeadlineExceeded))
		if !stopped && (r.errEp < 0 || res.ep < r.errEp) {
			r.errEp, r.firstErr = res.ep, res.err
		}
		cancel()
		return
	}
	if err := r.acc.AddEpisode(res.e); err != nil { // cannot happen: every episode is run once
		if r.errEp < 0 {
			r.errEp, r.firstErr = res.ep, err
		}
		cancel()
		return
	}
	r.acc.Recycle(func(e *metrics.Episode) {
		select {
		case r.free <- e:
		default:
		}
	})
	if r.opts.Bus != nil && r.bus.add(res.ep, res.bus, false) != nil {
		cancel()
	}
	if res.tr != nil {
		if r.traces != nil {
			r.traces[res.ep] = res.tr
		}
		if r.opts.TraceSink != nil && r.sinkErr == nil {
			r.held[res.ep] = res.tr
			r.deliver(false)
			if r.sinkErr != nil {
				cancel()
			}
		}
	}
	r.done++
	if r.opts.Progress != nil {
		r.opts.Progress(r.done, r.runs)
	}
}

// deliver hands the held traces to the sink in episode order, as far as they are contiguous
// (flushAll: all of them, over the gaps a stop left).
func (r *run) deliver(flushAll bool) {
	for r.sinkErr == nil && len(r.held) > 0 {
		tr := r.held[r.nextTrace]
		if tr == nil {
			if !flushAll {
				return
			}
			r.nextTrace = minKey(r.held) // a gap (stopped early): the episodes after it are complete
			continue
		}
		delete(r.held, r.nextTrace)
		r.nextTrace++
		if err := r.opts.TraceSink(tr); err != nil {
			r.sinkErr = err
		}
	}
}

// finish returns the Results with the links' counters, the kept traces, and why the run
// stopped early, if it did.
func (r *run) finish(ctx context.Context) (*metrics.Results, *trace.Traces, error) {
	name := r.p.Scenario.Name
	results := r.acc.Results()
	var links [][]fault.LinkStats
	for _, ns := range r.runners {
		links = append(links, ns.net.LinkStats(ns.cores))
	}
	results.Links = sim.MergeLinkStats(links...)
	tr := flattenTraces(r.traces)
	switch {
	case r.sinkErr != nil:
		return results, tr, fmt.Errorf("engine: %s: trace: %w", name, r.sinkErr)
	case r.bus.err != nil:
		return results, tr, fmt.Errorf("engine: %s: bus: %w", name, r.bus.err)
	case r.firstErr != nil:
		return results, tr, fmt.Errorf("engine: %s: episode %d: %w", name, r.errEp, r.firstErr)
	case r.done < r.runs:
		cause := context.Cause(ctx)
		if cause == nil {
			cause = context.Canceled
		}
		return results, tr, fmt.Errorf("engine: %s: stopped after %d of %d episodes: %w", name, r.done, r.runs, cause)
	}
	return results, tr, nil
}

func minKey[V any](m map[int]V) int {
	first := true
	k := 0
	for ep := range m {
		if first || ep < k {
			k, first = ep, false
		}
	}
	return k
}

func flattenTraces(m map[int]*trace.Traces) *trace.Traces {
	if m == nil {
		return nil
	}
	eps := make([]int, 0, len(m))
	for ep := range m {
		eps = append(eps, ep)
	}
	slices.Sort(eps)
	out := &trace.Traces{}
	for _, ep := range eps {
		out.Control = append(out.Control, m[ep].Control...)
		out.Consensus = append(out.Consensus, m[ep].Consensus...)
		out.Faults = append(out.Faults, m[ep].Faults...)
	}
	return out
}

// PointResult is the outcome of one point of a sweep.
type PointResult struct {
	Scenario *scenario.Scenario // the expanded point (Name carries "@param=value")
	Plan     *plan.Plan
	Results  *metrics.Results
	Traces   *trace.Traces
}

// Sweep runs Run on every point of s.Expand() (one point when s does not sweep) with the same
// seed (common random numbers across points, as scenario.Expand intends). opts.Progress counts
// episodes over the whole sweep. On cancellation or error it returns the points finished so far
// (the interrupted one included, with partial metrics.Results) and the error.
func Sweep(ctx context.Context, s *scenario.Scenario, seed uint64, popts plan.Options, opts Options) ([]PointResult, error) {
	points := s.Expand()
	seeds := sim.NewSeeds(seed) // derived once: every point draws the same fates
	runs := opts.Runs
	if runs == 0 {
		runs = s.Runs
	}
	total := runs * len(points)
	var out []PointResult
	for k, pt := range points {
		p, err := plan.New(pt, popts)
		if err != nil {
			return out, fmt.Errorf("engine: sweep point %d (%s): %w", k, pt.Name, err)
		}
		o := opts
		o.Runs = runs
		if opts.Progress != nil {
			base := k * runs
			o.Progress = func(done, _ int) { opts.Progress(base+done, total) }
		}
		res, tr, err := Run(ctx, p, seeds, o)
		if res != nil {
			out = append(out, PointResult{Scenario: pt, Plan: p, Results: res, Traces: tr})
		}
		if err != nil {
			return out, fmt.Errorf("engine: sweep point %d of %d: %w", k+1, len(points), err)
		}
	}
	return out, nil
}
