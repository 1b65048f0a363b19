package dynamics

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/rng"
)

// The paper's gains (Section 5.3) come from MATLAB dlqr: K_P' = dlqr(A, B, 20 I, 1) and
// L = dlqr(A', C', 2 I, 1)'. They must match to the 4 printed digits.
func TestVehicleGainsMatchPaper(t *testing.T) {
	veh := vehicle(t)
	one := mat.NewDense(1, 1, []float64{1})
	K, err := DLQR(veh.A, veh.B, scaledEye(2, 20), one)
	require.NoError(t, err)
	require.Equal(t, []float64{3.4240, 4.3095}, []float64{round4(K.At(0, 0)), round4(K.At(0, 1))})
	L, err := ObserverGain(veh.A, veh.C, scaledEye(2, 2), one)
	require.NoError(t, err)
	r, c := L.Dims()
	require.Equal(t, []int{2, 1}, []int{r, c})
	require.Equal(t, []float64{0.8266, 0.6973}, []float64{round4(L.At(0, 0)), round4(L.At(1, 0))})

	// The Riccati solutions solve their equations to machine precision.
	X, err := DARE(veh.A, veh.B, scaledEye(2, 20), one)
	require.NoError(t, err)
	require.Less(t, DAREResidual(veh.A, veh.B, scaledEye(2, 20), one, X), 1e-13)
	// and the loops they give are stable
	var BK, Acl, LC, Aobs mat.Dense
	BK.Mul(veh.B, K)
	Acl.Sub(veh.A, &BK)
	LC.Mul(L, veh.C)
	Aobs.Sub(veh.A, &LC)
	require.Less(t, SpectralRadius(&Acl), 1.0)
	require.Less(t, SpectralRadius(&Aobs), 1.0)
}

// Scalar DARE has a closed form: b^2 X^2 + (r(1-a^2) - q b^2) X - q r = 0, positive root.
func TestDAREScalarClosedForm(t *testing.T) {
	for _, tc := range []struct{ a, b, q, r float64 }{
		{0.5, 1, 1, 1}, {2, 1, 1, 1}, {1, 0.1, 20, 1}, {-3, 0.2, 0.5, 4}, {0.99, 1, 0, 1}, {1.5, 1, 0.01, 100},
		{2, 1, 0, 1}, // Q = 0, A unstable: (Q, A) not detectable; stabilising X = 3 (fallback path)
	} {
		X, err := DARE(mat.NewDense(1, 1, []float64{tc.a}), mat.NewDense(1, 1, []float64{tc.b}),
			mat.NewDense(1, 1, []float64{tc.q}), mat.NewDense(1, 1, []float64{tc.r}))
		require.NoError(t, err, "%+v", tc)
		qa := tc.b * tc.b
		qb := tc.r*(1-tc.a*tc.a) - tc.q*tc.b*tc.b
		qc := -tc.q * tc.r
		want := (-qb + math.Sqrt(qb*qb-4*qa*qc)) / (2 * qa)
		if tc.q == 0 && math.Abs(tc.a) < 1 {
			want = 0 // stable and no state cost: X = 0 is the stabilising solution
		}
		require.InDelta(t, want, X.At(0, 0), 1e-10*math.Max(1, want), "%+v", tc)
	}
}

// Random small systems: residual below 1e-9, X symmetric PSD, A - BK Schur stable.
func TestDARERandomSystems(t *testing.T) {
	r := rng.New(7, rng.Label("dare"))
	for trial := 0; trial < 40; trial++ {
		n, m := 1+r.IntN(5), 1+r.IntN(3)
		A := mat.NewDense(n, n, nil)
		B := mat.NewDense(n, m, nil)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				A.Set(i, j, 1.5*r.NormFloat64()/math.Sqrt(float64(n)))
			}
			for j := 0; j < m; j++ {
				B.Set(i, j, r.NormFloat64())
			}
		}
		G := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				G.Set(i, j, r.NormFloat64())
			}
		}
		var Q mat.Dense
		Q.Mul(G, G.T())
		R := scaledEye(m, 0.1+r.Float64())
		X, err := DARE(A, B, &Q, R)
		require.NoError(t, err, "trial %d", trial)
		require.Less(t, DAREResidual(A, B, &Q, R, X), 1e-9)
		require.Less(t, asymmetry(X), 1e-12*math.Max(1, mat.Norm(X, 1)))
		require.GreaterOrEqual(t, minEigSym(X), -1e-9*mat.Norm(X, 1))
		K, err := DLQR(A, B, &Q, R)
		require.NoError(t, err)
		require.Less(t, spectralRadiusClosedLoop(A, B, K), 1.0)
	}
}

func TestDAREErrors(t *testing.T) {
	I2 := eye(2)
	one := mat.NewDense(1, 1, []float64{1})
	B := mat.NewDense(2, 1, []float64{0, 1})
	for _, tc := range []struct {
		name       string
		A, B, Q, R *mat.Dense
		want       string
	}{
		{"missing", nil, B, I2, one, "all required"},
		{"A not square", mat.NewDense(2, 3, nil), B, I2, one, "A must be square"},
		{"B rows", I2, mat.NewDense(3, 1, nil), I2, one, "B must have 2 rows"},
		{"Q dims", I2, B, eye(3), one, "Q must be 2x2"},
		{"R dims", I2, B, I2, eye(2), "R must be 1x1"},
		{"Q asym", I2, B, mat.NewDense(2, 2, []float64{1, 1, 0, 1}), one, "Q is not symmetric"},
		{"Q indefinite", I2, B, mat.NewDense(2, 2, []float64{1, 0, 0, -1}), one, "Q must be positive semidefinite"},
		{"R zero", I2, B, I2, mat.NewDense(1, 1, []float64{0}), "R must be positive definite"},
		{"NaN", mat.NewDense(2, 2, []float64{math.NaN(), 0, 0, 1}), B, I2, one, "not finite"},
		// unstable mode 2 not reachable through B = [0; 1]
		{"unstabilisable", mat.NewDense(2, 2, []float64{2, 0, 0, 0.5}), B, I2, one, "stabilisable"},
		// marginal mode not weighted by Q: no stabilising solution exists
		{"unit circle", mat.NewDense(1, 1, []float64{1}), mat.NewDense(1, 1, []float64{1}), mat.NewDense(1, 1, []float64{0}), one, "no stabilising solution"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DARE(tc.A, tc.B, tc.Q, tc.R)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
