package johncmd

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/internal/numcsv"
)

// ReadMatrix reads the n x d matrix A from a CSV file with internal/numcsv (the reader dpsim vecsum
// uses): one row a_i per record, d finite numbers each; '#' starts a comment line; the first record
// is a header only with --header (header true) or when every cell of it is non-numeric. Errors name
// the file, line, data row and column (all 1-based), without a "john:" prefix (dpsim prints
// "dpsim john: " before them).
func ReadMatrix(path string, header bool) (*mat.Dense, error) {
	t, err := numcsv.Read(path, header)
	if err != nil {
		return nil, err
	}
	if t.Rows < t.Cols {
		return nil, fmt.Errorf("%s: %d rows of dimension %d: need at least d rows (n >= d, rank d) for a bounded polytope", path, t.Rows, t.Cols)
	}
	return mat.NewDense(t.Rows, t.Cols, t.Values), nil
}
