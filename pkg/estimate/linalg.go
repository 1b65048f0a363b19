package estimate

import "math"

// MinPivot is the smallest pivot accepted when factorising the Jacobi-equilibrated normal matrix
// (unit diagonal): O_t'O_t counts as invertible when its scaled condition number is below about
// 1/MinPivot.
const MinPivot = 1e-10

// solveSPD solves G x = rhs for the n x n symmetric matrix G (row-major) by Cholesky after Jacobi
// equilibration (D^{-1/2} G D^{-1/2} has unit diagonal). l (n*n) and d (n) are scratch. It reports
// false when G is singular to working precision (a zero diagonal or a scaled pivot below MinPivot).
// It does not allocate.
func solveSPD(n int, G, rhs, x, l, d []float64) bool {
	for i := 0; i < n; i++ {
		gii := G[i*n+i]
		if !(gii > 0) || math.IsInf(gii, 0) {
			return false
		}
		d[i] = math.Sqrt(gii)
	}
	// Cholesky of M = D^{-1} G D^{-1}, lower triangle into l.
	for j := 0; j < n; j++ {
		s := G[j*n+j] / (d[j] * d[j])
		for k := 0; k < j; k++ {
			s -= l[j*n+k] * l[j*n+k]
		}
		if !(s > MinPivot) {
			return false
		}
		ljj := math.Sqrt(s)
		l[j*n+j] = ljj
		for i := j + 1; i < n; i++ {
			v := G[i*n+j] / (d[i] * d[j])
			for k := 0; k < j; k++ {
				v -= l[i*n+k] * l[j*n+k]
			}
			l[i*n+j] = v / ljj
		}
	}
	// Forward: L w = D^{-1} rhs.
	for i := 0; i < n; i++ {
		v := rhs[i] / d[i]
		for k := 0; k < i; k++ {
			v -= l[i*n+k] * x[k]
		}
		x[i] = v / l[i*n+i]
	}
	// Backward: L' y = w, then x = D^{-1} y.
	for i := n - 1; i >= 0; i-- {
		v := x[i]
		for k := i + 1; k < n; k++ {
			v -= l[k*n+i] * x[k]
		}
		x[i] = v / l[i*n+i]
	}
	for i := 0; i < n; i++ {
		x[i] /= d[i]
	}
	return true
}

// finite returns the index of the first value of v that is NaN or infinite, or -1. x - x is 0
// for every finite x and NaN for NaN and for both infinities: one subtraction per value.
func finite(v []float64) int {
	for i, x := range v {
		if x-x != 0 {
			return i
		}
	}
	return -1
}
