package johncmd

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// ReadMatrix reads the n x d matrix A from a CSV file: one row a_i per record, d numeric
// fields each; '#' starts a comment line; a first record with no numeric field is a
// header and skipped. Errors name the file, line, data row and column (all 1-based), without a
// "john:" prefix (dpsim prints "dpsim john: " before them).
func ReadMatrix(path string) (*mat.Dense, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError: "open PATH: ..."
	}
	defer f.Close()
	a, err := parseMatrix(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

func parseMatrix(r io.Reader) (*mat.Dense, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	var data []float64
	d, rows := 0, 0
	first := true
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("malformed CSV: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			if isHeader(rec) {
				continue
			}
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // a line of blanks
		}
		if d == 0 {
			d = len(rec)
		}
		rows++
		if len(rec) != d {
			return nil, fmt.Errorf("line %d (row %d): %d fields, want %d like the first row", line, rows, len(rec), d)
		}
		for j, s := range rec {
			x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("line %d (row %d), column %d: %q is not a finite number", line, rows, j+1, s)
			}
			data = append(data, x)
		}
	}
	if rows == 0 {
		return nil, fmt.Errorf("no data rows")
	}
	if rows < d {
		return nil, fmt.Errorf("%d rows of dimension %d: need at least d rows (n >= d, rank d) for a bounded polytope", rows, d)
	}
	return mat.NewDense(rows, d, data), nil
}

// isHeader: no field parses as a number.
func isHeader(rec []string) bool {
	for _, s := range rec {
		if _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return false
		}
	}
	return true
}
