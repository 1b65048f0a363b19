package farm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// spans cuts 0..total-1 into chunks of size.
func spans(total, size int) []span {
	var out []span
	for lo := 0; lo < total; lo += size {
		out = append(out, span{lo, min(lo+size, total)})
	}
	return out
}

// runSpans cuts a point's runs into chunks of size, except that a traced episode (when traces
// are kept) is a chunk of its own: its records are large (a consensus episode's are (T+1) x 3N
// values), and an answer must fit in one NATS message (Conn.MaxPayload, 1 MB by default).
func runSpans(runs, size int, traces bool, traced trace.Episodes) []span {
	var out []span
	for lo := 0; lo < runs; {
		if traces && traced.Traced(lo) {
			out = append(out, span{lo, lo + 1})
			lo++
			continue
		}
		hi := min(lo+size, runs) // the traced episodes are the first ones: none among lo..hi-1
		out = append(out, span{lo, hi})
		lo = hi
	}
	return out
}

// AuditChunk is the number of consecutive trials of an audit a worker plays at a time: four of
// PlayFast's chunks (audit.ChunkTrials), about 20 ms of a core for the vehicle. A chunk costs the
// coordinator a request, an answer to decode and fold and a lease whatever its size, and with
// chunks of 1,024 trials that cost was a tenth of a core (two workers then reached 1.68-1.72x
// one; 1.94x with 4,096).
const AuditChunk = 4 * audit.ChunkTrials

// Audit plays the game g of point (its index in the scenario's Expand()) with the workers, as
// audit.PlayFast plays it in-process: trials per value of the secret bit, the game built from
// opts (the worker builds the same), chunks of AuditChunk trials. The outcome is PlayFast's, bit
// for bit, for any number of workers; progress (if set) hears the trials folded.
func (c *Coordinator) Audit(ctx context.Context, point int, g *audit.Game, opts audit.GameOptions, seed uint64, trials int, progress func(done, total int)) (*audit.Outcome, error) {
	if trials < 1 {
		return nil, fmt.Errorf("farm: audit: %d trials per value of the secret bit, want >= 1", trials)
	}
	j := c.newJob(KindAudit, point)
	j.Seeds, j.Game = sim.NewSeeds(seed), opts
	start := time.Now()
	out := g.NewOutcome(audit.EngineFast, seed, trials)
	total := 2 * trials
	report := func(done int) {
		if progress != nil {
			progress(done, total)
		}
	}
	results, err := c.play(ctx, j, spans(total, AuditChunk), func(a *answer) error { return out.CheckChunk(a.Lo, a.Hi, a.Scores) }, report)
	for _, a := range results { // in chunk order; when the job failed, the chunks decided (an interrupted audit reports them)
		if a != nil {
			if ferr := out.AddChunk(a.Lo, a.Hi, a.Scores); ferr != nil && err == nil {
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

// Run plays the episodes of plan p (point: its index in the scenario's Expand()) with the
// workers and returns what engine.Run returns for the same arguments, bit for bit: the chunks of
// engine.PlayChunk folded by engine.Fold (opts.Workers is each worker's --threads instead).
func (c *Coordinator) Run(ctx context.Context, point int, p *plan.Plan, seeds sim.Seeds, opts engine.Options) (*metrics.Results, *trace.Traces, error) {
	f, err := engine.NewFold(ctx, p, seeds, opts)
	if err != nil {
		return nil, nil, err
	}
	j := c.newJob(KindRun, point)
	j.Seeds, j.AgentsPerHost = seeds, opts.AgentsPerHost
	j.Traces, j.TraceEpisodes = opts.KeepTraces || opts.TraceSink != nil, opts.TraceEpisodes.Int()
	results, err := c.play(ctx, j, runSpans(f.Runs(), c.cfg.ChunkEpisodes, j.Traces, opts.TraceEpisodes), func(a *answer) error {
		if a.Run == nil || a.Run.Lo != a.Lo || a.Run.Hi != a.Hi {
			return errors.New("the chunk's episodes are not the ones issued")
		}
		eps, err := f.Decode(a.Run)
		a.checked = eps
		return err
	}, nil)
	for _, a := range results { // in chunk order (the trace sink's too)
		if a == nil {
			continue
		}
		if ferr := f.Add(a.Run, a.checked.([]*metrics.Episode)); ferr != nil {
			err = ferr // the sink failed: the point stops with it, as engine.Run's does
			break
		}
	}
	return f.Finish(err)
}
