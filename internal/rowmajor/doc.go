// Package rowmajor copies gonum matrices into flat row-major slices: the form the allocation-free
// step functions of the cores work on (a plain loop over []float64 beats mat calls on the hot path).
package rowmajor
