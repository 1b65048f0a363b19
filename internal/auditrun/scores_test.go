package auditrun

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/audit"
)

// boundsOf is every bound of a report (every row of audit.Bounds by its JSON key, and the mu
// behind it), the headline's and each score's.
func boundsOf(t *testing.T, r *audit.GameReport) map[string]any {
	t.Helper()
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	got := map[string]any{"verdict": m["verdict"], "score": m["score"], "fdp_score": m["fdp_score"]}
	for _, row := range audit.Bounds {
		got[row.JSONKey] = m[row.JSONKey]
		if row.MuKey != "" {
			got[row.MuKey] = m[row.MuKey]
		}
	}
	for _, s := range m["scores"].([]any) {
		sm := s.(map[string]any)
		res := sm["result"].(map[string]any)
		for _, row := range audit.Bounds {
			got[sm["name"].(string)+"."+row.JSONKey] = res[row.JSONKey]
		}
		got[sm["name"].(string)+".cp"] = res["cp"]
	}
	return got
}

// TestScoresRoundTrip: a sweep's audit writes every point's trials (-pNN before the extension,
// 0600), and --scores' code path reads them back to exactly the bounds of the audit, in every
// format; the point of two episodes per trial is judged against the claim composed over them,
// by hand or by ScoresOptions.EpisodesPerTrial alike.
func TestScoresRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, ext := range []string{".csv", ".jsonl", ".parquet"} {
		file := filepath.Join(dir, "scores"+ext)
		a := newTestAudit(t, "audit-consensus-laplace", 1500, Options{EpisodesSweep: []int{1, 2}, WriteScores: file})
		reports, _, err := a.PlayAll(context.Background(), FastPlayer{Seed: a.Seed, Workers: 2}, Observer{})
		require.NoError(t, err)
		for k, rep := range reports {
			path := filepath.Join(dir, "scores-p0"+string(rune('0'+k))+ext)
			require.Equal(t, path, ScoresPath(file, 2, k))
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the secret bits: private")
			claim := a.Games[k].Claim()
			if k == 1 { // two episodes per trial: the trials are judged against the composed claim
				claim.Epsilon = rep.EpsilonClaimedRun
			}
			got, err := AnalyzeScores(ScoresOptions{Path: path, Claim: claim, Confidence: a.PointConf, Selection: a.Opts.Selection})
			require.NoError(t, err)
			require.Equal(t, boundsOf(t, rep), boundsOf(t, got), "point %d %s", k, ext)
			require.Positive(t, got.EpsilonLBCP, "a Laplace audit finds evidence")
			composed, err := AnalyzeScores(ScoresOptions{Path: path, Claim: a.Games[k].Claim(), Confidence: a.PointConf, Selection: a.Opts.Selection,
				EpisodesPerTrial: a.Games[k].EpisodesPerTrial()})
			require.NoError(t, err)
			require.Equal(t, boundsOf(t, rep), boundsOf(t, composed), "point %d %s, composed by --episodes-per-trial", k, ext)
			require.Equal(t, rep.EpsilonClaimedRun, composed.EpsilonClaimedRun)
			require.Equal(t, rep.EpsilonClaimed, composed.EpsilonClaimed)
			require.Equal(t, rep.VerdictEpisode, composed.VerdictEpisode)
		}
		_, err = os.Stat(file)
		require.True(t, os.IsNotExist(err), "a sweep writes only the per-point files")
	}
	require.Equal(t, "x/s.csv", ScoresPath("x/s.csv", 1, 0))
}

// pythonSnippet is docs/howto-audit.md's example (section "Scores from elsewhere").
const pythonSnippet = `import csv, random

random.seed(1)
with open("scores.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["trial", "bit", "loss"])
    for trial in range(4000):
        bit = trial % 2  # 1: the canary was in (member), 0: out
        mean = -1.0 if bit else 0.0  # members have a lower loss
        w.writerow([trial, bit, repr(random.gauss(mean, 1.0))])
`

// TestScoresFromPython: the howto's Python snippet's file is audited (its logic in Go, and the
// snippet itself when python3 is on PATH): a mu = 1 Gaussian separation with lower scores for
// bit 1, which the analysis finds in the other orientation, against claims it violates and not.
func TestScoresFromPython(t *testing.T) {
	dir := t.TempDir()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "howto-audit.md"))
	require.NoError(t, err)
	require.Contains(t, string(doc), pythonSnippet, "the test runs the howto's snippet")
	files := []string{filepath.Join(dir, "go.csv")}
	writeGoSnippet(t, files[0])
	if py, err := exec.LookPath("python3"); err == nil {
		cmd := exec.Command(py, "-c", pythonSnippet)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		files = append(files, filepath.Join(dir, "scores.csv"))
	}
	for _, f := range files {
		rep, err := AnalyzeScores(ScoresOptions{Path: f, Claim: audit.Claim{Epsilon: 0.1, Delta: 1e-5, Mechanism: "gaussian"}})
		require.NoError(t, err, f)
		require.Equal(t, audit.Violation, rep.Verdict, "%s: mu = 1 is far above eps = 0.1's", f)
		require.Equal(t, []string{"loss"}, []string{rep.Scores[0].Name})
		require.Equal(t, 2000, rep.Trials)
		rep, err = AnalyzeScores(ScoresOptions{Path: f, Claim: audit.Claim{Epsilon: 8, Delta: 1e-5, Mechanism: "gaussian"}})
		require.NoError(t, err, f)
		require.Equal(t, audit.Consistent, rep.Verdict, f)
	}
}

// writeGoSnippet writes what the Python snippet writes, with Go's random numbers.
func writeGoSnippet(t *testing.T, path string) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 0))
	b := []byte("trial,bit,loss\r\n")
	for trial := 0; trial < 4000; trial++ {
		bit := trial % 2
		mean := 0.0
		if bit == 1 {
			mean = -1
		}
		b = fmt.Appendf(b, "%d,%d,%s\r\n", trial, bit, strconv.FormatFloat(mean+r.NormFloat64(), 'g', -1, 64))
	}
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

// TestScoresFileLimit: a file above the limit is refused before it is read, with the trials and
// memory it would take; a directory or a wrong extension is refused too.
func TestScoresFileLimit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.csv")
	writeGoSnippet(t, path)
	_, err := ReadScoresFile(path, 1000)
	require.ErrorContains(t, err, "above the limit of 1000 B for a scores file (about ")
	require.ErrorContains(t, err, " trials, about ")
	out, err := ReadScoresFile(path, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"loss"}, out.ScoreNames())
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d.csv"), 0o700))
	_, err = ReadScoresFile(filepath.Join(dir, "d.csv"), 0)
	require.ErrorContains(t, err, "not a regular file")
	_, err = ReadScoresFile(filepath.Join(dir, "s.txt"), 0)
	require.ErrorContains(t, err, "want the extension .csv, .jsonl, .parquet or .json (the canary layout)")
	_, err = ReadScoresFile(filepath.Join(dir, "bad.csv"), 0)
	require.Error(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.csv"), []byte(strings.Repeat("x", 10)), 0o600))
	_, err = ReadScoresFile(filepath.Join(dir, "bad.csv"), 0)
	require.ErrorContains(t, err, "bad.csv: line 1: header")
}

// TestScoresFileLimitParquet: a Parquet file is refused above the limit with the trials its
// footer holds, and also when what it would decode is above the limit though the file is not (a
// compressed file holds more trials than its size says); below both it reads.
func TestScoresFileLimitParquet(t *testing.T) {
	dir := t.TempDir()
	g, err := audit.NewClaimGame([]string{"a", "b"}, audit.Claim{Epsilon: 1, Mechanism: "laplace"})
	require.NoError(t, err)
	out := g.NewOutcome(audit.EngineFile, 0, 0)
	for i := 0; i < 4000; i++ {
		out.Add(uint64(i), i%2, []float64{float64(i % 3), 0})
	}
	path := filepath.Join(dir, "s.parquet")
	require.NoError(t, WriteScoresFile(path, out, false))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	decoded := int64(4000 * 8 * 4)
	require.Less(t, fi.Size(), decoded/4, "the constant and periodic columns compress")
	_, err = ReadScoresFile(path, fi.Size()-1)
	require.ErrorContains(t, err, "above the limit of")
	require.ErrorContains(t, err, "for a scores file (4000 trials, about ")
	_, err = ReadScoresFile(path, decoded-1)
	require.ErrorContains(t, err, "decoded, above the limit of")
	back, err := ReadScoresFile(path, decoded)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, back.ScoreNames())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.parquet"), []byte("trial,bit,s\n"), 0o600))
	_, err = ReadScoresFile(filepath.Join(dir, "bad.parquet"), 0)
	require.ErrorContains(t, err, "bad.parquet: not a Parquet file")
}

// canarySnippet is docs/howto-audit.md's example of the canary layout (section "Scores from
// elsewhere").
const canarySnippet = `import json, random

random.seed(2)
in_scores, out_scores = [], []
for canary in range(4000):
    if random.random() < 0.5:  # a fair coin, drawn before training: the canary goes in
        in_scores.append(random.gauss(1.0, 1.0))
    else:
        out_scores.append(random.gauss(0.0, 1.0))
with open("canaries.json", "w") as f:
    json.dump({"in_canary_scores": in_scores, "out_canary_scores": out_scores}, f)
`

// TestScoresCanaryFromPython: the howto's canary snippet's .json file (its logic in Go, and the
// snippet itself when python3 is on PATH) is audited: a mu = 1 separation, higher for the
// canaries in, against claims it violates and not; the trials are the arrays' values.
func TestScoresCanaryFromPython(t *testing.T) {
	dir := t.TempDir()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "howto-audit.md"))
	require.NoError(t, err)
	require.Contains(t, string(doc), canarySnippet, "the test runs the howto's snippet")
	r := rand.New(rand.NewPCG(2, 0))
	var in, out []float64
	for range 4000 {
		if r.IntN(2) == 1 {
			in = append(in, 1+r.NormFloat64())
		} else {
			out = append(out, r.NormFloat64())
		}
	}
	b, err := json.Marshal(map[string][]float64{"in_canary_scores": in, "out_canary_scores": out})
	require.NoError(t, err)
	files := []string{filepath.Join(dir, "go.json")}
	require.NoError(t, os.WriteFile(files[0], b, 0o600))
	if py, err := exec.LookPath("python3"); err == nil {
		cmd := exec.Command(py, "-c", canarySnippet)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		files = append(files, filepath.Join(dir, "canaries.json"))
	}
	for _, f := range files {
		rep, err := AnalyzeScores(ScoresOptions{Path: f, Claim: audit.Claim{Epsilon: 0.1, Delta: 1e-5, Mechanism: "gaussian"}})
		require.NoError(t, err, f)
		require.Equal(t, audit.Violation, rep.Verdict, "%s: mu = 1 is far above eps = 0.1's", f)
		require.Equal(t, audit.CanaryScore, rep.Scores[0].Name)
		require.InDelta(t, 2000, rep.Trials, 100, "the larger array: about half the canaries")
		rep, err = AnalyzeScores(ScoresOptions{Path: f, Claim: audit.Claim{Epsilon: 8, Delta: 1e-5, Mechanism: "gaussian"}})
		require.NoError(t, err, f)
		require.Equal(t, audit.Consistent, rep.Verdict, f)
	}
}

// TestScoresFileLimitCanary: a file of the canary layout above the limit is refused with an
// estimate of its trials - two a CSV row, one a .json value - near the truth.
func TestScoresFileLimitCanary(t *testing.T) {
	dir := t.TempDir()
	csv := []byte("in_canary_scores,out_canary_scores\n")
	var in, out []float64
	for i := range 5000 {
		v := float64(i) / 7
		in, out = append(in, v), append(out, -v)
		csv = fmt.Appendf(csv, "%s,%s\n", strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(-v, 'g', -1, 64))
	}
	js, err := json.Marshal(map[string][]float64{"in_canary_scores": in, "out_canary_scores": out})
	require.NoError(t, err)
	files := map[string][]byte{"c.csv": csv, "c.json": js}
	for name, b := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, b, 0o600))
		_, err := ReadScoresFile(path, 1000)
		require.ErrorContains(t, err, "above the limit of 1000 B for a scores file (about ", name)
		var trials int
		_, scanErr := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "(about ")+len("(about "):], "%d trials", &trials)
		require.NoError(t, scanErr, err.Error())
		require.InEpsilon(t, 10000, trials, 0.1, "%s: %s", name, err)
		o, err := ReadScoresFile(path, 0)
		require.NoError(t, err, name)
		require.Equal(t, []string{audit.CanaryScore}, o.ScoreNames())
		require.Equal(t, 5000, o.N)
	}
	_, err = ReadScoresFile(filepath.Join(dir, "x.json"), 0)
	require.ErrorContains(t, err, "no such file")
}
