package vecsumcmd

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dpsim/dpsim/internal/cli"
)

// dataSet is a CSV file read into row-major float64s.
type dataSet struct {
	x       []float64
	n, d    int
	columns []string // header names, or "column j"
}

// readCSV reads a numeric CSV file: '#' starts a comment line, an optional header row (detected when
// any field of the first record is not a number) names the columns, every data row must have the same
// number of columns, and every value must be a finite number. Errors name the file, line, data row and
// column.
func readCSV(path string) (*dataSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--input: %w", err)
	}
	defer f.Close()
	return parseCSV(f, path)
}

func parseCSV(r io.Reader, name string) (*dataSet, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	ds := &dataSet{}
	first := true
	row := 0
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			ds.d = len(rec)
			header := false
			for _, fld := range rec {
				if _, err := strconv.ParseFloat(strings.TrimSpace(fld), 64); err != nil {
					header = true
					break
				}
			}
			ds.columns = make([]string, ds.d)
			for j := range ds.columns {
				ds.columns[j] = fmt.Sprintf("column %d", j+1)
				if header {
					ds.columns[j] = fmt.Sprintf("column %d (%s)", j+1, strings.TrimSpace(rec[j]))
				}
			}
			if header {
				continue
			}
		}
		row++
		if len(rec) != ds.d {
			return nil, fmt.Errorf("%s: line %d (data row %d): %d columns, expected %d", name, line, row, len(rec), ds.d)
		}
		for j, fld := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(fld), 64)
			if err != nil {
				return nil, fmt.Errorf("%s: line %d (data row %d), %s: cannot parse %q as a number", name, line, row, ds.columns[j], fld)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: line %d (data row %d), %s: value %q is not finite", name, line, row, ds.columns[j], fld)
			}
			ds.x = append(ds.x, v)
		}
	}
	ds.n = row
	if ds.n == 0 {
		return nil, fmt.Errorf("%s: no data rows", name)
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
