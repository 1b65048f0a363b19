package vecsumcmd_test

import (
	"os"

	vecsumcmd "github.com/dpsim/dpsim/internal/cmd/vecsum"
)

// The plan of Algorithm 3 for 1000 rows with standard deviations 4 and 1, without data.
func ExampleRun() {
	err := vecsumcmd.Run([]string{"plan", "--sigmas", "4,1", "--n", "1000", "--epsilon", "1", "--delta", "1e-6",
		"--clip-samples", "0"}, os.Stdout, os.Stderr)
	if err != nil {
		panic(err)
	}
	// Output:
	// d 2, n 1000, clip probability 0.001, epsilon 1, delta 1e-06, sigma_opt 4.22468
	//
	//                           scaled (Alg. 3)  unscaled
	// clip radius               2.98259          13.2014
	// expected noise error      15877.2          24883.8
	// gain (noise error ratio)  1.56727
	// Theorem 4 bound: not applicable. Lemma 4.2 / Theorem 4 need ln(1/p_C) <= sum sigma^2 / (18 sigma_max^2); here ln(1/p_C) = 6.908 > sum sigma^2 / (18 sigma_max^2) = 0.05903 (too few or too unequal sigmas for this clipping probability)
	//
	// dim  sigma  scaling b  noise sigma (scaled)  noise sigma (unscaled)
	// 1    4      0.223607   112.702               111.543
	// 2    1      0.447214   56.351                111.543
}
