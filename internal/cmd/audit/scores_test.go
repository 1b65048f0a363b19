package auditcmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
)

// TestScoresCommandRoundTrip: dpsim audit --write-scores, then dpsim audit --scores on the file:
// every bound of the --json report is the audit's, and the table names the file.
func TestScoresCommandRoundTrip(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.jsonl")
	stdout, _, err := runIn(t, scenarioPath("audit-consensus-laplace"), "--trials", "1000", "--seed", "5", "--json", "--write-scores", file)
	require.NoError(t, err)
	want := decodeReport(t, stdout)
	fi, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	stdout, _, err = runIn(t, "--scores", file, "--epsilon", strconvG(want.EpsilonClaimed), "--mechanism", want.Mechanism, "--json")
	require.NoError(t, err)
	got := decodeReport(t, stdout)
	for _, b := range audit.Bounds {
		require.Equal(t, b.OfReport(want), b.OfReport(got), b.JSONKey)
	}
	require.Equal(t, want.Verdict, got.Verdict)
	require.Equal(t, audit.EngineFile, got.Engine)
	stdout, _, err = runIn(t, "--scores", file, "--epsilon", strconvG(want.EpsilonClaimed))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^scores +`+regexp.QuoteMeta(file)+` \(1000 trials with bit 0, 1000 with bit 1\)$`, stdout)
	require.Regexp(t, `(?m)^claim +eps = 1, delta = 0, laplace$`, stdout)
	require.Regexp(t, `(?m)^verdict +CONSISTENT`, stdout)
}

// TestScoresCommandUsage: --scores takes no scenario and none of a game's flags, and needs a claim.
func TestScoresCommandUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scores", "x.csv"}, "--scores needs --epsilon E > 0, the claimed epsilon"},
		{[]string{"--scores", "x.csv", "--epsilon", "1", "--mechanism", "gaussian"}, "--mechanism gaussian needs --delta D > 0"},
		{[]string{"--scores", "x.csv", "--epsilon", "1", "--mechanism", "cauchy"}, "--mechanism:"},
		{[]string{"--scores", "x.csv", "--epsilon", "1", "--trials", "100"}, "--scores: [--trials] play a game"},
		{[]string{"--scores", "x.csv", "--epsilon", "1", scenarioPath("audit-consensus-laplace")}, "give no SCENARIO"},
		{[]string{"--one-run", scenarioPath("audit-consensus-onerun"), "--write-scores", "x.csv"}, "--one-run plays one episode, not trials"},
		{[]string{scenarioPath("audit-consensus-laplace"), "--write-scores", "x.parquet"}, "--write-scores: audit: scores file x.parquet: want the extension .csv or .jsonl"},
	} {
		_, _, err := runIn(t, c.args...)
		require.ErrorIs(t, err, cli.ErrUsage, "%v", c.args)
		require.ErrorContains(t, err, c.want, "%v", c.args)
	}
	_, _, err := runIn(t, "--scores", filepath.Join(t.TempDir(), "none.csv"), "--epsilon", "1")
	require.ErrorContains(t, err, "none.csv")
}

func strconvG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
