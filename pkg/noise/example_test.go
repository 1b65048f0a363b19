package noise_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
)

// The vehicle of Section 5.3 with the full state private: gamma(t) = C A^t sqrt(Sigma) eta, eta drawn
// once per episode. The noise is a trajectory of the plant itself: the position noise drifts by
// Ts times the velocity perturbation z_2 each step.
func ExampleNewStructured() {
	A := mat.NewDense(2, 2, []float64{1, 0.1, 0, 1}) // A_m
	C := mat.NewDense(1, 2, []float64{1, 0})         // C_m
	S := mat.NewDense(2, 2, []float64{2, 0, 0, 0.5}) // sqrt(Sigma)
	s, err := noise.NewStructured(A, C, S, privacy.Gaussian)
	if err != nil {
		fmt.Println(err)
		return
	}
	s.Reset(rng.New(1, rng.Label("plant"), rng.Label("noise"), 0)) // episode 0
	z := s.State()
	gamma := make([]float64, 1)
	for t := 0; t < 3; t++ {
		s.Next(gamma)
		fmt.Printf("t=%d gamma=%+.4f  (C A^t z0 = %+.4f)\n", t, gamma[0], z[0]+0.1*float64(t)*z[1])
	}
	fmt.Println(s.Describe())
	// Output:
	// t=0 gamma=-0.9240  (C A^t z0 = -0.9240)
	// t=1 gamma=-0.8466  (C A^t z0 = -0.8466)
	// t=2 gamma=-0.7693  (C A^t z0 = -0.7693)
	// structured gaussian: gamma(t) = C_m A_m^t S eta, eta ~ N(0,1)^2 drawn once per episode (nz=2, m=1)
}

// Consensus offsets: agent i adds the same sigma_i eta_i at every step.
func ExampleNewOffset() {
	s, _ := noise.NewOffset(2.5244, privacy.Laplace)
	s.Reset(rng.New(1, rng.Label("agent"), 3, 0))
	g := make([]float64, 1)
	same := true
	for t := 0; t < 30; t++ {
		s.Next(g)
		same = same && g[0] == 2.5244*s.Eta()[0]
	}
	fmt.Println("constant offset sigma*eta:", same)
	// Output: constant offset sigma*eta: true
}
