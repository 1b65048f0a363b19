package vecsumcmd

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/numcsv"
)

// dataSet is a CSV file read into row-major float64s.
type dataSet struct {
	x       []float64
	n, d    int
	columns []string // "column j" or "column j (header name)"
}

// readCSV reads the numeric CSV file of --input with internal/numcsv (the reader dpsim john uses):
// '#' starts a comment line, the first row is a header only with --header (header true) or when every
// cell of it is non-numeric, every data row has the same number of columns and every value is a
// finite number. Errors name the file, line, data row and column; they are data problems (exit 1).
func readCSV(path string, header bool) (*dataSet, error) {
	t, err := numcsv.Read(path, header)
	if err != nil {
		return nil, fmt.Errorf("--input: %w", err)
	}
	ds := &dataSet{x: t.Values, n: t.Rows, d: t.Cols, columns: make([]string, t.Cols)}
	for j := range ds.columns {
		ds.columns[j] = t.ColumnName(j)
	}
	return ds, nil
}

// parseList parses comma-separated numbers (spaces allowed).
func parseList(flagName, s string) ([]float64, error) {
	var out []float64
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, cli.UsageError("%s: item %d %q is not a finite number", flagName, i+1, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseListOrFile accepts a comma-separated list or the name of a file holding the numbers separated by
// commas, spaces or newlines ('#' starts a comment).
func parseListOrFile(flagName, s string) ([]float64, error) {
	if s == "" {
		return nil, cli.UsageError("%s is required", flagName)
	}
	if st, err := os.Stat(s); err == nil && !st.IsDir() {
		b, err := os.ReadFile(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		var out []float64
		for ln, line := range strings.Split(string(b), "\n") {
			if k := strings.IndexByte(line, '#'); k >= 0 {
				line = line[:k]
			}
			for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
				v, err := strconv.ParseFloat(f, 64)
				if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("%s: file %s, line %d: %q is not a finite number", flagName, s, ln+1, f)
				}
				out = append(out, v)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: file %s holds no numbers", flagName, s)
		}
		return out, nil
	}
	v, err := parseList(flagName, s)
	if err != nil {
		return nil, cli.UsageError("%s %q: neither a readable file nor a list of numbers (%v)", flagName, s, err)
	}
	return v, nil
}

// parseBounds parses --bounds: comma-separated items "lo:hi" or "B" (meaning -B:B); a single item
// applies to every one of the d dimensions.
func parseBounds(s string, d int) (lo, hi []float64, err error) {
	if s == "" {
		return nil, nil, cli.UsageError("--bounds is required for the gaussian and elliptical methods")
	}
	items := strings.Split(s, ",")
	for i, it := range items {
		it = strings.TrimSpace(it)
		var l, h float64
		if k := strings.IndexByte(it, ':'); k >= 0 {
			l, err = strconv.ParseFloat(strings.TrimSpace(it[:k]), 64)
			if err == nil {
				h, err = strconv.ParseFloat(strings.TrimSpace(it[k+1:]), 64)
			}
		} else {
			h, err = strconv.ParseFloat(it, 64)
			l = -h
			if err == nil && !(h > 0) {
				return nil, nil, cli.UsageError("--bounds: item %d %q: a single bound B means [-B, B] and must be > 0", i+1, it)
			}
		}
		if err != nil || math.IsNaN(l) || math.IsNaN(h) || math.IsInf(l, 0) || math.IsInf(h, 0) {
			return nil, nil, cli.UsageError("--bounds: item %d %q: expected lo:hi or B with finite numbers", i+1, it)
		}
		if !(h > l) {
			return nil, nil, cli.UsageError("--bounds: item %d %q: upper bound must exceed lower bound", i+1, it)
		}
		lo, hi = append(lo, l), append(hi, h)
	}
	if len(lo) == 1 && d > 1 {
		for len(lo) < d {
			lo, hi = append(lo, lo[0]), append(hi, hi[0])
		}
	}
	if len(lo) != d {
		return nil, nil, cli.UsageError("--bounds: %d items for %d data columns", len(lo), d)
	}
	return lo, hi, nil
}
