package dynamics

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// vehicle returns the paper's Section 5.3 model: Ts = 0.1, A = [1 Ts; 0 1], B = [Ts^2/2; Ts], C = [1 0].
func vehicle(t testing.TB) *LTI {
	t.Helper()
	sys, err := NewLTI(
		mat.NewDense(2, 2, []float64{1, 0.1, 0, 1}),
		mat.NewDense(2, 1, []float64{0.005, 0.1}),
		mat.NewDense(1, 2, []float64{1, 0}))
	require.NoError(t, err)
	return sys
}

// paperGains are the paper's printed gains: K = K_P' and L.
func paperGains() (K, L *mat.Dense) {
	return mat.NewDense(1, 2, []float64{3.4240, 4.3095}), mat.NewDense(2, 1, []float64{0.8266, 0.6973})
}

func scaledEye(n int, s float64) *mat.Dense {
	m := eye(n)
	m.Scale(s, m)
	return m
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func rank(t testing.TB, m mat.Matrix) int {
	t.Helper()
	sv, ok := singularValues(m)
	require.True(t, ok)
	r, c := m.Dims()
	tol := rankTol(r, c, sv[0])
	k := 0
	for _, v := range sv {
		if v > tol {
			k++
		}
	}
	return k
}
