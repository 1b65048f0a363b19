package vecsum_test

import (
	"fmt"

	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/vecsum"
)

// Plan Algorithm 3 for n = 10^6 rows whose 5 coordinates have skewed standard deviations.
func ExamplePlanNormal() {
	p, err := vecsum.PlanNormal([]float64{10, 3, 1, 0.3, 0.1}, 1_000_000, 1, 1e-6, 0)
	if err != nil {
		panic(err)
	}
	fmt.Printf("sigma_opt %.4f  C %.3f  C_n %.3f  gain %.2f\n", p.SigmaOpt, p.ClipRadius, p.ClipRadiusUnscaled, p.Gain)
	// Output:
	// sigma_opt 4.2247  C 4.119  C_n 49.024  gain 3.42
}

// The elliptical Gaussian mechanism on a box with skewed widths, then a release.
func ExamplePlanBox() {
	p, err := vecsum.PlanBox(vecsum.MethodElliptical, []float64{0, 0, 0}, []float64{100, 10, 1}, 1, 1e-6)
	if err != nil {
		panic(err)
	}
	fmt.Printf("noise sigmas %.1f %.1f %.1f  gain over gaussian %.2f\n", p.NoiseSigmas[0], p.NoiseSigmas[1], p.NoiseSigmas[2], p.GainOverGaussian)
	res, _ := p.Sum([]float64{50, 5, 0.5, 120, 1, 0}, rng.New(1), nil)
	fmt.Println("clamped rows:", res.ClampedRows)
	// Output:
	// noise sigmas 445.1 140.8 44.5  gain over gaussian 2.46
	// clamped rows: 1
}
