package farm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/farm/kinds"
	"github.com/dpsim/dpsim/pkg/audit"
)

// A durable coordinator started again on the journal of a finished audit restores every chunk
// (none played, none drawn for a check) to the in-process outcome; another seed is refused there;
// and a journal whose manifest was removed restores nothing of the job it journaled into a job
// of another seed.
func TestDurableRestoresJournal(t *testing.T) {
	f := load(t, "audit-vehicle-structured", true)
	const trials = 4 * 2600 // 6 chunks of kinds.AuditChunk
	dir := filepath.Join(t.TempDir(), farm.JournalDir)
	play := func(seed uint64) (*audit.GameReport, *farm.Coordinator, error) {
		c := start(t, f, farm.Config{Spawn: 1, SpawnThreads: 1, Durable: dir})
		defer c.Close()
		got, err := kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
		if err != nil {
			return nil, c, err
		}
		return report(t, f.game, got), c, nil
	}
	fast := func(seed uint64) *audit.GameReport {
		o, err := audit.PlayFast(context.Background(), f.game, audit.FastOptions{Trials: trials, Seed: seed})
		require.NoError(t, err)
		return report(t, f.game, o)
	}
	got, c, err := play(9)
	require.NoError(t, err)
	require.Equal(t, fast(9), got)
	require.Equal(t, 6, c.Report().Chunks)
	require.Zero(t, c.Report().Restored)

	got, c, err = play(9)
	require.NoError(t, err)
	require.Equal(t, fast(9), got)
	require.Equal(t, 6, c.Report().Restored)
	require.Zero(t, c.Report().Chunks+c.Report().Verified, "a restored chunk is neither played nor checked")
	require.Equal(t, dir, c.Report().Journal)

	_, _, err = play(10)
	require.ErrorContains(t, err, "written by another command")

	require.NoError(t, os.Remove(filepath.Join(dir, "manifest.json")))
	got, c, err = play(10)
	require.NoError(t, err)
	require.Equal(t, fast(10), got)
	require.Zero(t, c.Report().Restored, "records of another job were restored")
	require.Equal(t, 6, c.Report().Chunks)
}
