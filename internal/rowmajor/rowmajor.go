package rowmajor

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Copy returns a row-major copy of m (nil for a nil m).
func Copy(m mat.Matrix) []float64 {
	if m == nil {
		return nil
	}
	r, c := m.Dims()
	out := make([]float64, r*c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[i*c+j] = m.At(i, j)
		}
	}
	return out
}

// Rows returns m as a list of rows (nil for a nil m): the JSON form of a matrix.
func Rows(m *mat.Dense) [][]float64 {
	if m == nil {
		return nil
	}
	r, _ := m.Dims()
	out := make([][]float64, r)
	for i := range out {
		out[i] = mat.Row(nil, i, m)
	}
	return out
}

// Finite is Copy that refuses NaN and infinite entries, naming the matrix and the entry.
func Finite(name string, m mat.Matrix) ([]float64, error) {
	out := Copy(m)
	if m == nil {
		return nil, nil
	}
	_, c := m.Dims()
	for k, v := range out {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s[%d][%d] = %v is not finite", name, k/c, k%c, v)
		}
	}
	return out, nil
}
