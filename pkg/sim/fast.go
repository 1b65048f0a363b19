package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

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

// episodeRunner runs whole episodes of one kind with its own role cores (one per worker).
type episodeRunner interface {
	// run plays episode ep into e (a reset buffer) and, when keep, returns its records.
	run(ctx context.Context, ep int, e *episodeAcc, keep bool) (*Traces, error)
}

// controlSim is one closed loop: plant, cloud and eavesdropper in the lockstep order of the
// package doc.
type controlSim struct {
	acc   *Accumulator
	plant *PlantNode
	cloud *CloudNode
	eve   *EavesdropperNode
	T     int

	x, ref, yhat, u, xhat, evex0 []float64
	rec                          ControlRecord
}

func newControlSim(p *plan.Plan, seed uint64, acc *Accumulator) (*controlSim, error) {
	plant, err := NewPlantNode(p, seed)
	if err != nil {
		return nil, err
	}
	cloud, err := NewCloudNode(p)
	if err != nil {
		return nil, err
	}
	eve, err := NewEavesdropperNode(p)
	if err != nil {
		return nil, err
	}
	nx := plant.Nx()
	return &controlSim{
		acc: acc, plant: plant, cloud: cloud, eve: eve, T: p.Steps,
		x: make([]float64, nx), ref: make([]float64, nx), yhat: make([]float64, plant.Ny()),
		u: make([]float64, plant.Nu()), xhat: make([]float64, nx), evex0: make([]float64, nx),
	}, nil
}

func (s *controlSim) begin(ep int) error {
	if err := s.plant.Begin(ep, nil); err != nil {
		return err
	}
	s.cloud.Begin(ep)
	s.eve.Begin(ep)
	return nil
}

// step runs step t of the current episode in the documented order and returns its record (a
// view valid until the next call): plant.Emit -> eavesdropper sees yhat -> cloud.Step ->
// eavesdropper sees u -> (record) -> plant.Apply. No allocation.
func (s *controlSim) step(ep, t int) (*ControlRecord, error) {
	copy(s.x, s.plant.State()) // x(t), before Apply
	s.plant.Emit(s.yhat)
	if err := s.eve.ObserveYhat(t, s.yhat); err != nil {
		return nil, err
	}
	s.cloud.Step(t, s.yhat, s.u)
	if err := s.eve.ObserveU(t, s.u); err != nil {
		return nil, err
	}
	copy(s.xhat, s.cloud.Xhat())
	s.acc.ref.At(t, s.ref)
	s.rec = ControlRecord{Episode: ep, Step: t, X: s.x, Ref: s.ref, Yhat: s.yhat, U: s.u, Xhat: s.xhat}
	if s.eve.EstimateX0(s.evex0) {
		s.rec.EveX0 = s.evex0
	}
	s.plant.Apply(s.u)
	return &s.rec, nil
}

// final returns the terminal record x(T).
func (s *controlSim) final(ep int) *ControlRecord {
	copy(s.x, s.plant.State())
	s.acc.ref.At(s.T, s.ref)
	s.rec = ControlRecord{Episode: ep, Step: s.T, X: s.x, Ref: s.ref}
	return &s.rec
}

func (s *controlSim) run(ctx context.Context, ep int, e *episodeAcc, keep bool) (*Traces, error) {
	if err := s.begin(ep); err != nil {
		return nil, err
	}
	var tr *Traces
	if keep {
		tr = &Traces{Control: make([]ControlRecord, 0, s.T+1)}
	}
	put := func(r *ControlRecord) error {
		if err := s.acc.validControl(r); err != nil {
			return err
		}
		if err := s.acc.putControl(e, r); err != nil {
			return err
		}
		if keep {
			tr.Control = append(tr.Control, cloneControl(r))
		}
		return nil
	}
	for t := 0; t < s.T; t++ {
		if t&255 == 255 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r, err := s.step(ep, t)
		if err != nil {
			return nil, err
		}
		if err := put(r); err != nil {
			return nil, err
		}
	}
	return tr, put(s.final(ep))
}

func cloneControl(r *ControlRecord) ControlRecord {
	return ControlRecord{Episode: r.Episode, Step: r.Step, X: slices.Clone(r.X), Ref: slices.Clone(r.Ref),
		Yhat: slices.Clone(r.Yhat), U: slices.Clone(r.U), Xhat: slices.Clone(r.Xhat), EveX0: slices.Clone(r.EveX0)}
}

// consensusSim is one network: every agent and the eavesdropper, in the documented order.
type consensusSim struct {
	acc    *Accumulator
	agents []*AgentNode
	eve    *EavesdropperNode
	T      int

	x0, x, y, evex0, nb []float64
	rec                 ConsensusRecord
}

func newConsensusSim(p *plan.Plan, seed uint64, acc *Accumulator) (*consensusSim, error) {
	n := p.Graph.N
	s := &consensusSim{acc: acc, T: p.Steps, agents: make([]*AgentNode, n),
		x0: make([]float64, n), x: make([]float64, n), y: make([]float64, n), evex0: make([]float64, n)}
	maxDeg := 0
	for i := range s.agents {
		a, err := NewAgentNode(p, seed, i)
		if err != nil {
			return nil, err
		}
		s.agents[i], s.x0[i] = a, a.X0()
		maxDeg = max(maxDeg, len(a.Neighbors()))
	}
	s.nb = make([]float64, maxDeg)
	eve, err := NewEavesdropperNode(p)
	if err != nil {
		return nil, err
	}
	s.eve = eve
	return s, nil
}

func (s *consensusSim) begin(ep int) error {
	for i, a := range s.agents {
		if err := a.Begin(ep, s.x0[i]); err != nil {
			return err
		}
	}
	s.eve.Begin(ep)
	return nil
}

// step runs step t: every agent Emits y_i(t) (in index order) -> the eavesdropper sees y(t) ->
// (record) -> every agent Updates (in index order) with its neighbours' y_j(t). No allocation.
func (s *consensusSim) step(ep, t int) (*ConsensusRecord, error) {
	for i, a := range s.agents {
		s.x[i] = a.State()
		s.y[i] = a.Emit()
	}
	if err := s.eve.ObserveConsensus(t, s.y); err != nil {
		return nil, err
	}
	s.rec = ConsensusRecord{Episode: ep, Step: t, X: s.x, Y: s.y}
	if s.eve.EstimateX0(s.evex0) {
		s.rec.EveX0 = s.evex0
	}
	for i, a := range s.agents {
		nbr := a.Neighbors()
		buf := s.nb[:len(nbr)]
		for k, j := range nbr {
			buf[k] = s.y[j]
		}
		if err := a.Update(s.y[i], buf); err != nil {
			return nil, err
		}
	}
	return &s.rec, nil
}

func (s *consensusSim) final(ep int) *ConsensusRecord {
	for i, a := range s.agents {
		s.x[i] = a.State()
	}
	s.rec = ConsensusRecord{Episode: ep, Step: s.T, X: s.x}
	return &s.rec
}

func (s *consensusSim) run(ctx context.Context, ep int, e *episodeAcc, keep bool) (*Traces, error) {
	if err := s.begin(ep); err != nil {
		return nil, err
	}
	var tr *Traces
	if keep {
		tr = &Traces{Consensus: make([]ConsensusRecord, 0, s.T+1)}
	}
	put := func(r *ConsensusRecord) error {
		if err := s.acc.validConsensus(r); err != nil {
			return err
		}
		if err := s.acc.putConsensus(e, r); err != nil {
			return err
		}
		if keep {
			tr.Consensus = append(tr.Consensus, ConsensusRecord{Episode: r.Episode, Step: r.Step,
				X: slices.Clone(r.X), Y: slices.Clone(r.Y), EveX0: slices.Clone(r.EveX0)})
		}
		return nil
	}
	for t := 0; t < s.T; t++ {
		if t&255 == 255 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r, err := s.step(ep, t)
		if err != nil {
			return nil, err
		}
		if err := put(r); err != nil {
			return nil, err
		}
	}
	return tr, put(s.final(ep))
}

func newRunner(p *plan.Plan, seed uint64, acc *Accumulator) (episodeRunner, error) {
	if acc.control {
		return newControlSim(p, seed, acc)
	}
	return newConsensusSim(p, seed, acc)
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
	// Build every worker's cores up front so configuration errors surface before any work.
	runners := make([]episodeRunner, workers)
	for w := range runners {
		if runners[w], err = newRunner(p, seed, acc); err != nil {
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
		go func(r episodeRunner) {
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
