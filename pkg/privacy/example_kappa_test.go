package privacy_test

import (
	"fmt"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// The papers' noise level for eps = 1, delta = 1e-2, mu = 1 and unit sensitivity comes from the closed-form
// bound; the exact inverse of kappa (eq. (7)) gives the least sigma with the same guarantee.
func ExampleGaussianSigma() {
	paper, err := privacy.GaussianSigma(privacy.PaperBound, 1, 1e-2, 1, 1)
	if err != nil {
		panic(err)
	}
	tight, err := privacy.GaussianSigma(privacy.Tight, 1, 1e-2, 1, 1)
	if err != nil {
		panic(err)
	}
	fmt.Printf("paper-bound sigma = %.4f\n", paper)
	fmt.Printf("tight sigma       = %.4f\n", tight)
	fmt.Println("tight satisfies eq. (9):", privacy.GaussianSatisfies(1, 1e-2, 1, 1, tight))
	fmt.Println("0.999*tight satisfies: ", privacy.GaussianSatisfies(1, 1e-2, 1, 1, 0.999*tight))
	_, err = privacy.GaussianSigma(privacy.Classic, 1, 1e-2, 1, 1)
	fmt.Println("classic at eps = 1 refused:", err != nil)
	// Output:
	// paper-bound sigma = 2.5244
	// tight sigma       = 1.8779
	// tight satisfies eq. (9): true
	// 0.999*tight satisfies:  false
	// classic at eps = 1 refused: true
}

// kappa_eps^{-1}(delta) is the largest sensitivity, in noise units, that a unit Gaussian tolerates.
func ExampleKappaInverse() {
	y, err := privacy.KappaInverse(1, 1e-2)
	if err != nil {
		panic(err)
	}
	fmt.Printf("y* = %.6f, kappa(1, y*) = %.6g\n", y, privacy.Kappa(1, y))
	// Output:
	// y* = 0.532517, kappa(1, y*) = 0.01
}

// An auditor that measured mu-GDP = 1 converts it to the eps it certifies at delta = 1e-5.
func ExampleEpsilonForGDP() {
	eps, err := privacy.EpsilonForGDP(1, 1e-5)
	if err != nil {
		panic(err)
	}
	fmt.Printf("eps = %.4f\n", eps)
	// Output:
	// eps = 4.3772
}

// The Laplace scale b of Algorithm 2 (eq. (14)); the noise variance is 2 b^2.
func ExampleLaplaceScale() {
	b, err := privacy.LaplaceScale(0.1, 1, 1)
	if err != nil {
		panic(err)
	}
	fmt.Printf("b = %g, variance = %g\n", b, 2*b*b)
	// Output:
	// b = 10, variance = 200
}
