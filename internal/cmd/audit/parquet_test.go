package auditcmd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/auditrun"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
)

// TestParquetScores: --parquet writes OUT/scores.parquet (scores-pNN.parquet per sweep point),
// 0600, holding the trials --write-scores writes, trial for trial and score for score (the
// float64 bits); without --out, or with --one-run, it is a usage error.
func TestParquetScores(t *testing.T) {
	dir := t.TempDir()
	out, csv := filepath.Join(dir, "out"), filepath.Join(dir, "s.csv")
	_, _, err := runIn(t, scenarioPath("audit-consensus-laplace"), "--trials", "300", "--seed", "7", "--out", out, "--parquet",
		"--write-scores", csv, "--episodes-per-trial-sweep", "1,2")
	require.NoError(t, err)
	for k := range 2 {
		pq := filepath.Join(out, auditrun.ScoresPath(auditrun.ParquetScores, 2, k))
		fi, err := os.Stat(pq)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		got, err := auditrun.ReadScoresFile(pq, 0)
		require.NoError(t, err)
		want, err := auditrun.ReadScoresFile(auditrun.ScoresPath(csv, 2, k), 0)
		require.NoError(t, err)
		require.Equal(t, want.ScoreNames(), got.ScoreNames())
		require.Equal(t, trialsOf(t, want), trialsOf(t, got), "point %d", k)
		require.Len(t, trialsOf(t, got), 600)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{scenarioPath("audit-consensus-laplace"), "--parquet"}, "--parquet writes OUT/scores.parquet: give --out"},
		{[]string{"--one-run", scenarioPath("audit-consensus-onerun"), "--parquet", "--out", dir}, "--one-run plays one episode, not trials"},
		{[]string{"--scores", csv, "--epsilon", "1", "--parquet"}, "--scores: [--parquet] play a game"},
	} {
		_, _, err := runIn(t, c.args...)
		require.ErrorIs(t, err, cli.ErrUsage, "%v", c.args)
		require.ErrorContains(t, err, c.want, "%v", c.args)
	}
}

// trial is one row of a scores file.
type trial struct {
	n      uint64
	bit    int
	scores []float64
}

func trialsOf(t *testing.T, o *audit.Outcome) []trial {
	var out []trial
	require.NoError(t, o.EachTrial(func(n uint64, bit int, s []float64) error {
		out = append(out, trial{n, bit, append([]float64(nil), s...)})
		return nil
	}))
	return out
}
