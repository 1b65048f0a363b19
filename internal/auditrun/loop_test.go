package auditrun

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/audit"
)

// newTestAudit builds the audit of a shipped scenario with the settings the command's defaults
// give, over trials trials per bit.
func newTestAudit(t *testing.T, name string, trials int, o Options) *Audit {
	t.Helper()
	o.ScenarioPath, o.Trials, o.Seed, o.SeedSet = dpsimtest.Scenario(name), trials, 7, true
	if o.Engine == "" {
		o.Engine = audit.EngineFast
	}
	o.Selection, o.EpisodesPerTrial = audit.SelectSplit, max(o.EpisodesPerTrial, 1)
	s, seed, err := Load(&o, zerolog.Nop())
	require.NoError(t, err)
	a, err := New(&o, s, seed, zerolog.Nop())
	require.NoError(t, err)
	return a
}

// The point loop over the in-process player: every point is begun, its progress reaches 2N,
// its report is analysed and handed over once, in order, and equals what the game's own
// analysis of audit.PlayFast's outcome gives.
func TestPlayAllFast(t *testing.T) {
	const trials = 2000
	a := newTestAudit(t, "audit-consensus-laplace", trials, Options{EpisodesSweep: []int{1, 2}})
	require.Len(t, a.Points, 2)
	var begun, done []int
	last := map[int]int{}
	obs := Observer{
		Begin: func(k int) { begun = append(begun, k) },
		Progress: func(k, d, total int) {
			require.Equal(t, 2*trials, total)
			require.GreaterOrEqual(t, d, last[k], "progress only grows")
			last[k] = d
		},
		Done: func(k int, rep *audit.GameReport) error {
			require.Equal(t, a.Points[k].Name, rep.Scenario)
			done = append(done, k)
			return nil
		},
	}
	reports, violations, err := a.PlayAll(context.Background(), FastPlayer{Seed: a.Seed, Workers: 2}, obs)
	require.NoError(t, err)
	require.Empty(t, violations)
	require.Equal(t, []int{0, 1}, begun)
	require.Equal(t, []int{0, 1}, done)
	require.Equal(t, map[int]int{0: 2 * trials, 1: 2 * trials}, last)
	require.Len(t, reports, 2)
	for k, rep := range reports {
		require.Equal(t, 2*trials*(k+1), rep.Episodes, "point %d plays k+1 episodes per trial", k)
		require.Equal(t, audit.Consistent, rep.Verdict)
		require.Contains(t, rep.Notes[len(rep.Notes)-1], "(Bonferroni)")
		out, err := audit.PlayFast(context.Background(), a.Games[k], audit.FastOptions{Trials: trials, Seed: a.Seed, Workers: 1})
		require.NoError(t, err)
		want, err := a.Games[k].Analyze(out, a.ReportOptions())
		require.NoError(t, err)
		require.Equal(t, want.EpsilonLBCP, rep.EpsilonLBCP, "point %d", k)
		require.Equal(t, want.EpsilonLBFDP, rep.EpsilonLBFDP, "point %d", k)
	}
	sum, ok := a.Summary(reports, violations).(*Output)
	require.True(t, ok)
	require.Equal(t, audit.Consistent, sum.Verdict)
}

// A player whose context is cancelled stops the loop with an error that says so, and no report
// of a later point is made; with trials played, the partial report is handed over marked.
func TestPlayAllCancelled(t *testing.T) {
	a := newTestAudit(t, "audit-vehicle-structured", 5_000_000, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var partial []*audit.GameReport
	obs := Observer{Partial: func(reps []*audit.GameReport) { partial = reps }}
	start := time.Now()
	reports, _, err := a.PlayAll(ctx, FastPlayer{Seed: a.Seed, Workers: 2}, obs)
	require.Error(t, err)
	require.Nil(t, reports)
	require.Less(t, time.Since(start), 20*time.Second, "the loop stops soon after the cancellation")
	t.Logf("%v", err)
	require.ErrorContains(t, err, "context deadline exceeded", "the error names why the loop stopped")
	if len(partial) == 1 {
		require.Contains(t, err.Error(), "audit interrupted")
		require.Contains(t, partial[0].Notes[len(partial[0].Notes)-1], "INTERRUPTED:")
	}
}

// A player's annotations reach the report of a complete point, before the sweep's note.
func TestPlayAllAnnotator(t *testing.T) {
	a := newTestAudit(t, "audit-consensus-laplace", 1000, Options{})
	p := &notingPlayer{FastPlayer: FastPlayer{Seed: a.Seed, Workers: 2}}
	reports, _, err := a.PlayAll(context.Background(), p, Observer{})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, p.complete)
	require.Contains(t, reports[0].Notes, "noted by the player")
}

type notingPlayer struct {
	FastPlayer
	complete []bool
}

func (p *notingPlayer) Annotate(rep *audit.GameReport, complete bool) {
	p.complete = append(p.complete, complete)
	rep.Notes = append(rep.Notes, "noted by the player")
}

// The plans' warnings (here the paper graph's weight sums of 1) are the audit's, once for all
// the points, as dpsim run shows them.
func TestAuditWarnings(t *testing.T) {
	a := newTestAudit(t, "audit-consensus-laplace", 10, Options{EpisodesSweep: []int{1, 2}})
	require.Len(t, a.Warnings, 1, "%q", a.Warnings)
	require.Contains(t, a.Warnings[0], "agents 1, 4, 6, 9 (0-based, as x0 and agent.N) have edge-weight sums >= 1")
	// and each point's report (audit.json, report.md) says it too
	reports, _, err := a.PlayAll(context.Background(), FastPlayer{Seed: a.Seed, Workers: 2}, Observer{})
	require.NoError(t, err)
	for _, rep := range reports {
		require.Contains(t, rep.Notes, "scenario warning: "+a.Warnings[0], rep.Scenario)
	}
}
