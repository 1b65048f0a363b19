package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
)

// canaryRow is a row of a Parquet file of the canary layout: the shorter column ends in nulls.
type canaryRow struct {
	In  *float64 `parquet:"in_canary_scores,optional"`
	Out *float64 `parquet:"out_canary_scores,optional"`
}

// canaryFiles are the arrays in and out in the canary layout, in every format: CSV (in the
// column order inFirst says), .json (as Python's json.dump writes it) and Parquet.
func canaryFiles(t *testing.T, in, out []float64, inFirst bool) map[ScoreFormat][]byte {
	t.Helper()
	cols := [2][]float64{out, in}
	names := [2]string{CanaryOut, CanaryIn}
	if inFirst {
		cols, names = [2][]float64{in, out}, [2]string{CanaryIn, CanaryOut}
	}
	csv := []byte(names[0] + "," + names[1] + "\n")
	for i := 0; i < max(len(in), len(out)); i++ {
		for k, c := range cols {
			if i < len(c) {
				csv = append(csv, fmtScore(c[i])...)
			}
			if k == 0 {
				csv = append(csv, ',')
			}
		}
		csv = append(csv, '\n')
	}
	js := fmt.Sprintf(`{"%s": [%s], "%s": [%s]}`, names[0], joinScores(cols[0]), names[1], joinScores(cols[1]))
	rows := make([]canaryRow, max(len(in), len(out)))
	for i := range rows {
		if i < len(in) {
			rows[i].In = &in[i]
		}
		if i < len(out) {
			rows[i].Out = &out[i]
		}
	}
	pq, err := io.ReadAll(parquetOf(t, rows))
	require.NoError(t, err)
	return map[ScoreFormat][]byte{ScoresCSV: csv, ScoresJSON: []byte(js), ScoresParquet: pq}
}

func joinScores(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmtScore(x)
	}
	return strings.Join(s, ", ")
}

// perTrialOf is the per-trial CSV file of the canary arrays: trial 2i bit 0 out[i], trial 2i+1
// bit 1 in[i].
func perTrialOf(in, out []float64) string {
	var b strings.Builder
	b.WriteString("trial,bit," + CanaryScore + "\n")
	for i := 0; i < max(len(in), len(out)); i++ {
		if i < len(out) {
			fmt.Fprintf(&b, "%d,0,%s\n", 2*i, fmtScore(out[i]))
		}
		if i < len(in) {
			fmt.Fprintf(&b, "%d,1,%s\n", 2*i+1, fmtScore(in[i]))
		}
	}
	return b.String()
}

// canaryArrays are the canary arrays of the outcome of a file whose trials are the game's pairs
// (trial 2i bit 0, 2i+1 bit 1, numbered from 0 on each side) of one score; ok false otherwise.
func canaryArrays(o *Outcome) (in, out []float64, ok bool) {
	if len(o.ScoreNames()) != 1 {
		return nil, nil, false
	}
	ok = true
	err := o.EachTrial(func(trial uint64, bit int, s []float64) error {
		n := [2]int{len(out), len(in)}[bit]
		if trial != uint64(2*n+bit) {
			ok = false
		}
		if bit == 0 {
			out = append(out, s[0])
		} else {
			in = append(in, s[0])
		}
		return nil
	})
	return in, out, ok && err == nil
}

// requireSameReport requires every bound, the verdict and every score's result of got to be
// want's.
func requireSameReport(t *testing.T, want, got *GameReport, msg string) {
	t.Helper()
	for _, b := range Bounds {
		require.Equal(t, b.OfReport(want), b.OfReport(got), "%s %s", msg, b.JSONKey)
	}
	require.Equal(t, want.Verdict, got.Verdict, msg)
	require.Equal(t, len(want.Scores), len(got.Scores), msg)
	for i := range want.Scores {
		require.Equal(t, want.Scores[i].Result, got.Scores[i].Result, "%s score %s", msg, want.Scores[i].Name)
	}
}

// analyzeCanary analyses the canary arrays in every format of the canary layout, in both column
// orders, and requires each report to be that of the equivalent per-trial file, which it returns.
func analyzeCanary(t *testing.T, in, out []float64, c Claim) *GameReport {
	t.Helper()
	g, err := NewClaimGame([]string{CanaryScore}, c)
	require.NoError(t, err)
	po, err := ReadScores(strings.NewReader(perTrialOf(in, out)), ScoresCSV)
	require.NoError(t, err)
	want, err := g.Analyze(po, ReportOptions{})
	require.NoError(t, err)
	for _, inFirst := range []bool{false, true} {
		for f, doc := range canaryFiles(t, in, out, inFirst) {
			msg := fmt.Sprintf("%s in first %v", f, inFirst)
			back, err := ReadScores(bytes.NewReader(doc), f)
			require.NoError(t, err, msg)
			require.Equal(t, []string{CanaryScore}, back.ScoreNames())
			require.Equal(t, max(len(in), len(out)), back.N)
			bin, bout, ok := canaryArrays(back)
			require.True(t, ok, msg)
			require.Equal(t, in, bin, msg)
			require.Equal(t, out, bout, msg)
			got, err := g.Analyze(back, ReportOptions{})
			require.NoError(t, err, msg)
			requireSameReport(t, want, got, msg)
		}
	}
	return want
}

// TestCanaryLayout: the canary layout in every format, the arrays of equal or unequal lengths
// (either longer), gives exactly the report of the per-trial file of the same trials (trial 2i
// bit 0 out[i], 2i+1 bit 1 in[i]); lower scores for the canaries in are found too.
func TestCanaryLayout(t *testing.T) {
	r := rng.New(5, rng.Label("canary-layout"))
	gauss := func(n int, mu float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = mu + r.NormFloat64()
		}
		return v
	}
	c := Claim{Epsilon: 0.5, Delta: 1e-5, Mechanism: privacy.Gaussian}
	for _, n := range [][2]int{{300, 300}, {300, 260}, {240, 310}, {MinFileTrials, MinFileTrials + 1}} {
		in, out := gauss(n[0], 2), gauss(n[1], 0)
		rep := analyzeCanary(t, in, out, c)
		require.Equal(t, max(n[0], n[1]), rep.Trials, "%v", n)
		if n[0] > 100 {
			require.Positive(t, rep.EpsilonLBCP, "%v: mu = 2 separates the canaries", n)
			for i := range in {
				in[i] = -in[i]
			}
			for i := range out {
				out[i] = -out[i]
			}
			neg := analyzeCanary(t, in, out, c)
			require.InEpsilon(t, rep.EpsilonLBCP, neg.EpsilonLBCP, 0.1, "lower is in: the other orientation finds it")
		}
	}
}

// TestCanaryJSONForms: what json.dump writes with indent, keys in either order, spaces and
// numbers as Python writes them (1.0, -2e-05, 1e+300, integers) read alike.
func TestCanaryJSONForms(t *testing.T) {
	in, out := make([]float64, 12), make([]float64, 11)
	for i := range in {
		in[i] = float64(i) + 0.5
	}
	for i := range out {
		out[i] = -float64(i) * 1e-5
	}
	want, err := ReadScores(strings.NewReader(perTrialOf(in, out)), ScoresCSV)
	require.NoError(t, err)
	indented, err := json.MarshalIndent(map[string][]float64{CanaryOut: out, CanaryIn: in}, "", "  ")
	require.NoError(t, err)
	for _, doc := range []string{
		string(indented),
		"\n" + strings.ReplaceAll(string(indented), "\n", "\r\n") + "\n\n",
		`{"out_canary_scores":[` + joinScores(out) + `],"in_canary_scores":[0.5,1.5,2.5,3.5,4.5,5.5,6.5,7.5,8.5,9.5,10.5,11.5]}`,
	} {
		got, err := ReadScores(strings.NewReader(doc), ScoresJSON)
		require.NoError(t, err, doc)
		for b := 0; b < 2; b++ {
			require.Equal(t, want.Trials[0].Scores(b), got.Trials[0].Scores(b))
		}
	}
	got, err := ReadScores(strings.NewReader(`{"in_canary_scores": [1.0, 2, -2e-05, 1e+300, 5, 6, 7, 8, 9, 10], "out_canary_scores": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}`), ScoresJSON)
	require.NoError(t, err)
	require.Equal(t, []float64{1, 2, -2e-05, 1e300, 5, 6, 7, 8, 9, 10}, got.Trials[0].Scores(1))
}

// TestCanaryMalformed: a malformed file of the canary layout is refused, naming the line (a
// .json value: its line and index) or the Parquet row, and the column, by the per-trial files'
// checks where they apply.
func TestCanaryMalformed(t *testing.T) {
	col := func(n int) string { return strings.TrimSuffix(strings.Repeat("1, ", n), ", ") }
	js := func(in, out string) string {
		return `{"in_canary_scores": [` + in + `], "out_canary_scores": [` + out + `]}`
	}
	csv := func(rows ...string) string {
		return "in_canary_scores,out_canary_scores\n" + strings.Join(rows, "\n") + "\n"
	}
	for _, c := range []struct {
		name string
		f    ScoreFormat
		doc  string
		want string
	}{
		{"csv gap", ScoresCSV, csv("1,2", ",3", "4,5"), `line 4: field "in_canary_scores": a value after the empty cell of line 3: a column may end early, with empty cells at its end only`},
		{"csv nan", ScoresCSV, csv("1,2", "3,nan"), `line 3: field "out_canary_scores": nan is not a finite number`},
		{"csv inf", ScoresCSV, csv("1,2", "-Inf,3"), `line 3: field "in_canary_scores": -Inf is not a finite number`},
		{"csv not a number", ScoresCSV, csv("1,x"), `line 2: field "out_canary_scores": "x" is not a number`},
		{"csv fields", ScoresCSV, csv("1,2,3"), "line 2: 3 fields, want 2 (in_canary_scores,out_canary_scores)"},
		{"csv wrong name", ScoresCSV, "in_canary_scores,out_canary_score\n1,2\n", `line 1: header "in_canary_scores,out_canary_score": want trial,bit,<score names...> (at least one score), or in_canary_scores,out_canary_scores`},
		{"csv too few", ScoresCSV, csv(strings.Repeat("1,2\n", 9) + "1,"), "9 out_canary_scores and 10 in_canary_scores: want at least 10 of each"},
		{"csv header only", ScoresCSV, "out_canary_scores,in_canary_scores\n", "0 out_canary_scores and 0 in_canary_scores: want at least 10 of each"},
		{"json empty", ScoresJSON, "", "no trials (an empty file)"},
		{"json not an object", ScoresJSON, "[1, 2]", `line 1: not one object {"in_canary_scores":[..],"out_canary_scores":[..]}`},
		{"json wrong key", ScoresJSON, `{"in_canary_scores": [1], "out_scores": [2]}`, `line 1: field "out_scores": not a key of the canary layout (want in_canary_scores and out_canary_scores)`},
		{"json key twice", ScoresJSON, `{"in_canary_scores": [1], "in_canary_scores": [2]}`, `line 1: field "in_canary_scores": appears twice`},
		{"json missing", ScoresJSON, `{"in_canary_scores": [` + col(10) + `]}`, `field "out_canary_scores": missing (want one object {"in_canary_scores":[..],"out_canary_scores":[..]})`},
		{"json nan", ScoresJSON, js(col(3)+", NaN", col(10)), `line 1: field "in_canary_scores[3]": NaN is not a finite number`},
		{"json infinity", ScoresJSON, "{\n\"in_canary_scores\": [\n1,\n2],\n\"out_canary_scores\": [\n1,\n-Infinity]}", `line 7: field "out_canary_scores[1]": -Infinity is not a finite number`},
		{"json overflow", ScoresJSON, js("1e999", col(10)), `line 1: field "in_canary_scores[0]": 1e999 is not a finite number`},
		{"json null", ScoresJSON, "{\"in_canary_scores\": [1,\n null]}", `line 2: field "in_canary_scores[1]": null is not a number`},
		{"json string", ScoresJSON, js(`"1"`, col(10)), `line 1: field "in_canary_scores[0]": "1" is not a number`},
		{"json not an array", ScoresJSON, `{"in_canary_scores": 1}`, `line 1: field "in_canary_scores": 1 is not an array of numbers`},
		{"json nested", ScoresJSON, js("[1]", col(10)), `line 1: field "in_canary_scores[0]": [ is not a number`},
		{"json cut", ScoresJSON, `{"in_canary_scores": [1, 2`, `line 1: field "in_canary_scores": the file ends inside the object: want one object {"in_canary_scores":[..],"out_canary_scores":[..]}`},
		{"json more", ScoresJSON, js(col(10), col(10)) + "\n{}", `line 2: { after the object: want one object {"in_canary_scores":[..],"out_canary_scores":[..]}`},
		{"json too few", ScoresJSON, js(col(10), col(9)), "9 out_canary_scores and 10 in_canary_scores: want at least 10 of each"},
	} {
		_, err := ReadScores(strings.NewReader(c.doc), c.f)
		require.Error(t, err, c.name)
		require.Equal(t, c.want, err.Error(), c.name)
		require.ErrorAs(t, err, new(*ScoresError), c.name)
	}
	var buf bytes.Buffer
	g, err := NewClaimGame([]string{"s"}, Claim{Epsilon: 1, Mechanism: privacy.Laplace})
	require.NoError(t, err)
	require.EqualError(t, WriteScores(&buf, ScoresJSON, g.NewOutcome(EngineFile, 0, 0)),
		"audit: .json is the canary layout, read only: write the trials as .csv, .jsonl or .parquet")
}

// TestCanaryParquetMalformed: a Parquet file of the canary layout is refused for a null before a
// value (its row and column), a value that is not finite, a third column and too few values.
func TestCanaryParquetMalformed(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	rows := func(n int) []canaryRow {
		rs := make([]canaryRow, n)
		for i := range rs {
			rs[i] = canaryRow{In: v(float64(i)), Out: v(-float64(i))}
		}
		return rs
	}
	gap := rows(20)
	gap[5].Out = nil
	nan := rows(20)
	nan[3].In = v(math.Inf(1))
	short := rows(20)
	for i := 9; i < 20; i++ {
		short[i].In = nil
	}
	type third struct {
		In    float64 `parquet:"in_canary_scores"`
		Out   float64 `parquet:"out_canary_scores"`
		Other float64 `parquet:"other"`
	}
	for _, c := range []struct {
		name string
		file *bytes.Reader
		want string
	}{
		{"gap", parquetOf(t, gap), `row 7: column "out_canary_scores": a value after the null of row 6: a column may end early, with nulls at its end only`},
		{"inf", parquetOf(t, nan), `row 4: column "in_canary_scores": +Inf is not a finite number`},
		{"third column", parquetOf(t, []third{{1, 2, 3}}), `column "trial": missing (want the columns trial, bit and one per score)`},
		{"too few", parquetOf(t, short), "20 out_canary_scores and 9 in_canary_scores: want at least 10 of each"},
		{"empty", parquetOf(t, []canaryRow{}), "no trials (an empty file)"},
	} {
		_, err := ReadScores(c.file, ScoresParquet)
		require.Error(t, err, c.name)
		require.Equal(t, c.want, err.Error(), c.name)
	}
	pq := parquetOf(t, short)
	shape, err := ParquetShape(pq, pq.Size())
	require.NoError(t, err)
	require.Equal(t, ParquetSize{Rows: 20, Columns: 2, Trials: 40, Scores: 1}, shape)
}

// TestCanaryParquetRowGroups: the columns of the canary layout are read across row groups, the
// shorter's nulls in a later group than its last value, and a value after a null of an earlier
// group refused with its row counted across the groups.
func TestCanaryParquetRowGroups(t *testing.T) {
	write := func(groups [][]canaryRow) *bytes.Reader {
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[canaryRow](&buf)
		for _, g := range groups {
			_, err := w.Write(g)
			require.NoError(t, err)
			require.NoError(t, w.Flush())
		}
		require.NoError(t, w.Close())
		return bytes.NewReader(buf.Bytes())
	}
	v := func(x float64) *float64 { return &x }
	var in, out []float64
	var groups [][]canaryRow
	for g := 0; g < 3; g++ {
		rs := make([]canaryRow, 15)
		for i := range rs {
			k := g*15 + i
			out = append(out, float64(k))
			rs[i].Out = v(float64(k))
			if k < 20 {
				in = append(in, float64(k)+0.5)
				rs[i].In = v(float64(k) + 0.5)
			}
		}
		groups = append(groups, rs)
	}
	got, err := ReadScores(write(groups), ScoresParquet)
	require.NoError(t, err)
	bin, bout, ok := canaryArrays(got)
	require.True(t, ok)
	require.Equal(t, in, bin)
	require.Equal(t, out, bout)
	groups[2][3].In = v(1)
	_, err = ReadScores(write(groups), ScoresParquet)
	require.EqualError(t, err, `row 34: column "in_canary_scores": a value after the null of row 21: a column may end early, with nulls at its end only`)
}
