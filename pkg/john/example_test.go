package john_test

import (
	"fmt"

	"github.com/dpsim/dpsim/pkg/john"
	"gonum.org/v1/gonum/mat"
)

// The box |x| <= 1, |y| <= 1/2 with a redundant diagonal constraint |x/2 + y/2| <= 1:
// its John ellipsoid is the inscribed axis-aligned ellipse, Q = diag(1, 4), and the
// redundant row gets weight 0.
func ExampleSolve() {
	a := mat.NewDense(3, 2, []float64{
		1, 0,
		0, 2,
		0.5, 0.5,
	})
	res, err := john.Solve(a, john.Config{Method: john.Exact, Xi: 1e-9, MaxIter: 1000})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("weights %.4f sum %.4f\n", res.Weights, res.SumWeights)
	fmt.Printf("Q = [%.4f %.4f; %.4f %.4f]\n", res.Q.At(0, 0), res.Q.At(0, 1), res.Q.At(1, 0), res.Q.At(1, 1))
	fmt.Printf("max h %.6f converged %v\n", res.MaxLeverage, res.Converged)
	// Output:
	// weights [1.0000 1.0000 0.0000] sum 2.0000
	// Q = [1.0000 0.0000; 0.0000 4.0000]
	// max h 1.000000 converged true
}

// The fast and dp methods on the cross-polytope {x : |x_1| + |x_2| + |x_3| <= 1} (rows:
// the sign vectors), whose John ellipsoid is the ball of radius 1/sqrt(3) (Q = 3 I).
// Both return weights summing to d whose exactly verified max leverage meets 1 + xi;
// dp reports its noise scale and claims no (eps, delta).
func ExampleSolve_dp() {
	a := mat.NewDense(4, 3, []float64{
		1, 1, 1,
		1, 1, -1,
		1, -1, 1,
		1, -1, -1,
	})
	for _, cfg := range []john.Config{
		{Method: john.Fast, Xi: 0.1, Seed: 7},
		{Method: john.DP, Xi: 0.1, NoiseScale: 0.2, Seed: 7},
	} {
		res, err := john.Solve(a, cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: sum %.4f within 1+xi: %v, Q ~ 3I: %v, noise %.1f, guarantee %q\n",
			res.Method, res.SumWeights, res.MaxLeverage <= 1.1,
			res.Q.At(0, 0) > 2.7 && res.Q.At(0, 0) < 3.3, res.NoiseScale, res.Guarantee)
	}
	// Output:
	// fast: sum 3.0000 within 1+xi: true, Q ~ 3I: true, noise 0.0, guarantee ""
	// dp: sum 3.0000 within 1+xi: true, Q ~ 3I: true, noise 0.2, guarantee "none (noise scale only)"
}
