package rowmajor

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestCopyIsRowMajor(t *testing.T) {
	m := mat.NewDense(2, 3, []float64{1, 2, 3, 4, 5, 6})
	require.Equal(t, []float64{1, 2, 3, 4, 5, 6}, Copy(m))
	require.Equal(t, []float64{1, 4, 2, 5, 3, 6}, Copy(m.T()))
	require.Nil(t, Copy(nil))
}

func TestFiniteNamesTheEntry(t *testing.T) {
	_, err := Finite("A", mat.NewDense(2, 2, []float64{1, 2, math.Inf(1), 4}))
	require.EqualError(t, err, "A[1][0] = +Inf is not finite")
	v, err := Finite("A", mat.NewDense(1, 2, []float64{1, 2}))
	require.NoError(t, err)
	require.Equal(t, []float64{1, 2}, v)
}
