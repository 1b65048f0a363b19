package kinds

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// RunParams are a run job's parameters (farm.Job.Params, farm.EncodeParams): the run's seeds and the
// options of engine.Run that change what a chunk holds.
type RunParams struct {
	Seeds          sim.Seeds
	Traces         bool // keep the records of the traced episodes
	TraceEpisodes  int  // trace.Episodes.Int
	AgentsPerBlock int
}

// ChunkOptions are the options of engine.PlayChunk the parameters say (threads: its workers).
func (ps RunParams) ChunkOptions(threads int) engine.ChunkOptions {
	return engine.ChunkOptions{Workers: threads, Traces: ps.Traces, TraceEpisodes: trace.FirstEpisodes(ps.TraceEpisodes),
		AgentsPerBlock: ps.AgentsPerBlock}
}

// RunKind plays run jobs: a chunk's result is engine.PlayChunk's chunk, gob-encoded (EncodeChunk).
var RunKind farm.Kind = runKind{}

type runKind struct{}

func (runKind) Name() string { return RunName }

func (runKind) Prepare(j *farm.Job) (farm.Player, error) {
	var ps RunParams
	if err := farm.DecodeParams(j.Params, &ps); err != nil {
		return nil, err
	}
	p, err := Plan(j)
	if err != nil {
		return nil, err
	}
	return &runPlayer{plan: p, params: ps}, nil
}

type runPlayer struct {
	plan   *plan.Plan
	params RunParams
}

func (pl *runPlayer) Play(ctx context.Context, lo, hi, threads int) ([]byte, error) {
	c, err := engine.PlayChunk(ctx, pl.plan, pl.params.Seeds, lo, hi, pl.params.ChunkOptions(threads))
	if err != nil {
		return nil, err
	}
	return EncodeChunk(c)
}

// EncodeChunk is a run chunk's result: the chunk, gob-encoded (farm.Encode).
func EncodeChunk(c *engine.Chunk) ([]byte, error) { return farm.Encode(c) }

// runChecked is a run chunk's result checked: the chunk and its decoded episodes.
type runChecked struct {
	chunk *engine.Chunk
	eps   []*metrics.Episode
}

// runJudge checks a run chunk's episodes with the fold they go into.
type runJudge struct{ f *engine.Fold }

func (j runJudge) Check(lo, hi int, result []byte) (any, error) {
	var c engine.Chunk
	if err := farm.Decode(result, &c); err != nil {
		return nil, err
	}
	if c.Lo != lo || c.Hi != hi {
		return nil, errors.New("the chunk's episodes are not the ones issued")
	}
	eps, err := j.f.Decode(&c)
	return &runChecked{chunk: &c, eps: eps}, err
}

// Digest is a run chunk in a canonical form: its episodes (metrics.CanonicalEpisode: their gob
// bytes differ between processes), link counters and traces, the traces by episode, their values
// as fmt prints them, exactly.
func (runJudge) Digest(checked any) []byte {
	h := sha256.New()
	rc, _ := checked.(*runChecked)
	if rc == nil {
		return h.Sum(nil)
	}
	r := rc.chunk
	fmt.Fprintf(h, "run %d %d %d\n", r.Lo, r.Hi, len(r.Episodes))
	for _, e := range r.Episodes {
		c, err := metrics.CanonicalEpisode(e)
		if err != nil {
			c = append([]byte("undecodable:"), e...)
		}
		fmt.Fprintf(h, "%d:", len(c))
		h.Write(c)
	}
	fmt.Fprintf(h, "\nlinks %+v\n", r.Links)
	eps := make([]int, 0, len(r.Traces))
	for ep := range r.Traces {
		eps = append(eps, ep)
	}
	slices.Sort(eps)
	for _, ep := range eps {
		writeTrace(h, ep, r.Traces[ep])
	}
	return h.Sum(nil)
}

func writeTrace(w io.Writer, ep int, tr any) {
	fmt.Fprintf(w, "trace %d %+v\n", ep, tr)
}

// RunSpans cuts a point's runs into chunks of size, except that a traced episode (when traces
// are kept) is a chunk of its own: its records are large (a consensus episode's are (T+1) x 3N
// values), and an answer must fit in one NATS message (Conn.MaxPayload, 1 MB by default).
func RunSpans(runs, size int, traces bool, traced trace.Episodes) []farm.Span {
	var out []farm.Span
	for lo := 0; lo < runs; {
		if traces && traced.Traced(lo) {
			out = append(out, farm.Span{Lo: lo, Hi: lo + 1})
			lo++
			continue
		}
		hi := min(lo+size, runs) // the traced episodes are the first ones: none among lo..hi-1
		out = append(out, farm.Span{Lo: lo, Hi: hi})
		lo = hi
	}
	return out
}

// Run plays the episodes of plan p (point: its index in the scenario's Expand()) with c's
// workers and returns what engine.Run returns for the same arguments, bit for bit: the chunks of
// engine.PlayChunk folded by engine.Fold (opts.Workers is each worker's --threads instead).
func Run(c *farm.Coordinator, ctx context.Context, point int, p *plan.Plan, seeds sim.Seeds, opts engine.Options) (*metrics.Results, *trace.Traces, error) {
	f, err := engine.NewFold(ctx, p, seeds, opts)
	if err != nil {
		return nil, nil, err
	}
	ps := RunParamsOf(seeds, opts)
	params, err := farm.EncodeParams(ps)
	if err != nil {
		return nil, nil, err
	}
	results, err := c.Play(ctx, farm.Work{Kind: RunKind, Point: point, Params: params,
		Spans: RunSpans(f.Runs(), c.ChunkEpisodes(), ps.Traces, opts.TraceEpisodes), Judge: runJudge{f}})
	for _, r := range results { // in chunk order (the trace sink's too)
		if r == nil {
			continue
		}
		rc := r.Checked.(*runChecked)
		if ferr := f.Add(rc.chunk, rc.eps); ferr != nil {
			err = ferr // the sink failed: the point stops with it, as engine.Run's does
			break
		}
	}
	return f.Finish(err)
}

// RunParamsOf are the parameters of a run job of seeds and the options of engine.Run (what Run
// sends its workers, and what a shard of the run plays with).
func RunParamsOf(seeds sim.Seeds, opts engine.Options) RunParams {
	return RunParams{Seeds: seeds, AgentsPerBlock: opts.AgentsPerBlock,
		Traces: opts.KeepTraces || opts.TraceSink != nil, TraceEpisodes: opts.TraceEpisodes.Int()}
}

// PlayRunChunk plays episodes lo..hi-1 of p in-process as a worker plays them (the run kind's
// player) and returns the result a worker would answer: a shard of the run (dpsim run --shard)
// keeps it for dpsim merge.
func PlayRunChunk(ctx context.Context, p *plan.Plan, ps RunParams, lo, hi, threads int) ([]byte, error) {
	return (&runPlayer{plan: p, params: ps}).Play(ctx, lo, hi, threads)
}

// FoldRun folds the results of the chunks spans (result(i): chunk i's, in chunk order) as Run
// folds its workers' answers - each checked by the coordinator's judge, then engine.Fold - and
// returns what engine.Run returns for the same arguments, bit for bit (dpsim merge of a run's
// shards).
func FoldRun(ctx context.Context, p *plan.Plan, seeds sim.Seeds, opts engine.Options, spans []farm.Span, result func(i int) ([]byte, error)) (*metrics.Results, *trace.Traces, error) {
	f, err := engine.NewFold(ctx, p, seeds, opts)
	if err != nil {
		return nil, nil, err
	}
	if f.Runs() != spanEnd(spans) {
		return f.Finish(fmt.Errorf("chunks of %d episodes for a point of %d", spanEnd(spans), f.Runs()))
	}
	j := runJudge{f}
	for i, sp := range spans {
		data, err := result(i)
		if err == nil {
			var checked any
			if checked, err = j.Check(sp.Lo, sp.Hi, data); err == nil {
				rc := checked.(*runChecked)
				err = f.Add(rc.chunk, rc.eps)
			}
		}
		if err != nil {
			return f.Finish(fmt.Errorf("episodes %d..%d: %w", sp.Lo, sp.Hi-1, err))
		}
	}
	return f.Finish(nil)
}

// spanEnd is the end of the last of spans (0: none).
func spanEnd(spans []farm.Span) int {
	if len(spans) == 0 {
		return 0
	}
	return spans[len(spans)-1].Hi
}
