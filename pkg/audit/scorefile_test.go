package audit

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
)

// TestScoresRoundTripGame: the fast engine's outcome of a Gaussian game (every score: projection,
// llr, precision), written in both formats and read back, gives a claim game's report whose every
// bound (every row of Bounds, headline and per score) and every score's result equal the game's.
func TestScoresRoundTripGame(t *testing.T) {
	g := newGame(t, parsePlan(t, vehicleDoc), GameOptions{})
	out, err := PlayFast(context.Background(), g, FastOptions{Trials: 1200, Seed: 3, Workers: 2})
	require.NoError(t, err)
	want, err := g.Analyze(out, ReportOptions{})
	require.NoError(t, err)
	require.Positive(t, want.EpsilonLBGDP, "bounds with evidence, not zeros, are compared")
	for _, f := range allFormats {
		var buf bytes.Buffer
		require.NoError(t, WriteScores(&buf, f, out))
		back, err := ReadScores(&buf, f)
		require.NoError(t, err, f)
		require.Equal(t, g.ScoreNames(), back.ScoreNames())
		cg, err := NewClaimGame(back.ScoreNames(), g.Claim())
		require.NoError(t, err)
		got, err := cg.Analyze(back, ReportOptions{})
		require.NoError(t, err)
		for _, b := range Bounds {
			require.Equal(t, b.OfReport(want), b.OfReport(got), "%s %s", f, b.JSONKey)
		}
		require.Equal(t, want.Verdict, got.Verdict)
		require.Equal(t, want.Score, got.Score)
		for i := range want.Scores {
			require.Equal(t, want.Scores[i], got.Scores[i], "%s score %s", f, want.Scores[i].Name)
		}
	}
}

// fileOf is a CSV scores file of the trials: bits[i] and score(i) per trial i.
func fileOf(n int, bit func(i int) int, score func(i int) float64) string {
	var b strings.Builder
	b.WriteString("trial,bit,s\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%d,%d,%s\n", i, bit(i), fmtScore(score(i)))
	}
	return b.String()
}

// allFormats are the formats of a scores file.
var allFormats = []ScoreFormat{ScoresCSV, ScoresJSONL, ScoresParquet}

// analyzeFile reads and analyses a CSV scores file against a claim, and the same trials written
// in every format and read back: every format's bounds and verdict must be the CSV's; and when
// its trials are the game's pairs of one score (trial 2i bit 0, 2i+1 bit 1), in every format of
// the canary layout too (analyzeCanary).
func analyzeFile(t *testing.T, doc string, c Claim) *GameReport {
	t.Helper()
	out, err := ReadScores(strings.NewReader(doc), ScoresCSV)
	require.NoError(t, err)
	g, err := NewClaimGame(out.ScoreNames(), c)
	require.NoError(t, err)
	r, err := g.Analyze(out, ReportOptions{})
	require.NoError(t, err)
	for _, f := range allFormats {
		var buf bytes.Buffer
		require.NoError(t, WriteScores(&buf, f, out))
		back, err := ReadScores(&buf, f)
		require.NoError(t, err, f)
		rf, err := g.Analyze(back, ReportOptions{})
		require.NoError(t, err, f)
		for _, b := range Bounds {
			require.Equal(t, b.OfReport(r), b.OfReport(rf), "%s %s", f, b.JSONKey)
		}
		require.Equal(t, r.Verdict, rf.Verdict, f)
	}
	if in, bout, ok := canaryArrays(out); ok { // the game's pairs: the canary layout too
		rc := analyzeCanary(t, in, bout, c)
		for _, b := range Bounds {
			require.Equal(t, b.OfReport(r), b.OfReport(rc), "canary layout %s", b.JSONKey)
		}
		require.Equal(t, r.Verdict, rc.Verdict, "canary layout")
	}
	return r
}

// TestNullScores: scores that carry no evidence about the bit - independent of it, all tied, or
// too few - give every bound 0 and never a violation, even against a tiny claim; scores separated
// the wrong way round (bit 1 smaller) are evidence like any other (the analysis tries both
// orientations), exactly the mirror image's. Every file is analysed in every format too, and in
// the canary layout's (analyzeFile: its trials alternate the bits).
func TestNullScores(t *testing.T) {
	alt := func(i int) int { return i % 2 }
	claims := []Claim{{Epsilon: 0.01, Delta: 1e-5, Mechanism: privacy.Gaussian}, {Epsilon: 0.01, Mechanism: privacy.Laplace}}
	r := rng.New(11, rng.Label("null-scores"))
	cases := map[string]string{
		"independent": fileOf(4000, alt, func(int) float64 { return r.NormFloat64() }),
		"ties":        fileOf(4000, alt, func(int) float64 { return 0.5 }),
		"tiny":        fileOf(2*MinFileTrials+6, alt, func(i int) float64 { return float64(i % 7) }),
		"two values":  fileOf(400, alt, func(i int) float64 { return float64((i / 2) % 2) }),
	}
	for name, doc := range cases {
		for _, c := range claims {
			rep := analyzeFile(t, doc, c)
			for _, b := range Bounds {
				require.Zero(t, b.OfReport(rep), "%s %s: %s", name, c.Mechanism, b.JSONKey)
			}
			require.Equal(t, Consistent, rep.Verdict, "%s %s", name, c.Mechanism)
		}
	}
	sep := func(sign float64) string {
		return fileOf(400, alt, func(i int) float64 { return sign * (float64(i%2)*10 + float64(i%13)/13) })
	}
	for _, c := range claims {
		fwd, rev := analyzeFile(t, sep(1), c), analyzeFile(t, sep(-1), c)
		require.Positive(t, fwd.EpsilonLBCP)
		for _, b := range Bounds {
			require.Equal(t, b.OfReport(fwd), b.OfReport(rev), "%s %s", c.Mechanism, b.JSONKey)
		}
	}
}

// TestScoresMalformed: every malformed scores file is refused with its line and field.
func TestScoresMalformed(t *testing.T) {
	rows := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%d,%d,%d\n", i+100, i%2, i)
		}
		return b.String()
	}
	jl := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, `{"trial":%d,"bit":%d,"scores":{"a":%d,"b":1}}`+"\n", i+100, i%2, i)
		}
		return b.String()
	}
	for _, c := range []struct {
		name string
		f    ScoreFormat
		doc  string
		want string
	}{
		{"empty", ScoresCSV, "", "no trials (an empty file)"},
		{"header", ScoresCSV, "trial,score\n1,0\n", `line 1: header "trial,score": want trial,bit,<score names...> (at least one score), or in_canary_scores,out_canary_scores`},
		{"header no score", ScoresCSV, "trial,bit\n", `line 1: header "trial,bit": want trial,bit,<score names...> (at least one score), or in_canary_scores,out_canary_scores`},
		{"name twice", ScoresCSV, "trial,bit,s,s\n", `line 1: field "s": the score name appears twice`},
		{"missing column", ScoresCSV, "trial,bit,s,u\n1,0,0.5\n", "line 2: 3 fields, want 4 (trial,bit,s,u)"},
		{"bit 2", ScoresCSV, "trial,bit,s\n1,2,0.5\n", `line 2: field "bit": "2" is not 0 or 1`},
		{"bit word", ScoresCSV, "trial,bit,s\n1,in,0.5\n", `line 2: field "bit": "in" is not 0 or 1`},
		{"trial", ScoresCSV, "trial,bit,s\n-1,0,0.5\n", `line 2: field "trial": "-1" is not a trial number (an integer in 0..2^64-1)`},
		{"nan", ScoresCSV, "trial,bit,s\n\n1,0,NaN\n", `line 3: field "s": NaN is not a finite number`},
		{"inf", ScoresCSV, "trial,bit,s\n1,0,1e999\n", `line 2: field "s": 1e999 is not a finite number`},
		{"not a number", ScoresCSV, "trial,bit,s\n1,0,abc\n", `line 2: field "s": "abc" is not a number`},
		{"trial twice", ScoresCSV, "trial,bit,s\n" + rows(30) + "105,1,3\n", `line 32: field "trial": trial 105 appears twice (also on line 7)`},
		{"too few", ScoresCSV, "trial,bit,s\n" + rows(19), "10 trials with bit 0 and 9 with bit 1: want at least 10 of each"},
		{"one side", ScoresCSV, "trial,bit,s\n1,0,1\n2,0,2\n", "2 trials with bit 0 and 0 with bit 1: want at least 10 of each"},
		{"jsonl not json", ScoresJSONL, "trial,bit,s\n", `line 1: not a JSON object {"trial":..,"bit":..,"scores":{..}}: invalid character 'i' in literal true (expecting 'u')`},
		{"jsonl unknown field", ScoresJSONL, `{"trial":1,"bit":0,"score":2}` + "\n", `line 1: not a JSON object {"trial":..,"bit":..,"scores":{..}}: json: unknown field "score"`},
		{"jsonl no bit", ScoresJSONL, `{"trial":1,"scores":{"a":1}}` + "\n", `line 1: field "bit": missing`},
		{"jsonl bit", ScoresJSONL, `{"trial":1,"bit":true,"scores":{"a":1}}` + "\n", `line 1: field "bit": "true" is not 0 or 1`},
		{"jsonl no score", ScoresJSONL, `{"trial":1,"bit":1,"scores":{}}` + "\n", `line 1: field "scores": no score`},
		{"jsonl score string", ScoresJSONL, `{"trial":1,"bit":1,"scores":{"a":"1"}}` + "\n", `line 1: field "a": "1" is not a number`},
		{"jsonl score null", ScoresJSONL, `{"trial":1,"bit":1,"scores":{"a":null}}` + "\n", `line 1: field "a": null is not a number`},
		{"jsonl missing score", ScoresJSONL, jl(3) + `{"trial":7,"bit":1,"scores":{"a":1}}` + "\n", `line 4: field "b": missing (the first line's scores: a, b)`},
		{"jsonl extra score", ScoresJSONL, jl(3) + `{"trial":7,"bit":1,"scores":{"a":1,"b":2,"c":3}}` + "\n", `line 4: field "c": not a score of the first line (a, b)`},
		{"jsonl score twice", ScoresJSONL, `{"trial":1,"bit":1,"scores":{"a":1,"a":2}}` + "\n", `line 1: field "a": the score appears twice`},
		{"jsonl too few", ScoresJSONL, jl(12), "6 trials with bit 0 and 6 with bit 1: want at least 10 of each"},
	} {
		_, err := ReadScores(strings.NewReader(c.doc), c.f)
		require.Error(t, err, c.name)
		require.Equal(t, c.want, err.Error(), c.name)
	}
	_, err := ScoreFormatOf("x.parquet.gz")
	require.EqualError(t, err, "audit: scores file x.parquet.gz: want the extension .csv, .jsonl, .parquet or .json (the canary layout)")
}

// TestScoresFloatsExact: the written text reads back to the same float64 bits, extremes included.
func TestScoresFloatsExact(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1e-310, -math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1, 1.0 / 3}
	g, err := NewClaimGame([]string{"v"}, Claim{Epsilon: 1, Mechanism: privacy.Laplace})
	require.NoError(t, err)
	out := g.NewOutcome(EngineFile, 0, 0)
	for i := 0; i < 2*MinFileTrials; i++ {
		out.Add(uint64(i), i%2, []float64{vals[i%len(vals)]})
	}
	for _, f := range allFormats {
		var buf bytes.Buffer
		require.NoError(t, WriteScores(&buf, f, out))
		back, err := ReadScores(&buf, f)
		require.NoError(t, err)
		for b := 0; b < 2; b++ {
			w, gt := out.Trials[0].Scores(b), back.Trials[0].Scores(b)
			require.Len(t, gt, len(w))
			for i := range w {
				require.Equal(t, math.Float64bits(w[i]), math.Float64bits(gt[i]), "%s", f)
			}
		}
	}
}

// TestNullScoresCanary: the null-score files of TestNullScores go through the canary layout
// (their trials alternate the bits from 0), not only around it.
func TestNullScoresCanary(t *testing.T) {
	alt := func(i int) int { return i % 2 }
	out, err := ReadScores(strings.NewReader(fileOf(40, alt, func(i int) float64 { return 0.5 })), ScoresCSV)
	require.NoError(t, err)
	in, bout, ok := canaryArrays(out)
	require.True(t, ok)
	require.Len(t, in, 20)
	require.Len(t, bout, 20)
}
