package dynamics_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/dynamics"
)

// The paper's vehicle gains (Section 5.3) from the discrete LQR, as the authors derived them:
// K_P' = dlqr(A, B, 20 I, 1) and L = dlqr(A', C', 2 I, 1)'.
func ExampleDLQR() {
	A := mat.NewDense(2, 2, []float64{1, 0.1, 0, 1})
	B := mat.NewDense(2, 1, []float64{0.005, 0.1})
	C := mat.NewDense(1, 2, []float64{1, 0})
	Q := mat.NewDense(2, 2, []float64{20, 0, 0, 20})
	R := mat.NewDense(1, 1, []float64{1})
	K, err := dynamics.DLQR(A, B, Q, R)
	if err != nil {
		panic(err)
	}
	L, err := dynamics.ObserverGain(A, C, mat.NewDense(2, 2, []float64{2, 0, 0, 2}), R)
	if err != nil {
		panic(err)
	}
	fmt.Printf("K = [%.4f %.4f]\n", K.At(0, 0), K.At(0, 1))
	fmt.Printf("L = [%.4f; %.4f]\n", L.At(0, 0), L.At(1, 0))
	// Output:
	// K = [3.4240 4.3095]
	// L = [0.8266; 0.6973]
}

// The paper's 10-node consensus graph (Section 6.3): degree-4 nodes have weight sum 1, which
// Validate reports as warnings, while the rate alpha stays below 1.
func ExamplePaperGraph() {
	g := dynamics.PaperGraph()
	warnings, err := g.Validate()
	if err != nil {
		panic(err)
	}
	alpha, _ := g.Rate()
	fmt.Printf("alpha = %.4f, %d warning\n", alpha, len(warnings))
	fmt.Println(warnings[0])
	// Output:
	// alpha = 0.8257, 1 warning
	// weight sums sum_j w_ij >= 1 (up to 1) at nodes 1, 4, 6, 9 (0-based); the paper asks < 1 (Section 6.1); convergence still holds while alpha < 1
}

// One run of the cloud-control loop of eq. (24) without noise: the plant sends y, the cloud
// controller returns u.
func ExampleObserverController() {
	sys, err := dynamics.NewLTI(
		mat.NewDense(2, 2, []float64{1, 0.1, 0, 1}),
		mat.NewDense(2, 1, []float64{0.005, 0.1}),
		mat.NewDense(1, 2, []float64{1, 0}))
	if err != nil {
		panic(err)
	}
	K := mat.NewDense(1, 2, []float64{3.4240, 4.3095})
	L := mat.NewDense(2, 1, []float64{0.8266, 0.6973})
	plant := dynamics.NewPlant(sys, nil)
	ctrl, err := dynamics.NewObserverController(sys, K, L, dynamics.TanhReference{}, nil)
	if err != nil {
		panic(err)
	}
	y, u := make([]float64, 1), make([]float64, 1)
	for t := 0; t < 100; t++ {
		plant.Output(y)
		ctrl.Step(t, y, u)
		plant.Step(u)
	}
	r := make([]float64, 2)
	dynamics.TanhReference{}.At(100, r)
	x := plant.State()
	fmt.Printf("T=100: position error %.1e, velocity error %.1e\n", x[0]-r[0], x[1]-r[1])
	// Output:
	// T=100: position error -2.7e-05, velocity error 2.8e-05
}

// Average consensus (eq. 25) with constant private offsets: the sum is kept, node i ends at
// xbar0 + mean(gamma) - gamma_i.
func ExampleConsensusNetwork() {
	x0 := []float64{10, 100, 20, -30, -20, -60, 70, 0, 80, -20}
	net, err := dynamics.NewConsensusNetwork(dynamics.PaperGraph(), x0)
	if err != nil {
		panic(err)
	}
	gamma := []float64{1, -1, 0, 0, 0, 0, 0, 0, 0, 2}
	y := make([]float64, 10)
	for t := 0; t < 300; t++ {
		net.Outputs(gamma, y)
		net.Step(y)
	}
	x := make([]float64, 10)
	net.State(x)
	fmt.Printf("sum %.6f, x_1 %.6f, x_3 %.6f\n", net.Sum(), x[0], x[2])
	// Output:
	// sum 150.000000, x_1 14.200000, x_3 15.200000
}
