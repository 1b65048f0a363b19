package audit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FastOptions.Chunk hands out every trial exactly once while the game plays, and changes
// nothing recorded: the trials it handed out, merged, give the report of the outcome PlayFast
// returns, which is the report of a game played without the hook.
func TestFastChunkHook(t *testing.T) {
	g := newGame(t, loadPlan(t, "audit-vehicle-structured"), GameOptions{})
	const seed, n = 23, 2500
	plain, err := PlayFast(context.Background(), g, FastOptions{Trials: n, Seed: seed, Workers: 2})
	require.NoError(t, err)

	seen := g.NewOutcome(EngineFast, seed, n)
	var mu sync.Mutex
	calls := 0
	hooked, err := PlayFast(context.Background(), g, FastOptions{Trials: n, Seed: seed, Workers: 2, Chunk: func(part *Outcome) {
		mu.Lock()
		calls++
		mu.Unlock()
		seen.Merge(part)
	}})
	require.NoError(t, err)
	require.Equal(t, (2*n+ChunkTrials-1)/ChunkTrials, calls, "one call per chunk")
	require.Equal(t, 2*n, seen.Episodes)
	plain.Elapsed, hooked.Elapsed, seen.Elapsed = time.Second, time.Second, time.Second
	want, err := g.Analyze(plain, ReportOptions{})
	require.NoError(t, err)
	got, err := g.Analyze(hooked, ReportOptions{})
	require.NoError(t, err)
	require.Equal(t, want, got, "the hook changed the outcome")
	live, err := g.Analyze(seen, ReportOptions{})
	require.NoError(t, err)
	require.Equal(t, want, live, "the trials handed out are not the game's")
}
