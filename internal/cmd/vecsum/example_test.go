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
	//
	// dim  sigma  scaling b  noise sigma (scaled)  noise sigma (unscaled)
	// 1    4      0.223607   112.702               111.543
	// 2    1      0.447214   56.351                111.543
}
