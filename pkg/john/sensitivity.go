package john

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Sensitivity bounds how much the exact leverage-score update F_i(A) = w_i h_i(w; A) can
// move, relative to itself, at fixed (public) weights w when one row a_j of A is replaced
// by any a'_j with ||a'_j - a_j||_2 <= Eps0 (the eps0-close neighbours of Definition 1.2):
// r_i = F_i(A')/F_i(A) - 1, and L2 >= sup ||r||_2, MaxAbs >= sup max_i |r_i| over all
// such A'. It is the local (instance-specific) counterpart of the Lipschitz constant L of
// Theorem 5.1. It depends on the private A, so it is a diagnostic, not a DP parameter.
//
// Derivation (doc.go, "Local sensitivity"): with Q = A^T W A, e = Eps0/sqrt(lambda_min(Q)),
// b = Q^{-1/2} a_j (|b|^2 = h_j), the change of Q is Q^{1/2} Delta Q^{1/2} with
// Delta = w_j (b' b'^T - b b^T) of rank <= 2 and ||Delta|| <= delta_j = w_j (2 sqrt(h_j) e + e^2).
// For i != j, |r_i| <= g_j |P_V u_i|^2/|u_i|^2 with g_j = delta_j/(1 - delta_j), V the range
// of Delta and u_i = Q^{-1/2} a_i, so sum_{i != j} r_i^2 <= g_j^2 (lambda_1 + lambda_2)(M),
// M = sum_i u_i u_i^T / |u_i|^2 (Ky Fan). For i = j, r_j lies in
// [(1 - e/sqrt(h_j))^2/(1 + delta_j) - 1, (1 + e/sqrt(h_j))^2/(1 - delta_j) - 1].
type Sensitivity struct {
	Eps0 float64
	// Finite is false when no bound exists at this A (then Reason says why).
	Finite bool
	Reason string
	// L2 bounds sup ||r||_2, MaxAbs bounds sup max_i |r_i|.
	L2, MaxAbs float64
	// Row is the (0-based) row whose change attains L2 (-1 when none).
	Row int
	// ZShift = 1.5 L2 / (1 - MaxAbs) bounds the 2-norm shift of the noise variables:
	// w = F(1+z) = F'(1+z') gives |z'_i - z_i| = (1+z_i)|r_i|/(1+r_i) <= 1.5|r_i|/(1-|r_i|).
	// It is the beta = L eps0 of Lemma 6.6 for this A and w.
	ZShift float64
	// LambdaMinQ = lambda_min(A^T W A); LambdaM = the two largest eigenvalues of M.
	LambdaMinQ float64
	LambdaM    [2]float64
}

// LocalSensitivity computes the bound at weights w (len n, w >= 0) for radius eps0 > 0.
func LocalSensitivity(A *mat.Dense, w []float64, eps0 float64) (*Sensitivity, error) {
	s, err := NewSolver(A, Config{Method: Exact})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if len(w) != s.n {
		return nil, fmt.Errorf("john: %d weights for %d rows", len(w), s.n)
	}
	for i, x := range w {
		if !(x >= 0) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("john: weight %d is %g; weights must be finite and >= 0", i, x)
		}
	}
	sens, err := s.localSensitivity(w, eps0)
	if err != nil {
		return nil, fmt.Errorf("john: %w", err)
	}
	return sens, nil
}

func (s *Solver) localSensitivity(w []float64, eps0 float64) (*Sensitivity, error) {
	if !(eps0 > 0) || math.IsInf(eps0, 0) {
		return nil, fmt.Errorf("eps0 must be positive and finite, got %g", eps0)
	}
	d, n := s.d, s.n
	out := &Sensitivity{Eps0: eps0, Row: -1}
	s.gram.gram(s.pool, s.a, w, s.q)
	qd := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			qd.SetSym(i, j, s.q[i*d+j])
		}
	}
	var eq mat.EigenSym
	if !eq.Factorize(qd, false) {
		return nil, fmt.Errorf("eigendecomposition of Q failed")
	}
	out.LambdaMinQ = eq.Values(nil)[0]
	u, _, err := s.factor(s.q)
	if err != nil {
		return nil, err
	}
	if !(out.LambdaMinQ > 0) {
		return nil, s.rankError()
	}
	h := make([]float64, n)
	mdata := make([]float64, d*d)
	s.lev.unitGramAndLeverages(s.pool, s.a, u, h, mdata)
	md := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			md.SetSym(i, j, 0.5*(mdata[i*d+j]+mdata[j*d+i]))
		}
	}
	var em mat.EigenSym
	if !em.Factorize(md, false) {
		return nil, fmt.Errorf("eigendecomposition of M failed")
	}
	ev := em.Values(nil)
	out.LambdaM[0] = ev[d-1]
	if d >= 2 {
		out.LambdaM[1] = ev[d-2]
	}
	ky := out.LambdaM[0] + max(out.LambdaM[1], 0)
	e := eps0 / math.Sqrt(out.LambdaMinQ)
	out.Finite = true
	for j := 0; j < n; j++ {
		wj := w[j]
		if wj == 0 {
			continue // Q does not depend on a_j and F_j = 0 on both sides
		}
		if h[j] == 0 {
			out.Finite, out.Reason, out.Row = false, fmt.Sprintf("row %d is zero with weight %g: its update is exactly 0, a neighbour's is positive", j+1, wj), j
			break
		}
		sh := math.Sqrt(h[j])
		delta := wj * (2*sh*e + e*e)
		rho := e / sh
		if delta >= 1 || rho >= 1 {
			out.Finite, out.Row = false, j
			out.Reason = fmt.Sprintf("row %d: eps0/sqrt(lambda_min(Q)) = %.3g is not small against sqrt(h_j) = %.3g (or w_j-scaled change %.3g >= 1): a neighbour can make its update arbitrarily small relative to A's", j+1, e, sh, delta)
			break
		}
		g := delta / (1 - delta)
		lo := (1-rho)*(1-rho)/(1+delta) - 1
		hi := (1+rho)*(1+rho)/(1-delta) - 1
		rj := max(-lo, hi)
		l2 := math.Sqrt(rj*rj + g*g*ky)
		if l2 > out.L2 {
			out.L2, out.Row = l2, j
		}
		out.MaxAbs = max(out.MaxAbs, rj, g)
	}
	if !out.Finite {
		out.L2, out.MaxAbs, out.ZShift = math.Inf(1), math.Inf(1), math.Inf(1)
		return out, nil
	}
	if out.MaxAbs < 1 {
		out.ZShift = 1.5 * out.L2 / (1 - out.MaxAbs)
	} else {
		out.ZShift = math.Inf(1)
		out.Finite = false
		out.Reason = fmt.Sprintf("a relative change of %.3g >= 1 is possible: the noise supports need not overlap", out.MaxAbs)
	}
	return out, nil
}
