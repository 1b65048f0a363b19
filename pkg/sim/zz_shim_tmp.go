package sim

import "github.com/dpsim/dpsim/pkg/estimate"

// TEMPORARY until estimate.NetworkEstimator.ObservePartial lands.
func observePartial(e *estimate.NetworkEstimator, t int, y []float64, have []bool) error {
	return e.Observe(t, y)
}
