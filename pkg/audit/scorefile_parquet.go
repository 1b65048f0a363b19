package audit

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// A Parquet scores file has the CSV's columns: trial (INT64), bit (INT32) and one DOUBLE column
// per score, named as the CSV's header names them, in the CSV's order. Read, the columns are
// found by name in any order; trial and bit may be integers of any width, signed or not, a score
// FLOAT or DOUBLE (what pandas' to_parquet writes), and every column that is not trial or bit is
// a score. Every value goes through the CSV's checks (parseTrialBit, finite, checkNames,
// checkTrials): the file is refused where the same rows as CSV would be, naming the row (1-based,
// across the row groups) and the column. A file of the canary layout (scorefile_canary.go) has
// the two columns in_canary_scores and out_canary_scores alone, and nulls at the end of the
// shorter; everywhere else a null is refused.

// sizedReaderAt is what a Parquet file is read from in place.
type sizedReaderAt interface {
	io.ReaderAt
	Size() int64
}

// parquetBatch is the number of rows written, or values read, at a time.
const parquetBatch = 1024

// orderedGroup is a Parquet group whose columns are in the order of names (parquet.Group sorts
// them by name): the written file's columns are the CSV's.
type orderedGroup struct {
	parquet.Group
	names []string
}

func (g orderedGroup) Fields() []parquet.Field {
	f := g.Group.Fields()
	slices.SortStableFunc(f, func(a, b parquet.Field) int {
		return slices.Index(g.names, a.Name()) - slices.Index(g.names, b.Name())
	})
	return f
}

// writeParquet writes the trials of out as a Parquet file.
func writeParquet(w io.Writer, out *Outcome) error {
	names := out.ScoreNames()
	cols := append([]string{"trial", "bit"}, names...)
	g := parquet.Group{"trial": parquet.Int(64), "bit": parquet.Int(32)}
	for _, n := range names {
		if _, ok := g[n]; ok || n == "" {
			return fmt.Errorf("audit: score name %q cannot be a Parquet column", n)
		}
		g[n] = parquet.Leaf(parquet.DoubleType)
	}
	pw := parquet.NewWriter(w, parquet.NewSchema("scores", orderedGroup{g, cols}),
		parquet.Compression(&parquet.Snappy), parquet.CreatedBy("dpsim", "", ""))
	rows := make([]parquet.Row, 0, parquetBatch)
	flush := func() error {
		_, err := pw.WriteRows(rows)
		rows = rows[:0]
		return err
	}
	err := out.EachTrial(func(trial uint64, bit int, scores []float64) error {
		if trial > math.MaxInt64 {
			return fmt.Errorf("audit: trial %d does not fit a Parquet INT64 column", trial)
		}
		row := make(parquet.Row, 0, len(cols))
		row = append(row, parquet.Int64Value(int64(trial)).Level(0, 0, 0), parquet.Int32Value(int32(bit)).Level(0, 0, 1))
		for k, v := range scores {
			row = append(row, parquet.DoubleValue(v).Level(0, 0, k+2))
		}
		if rows = append(rows, row); len(rows) == parquetBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	return pw.Close()
}

// ParquetSize is the shape of a Parquet scores file from its footer alone: what reading it would
// decode (the caller's bound before reading).
type ParquetSize struct {
	Rows    int64 // its rows
	Columns int   // its columns, every one read
	Trials  int64 // the trials they hold: Rows, or twice Rows in the canary layout
	Scores  int   // the scores of a trial
}

// ParquetShape is the shape of the Parquet file r of size bytes, from its footer alone.
func ParquetShape(r io.ReaderAt, size int64) (ParquetSize, error) {
	f, err := openParquet(r, size)
	if err != nil {
		return ParquetSize{}, err
	}
	var names []string
	for _, c := range f.Root().Columns() {
		names = append(names, c.Name())
	}
	s := ParquetSize{Rows: f.NumRows(), Columns: len(names), Trials: f.NumRows(), Scores: max(0, len(names)-2)}
	if canaryNames(names) {
		s.Trials, s.Scores = 2*s.Rows, 1
	}
	return s, nil
}

func openParquet(r io.ReaderAt, size int64) (*parquet.File, error) {
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, scoresErr(0, "", "not a Parquet file: %v", err)
	}
	return f, nil
}

// parquetCol is a column of a scores file: its index among the leaf columns and how its values
// read.
type parquetCol struct {
	name     string
	index    int
	unsigned bool
	kind     parquet.Kind
	nullTail bool // nulls allowed at its end (a column of the canary layout)
	ended    int  // the row of its first null (nullTail)
}

// readParquet reads a Parquet scores file of size bytes: only the trial, bit and score columns,
// one row group at a time.
func readParquet(r io.ReaderAt, size int64) (*Outcome, error) {
	out, err := readParquetRows(r, size)
	var se *ScoresError
	if errors.As(err, &se) {
		se.Row = true
	}
	return out, err
}

func readParquetRows(r io.ReaderAt, size int64) (*Outcome, error) {
	f, err := openParquet(r, size)
	if err != nil {
		return nil, err
	}
	trial, bit, scores, err := parquetColumns(f)
	if err != nil {
		return nil, err
	}
	if trial == nil {
		return readParquetCanary(f, scores)
	}
	names := make([]string, len(scores))
	for k, c := range scores {
		names[k] = c.name
	}
	if err := checkNames(names, 0); err != nil {
		return nil, err
	}
	return readParquetGroups(f, trial, bit, scores, names)
}

// parquetColumns finds the trial, bit and score columns of f by name.
func parquetColumns(f *parquet.File) (trial, bit *parquetCol, scores []*parquetCol, err error) {
	for _, c := range f.Root().Columns() {
		name := c.Name()
		if !c.Leaf() || c.Repeated() {
			return nil, nil, nil, scoresErr(0, name, "a nested or repeated column: want one number per row")
		}
		pc := &parquetCol{name: name, index: c.Index(), kind: c.Type().Kind()}
		if lt := c.Type().LogicalType(); lt != nil {
			if it, ok := lt.Value.(*format.IntType); ok {
				pc.unsigned = !it.IsSigned
			}
		}
		switch name {
		case "trial", "bit":
			if pc.kind != parquet.Int32 && pc.kind != parquet.Int64 {
				return nil, nil, nil, scoresErr(0, name, "of type %s: want an integer", c.Type())
			}
			if name == "trial" {
				trial = pc
			} else {
				bit = pc
			}
		default:
			if pc.kind != parquet.Float && pc.kind != parquet.Double {
				return nil, nil, nil, scoresErr(0, name, "of type %s: want a score, FLOAT or DOUBLE", c.Type())
			}
			scores = append(scores, pc)
		}
	}
	if trial == nil && bit == nil && len(scores) == 2 && canaryNames([]string{scores[0].name, scores[1].name}) {
		return nil, nil, scores, nil // the canary layout
	}
	for _, c := range []struct {
		name string
		col  *parquetCol
	}{{"trial", trial}, {"bit", bit}} {
		if c.col == nil {
			return nil, nil, nil, scoresErr(0, c.name, "missing (want the columns trial, bit and one per score)")
		}
	}
	if len(scores) == 0 {
		return nil, nil, nil, scoresErr(0, "", "no score column (want the columns trial, bit and one per score)")
	}
	return trial, bit, scores, nil
}

// readParquetGroups reads the rows of f's row groups into an outcome of the scores.
func readParquetGroups(f *parquet.File, trial, bit *parquetCol, scores []*parquetCol, names []string) (*Outcome, error) {
	err := checkRowGroups(f)
	if err != nil {
		return nil, err
	}
	out := newFileOutcome(names)
	var (
		lines []int
		nums  []uint64
		row   = make([]float64, len(names))
		base  int
		ints  [2][]uint64 // trial, bit of the row group's rows
		vals  = make([][]float64, len(scores))
	)
	for _, rg := range f.RowGroups() {
		n := int(rg.NumRows())
		chunks := rg.ColumnChunks()
		for i, c := range []*parquetCol{trial, bit} {
			if ints[i], err = readColumn(chunks[c.index], c, base, n, ints[i][:0], intValue); err != nil {
				return nil, err
			}
		}
		for k, c := range scores {
			if vals[k], err = readColumn(chunks[c.index], c, base, n, vals[k][:0], floatValue); err != nil {
				return nil, err
			}
		}
		var tb, bb []byte
		for i := 0; i < n; i++ {
			ln := base + i + 1
			tb, bb = appendInt(tb[:0], trial, ints[0][i]), appendInt(bb[:0], bit, ints[1][i])
			t, b, err := parseTrialBit(ln, string(tb), string(bb))
			if err != nil {
				return nil, err
			}
			for k, n := range names {
				row[k] = vals[k][i]
				if err := finite(ln, n, row[k], fmtScore(row[k])); err != nil {
					return nil, err
				}
			}
			out.Add(t, b, row)
			lines, nums = append(lines, ln), append(nums, t)
		}
		base += n
	}
	if err := checkTrials(out, nums, lines, true); err != nil {
		return nil, err
	}
	return out, nil
}

// checkRowGroups checks that f has rows, as many in its row groups as its footer says.
func checkRowGroups(f *parquet.File) error {
	var total int64
	for _, rg := range f.RowGroups() {
		total += rg.NumRows()
	}
	if total != f.NumRows() {
		return scoresErr(0, "", "%d rows in the row groups, %d in the footer", total, f.NumRows())
	}
	if total == 0 {
		return scoresErr(0, "", "no trials (an empty file)")
	}
	return nil
}

// appendInt appends the text of an integer value of column c (held as its 64 bits).
func appendInt(b []byte, c *parquetCol, v uint64) []byte {
	if c.unsigned {
		return strconv.AppendUint(b, v, 10)
	}
	return strconv.AppendInt(b, int64(v), 10)
}

// intValue is an integer value as 64 bits: an unsigned one zero-extended, a signed one
// sign-extended.
func intValue(c *parquetCol, v parquet.Value) uint64 {
	switch {
	case c.kind == parquet.Int64:
		return v.Uint64()
	case c.unsigned:
		return uint64(v.Uint32())
	}
	return uint64(int64(v.Int32()))
}

// floatValue is a FLOAT or DOUBLE value as a float64.
func floatValue(c *parquetCol, v parquet.Value) float64 {
	if c.kind == parquet.Float {
		return float64(v.Float())
	}
	return v.Double()
}

// readColumn appends to dst the n values of column c's chunk in the row group whose first row is
// base+1, refusing a null (but at the end of a nullTail column: then dst holds the values before
// it) and more or fewer values than rows.
func readColumn[T any](cc parquet.ColumnChunk, c *parquetCol, base, n int, dst []T, conv func(*parquetCol, parquet.Value) T) ([]T, error) {
	pages := cc.Pages()
	defer pages.Close()
	buf := make([]parquet.Value, parquetBatch)
	got := 0 // the values read, nulls included
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, scoresErr(base+got+1, c.name, "%v", err)
		}
		if int64(got)+p.NumValues() > int64(n) {
			parquet.Release(p)
			return nil, scoresErr(0, c.name, "more values than the %d rows of its row group", n)
		}
		vr := p.Values()
		for {
			m, err := vr.ReadValues(buf)
			for _, v := range buf[:m] {
				got++
				if err := nullTail(c, base+got, v.IsNull()); err != nil {
					parquet.Release(p)
					return nil, err
				}
				if !v.IsNull() {
					dst = append(dst, conv(c, v))
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				parquet.Release(p)
				return nil, scoresErr(base+got+1, c.name, "%v", err)
			}
		}
		parquet.Release(p)
	}
	if got != n {
		return nil, scoresErr(0, c.name, "%d values for the %d rows of its row group", got, n)
	}
	return dst, nil
}

// nullTail checks the value of row of column c, null or not: a null only at the end of a column
// of the canary layout, which then ends.
func nullTail(c *parquetCol, row int, null bool) error {
	switch {
	case null && !c.nullTail:
		return scoresErr(row, c.name, "null is not a number")
	case null && c.ended == 0:
		c.ended = row
	case !null && c.ended != 0:
		return scoresErr(row, c.name, "a value after the null of row %d: a column may end early, with nulls at its end only", c.ended)
	}
	return nil
}

// readParquetCanary reads the two columns of a file of the canary layout, one row group at a
// time: row r of out_canary_scores is trial 2(r-1) with bit 0, of in_canary_scores trial 2r-1
// with bit 1.
func readParquetCanary(f *parquet.File, cols []*parquetCol) (*Outcome, error) {
	if err := checkRowGroups(f); err != nil {
		return nil, err
	}
	c := newCanaryFile()
	base := 0
	var vals []float64
	for _, rg := range f.RowGroups() {
		n := int(rg.NumRows())
		for _, col := range cols {
			col.nullTail = true
			var err error
			if vals, err = readColumn(rg.ColumnChunks()[col.index], col, base, n, vals[:0], floatValue); err != nil {
				return nil, err
			}
			bit, _ := canaryBit(col.name)
			for i, v := range vals {
				if err := finite(base+i+1, col.name, v, fmtScore(v)); err != nil {
					return nil, err
				}
				c.add(bit, v)
			}
		}
		base += n
	}
	return c.done()
}
