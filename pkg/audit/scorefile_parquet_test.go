package audit

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// parquetOf is a Parquet file of rows written by parquet-go's generic writer from the struct T:
// its columns are T's fields, in T's order, of T's types - a file of another tool.
func parquetOf[T any](t *testing.T, rows []T) *bytes.Reader {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	_, err := w.Write(rows)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return bytes.NewReader(buf.Bytes())
}

// pandasRow is a row as pandas' to_parquet of a DataFrame {"llr": float32, "bit": int32,
// "trial": int64, "proj": float64} writes it: the scores first, the bit an INT32, a FLOAT score.
type pandasRow struct {
	LLR   float32 `parquet:"llr"`
	Bit   int32   `parquet:"bit"`
	Trial int64   `parquet:"trial"`
	Proj  float64 `parquet:"proj"`
}

// TestParquetForeign: a Parquet file of another tool - columns in another order, an INT32 bit, a
// FLOAT score, an unsigned trial - is read by name, and its analysis is that of the same trials
// written as CSV by dpsim.
func TestParquetForeign(t *testing.T) {
	rows := make([]pandasRow, 400)
	for i := range rows {
		rows[i] = pandasRow{LLR: float32(i%2)*2 + float32(i%17)/17, Bit: int32(i % 2), Trial: int64(1000 - i), Proj: float64(i%13) / 13}
	}
	out, err := ReadScores(parquetOf(t, rows), ScoresParquet)
	require.NoError(t, err)
	require.Equal(t, []string{"llr", "proj"}, out.ScoreNames())
	var csv bytes.Buffer
	require.NoError(t, WriteScores(&csv, ScoresCSV, out))
	first, _, _ := strings.Cut(csv.String(), "\n602,")
	require.Equal(t, "trial,bit,llr,proj\n601,1,2.470588207244873,0.6923076923076923", first, "the FLOAT score is its float32 exactly")
	c := Claim{Epsilon: 0.5, Mechanism: privacy.Laplace}
	rep := analyzeFile(t, csv.String(), c)
	require.Positive(t, rep.EpsilonLBCP, "the llr separates the bits")

	type unsignedRow struct {
		S     float64 `parquet:"s"`
		Trial uint64  `parquet:"trial"`
		Bit   uint8   `parquet:"bit"`
	}
	urows := make([]unsignedRow, 40)
	for i := range urows {
		urows[i] = unsignedRow{S: float64(i), Trial: math.MaxUint64 - uint64(i), Bit: uint8(i % 2)}
	}
	out, err = ReadScores(parquetOf(t, urows), ScoresParquet)
	require.NoError(t, err)
	require.NoError(t, out.EachTrial(func(trial uint64, bit int, s []float64) error {
		require.Equal(t, math.MaxUint64-uint64(s[0]), trial)
		require.Equal(t, int(s[0])%2, bit)
		return nil
	}))
}

// TestParquetMalformed: a Parquet file is refused where the same rows as CSV are, by the CSV's
// checks, naming the row and the column; and for what only Parquet can hold (a missing column, a
// column of another type, a null).
func TestParquetMalformed(t *testing.T) {
	type row struct {
		Trial int64   `parquet:"trial"`
		Bit   int64   `parquet:"bit"`
		S     float64 `parquet:"s"`
	}
	rows := func(n int, edit func(i int, r *row)) []row {
		rs := make([]row, n)
		for i := range rs {
			rs[i] = row{Trial: int64(i + 100), Bit: int64(i % 2), S: float64(i)}
			if edit != nil {
				edit(i, &rs[i])
			}
		}
		return rs
	}
	at := func(k int, f func(r *row)) func(int, *row) {
		return func(i int, r *row) {
			if i == k {
				f(r)
			}
		}
	}
	type noBit struct {
		Trial int64   `parquet:"trial"`
		S     float64 `parquet:"s"`
	}
	type noScore struct {
		Trial int64 `parquet:"trial"`
		Bit   int64 `parquet:"bit"`
	}
	type textScore struct {
		Trial int64  `parquet:"trial"`
		Bit   int64  `parquet:"bit"`
		S     string `parquet:"s"`
	}
	type floatBit struct {
		Trial int64   `parquet:"trial"`
		Bit   float64 `parquet:"bit"`
		S     float64 `parquet:"s"`
	}
	type nullable struct {
		Trial int64    `parquet:"trial"`
		Bit   int64    `parquet:"bit"`
		S     *float64 `parquet:"s,optional"`
	}
	one := 1.0
	nulls := make([]nullable, 30)
	for i := range nulls {
		nulls[i] = nullable{Trial: int64(i), Bit: int64(i % 2), S: &one}
	}
	nulls[7].S = nil
	for _, c := range []struct {
		name string
		file *bytes.Reader
		want string
	}{
		{"not parquet", bytes.NewReader([]byte("trial,bit,s\n1,0,1\n")), "not a Parquet file: "},
		{"empty", parquetOf(t, []row{}), "no trials (an empty file)"},
		{"missing column", parquetOf(t, []noBit{{1, 2}}), `column "bit": missing (want the columns trial, bit and one per score)`},
		{"no score", parquetOf(t, []noScore{{1, 0}}), "no score column (want the columns trial, bit and one per score)"},
		{"text score", parquetOf(t, []textScore{{1, 0, "x"}}), `column "s": of type STRING: want a score, FLOAT or DOUBLE`},
		{"float bit", parquetOf(t, []floatBit{{1, 0, 0}}), `column "bit": of type DOUBLE: want an integer`},
		{"bit 2", parquetOf(t, rows(30, at(5, func(r *row) { r.Bit = 2 }))), `row 6: column "bit": "2" is not 0 or 1`},
		{"trial", parquetOf(t, rows(30, at(0, func(r *row) { r.Trial = -1 }))), `row 1: column "trial": "-1" is not a trial number (an integer in 0..2^64-1)`},
		{"nan", parquetOf(t, rows(30, at(2, func(r *row) { r.S = math.NaN() }))), `row 3: column "s": NaN is not a finite number`},
		{"inf", parquetOf(t, rows(30, at(3, func(r *row) { r.S = math.Inf(-1) }))), `row 4: column "s": -Inf is not a finite number`},
		{"null", parquetOf(t, nulls), `row 8: column "s": null is not a number`},
		{"trial twice", parquetOf(t, rows(31, at(30, func(r *row) { r.Trial = 105 }))), `row 31: column "trial": trial 105 appears twice (also in row 6)`},
		{"too few", parquetOf(t, rows(19, nil)), "10 trials with bit 0 and 9 with bit 1: want at least 10 of each"},
	} {
		_, err := ReadScores(c.file, ScoresParquet)
		require.Error(t, err, c.name)
		require.Contains(t, err.Error(), c.want, c.name)
		if c.name != "not parquet" {
			require.ErrorAs(t, err, new(*ScoresError), c.name)
		}
	}
}

// TestParquetRowGroups: a file of several row groups is read across them, its rows numbered
// from the file's first.
func TestParquetRowGroups(t *testing.T) {
	type row struct {
		Trial int64   `parquet:"trial"`
		Bit   int32   `parquet:"bit"`
		S     float64 `parquet:"s"`
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf)
	for g := 0; g < 3; g++ {
		rs := make([]row, 20)
		for i := range rs {
			rs[i] = row{Trial: int64(g*20 + i), Bit: int32(i % 2), S: float64(i)}
		}
		if g == 2 {
			rs[4].Trial = 3
		}
		_, err := w.Write(rs)
		require.NoError(t, err)
		require.NoError(t, w.Flush())
	}
	require.NoError(t, w.Close())
	_, err := ReadScores(bytes.NewReader(buf.Bytes()), ScoresParquet)
	require.EqualError(t, err, `row 45: column "trial": trial 3 appears twice (also in row 4)`)
	shape, err := ParquetShape(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	require.Equal(t, ParquetSize{Rows: 60, Columns: 3, Trials: 60, Scores: 1}, shape)
}
