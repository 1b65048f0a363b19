package auditrun

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// CheckSequential checks --sequential and --target.
func (o *Options) CheckSequential(set map[string]bool) error {
	if !o.Sequential {
		if set["target"] {
			return cli.UsageError("--target is the tightness at which --sequential stops: give --sequential")
		}
		return nil
	}
	switch {
	case !(o.Target >= 0 && o.Target <= 1):
		return cli.UsageError("--target %v: want a fraction of the claimed eps in (0, 1], e.g. 0.95", o.Target)
	case o.OneRun:
		return cli.UsageError("--sequential plays trials until the evidence decides: --one-run plays one episode")
	case o.Farm.Enabled():
		return cli.UsageError("--sequential weighs the trials as they come, in order: it plays in-process or over --engine wire, not with --dispatch")
	}
	return nil
}

// sequentialMonitor feeds the trials a player hands over (Feed.Chunk, in any order, from any
// goroutine) to the sequential test in the order of their pairs (trials 2k and 2k+1), and tells
// the player it has enough (Feed.Enough) once the test decided: the player stops cleanly, between
// chunks or groups of trials in flight. The decision depends on the pairs only, not on their order
// of arrival or the number of workers.
type sequentialMonitor struct {
	mu      sync.Mutex
	seq     *audit.Sequential
	pending map[uint64]*[2][]float64
	next    uint64
	cancel  context.CancelCauseFunc
	err     error
	pass    func(*audit.Outcome)
	// evidence, if set, receives the test's report at every look (the live view)
	evidence func(*audit.SequentialReport)
	// seen keeps every trial handed over: a player cancelled once the test decided need not
	// return what it played (the wire player does not).
	seen *audit.Outcome
}

func (m *sequentialMonitor) chunk(part *audit.Outcome) {
	if m.pass != nil {
		m.pass(part)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil || m.seq.Decision() != "" {
		return
	}
	m.seen.Merge(part)
	m.err = part.EachTrial(func(trial uint64, bit int, scores []float64) error {
		pr := trial / 2
		if pr < m.next {
			return nil
		}
		p := m.pending[pr]
		if p == nil {
			p = &[2][]float64{}
			m.pending[pr] = p
		}
		p[bit] = append([]float64(nil), scores...)
		return nil
	})
	if m.err != nil {
		m.cancel(m.err)
		return
	}
	for {
		p := m.pending[m.next]
		if p == nil || p[0] == nil || p[1] == nil {
			return
		}
		delete(m.pending, m.next)
		m.next++
		looks := m.seq.Looks()
		decided := m.seq.AddPair(p[0], p[1]) != ""
		if m.evidence != nil && m.seq.Looks() > looks {
			m.evidence(m.seq.Report(m.seq.Decision()))
		}
		if decided {
			return
		}
	}
}

// enough reports that the test decided.
func (m *sequentialMonitor) enough() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seq.Decision() != ""
}

// playSequential plays point k's game until the sequential test of its claim decides (or the
// trial cap, a.Trials per side, is reached) and returns the trials the decision rests on and the
// test's report. Interrupted, it returns what was played with the error, as play does.
func (a *Audit) playSequential(ctx context.Context, p Player, obs Observer, k int, g *audit.Game) (*audit.Outcome, *audit.SequentialReport, error) {
	c := g.Claim()
	eps, err := g.ClaimRun()
	if err != nil {
		return nil, nil, err
	}
	delta := c.Delta
	if c.Mechanism == privacy.Laplace {
		delta = 0 // as Analyze: a Laplace claim is pure eps-DP
	}
	seq, err := audit.NewSequential(g.ScoreNames(), audit.SequentialOptions{
		Claim: audit.Claim{Epsilon: eps, Delta: delta, Mechanism: c.Mechanism}, Confidence: a.PointConf, Target: a.Opts.Target, MaxPairs: a.Trials})
	if err != nil {
		return nil, nil, err
	}
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	m := &sequentialMonitor{seq: seq, pending: map[uint64]*[2][]float64{}, cancel: cancel, pass: obs.Chunk,
		seen: g.NewOutcome(a.Opts.Engine, a.Seed, min(a.Trials, 1<<16))}
	if obs.Evidence != nil {
		m.evidence = func(r *audit.SequentialReport) { obs.Evidence(k, r) }
	}
	start := time.Now()
	feed := Feed{Chunk: m.chunk, Enough: m.enough, Progress: func(done, total int) {
		if obs.Progress != nil {
			obs.Progress(k, done, total)
		}
	}}
	if obs.Begin != nil {
		obs.Begin(k)
	}
	a.Log.Info().Str("point", a.Points[k].Name).Str("engine", a.Opts.Engine).Int("max_trials", a.Trials).Float64("target", a.Opts.Target).
		Msg("playing the game sequentially: until the evidence decides")
	out, err := p.Play(pctx, k, g, a.Trials, feed)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.err != nil:
		return nil, nil, fmt.Errorf("sequential audit: %w", m.err)
	case err != nil:
		return out, seq.Report(audit.StopInterrupted), err
	case seq.Decision() == "":
		return nil, nil, fmt.Errorf("sequential audit: the player finished with %d of %d pairs in order", seq.Pairs(), a.Trials)
	}
	rep := seq.Report(seq.Decision())
	used, err := m.seen.Prefix(g, rep.TrialsUsed.Bit0)
	if err != nil {
		return nil, nil, err
	}
	used.Elapsed = time.Since(start)
	return used, rep, nil
}
