package estimate_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/estimate"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
)

// The eavesdropper watches the vehicle of Section 5.3 under the paper's position-only structured noise
// gamma(t) = sigma eta and estimates the initial state from (yhat, u) with the plant's own model.
// The estimate is x0 + (sigma eta, 0) at every step: the noise is never averaged away.
func ExampleControlEstimator() {
	A := mat.NewDense(2, 2, []float64{1, 0.1, 0, 1})
	B := mat.NewDense(2, 1, []float64{0.005, 0.1})
	C := mat.NewDense(1, 2, []float64{1, 0})
	const T = 100
	est, _ := estimate.NewControlEstimator(A, B, C, T)
	gamma, _ := noise.NewOffset(2.5244, privacy.Gaussian) // A_m = C_m = 1, S = sigma
	gamma.Reset(rng.New(7, rng.Label("plant"), 0))

	x := []float64{-3, 1.5} // the truth, which the eavesdropper never sees
	g, yhat, u := make([]float64, 1), make([]float64, 1), make([]float64, 1)
	x0h := make([]float64, 2)
	for t := 0; t < T; t++ {
		gamma.Next(g)
		yhat[0] = x[0] + g[0]
		u[0] = -0.5*yhat[0] - 1.2*x[1] // some controller (the cloud's), seen on the bus
		_ = est.Observe(t, yhat, u)
		if t == 1 || t == T-1 {
			est.Estimate(x0h)
			fmt.Printf("t=%2d  x0_hat - x0 = (%.6f, %.6f)\n", t, clean(x0h[0]+3), clean(x0h[1]-1.5))
		}
		x[0], x[1] = x[0]+0.1*x[1]+0.005*u[0], x[1]+0.1*u[0]
	}
	fmt.Printf("sigma*eta        = %.6f\n", 2.5244*gamma.Eta()[0])
	// Output:
	// t= 1  x0_hat - x0 = (0.287424, 0.000000)
	// t=99  x0_hat - x0 = (0.287424, 0.000000)
	// sigma*eta        = 0.287424
}

// Consensus with the paper's constant offsets: the eavesdropper's estimate of every agent's initial
// value is off by exactly that agent's offset, however long it watches.
func ExampleNetworkEstimator() {
	// Three agents on a path 0-1-2, weights 1/3.
	nbrs := [][]int{{1}, {0, 2}, {1}}
	w := [][]float64{{1. / 3}, {1. / 3, 1. / 3}, {1. / 3}}
	net, _ := estimate.NewNetworkEstimatorLists(nbrs, w)
	x := []float64{10, 40, -20}
	gam := []float64{0.5, -1, 2} // gamma_i = sigma_i eta_i, drawn once
	y, est := make([]float64, 3), make([]float64, 3)
	for t := 0; t < 200; t++ {
		for i := range y {
			y[i] = x[i] + gam[i]
		}
		_ = net.Observe(t, y)
		for i := range x {
			for k, j := range nbrs[i] {
				x[i] += w[i][k] * (y[j] - y[i])
			}
		}
	}
	net.Estimate(est)
	fmt.Printf("estimates %.4f  (x_i(0) + gamma_i = 10.5, 39, -18)\n", est)
	// Output: estimates [10.5000 39.0000 -18.0000]  (x_i(0) + gamma_i = 10.5, 39, -18)
}

// clean maps rounding residue to 0 so the printed sign does not depend on the platform's FMA use.
func clean(v float64) float64 {
	if v < 1e-9 && v > -1e-9 {
		return 0
	}
	return v
}

func ExampleProjectScore() {
	x0, x0prime := []float64{0, 0}, []float64{1, 0}
	fmt.Println(estimate.ProjectScore([]float64{0.1, 5}, x0, x0prime))
	// Output: 0.4
}
