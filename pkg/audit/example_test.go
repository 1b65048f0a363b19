package audit_test

import (
	"fmt"

	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
)

// Audit a Gaussian mechanism claimed (1, 1e-5)-DP: the released value is the secret input (0 for x, 1 for
// x') plus N(0, sigma^2) noise calibrated exactly for the claim, and the adversary scores with the
// likelihood ratio. 200,000 trials per side.
func Example() {
	eps, delta := 1.0, 1e-5
	y, _ := privacy.KappaInverse(eps, delta) // largest distance/sigma the claim allows
	sigma := 1 / y
	x, xPrime := []float64{0}, []float64{1}

	trials := audit.NewTrials(200000)
	obs := []float64{0}
	for trial := uint64(0); trial < 400000; trial++ {
		r := rng.New(42, rng.Label("challenger"), trial) // the challenger's coin and the noise
		bit := int(r.Uint64() & 1)
		obs[0] = float64(bit) + sigma*r.NormFloat64()
		trials.AddTrial(trial, bit, audit.GaussianLLR(obs, x, xPrime, sigma))
	}
	res, err := trials.Analyze(audit.Options{EpsilonClaimed: eps, Delta: delta})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("verdict: %s\n", res.Verdict)
	fmt.Printf("Gaussian-DP bound within [0.9 eps, eps]: %v\n", res.EpsilonLBGDP >= 0.9*eps && res.EpsilonLBGDP <= eps)
	fmt.Printf("Clopper-Pearson bound below the claim: %v\n", res.EpsilonLBCP <= eps)
	fmt.Printf("confidence %.2f, %d rate statements\n", res.Confidence, res.Statements)
	// Output:
	// verdict: consistent
	// Gaussian-DP bound within [0.9 eps, eps]: true
	// Clopper-Pearson bound below the claim: true
	// confidence 0.95, 4 rate statements
}

// Audit an under-calibrated Laplace mechanism: noise scale b = 1 for a shift of 3 (true eps = 3) while
// the claim is eps = 1. The pure-eps Clopper-Pearson bound exposes it.
func Example_laplaceViolation() {
	trials := audit.NewTrials(50000)
	r := rng.New(7, rng.Label("example-laplace"))
	m0, m1 := []float64{0}, []float64{3}
	obs := []float64{0}
	lap := func() float64 { return r.ExpFloat64() - r.ExpFloat64() } // Laplace(0, 1)
	for i := 0; i < 50000; i++ {
		obs[0] = m0[0] + lap()
		trials.Add(0, audit.LaplaceLLR(obs, m0, m1, 1))
		obs[0] = m1[0] + lap()
		trials.Add(1, audit.LaplaceLLR(obs, m0, m1, 1))
	}
	res, _ := trials.Analyze(audit.Options{EpsilonClaimed: 1, Mechanism: privacy.Laplace})
	fmt.Printf("verdict: %s (eps_lb_cp > 2: %v)\n", res.Verdict, res.EpsilonLBCP > 2)
	// Output:
	// verdict: violation (eps_lb_cp > 2: true)
}
