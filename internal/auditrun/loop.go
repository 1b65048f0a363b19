package auditrun

import (
	"context"
	"fmt"

	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/report"
)

// Player plays the distinguishing game of one point: 2 trials episodes (trials per value of the
// secret bit, the bits audit.Bit(seed, e)), scored and joined with their bits. The three
// players - in-process (FastPlayer), the worker farm (Farm) and the real processes over NATS
// (WirePlayer) - play bit-identical episodes for the same seed, so the loop above them and
// everything it feeds are the same whoever plays.
//
// Interrupted (ctx done), a player may return the trials it finished with the error: the loop
// analyses those and says they are partial.
type Player interface {
	Play(ctx context.Context, point int, g *audit.Game, trials int, feed Feed) (*audit.Outcome, error)
}

// Feed is what a player hands over while it plays.
type Feed struct {
	// Progress receives the episodes played of the total (never nil).
	Progress func(done, total int)
	// Chunk, if set, receives the trials scored so far (the live view); nil costs the player
	// no extra work. A player that cannot feed them (the farm) ignores it.
	Chunk func(*audit.Outcome)
	// Enough, if set, says the caller has the trials it needs (the sequential audit decided):
	// the player stops at its next clean boundary - a chunk (fast engine), a group of trials in
	// flight (wire engine) - and returns what it played, without an error.
	Enough func() bool
}

// Annotator is a player that adds what it knows of a point to its report: the farm its
// dispatch, the wire player its processes, their problems and its notes. complete is false for
// an interrupted point's report.
type Annotator interface {
	Annotate(rep *audit.GameReport, complete bool)
}

// Observer receives the point loop's events: the outputs (progress bar, live view, files,
// printing) are observers of the loop, not part of it. Every field may be nil.
type Observer struct {
	// Begin is called before point k is played.
	Begin func(k int)
	// Progress receives the episodes played of point k.
	Progress func(k, done, total int)
	// Chunk receives the trials scored so far (see Feed.Chunk).
	Chunk func(*audit.Outcome)
	// Evidence receives the sequential test's evidence of point k at each look (--sequential).
	Evidence func(k int, rep *audit.SequentialReport)
	// Analysed receives point k's report as analysed, before the players' notes.
	Analysed func(k int, rep *audit.GameReport)
	// Done receives point k's final report (also an interrupted one); an error stops the audit.
	Done func(k int, rep *audit.GameReport) error
	// Partial receives the reports of an interrupted audit: the points done and the partial one.
	Partial func(reports []*audit.GameReport)
}

// PlayAll plays and analyses the game of every point in turn with p (each report handed to
// obs.Done as soon as it is ready) and returns the reports and the names of the points that
// show a violation.
func (a *Audit) PlayAll(ctx context.Context, p Player, obs Observer) (reports []*audit.GameReport, violations []string, err error) {
	for k, g := range a.Games {
		rep, err := a.playPoint(ctx, p, obs, k, g, reports)
		if err != nil {
			return nil, nil, err
		}
		if rep.Verdict == audit.Violation {
			violations = append(violations, a.Points[k].Name)
		}
		reports = append(reports, rep)
	}
	return reports, violations, nil
}

// playPoint plays and analyses the game g of point k, notes its share of the sweep's confidence
// and hands the report to obs.Done. Interrupted with episodes played, it reports those (after
// done, the reports of the earlier points) and returns an error.
func (a *Audit) playPoint(ctx context.Context, p Player, obs Observer, k int, g *audit.Game, done []*audit.GameReport) (*audit.GameReport, error) {
	n, pt := len(a.Points), a.Points[k]
	var out *audit.Outcome
	var seq *audit.SequentialReport
	var err error
	if a.Opts.Sequential {
		out, seq, err = a.playSequential(ctx, p, obs, k, g)
	} else {
		out, err = a.play(ctx, p, obs, k, g)
	}
	interrupted := err != nil && ctx.Err() != nil && out != nil && out.Episodes > 0
	if err != nil && !interrupted {
		return nil, PointErr(n, k, pt, err)
	}
	rep, aerr := g.Analyze(out, a.ReportOptions())
	if rep != nil && seq != nil {
		rep.ApplySequential(seq)
	}
	if interrupted {
		return nil, a.interrupted(ctx, p, obs, k, out, rep, aerr, done)
	}
	if aerr != nil {
		return nil, PointErr(n, k, pt, aerr)
	}
	if err := a.WriteScores(k, out); err != nil {
		return nil, PointErr(n, k, pt, err)
	}
	rep.Scenario = pt.Name
	if obs.Analysed != nil {
		obs.Analysed(k, rep)
	}
	if an, ok := p.(Annotator); ok {
		an.Annotate(rep, true)
	}
	for _, w := range report.MergePlanWarnings(pt.Warnings, g.Plan) { // in audit.json and report.md, as on the terminal
		rep.Notes = append(rep.Notes, "scenario warning: "+w)
	}
	if n > 1 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("sweep point %d of %d: its bounds hold jointly at %g, so that those of all %d points hold jointly at %g (Bonferroni)",
			k, n, a.PointConf, n, a.Conf))
	}
	if obs.Done != nil {
		if err := obs.Done(k, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// play plays the episodes of game g (point k) with p, its progress and trials handed to obs.
func (a *Audit) play(ctx context.Context, p Player, obs Observer, k int, g *audit.Game) (*audit.Outcome, error) {
	feed := Feed{Chunk: obs.Chunk, Progress: func(done, total int) {
		if obs.Progress != nil {
			obs.Progress(k, done, total)
		}
	}}
	if obs.Begin != nil {
		obs.Begin(k)
	}
	a.Log.Info().Str("point", a.Points[k].Name).Str("engine", a.Opts.Engine).Int("trials", a.Trials).
		Str("audited", string(g.Audited)).Str("calibrated", string(g.Calibrated)).Msg("playing the game")
	return p.Play(ctx, k, g, a.Trials, feed)
}

// interrupted handles Ctrl-C during point k: what was played (out, analysed as rep, or aerr when too
// few episodes) is handed to obs.Done, marked as such, and to obs.Partial after done; the error it
// returns makes the exit status say the audit did not finish.
func (a *Audit) interrupted(ctx context.Context, p Player, obs Observer, k int, out *audit.Outcome, rep *audit.GameReport, aerr error, done []*audit.GameReport) error {
	n, pt := len(a.Points), a.Points[k]
	if aerr != nil {
		return PointErr(n, k, pt, fmt.Errorf("interrupted after %d of %d episodes, too few to analyse: %w", out.Episodes, 2*a.Trials, aerr))
	}
	rep.Scenario = pt.Name
	if an, ok := p.(Annotator); ok {
		an.Annotate(rep, false)
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("INTERRUPTED: %d of %d episodes were played; the bounds use those only", out.Episodes, 2*a.Trials))
	if obs.Done != nil {
		if werr := obs.Done(k, rep); werr != nil {
			return werr
		}
	}
	if obs.Partial != nil {
		obs.Partial(append(done, rep))
	}
	return fmt.Errorf("audit interrupted (%v) after %d of %d episodes of point %s: partial results written", context.Cause(ctx), out.Episodes, 2*a.Trials, pt.Name)
}
