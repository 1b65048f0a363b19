package numcsv

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Table is a numeric CSV file read into row-major float64s.
type Table struct {
	Values     []float64 // row i, column j at Values[i*Cols+j]
	Rows, Cols int
	Header     []string // the header's cells (trimmed); nil when the file has no header
}

// ColumnName returns "column j" (j 0-based, printed 1-based), followed by the header's name in
// parentheses when there is a header.
func (t *Table) ColumnName(j int) string {
	if t.Header != nil && j < len(t.Header) {
		return fmt.Sprintf("column %d (%s)", j+1, t.Header[j])
	}
	return fmt.Sprintf("column %d", j+1)
}

// Read opens path and parses it (see Parse). Errors are prefixed with path.
func Read(path string, header bool) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError: "open PATH: ..."
	}
	defer f.Close()
	t, err := Parse(f, header)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse reads a numeric CSV from r. header true: the first record names the columns whatever it
// holds. header false: the first record is a header only when none of its cells parses as a number;
// a first record with some numeric and some non-numeric cells is an error naming the first
// non-numeric cell. Lines of blanks are skipped.
func Parse(r io.Reader, header bool) (*Table, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	t := &Table{}
	first := true
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("malformed CSV: %w", err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // a line of blanks
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			if header || allNonNumeric(rec) {
				t.Header = trimmed(rec)
				t.Cols = len(rec)
				continue
			}
		}
		if err := t.addRow(rec, line); err != nil {
			return nil, err
		}
	}
	if t.Rows == 0 {
		return nil, errors.New("no data rows")
	}
	return t, nil
}

// addRow appends one data record found on line.
func (t *Table) addRow(rec []string, line int) error {
	if t.Cols == 0 {
		t.Cols = len(rec)
	}
	t.Rows++
	where := fmt.Sprintf("line %d (data row %d)", line, t.Rows)
	if len(rec) != t.Cols {
		like := "the first row"
		if t.Header != nil {
			like = "the header"
		}
		return fmt.Errorf("%s: %d columns, expected %d like %s", where, len(rec), t.Cols, like)
	}
	for j, s := range rec {
		x, numeric := parseCell(s)
		switch {
		case !numeric && t.Rows == 1 && t.Header == nil:
			return fmt.Errorf("%s, %s: %q is not a number (a first row is a header only when every cell is non-numeric, or with --header)", where, t.ColumnName(j), s)
		case !numeric:
			return fmt.Errorf("%s, %s: %q is not a number", where, t.ColumnName(j), s)
		case math.IsNaN(x) || math.IsInf(x, 0):
			return fmt.Errorf("%s, %s: %q is not a finite number", where, t.ColumnName(j), s)
		}
		t.Values = append(t.Values, x)
	}
	return nil
}

// parseCell parses one cell; numeric is false when it is not a number at all. A number beyond the
// float64 range ("1e400") is numeric and comes back as +-Inf, so that it is refused as not finite.
func parseCell(s string) (x float64, numeric bool) {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return x, err == nil || errors.Is(err, strconv.ErrRange)
}

// allNonNumeric reports whether no cell of rec parses as a number ("NaN" and "Inf" count as
// numbers: such a row is data, rejected later as not finite).
func allNonNumeric(rec []string) bool {
	for _, s := range rec {
		if _, numeric := parseCell(s); numeric {
			return false
		}
	}
	return true
}

func trimmed(rec []string) []string {
	out := make([]string, len(rec))
	for j, s := range rec {
		out[j] = strings.TrimSpace(s)
	}
	return out
}
