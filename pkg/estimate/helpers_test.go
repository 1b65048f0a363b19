package estimate

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/rng"
)

const testSeed = 4242

// The vehicle of Section 5.3 and the paper's gains.
var (
	vehA = mat.NewDense(2, 2, []float64{1, 0.1, 0, 1})
	vehB = mat.NewDense(2, 1, []float64{0.005, 0.1})
	vehC = mat.NewDense(1, 2, []float64{1, 0})
	vehK = []float64{3.4240, 4.3095}
	vehL = []float64{0.8266, 0.6973}
)

// controller maps (t, yhat(t)) to u(t); it may keep state (an observer).
type controller func(t int, yhat, u []float64)

// system is a plant with its controller factory (fresh controller state per episode).
type system struct {
	name    string
	A, B, C *mat.Dense
	x0      []float64
	ctrl    func() controller
}

func dims(s system) (nx, nu, ny int) {
	nx, _ = s.A.Dims()
	_, nu = s.B.Dims()
	ny, _ = s.C.Dims()
	return
}

// vehicleObserver is eq. (24): u = -K'(xhat - r(t)), xhat+ = A xhat + B u + L (yhat - C xhat),
// r(t) = (tanh t, 1 - |tanh(t-9)|).
func vehicleObserver() controller {
	xh := []float64{0, 0}
	return func(t int, yhat, u []float64) {
		r0, r1 := math.Tanh(float64(t)), 1-math.Abs(math.Tanh(float64(t)-9))
		u[0] = -(vehK[0]*(xh[0]-r0) + vehK[1]*(xh[1]-r1))
		innov := yhat[0] - xh[0]
		p := xh[0] + 0.1*xh[1] + 0.005*u[0] + vehL[0]*innov
		v := xh[1] + 0.1*u[0] + vehL[1]*innov
		xh[0], xh[1] = p, v
	}
}

// outputFeedback is u = -K yhat.
func outputFeedback(K *mat.Dense) func() controller {
	return func() controller {
		nu, ny := K.Dims()
		return func(_ int, yhat, u []float64) {
			for i := 0; i < nu; i++ {
				var v float64
				for j := 0; j < ny; j++ {
					v -= K.At(i, j) * yhat[j]
				}
				u[i] = v
			}
		}
	}
}

func randDense(r *rand.Rand, rows, cols int, scale float64) *mat.Dense {
	d := mat.NewDense(rows, cols, nil)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			d.Set(i, j, scale*r.NormFloat64())
		}
	}
	return d
}

func spectralRadius(a mat.Matrix) float64 {
	var eig mat.Eigen
	if !eig.Factorize(a, mat.EigenNone) {
		return math.Inf(1)
	}
	var rho float64
	for _, v := range eig.Values(nil) {
		rho = math.Max(rho, cmplx.Abs(v))
	}
	return rho
}

// randomStabilised draws (A, B, C) and an output-feedback K with A - B K C stable (spectral radius
// < 0.98) and an O_nx of reasonable condition, deterministically from the seed.
func randomStabilised(t testing.TB, name string, nx, nu, ny int) system {
	t.Helper()
	r := rng.New(testSeed, rng.Label(name))
	for try := 0; try < 1000; try++ {
		A := randDense(r, nx, nx, 1/math.Sqrt(float64(nx)))
		B := randDense(r, nx, nu, 1)
		C := randDense(r, ny, nx, 1)
		K := randDense(r, nu, ny, 0.3)
		var BK, BKC, Acl mat.Dense
		BK.Mul(B, K)
		BKC.Mul(&BK, C)
		Acl.Sub(A, &BKC)
		if spectralRadius(&Acl) > 0.98 || observabilityCond(A, C, nx) > 1e4 {
			continue
		}
		x0 := make([]float64, nx)
		for i := range x0 {
			x0[i] = 10 * r.NormFloat64()
		}
		return system{name: name, A: A, B: B, C: C, x0: x0, ctrl: outputFeedback(K)}
	}
	t.Fatalf("%s: no stabilised random system found", name)
	return system{}
}

func observabilityCond(A, C *mat.Dense, T int) float64 {
	nx, _ := A.Dims()
	ny, _ := C.Dims()
	O := mat.NewDense(T*ny, nx, nil)
	var row mat.Dense
	row.CloneFrom(C)
	for s := 0; s < T; s++ {
		O.Slice(s*ny, (s+1)*ny, 0, nx).(*mat.Dense).Copy(&row)
		row.Mul(&row, A)
	}
	var svd mat.SVD
	if !svd.Factorize(O, mat.SVDNone) {
		return math.Inf(1)
	}
	v := svd.Values(nil)
	if v[len(v)-1] == 0 || len(v) < nx {
		return math.Inf(1)
	}
	return v[0] / v[len(v)-1]
}

// episode runs the closed loop for T steps with the given noise stream (reset by the caller) and feeds
// the transcript to est after every step; check is called after each Observe. It returns the true states
// x(0..T).
func episode(t testing.TB, s system, gamma noise.Stream, T int, est *ControlEstimator, check func(step int)) [][]float64 {
	t.Helper()
	nx, nu, ny := dims(s)
	ctrl := s.ctrl()
	x := append([]float64(nil), s.x0...)
	xs := [][]float64{append([]float64(nil), x...)}
	yhat, g, u := make([]float64, ny), make([]float64, ny), make([]float64, nu)
	xn := make([]float64, nx)
	for step := 0; step < T; step++ {
		gamma.Next(g)
		for i := 0; i < ny; i++ {
			v := g[i]
			for k := 0; k < nx; k++ {
				v += s.C.At(i, k) * x[k]
			}
			yhat[i] = v
		}
		ctrl(step, yhat, u)
		if err := est.Observe(step, yhat, u); err != nil {
			t.Fatal(err)
		}
		if check != nil {
			check(step)
		}
		for i := 0; i < nx; i++ {
			var v float64
			for k := 0; k < nx; k++ {
				v += s.A.At(i, k) * x[k]
			}
			for k := 0; k < nu; k++ {
				v += s.B.At(i, k) * u[k]
			}
			xn[i] = v
		}
		copy(x, xn)
		xs = append(xs, append([]float64(nil), x...))
	}
	return xs
}

func dist2(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

func norm2(a []float64) float64 { return math.Sqrt(dot(a, a)) }

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// paperGraph is the 10-node graph of Section 6.3 (0-based), every weight 1/4.
func paperGraph() (nbrs [][]int, w [][]float64) {
	edges := [][2]int{{1, 2}, {1, 10}, {2, 3}, {2, 5}, {2, 10}, {3, 4}, {4, 5}, {5, 6}, {5, 7}, {6, 7}, {7, 8}, {7, 10}, {8, 9}, {9, 10}}
	nbrs = make([][]int, 10)
	w = make([][]float64, 10)
	for _, e := range edges {
		i, j := e[0]-1, e[1]-1
		nbrs[i] = append(nbrs[i], j)
		nbrs[j] = append(nbrs[j], i)
		w[i] = append(w[i], 0.25)
		w[j] = append(w[j], 0.25)
	}
	return nbrs, w
}

var paperX0 = []float64{10, 100, 20, -30, -20, -60, 70, 0, 80, -20}
