package auditcmd

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// TestScoresCommandRoundTrip: dpsim audit --write-scores, then dpsim audit --scores on the file:
// every bound of the --json report is the audit's, and the table names the file; in every
// format.
func TestScoresCommandRoundTrip(t *testing.T) {
	for _, ext := range []string{".csv", ".jsonl", ".parquet"} {
		t.Run(ext, func(t *testing.T) { scoresRoundTrip(t, ext) })
	}
}

func scoresRoundTrip(t *testing.T, ext string) {
	file := filepath.Join(t.TempDir(), "s"+ext)
	stdout, _, err := runIn(t, scenarioPath("audit-consensus-laplace"), "--trials", "1000", "--seed", "5", "--json", "--write-scores", file)
	require.NoError(t, err)
	want := decodeReport(t, stdout)
	fi, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	stdout, _, err = runIn(t, "--scores", file, "--epsilon", strconvG(want.EpsilonClaimed), "--mechanism", want.Mechanism, "--json")
	require.NoError(t, err)
	got := decodeReport(t, stdout)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &m))
	require.NotContains(t, m, "pair", "a scores file has no pair")
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
		{[]string{scenarioPath("audit-consensus-laplace"), "--write-scores", "x.txt"}, "--write-scores: audit: scores file x.txt: want the extension .csv, .jsonl, .parquet or .json (the canary layout)"},
		{[]string{scenarioPath("audit-consensus-laplace"), "--write-scores", "x.json"}, "--write-scores: audit: .json is the canary layout, read only: write the trials as .csv, .jsonl or .parquet"},
		{[]string{"--scores", "x.csv", "--epsilon", "1", "--episodes-per-trial", "0"}, "--episodes-per-trial 0: want 1..65536 episodes per trial"},
	} {
		_, _, err := runIn(t, c.args...)
		require.ErrorIs(t, err, cli.ErrUsage, "%v", c.args)
		require.ErrorContains(t, err, c.want, "%v", c.args)
	}
	_, _, err := runIn(t, "--scores", filepath.Join(t.TempDir(), "none.csv"), "--epsilon", "1")
	require.ErrorContains(t, err, "none.csv")
}

func strconvG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// gaussianScores writes a CSV scores file of n trials per bit: a score N(0, 1) under bit 0 and
// N(mu, 1) under bit 1, the likelihood ratio of a mu-GDP mechanism.
func gaussianScores(t *testing.T, n int, mu float64) string {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	b := []byte("trial,bit,s\n")
	for i := 0; i < 2*n; i++ {
		b = fmt.Appendf(b, "%d,%d,%s\n", i, i%2, strconvG(float64(i%2)*mu+r.NormFloat64()))
	}
	path := filepath.Join(t.TempDir(), "g.csv")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// TestScoresCommandEpisodes: --scores with --episodes-per-trial K judges the trials against the
// claim composed over K episodes (audit.ComposeClaim), and says so - the per-episode claim and the
// composed one - in the table and the JSON; K = 1 is the claim itself, the output unchanged.
func TestScoresCommandEpisodes(t *testing.T) {
	file := gaussianScores(t, 2000, 1.5)
	args := []string{"--scores", file, "--epsilon", "1", "--delta", "1e-5", "--mechanism", "gaussian"}
	plain, _, err := runIn(t, append(args, "--json")...)
	require.NoError(t, err)
	one, _, err := runIn(t, append(args, "--json", "--episodes-per-trial", "1")...)
	require.NoError(t, err)
	require.Equal(t, plain, one, "K = 1: the claim itself")
	r1 := decodeReport(t, one)
	require.Equal(t, 1, r1.EpisodesPerTrial)
	require.Equal(t, 1.0, r1.EpsilonClaimedRun)
	require.Equal(t, audit.Violation, r1.Verdict, "mu = 1.5 is above the claim's mu (about 0.3 at eps 1, delta 1e-5)")

	out, _, err := runIn(t, append(args, "--json", "--episodes-per-trial", "4")...)
	require.NoError(t, err)
	r4 := decodeReport(t, out)
	want, err := audit.ComposeClaim(privacy.Gaussian, 1, 1e-5, 4)
	require.NoError(t, err)
	require.Equal(t, 4, r4.EpisodesPerTrial)
	require.Equal(t, 1.0, r4.EpsilonClaimed, "the per-episode claim")
	require.Equal(t, want, r4.EpsilonClaimedRun, "the composed claim")
	require.Greater(t, want, 1.0)
	require.Equal(t, audit.Violation, r4.VerdictEpisode, "the per-episode claim alone is violated")
	for _, b := range audit.Bounds {
		require.Equal(t, b.OfReport(r1), b.OfReport(r4), "the bounds do not depend on the claim: %s", b.JSONKey)
	}
	require.Contains(t, strings.Join(r4.Notes, "\n"), "4 episodes per trial: each trial of the file played 4 episodes")

	text, _, err := runIn(t, append(args, "--episodes-per-trial", "4")...)
	require.NoError(t, err)
	require.Regexp(t, `(?m)^claim +eps = 1, delta = 1e-05, gaussian per episode; 4 episodes per trial: composed eps_run = `+
		regexp.QuoteMeta(strconv.FormatFloat(want, 'g', 4, 64))+` \(the verdict's\)$`, text)
}

// pandasRow is a row of the Parquet file pandas' to_parquet writes of a DataFrame with the
// columns llr (float32), bit (int32) and trial (int64): another order, an INT32 bit, a FLOAT score.
type pandasRow struct {
	LLR   float32 `parquet:"llr"`
	Bit   int32   `parquet:"bit"`
	Trial int64   `parquet:"trial"`
}

// TestScoresCommandForeignParquet: a Parquet file written by another tool (parquet-go's generic
// writer, columns as pandas writes them) is audited, to the bounds of the same trials as CSV.
func TestScoresCommandForeignParquet(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	rows := make([]pandasRow, 1000)
	csv := []byte("trial,bit,llr\n")
	for i := range rows {
		rows[i] = pandasRow{LLR: float32(float64(i%2)*3 + r.NormFloat64()), Bit: int32(i % 2), Trial: int64(5000 - i)}
		csv = fmt.Appendf(csv, "%d,%d,%s\n", rows[i].Trial, rows[i].Bit, strconvG(float64(rows[i].LLR)))
	}
	pq := filepath.Join(dir, "scores.parquet")
	f, err := os.Create(pq)
	require.NoError(t, err)
	w := parquet.NewGenericWriter[pandasRow](f)
	_, err = w.Write(rows)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scores.csv"), csv, 0o600))

	var reports []*audit.GameReport
	for _, name := range []string{"scores.parquet", "scores.csv"} {
		out, _, err := runIn(t, "--scores", filepath.Join(dir, name), "--epsilon", "1", "--json")
		require.NoError(t, err, name)
		reports = append(reports, decodeReport(t, out))
	}
	require.Equal(t, "llr", reports[0].Score)
	require.Equal(t, audit.Violation, reports[0].Verdict, "bit 1 shifts the score by 3: far beyond eps = 1")
	for _, b := range audit.Bounds {
		require.Equal(t, b.OfReport(reports[1]), b.OfReport(reports[0]), b.JSONKey)
	}
	text, _, err := runIn(t, "--scores", pq, "--epsilon", "1")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^scores +`+regexp.QuoteMeta(pq)+` \(500 trials with bit 0, 500 with bit 1\)$`, text)
}

// canaryRow is a row of a Parquet file of the canary layout: the shorter column ends in nulls.
type canaryRow struct {
	In  *float64 `parquet:"in_canary_scores,optional"`
	Out *float64 `parquet:"out_canary_scores,optional"`
}

// TestScoresCommandCanary: dpsim audit --scores on a file of the canary layout - CSV columns, a
// .json object, Parquet columns, arrays of unequal lengths - prints the bounds of the same
// trials as a per-trial CSV (trial 2i bit 0 out[i], 2i+1 bit 1 in[i]), its one score named
// canary_score.
func TestScoresCommandCanary(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(9, 10))
	in, out := make([]float64, 700), make([]float64, 760)
	for i := range in {
		in[i] = 1.5 + r.NormFloat64()
	}
	for i := range out {
		out[i] = r.NormFloat64()
	}
	perTrial := []byte("trial,bit,canary_score\n")
	csv := []byte("out_canary_scores,in_canary_scores\n")
	rows := make([]canaryRow, len(out))
	for i := range out {
		perTrial = fmt.Appendf(perTrial, "%d,0,%s\n", 2*i, strconvG(out[i]))
		rows[i].Out = &out[i]
		if i < len(in) {
			perTrial = fmt.Appendf(perTrial, "%d,1,%s\n", 2*i+1, strconvG(in[i]))
			csv = fmt.Appendf(csv, "%s,%s\n", strconvG(out[i]), strconvG(in[i]))
			rows[i].In = &in[i]
		} else {
			csv = fmt.Appendf(csv, "%s,\n", strconvG(out[i]))
		}
	}
	js, err := json.Marshal(map[string][]float64{"in_canary_scores": in, "out_canary_scores": out})
	require.NoError(t, err)
	f, err := os.Create(filepath.Join(dir, "c.parquet"))
	require.NoError(t, err)
	w := parquet.NewGenericWriter[canaryRow](f)
	_, err = w.Write(rows)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
	for name, b := range map[string][]byte{"trials.csv": perTrial, "c.csv": csv, "c.json": js} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	args := []string{"--epsilon", "1", "--delta", "1e-5", "--json"}
	stdout, _, err := runIn(t, append([]string{"--scores", filepath.Join(dir, "trials.csv")}, args...)...)
	require.NoError(t, err)
	want := decodeReport(t, stdout)
	require.Equal(t, audit.Violation, want.Verdict, "mu = 1.5 is above eps = 1's")
	for _, name := range []string{"c.csv", "c.json", "c.parquet"} {
		path := filepath.Join(dir, name)
		stdout, _, err := runIn(t, append([]string{"--scores", path}, args...)...)
		require.NoError(t, err, name)
		got := decodeReport(t, stdout)
		require.Equal(t, audit.CanaryScore, got.Score, name)
		for _, b := range audit.Bounds {
			require.Equal(t, b.OfReport(want), b.OfReport(got), "%s %s", name, b.JSONKey)
		}
		require.Equal(t, want.Verdict, got.Verdict, name)
		text, _, err := runIn(t, "--scores", path, "--epsilon", "1", "--delta", "1e-5")
		require.NoError(t, err, name)
		require.Regexp(t, `(?m)^scores +`+regexp.QuoteMeta(path)+` \(760 trials with bit 0, 700 with bit 1\)$`, text)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"in_canary_scores": [1, NaN]}`), 0o600))
	_, _, err = runIn(t, "--scores", filepath.Join(dir, "bad.json"), "--epsilon", "1")
	require.ErrorContains(t, err, `bad.json: line 1: field "in_canary_scores[1]": NaN is not a finite number`)
}
