package dynamics

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/mat"
)

// DARE solves the discrete algebraic Riccati equation
//
//	X = A'XA - A'XB (R + B'XB)^{-1} B'XA + Q
//
// for its stabilising solution X (symmetric, positive semidefinite), with A n x n, B n x m,
// Q n x n symmetric positive semidefinite and R m x m symmetric positive definite. It needs (A, B)
// stabilisable and (Q^{1/2}, A) detectable, with no closed-loop eigenvalue on the unit circle.
//
// Algorithm: the structure-preserving doubling algorithm (SDA, Chu, Fan & Lin 2005):
// A_0 = A, G_0 = B R^{-1} B', H_0 = Q,
// W_k = I + G_k H_k, A_{k+1} = A_k W_k^{-1} A_k, G_{k+1} = G_k + A_k W_k^{-1} G_k A_k',
// H_{k+1} = H_k + A_k' H_k W_k^{-1} A_k; H_k -> X quadratically. The result is symmetrised, polished
// by Newton-Hewer steps (a Stein equation per step) when that lowers the residual, and verified:
// the relative residual must be below 1e-9 and A - B K must be Schur stable, otherwise an error
// says which check failed and by how much. When Q is singular and (Q, A) not detectable (e.g.
// Q = 0 with A unstable) the doubling may stop at a non-stabilising solution; then (for n <= 30)
// a stabilising gain is taken from Q + 1e-6 I and Newton-Hewer iterations with the true Q converge
// to the stabilising solution.
func DARE(A, B, Q, R *mat.Dense) (*mat.Dense, error) {
	n, _, err := checkDAREInputs(A, B, Q, R)
	if err != nil {
		return nil, err
	}
	X, sdaErr := sda(A, B, Q, R)
	if sdaErr == nil {
		X, err = polishAndVerify(A, B, Q, R, X)
		if err == nil {
			return X, nil
		}
	} else {
		err = sdaErr
	}
	// Fallback for a singular Q with (Q, A) not detectable (e.g. Q = 0 and A unstable, where the
	// doubling stays at the non-stabilising X = 0): a stabilising gain from Q + eps I, then
	// Newton-Hewer iterations with the true Q, which converge to the stabilising solution from any
	// stabilising initial gain.
	if n > 30 {
		return nil, err
	}
	eps := 1e-6 * math.Max(1, mat.Norm(Q, 1))
	var Qe mat.Dense
	Qe.Add(Q, scaledIdentity(n, eps))
	Xe, err2 := sda(A, B, &Qe, R)
	if err2 != nil {
		return nil, err2
	}
	K, err2 := lqrGain(A, B, R, Xe)
	if err2 != nil {
		return nil, err2
	}
	if rho := spectralRadiusClosedLoop(A, B, K); !(rho < 1) {
		return nil, fmt.Errorf("dynamics: DARE: no stabilising gain found (spectral radius %.6g): is (A, B) stabilisable?", rho)
	}
	X = Xe
	for it := 0; it < 200; it++ {
		Xn, err2 := steinSolve(A, B, Q, R, K)
		if err2 != nil {
			return nil, fmt.Errorf("dynamics: DARE: Newton-Hewer step %d failed (%v): no stabilising solution? "+
				"(A may have an eigenvalue on the unit circle that Q does not weigh)", it, err2)
		}
		var d mat.Dense
		d.Sub(Xn, X)
		X = Xn
		if K, err2 = lqrGain(A, B, R, X); err2 != nil {
			return nil, err2
		}
		if mat.Norm(&d, 1) <= 1e-14*math.Max(mat.Norm(X, 1), 1e-300) {
			break
		}
	}
	return polishAndVerify(A, B, Q, R, X)
}

// sda runs the structure-preserving doubling algorithm; see DARE.
func sda(A, B, Q, R *mat.Dense) (*mat.Dense, error) {
	n, _ := A.Dims()
	var Rinv mat.Dense
	if err := Rinv.Inverse(R); err != nil {
		return nil, fmt.Errorf("dynamics: DARE: R is singular: %v", err)
	}
	Ak := mat.DenseCopyOf(A)
	var G mat.Dense
	G.Product(B, &Rinv, B.T())
	symmetrize(&G)
	H := mat.DenseCopyOf(Q)
	symmetrize(H)

	I := eye(n)
	var W, WiA, WiG, tmp, An, Gn, Hn mat.Dense
	for it := 0; it < 200; it++ {
		W.Mul(&G, H)
		W.Add(&W, I)
		var lu mat.LU
		lu.Factorize(&W)
		if c := lu.Cond(); c > 1e14 || math.IsNaN(c) || math.IsInf(c, 0) {
			return nil, fmt.Errorf("dynamics: DARE: doubling step %d: I + G H is ill conditioned (cond %.3g); "+
				"is (A, B) stabilisable and (Q, A) detectable?", it, c)
		}
		if err := lu.SolveTo(&WiA, false, Ak); err != nil {
			return nil, fmt.Errorf("dynamics: DARE: doubling step %d: %v", it, err)
		}
		if err := lu.SolveTo(&WiG, false, &G); err != nil {
			return nil, fmt.Errorf("dynamics: DARE: doubling step %d: %v", it, err)
		}
		An.Mul(Ak, &WiA)
		tmp.Mul(Ak, &WiG)
		Gn.Mul(&tmp, Ak.T())
		Gn.Add(&Gn, &G)
		tmp.Mul(Ak.T(), H)
		Hn.Mul(&tmp, &WiA)
		Hn.Add(&Hn, H)
		symmetrize(&Gn)
		symmetrize(&Hn)
		if err := checkFinite("DARE iterate", &Hn); err != nil {
			return nil, fmt.Errorf("dynamics: DARE diverged at doubling step %d (is (A, B) stabilisable?)", it)
		}
		var diff mat.Dense
		diff.Sub(&Hn, H)
		change := mat.Norm(&diff, 1)
		scale := mat.Norm(&Hn, 1)
		Ak.Copy(&An)
		G.Copy(&Gn)
		H.Copy(&Hn)
		if change <= 1e-14*scale || change == 0 {
			return H, nil
		}
	}
	return nil, errors.New("dynamics: DARE: doubling did not converge in 200 steps " +
		"(is (A, B) stabilisable and (Q, A) detectable, with no eigenvalue on the unit circle?)")
}

// polishAndVerify applies up to three Newton-Hewer steps (kept only when they lower the
// residual), then checks the relative residual (<= 1e-9) and that A - B K is Schur stable.
func polishAndVerify(A, B, Q, R, X *mat.Dense) (*mat.Dense, error) {
	n, _ := A.Dims()
	res := DAREResidual(A, B, Q, R, X)
	for k := 0; k < 3 && res > 1e-15 && n <= 30; k++ {
		K, err := lqrGain(A, B, R, X)
		if err != nil {
			break
		}
		Xn, err := steinSolve(A, B, Q, R, K)
		if err != nil {
			break
		}
		rn := DAREResidual(A, B, Q, R, Xn)
		if !(rn < res) {
			break
		}
		X, res = Xn, rn
	}
	if res > 1e-9 || math.IsNaN(res) {
		return nil, fmt.Errorf("dynamics: DARE: relative residual %.3g exceeds 1e-9", res)
	}
	K, err := lqrGain(A, B, R, X)
	if err != nil {
		return nil, err
	}
	if rho := spectralRadiusClosedLoop(A, B, K); !(rho < 1) {
		return nil, fmt.Errorf("dynamics: DARE: solution is not stabilising: spectral radius of A - B K is %.6g >= 1 "+
			"(no stabilising solution: an eigenvalue on the unit circle, or (A, B) not stabilisable)", rho)
	}
	return X, nil
}

func scaledIdentity(n int, s float64) *mat.Dense {
	m := eye(n)
	m.Scale(s, m)
	return m
}

// DLQR returns the discrete LQR gain K = (R + B'XB)^{-1} B'XA, with X = DARE(A, B, Q, R), for the
// control law u = -K x minimising sum x'Qx + u'Ru (MATLAB dlqr convention). K is m x n.
//
// An observer gain for x^(t+1) = A x^ + B u + L (y - C x^) (eq. 24) follows by duality, as the
// paper's authors did: L = DLQR(A', C', Q, R)', see ObserverGain.
func DLQR(A, B, Q, R *mat.Dense) (*mat.Dense, error) {
	X, err := DARE(A, B, Q, R)
	if err != nil {
		return nil, err
	}
	return lqrGain(A, B, R, X)
}

// ObserverGain returns L = DLQR(A', C', Q, R)' (n x p), which makes A - L C Schur stable: the
// predictor-form observer gain of eq. (24) (MATLAB: L = dlqr(A', C', Q, R)').
func ObserverGain(A, C, Q, R *mat.Dense) (*mat.Dense, error) {
	if A == nil || C == nil {
		return nil, errors.New("dynamics: ObserverGain: A and C are required")
	}
	Kd, err := DLQR(mat.DenseCopyOf(A.T()), mat.DenseCopyOf(C.T()), Q, R)
	if err != nil {
		return nil, fmt.Errorf("dynamics: ObserverGain (dual LQR on (A', C')): %w", err)
	}
	return mat.DenseCopyOf(Kd.T()), nil
}

// DAREResidual returns ||A'XA - X - A'XB (R+B'XB)^{-1} B'XA + Q||_F divided by
// (||Q||_F + ||X||_F + ||A'XA||_F), a scale-free measure of how well X solves the DARE.
// It returns +Inf when R + B'XB is singular.
func DAREResidual(A, B, Q, R, X *mat.Dense) float64 {
	var AtXA, BtXA, S, t1, t2, res mat.Dense
	t1.Mul(A.T(), X)
	AtXA.Mul(&t1, A)
	t2.Mul(B.T(), X)
	BtXA.Mul(&t2, A)
	S.Mul(&t2, B)
	S.Add(&S, R)
	var Sinv mat.Dense
	if err := Sinv.Inverse(&S); err != nil {
		return math.Inf(1)
	}
	var corr mat.Dense
	corr.Product(BtXA.T(), &Sinv, &BtXA)
	res.Sub(&AtXA, X)
	res.Sub(&res, &corr)
	res.Add(&res, Q)
	den := mat.Norm(Q, 2) + mat.Norm(X, 2) + mat.Norm(&AtXA, 2)
	if den == 0 {
		return mat.Norm(&res, 2)
	}
	return mat.Norm(&res, 2) / den
}

func lqrGain(A, B, R, X *mat.Dense) (*mat.Dense, error) {
	var t1, S, BtXA mat.Dense
	t1.Mul(B.T(), X)
	S.Mul(&t1, B)
	S.Add(&S, R)
	BtXA.Mul(&t1, A)
	var K mat.Dense
	if err := K.Solve(&S, &BtXA); err != nil {
		return nil, fmt.Errorf("dynamics: LQR gain: R + B'XB is singular: %v", err)
	}
	return &K, nil
}

// steinSolve returns the X solving the Stein equation X = Acl' X Acl + Q + K'RK with
// Acl = A - B K (one Newton-Hewer step for the gain K), by vectorisation (small systems only).
func steinSolve(A, B, Q, R, K *mat.Dense) (*mat.Dense, error) {
	n, _ := A.Dims()
	if n > 30 {
		return nil, errors.New("system too large for the vectorised Stein solver (n > 30)")
	}
	var Acl, BK mat.Dense
	BK.Mul(B, K)
	Acl.Sub(A, &BK)
	var rhs, t1 mat.Dense
	t1.Mul(K.T(), R) // n x m
	rhs.Mul(&t1, K)
	rhs.Add(&rhs, Q)
	// vec(X) - (Acl' kron Acl') vec(X) = vec(rhs), with column-major vec.
	N := n * n
	M := mat.NewDense(N, N, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			// row index for X[i][j]: j*n+i ; (Acl' X Acl)[i][j] = sum_{k,l} Acl[k][i] X[k][l] Acl[l][j]
			row := j*n + i
			for k := 0; k < n; k++ {
				for l := 0; l < n; l++ {
					M.Set(row, l*n+k, M.At(row, l*n+k)-Acl.At(k, i)*Acl.At(l, j))
				}
			}
			M.Set(row, row, M.At(row, row)+1)
		}
	}
	b := mat.NewVecDense(N, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			b.SetVec(j*n+i, rhs.At(i, j))
		}
	}
	var v mat.VecDense
	if err := v.SolveVec(M, b); err != nil {
		return nil, err
	}
	X := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			X.Set(i, j, v.AtVec(j*n+i))
		}
	}
	symmetrize(X)
	return X, nil
}

func spectralRadiusClosedLoop(A, B, K *mat.Dense) float64 {
	var BK, Acl mat.Dense
	BK.Mul(B, K)
	Acl.Sub(A, &BK)
	return SpectralRadius(&Acl)
}

// SpectralRadius returns max |lambda_i(M)| for a square M (NaN if the eigen-decomposition fails).
func SpectralRadius(M mat.Matrix) float64 {
	var eig mat.Eigen
	if !eig.Factorize(M, mat.EigenNone) {
		return math.NaN()
	}
	rho := 0.0
	for _, v := range eig.Values(nil) {
		rho = math.Max(rho, cmplx.Abs(v))
	}
	return rho
}

func symmetrize(m *mat.Dense) {
	r, _ := m.Dims()
	for i := 0; i < r; i++ {
		for j := i + 1; j < r; j++ {
			v := 0.5 * (m.At(i, j) + m.At(j, i))
			m.Set(i, j, v)
			m.Set(j, i, v)
		}
	}
}

func checkDAREInputs(A, B, Q, R *mat.Dense) (n, m int, err error) {
	if A == nil || B == nil || Q == nil || R == nil {
		return 0, 0, errors.New("dynamics: DARE: A, B, Q and R are all required")
	}
	ar, ac := A.Dims()
	if ar != ac {
		return 0, 0, fmt.Errorf("dynamics: DARE: A must be square, got %dx%d", ar, ac)
	}
	n = ar
	br, bc := B.Dims()
	if br != n {
		return 0, 0, fmt.Errorf("dynamics: DARE: B must have %d rows (as A), got %dx%d", n, br, bc)
	}
	m = bc
	if qr, qc := Q.Dims(); qr != n || qc != n {
		return 0, 0, fmt.Errorf("dynamics: DARE: Q must be %dx%d, got %dx%d", n, n, qr, qc)
	}
	if rr, rc := R.Dims(); rr != m || rc != m {
		return 0, 0, fmt.Errorf("dynamics: DARE: R must be %dx%d (B has %d columns), got %dx%d", m, m, m, rr, rc)
	}
	for _, x := range []struct {
		name string
		M    *mat.Dense
	}{{"A", A}, {"B", B}, {"Q", Q}, {"R", R}} {
		if err := checkFinite(x.name, x.M); err != nil {
			return 0, 0, err
		}
	}
	if a := asymmetry(Q); a > 1e-10*math.Max(1, mat.Norm(Q, 1)) {
		return 0, 0, fmt.Errorf("dynamics: DARE: Q is not symmetric (max |Q - Q'| = %.3g)", a)
	}
	if a := asymmetry(R); a > 1e-10*math.Max(1, mat.Norm(R, 1)) {
		return 0, 0, fmt.Errorf("dynamics: DARE: R is not symmetric (max |R - R'| = %.3g)", a)
	}
	if lmin := minEigSym(Q); lmin < -1e-12*math.Max(1, mat.Norm(Q, 1)) {
		return 0, 0, fmt.Errorf("dynamics: DARE: Q must be positive semidefinite (smallest eigenvalue %.3g)", lmin)
	}
	if lmin := minEigSym(R); !(lmin > 0) {
		return 0, 0, fmt.Errorf("dynamics: DARE: R must be positive definite (smallest eigenvalue %.3g)", lmin)
	}
	return n, m, nil
}

func asymmetry(m *mat.Dense) float64 {
	r, _ := m.Dims()
	a := 0.0
	for i := 0; i < r; i++ {
		for j := i + 1; j < r; j++ {
			a = math.Max(a, math.Abs(m.At(i, j)-m.At(j, i)))
		}
	}
	return a
}

func minEigSym(m *mat.Dense) float64 {
	r, _ := m.Dims()
	s := mat.NewSymDense(r, nil)
	for i := 0; i < r; i++ {
		for j := i; j < r; j++ {
			s.SetSym(i, j, 0.5*(m.At(i, j)+m.At(j, i)))
		}
	}
	var es mat.EigenSym
	if !es.Factorize(s, false) {
		return math.NaN()
	}
	return es.Values(nil)[0]
}
