package gchisq_test

import (
	"fmt"

	"github.com/dpsim/dpsim/pkg/gchisq"
)

// The squared norm of a Gaussian vector with independent N(0, w_j) coordinates: its CDF, and the
// radius^2 exceeded with probability 1e-6 (the clip radius of Algorithm 3 for n = 10^6).
func Example() {
	d, err := gchisq.NewWeighted([]float64{0.5, 0.3, 0.2})
	if err != nil {
		panic(err)
	}
	p, _ := d.CDF(1)
	c2, _ := d.UpperQuantile(1e-6)
	fmt.Printf("mean %.2f  P(Q <= 1) = %.6f  P(Q > %.4f) = 1e-6\n", d.Mean(), p, c2)
	// Davies' test case 1 (weights 6, 3, 1, one degree of freedom each) at c = 1.
	t, _ := gchisq.New([]gchisq.Term{{Weight: 6, DF: 1}, {Weight: 3, DF: 1}, {Weight: 1, DF: 1}}, 0)
	p, _ = t.CDF(1)
	fmt.Printf("Davies case 1: %.8f (published, accuracy 1e-4: 0.05421295)\n", p)
	// Output:
	// mean 1.00  P(Q <= 1) = 0.620596  P(Q > 12.6958) = 1e-6
	// Davies case 1: 0.05421385 (published, accuracy 1e-4: 0.05421295)
}
