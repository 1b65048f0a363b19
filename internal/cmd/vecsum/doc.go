// Package vecsumcmd is the 'dpsim vecsum' command: plan, run and figure for the differentially private
// vector sums of pkg/vecsum (Gaussian, elliptical Gaussian and Algorithm 3 for normal data) and the
// reproduction of the thesis figure. Run is the entry point; every flag is explained by -h.
package vecsumcmd

import "github.com/dpsim/dpsim/internal/cli"

// Command is the table entry for `dpsim vecsum`.
var Command = cli.Command{Name: "vecsum", Summary: "DP vector sums: plan, run on a CSV, or the thesis gain figure", Run: Run}
