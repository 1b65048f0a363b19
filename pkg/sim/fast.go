package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// FastOptions configure RunFast.
type FastOptions struct {
	// Runs is the number of episodes (0: the scenario's runs).
	Runs int
	// Workers is the number of goroutines running episodes (<= 0: GOMAXPROCS). The Results do not
	// depend on it.
	Workers int
	// KeepTraces returns the per-step records of the episodes run, in memory: they grow with
	// Runs (about 4 KB per cloud-control episode of 100 steps), so use it for small runs or
	// with TraceEpisodes, and TraceSink to stream large ones to disk.
	KeepTraces bool
	// TraceEpisodes limits the traces (KeepTraces and TraceSink) to episodes
	// 0..TraceEpisodes-1 (0: all).
	TraceEpisodes int
	// TraceSink, when set, receives the records of every traced episode as soon as that
	// episode and all traced episodes before it finished: in increasing episode order, one
	// call per episode (steps 0..T), from one goroutine at a time. The records belong to the
	// sink. Nothing is accumulated (with KeepTraces unset the returned Traces is nil), so
	// the memory of a run does not grow with the traced episodes. An error from the sink
	// stops the run and is returned.
	TraceSink func(tr *Traces) error
	// Progress, when set, is called after every finished episode with the number done and the
	// total, from one goroutine at a time.
	Progress func(done, total int)
	// AgentsPerHost groups consensus agents in blocks of that many, as the NATS run's
	// --agents-per-process does (NewHosts: batched when the plan allows it; <= 1: one core per
	// agent). The Results do not depend on it, except the link names (host.<i> -> host.<j>).
	AgentsPerHost int
}

// AggregateControl computes the Results of cloud-control records (any order) for plan p, as
// Results of an Accumulator fed with them.
func AggregateControl(p *plan.Plan, seed uint64, recs []ControlRecord) (*Results, error) {
	a, err := NewAccumulator(p, seed)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if err := a.AddControl(&recs[i]); err != nil {
			return nil, err
		}
	}
	return a.Results(), nil
}

// AggregateConsensus computes the Results of consensus records (any order) for plan p, as
// Results of an Accumulator fed with them.
func AggregateConsensus(p *plan.Plan, seed uint64, recs []ConsensusRecord) (*Results, error) {
	a, err := NewAccumulator(p, seed)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if err := a.AddConsensus(&recs[i]); err != nil {
			return nil, err
		}
	}
	return a.Results(), nil
}

// netSim is one worker of the fast engine: every core of the run on an in-memory Network,
// driven by the one Driver, with an assembler joining the cores' partial records.
type netSim struct {
	acc    *Accumulator
	cores  []Core
	net    *Network
	drv    *Driver
	asm    *assembler
	events []fault.Event // the traced episode's fault record
	logFn  func(*fault.Event)
}

func newNetSim(p *plan.Plan, seed uint64, acc *Accumulator, inj *fault.Injector, hs Hosts) (*netSim, error) {
	cores, err := NewHostedCores(p, seed, hs)
	if err != nil {
		return nil, err
	}
	s := &netSim{acc: acc, cores: cores, net: NewNetwork(cores, inj), asm: newAssembler(p, acc.ref)}
	s.drv = NewDriver(cores, s.net, nil, s.asm.sink)
	s.logFn = func(ev *fault.Event) { s.events = append(s.events, *ev) }
	return s, nil
}

// run plays episode ep into e (a reset buffer) and, when keep, returns its records.
func (s *netSim) run(ctx context.Context, ep int, e *episodeAcc, keep bool) (*Traces, error) {
	s.asm.begin(ep)
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
	tr, err := s.asm.put(s.acc, e, keep)
	if tr != nil {
		tr.Faults = s.events
	}
	return tr, err
}

// RunFast runs the plan's Monte Carlo episodes in-process on every core: the same role cores as the
// NATS processes, in the same step order and with the same random stream paths, so a seed gives
// the same numbers in both engines. Episode e is a pure function of (plan, seed, e); the Results
// are aggregated in episode order, so they do not depend on Workers or scheduling.
//
// Memory does not grow with the runs: the Results stream (Accumulator), and per-step records
// exist only for the traced episodes (KeepTraces keeps them, TraceSink streams them out).
//
// On ctx cancellation (or an episode error) it stops, and returns the Results of the episodes that
// finished, the traces kept so far (a TraceSink has received them), and an error wrapping the cause.
func RunFast(ctx context.Context, p *plan.Plan, seed uint64, opts FastOptions) (*Results, *Traces, error) {
	acc, err := NewAccumulator(p, seed)
	if err != nil {
		return nil, nil, err
	}
	runs := opts.Runs
	if runs == 0 {
		runs = p.Scenario.Runs
	}
	if runs < 0 {
		return nil, nil, fmt.Errorf("sim: %s: runs %d < 0", p.Scenario.Name, runs)
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, runs))
	inj, err := fault.New(&p.Scenario.Faults, fault.SeedOf(seed))
	if err != nil {
		return nil, nil, fmt.Errorf("sim: %s: %w", p.Scenario.Name, err)
	}
	// Build every worker's cores up front so configuration errors surface before any work.
	runners := make([]*netSim, workers)
	for w := range runners {
		if runners[w], err = newNetSim(p, seed, acc, inj, NewHosts(p, opts.AgentsPerHost)); err != nil {
			return nil, nil, fmt.Errorf("sim: %s: %w", p.Scenario.Name, err)
		}
	}
	tracing := opts.KeepTraces || opts.TraceSink != nil
	keep := func(ep int) bool {
		return tracing && (opts.TraceEpisodes <= 0 || ep < opts.TraceEpisodes)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		ep  int
		e   *episodeAcc
		tr  *Traces
		err error
	}
	jobs := make(chan int)
	out := make(chan result, workers)
	free := make(chan *episodeAcc, 2*workers+2)
	go func() {
		defer close(jobs)
		for ep := 0; ep < runs; ep++ {
			select {
			case jobs <- ep:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Add(1)
		go func(r *netSim) {
			defer wg.Done()
			for ep := range jobs {
				if ctx.Err() != nil {
					return
				}
				var e *episodeAcc
				select {
				case e = <-free:
					e.reset(ep)
				default:
					e = acc.newEpisode(ep)
				}
				tr, err := r.run(ctx, ep, e, keep(ep))
				out <- result{ep: ep, e: e, tr: tr, err: err}
			}
		}(r)
	}
	go func() {
		wg.Wait()
		close(out)
	}()

	var traces map[int]*Traces
	if opts.KeepTraces {
		traces = map[int]*Traces{}
	}
	// With a sink, finished episodes wait in held until every traced episode before them is
	// delivered (episodes finish out of order across workers; the wait is a few episodes).
	held := map[int]*Traces{}
	nextTrace := 0
	var sinkErr error
	deliver := func(flushAll bool) {
		for sinkErr == nil && len(held) > 0 {
			tr := held[nextTrace]
			if tr == nil {
				if !flushAll {
					return
				}
				nextTrace = minKey(held) // a gap (stopped early): the episodes after it are complete
				continue
			}
			delete(held, nextTrace)
			nextTrace++
			if err := opts.TraceSink(tr); err != nil {
				sinkErr = err
			}
		}
	}
	done, errEp := 0, -1
	var firstErr error
	for res := range out {
		if res.err != nil {
			stopped := ctx.Err() != nil && (errors.Is(res.err, context.Canceled) || errors.Is(res.err, context.DeadlineExceeded))
			if !stopped && (errEp < 0 || res.ep < errEp) {
				errEp, firstErr = res.ep, res.err
			}
			cancel()
			continue
		}
		if err := acc.addEpisode(res.e); err != nil { // cannot happen: every episode is run once
			if errEp < 0 {
				errEp, firstErr = res.ep, err
			}
			cancel()
			continue
		}
		for _, e := range acc.free {
			select {
			case free <- e:
			default:
			}
		}
		acc.free = acc.free[:0]
		if res.tr != nil {
			if traces != nil {
				traces[res.ep] = res.tr
			}
			if opts.TraceSink != nil && sinkErr == nil {
				held[res.ep] = res.tr
				deliver(false)
				if sinkErr != nil {
					cancel()
				}
			}
		}
		done++
		if opts.Progress != nil {
			opts.Progress(done, runs)
		}
	}
	if opts.TraceSink != nil {
		deliver(true)
	}
	results := acc.Results()
	var links [][]fault.LinkStats
	for _, r := range runners {
		links = append(links, r.net.LinkStats(r.cores))
	}
	results.Links = MergeLinkStats(links...)
	tr := flattenTraces(traces)
	switch {
	case sinkErr != nil:
		return results, tr, fmt.Errorf("sim: %s: trace: %w", p.Scenario.Name, sinkErr)
	case firstErr != nil:
		return results, tr, fmt.Errorf("sim: %s: episode %d: %w", p.Scenario.Name, errEp, firstErr)
	case done < runs:
		cause := context.Cause(ctx)
		if cause == nil {
			cause = context.Canceled
		}
		return results, tr, fmt.Errorf("sim: %s: stopped after %d of %d episodes: %w", p.Scenario.Name, done, runs, cause)
	}
	return results, tr, nil
}

func minKey(m map[int]*Traces) int {
	first := true
	k := 0
	for ep := range m {
		if first || ep < k {
			k, first = ep, false
		}
	}
	return k
}

func flattenTraces(m map[int]*Traces) *Traces {
	if m == nil {
		return nil
	}
	eps := make([]int, 0, len(m))
	for ep := range m {
		eps = append(eps, ep)
	}
	slices.Sort(eps)
	out := &Traces{}
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
	Results  *Results
	Traces   *Traces
}

// RunSweep runs RunFast on every point of s.Expand() (one point when s does not sweep) with the same
// seed (common random numbers across points, as scenario.Expand intends). opts.Progress counts
// episodes over the whole sweep. On cancellation or error it returns the points finished so far
// (the interrupted one included, with partial Results) and the error.
func RunSweep(ctx context.Context, s *scenario.Scenario, seed uint64, popts plan.Options, opts FastOptions) ([]PointResult, error) {
	points := s.Expand()
	runs := opts.Runs
	if runs == 0 {
		runs = s.Runs
	}
	total := runs * len(points)
	var out []PointResult
	for k, pt := range points {
		p, err := plan.New(pt, popts)
		if err != nil {
			return out, fmt.Errorf("sim: sweep point %d (%s): %w", k, pt.Name, err)
		}
		o := opts
		o.Runs = runs
		if opts.Progress != nil {
			base := k * runs
			o.Progress = func(done, _ int) { opts.Progress(base+done, total) }
		}
		res, tr, err := RunFast(ctx, p, seed, o)
		if res != nil {
			out = append(out, PointResult{Scenario: pt, Plan: p, Results: res, Traces: tr})
		}
		if err != nil {
			return out, fmt.Errorf("sim: sweep point %d of %d: %w", k+1, len(points), err)
		}
	}
	return out, nil
}
