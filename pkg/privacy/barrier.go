package privacy

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// barrierResult is what barrierCover returns: a certified primal-dual pair of the minimum-trace
// covering problem on the constraints it was given.
type barrierResult struct {
	// X is the best primal iterate (r x r, row-major): feasible once scaled by max_j h_j, with
	// h_j = u_j^T X^{-1} u_j.
	X []float64
	// Lambda holds the dual weights on the m constraints, normalised to sum 1.
	Lambda []float64
	// Bound is the dual lower bound on min tr(X) the weights certify (weak duality).
	Bound float64
	// Steps counts the Newton steps taken over all centrings.
	Steps int
}

// barrierState is the workspace of barrierCover: the constraints, the barrier parameter t and the
// buffers that eval, the Newton system and the dual bound fill in place.
type barrierState struct {
	u       []float64 // the constraints u_j, m x r row-major
	m, r, p int       // constraints, dimension, entries of a symmetric r x r matrix
	pa, pb  []int     // basis E_alpha = sym(e_a e_b^T) of the symmetric matrices, alpha < p
	t       float64   // barrier parameter

	// Filled by eval at the current point: P = X^{-1}, w_j = P u_j, s_j = 1 - u_j^T P u_j.
	P, w, sj []float64
	// The Newton system: Q = sum w w^T / s, the gradient G (matrix) and g (coordinates), the
	// Hessian H, with scratch for its terms.
	Q, G, g, bvec, K, Eb []float64
	H                    *mat.SymDense
	// The Newton direction: Jacobi scaling, scaled gradient, solution, step as a matrix, trial point.
	dscale, gs []float64
	dv         mat.VecDense
	dX, Xn     []float64
	// The dual: weights lambda_j = 1/(t s_j) and M = sum lambda_j u_j u_j^T.
	lam []float64
	M   *mat.SymDense
	eig mat.EigenSym
}

func newBarrierState(u []float64, m, r int) *barrierState {
	p := r * (r + 1) / 2
	b := &barrierState{u: u, m: m, r: r, p: p,
		pa: make([]int, p), pb: make([]int, p),
		P: make([]float64, r*r), w: make([]float64, m*r), sj: make([]float64, m),
		Q: make([]float64, r*r), G: make([]float64, r*r), g: make([]float64, p), bvec: make([]float64, p),
		K: make([]float64, r*r), Eb: make([]float64, r*r), H: mat.NewSymDense(p, nil),
		dscale: make([]float64, p), gs: make([]float64, p),
		dX: make([]float64, r*r), Xn: make([]float64, r*r),
		lam: make([]float64, m), M: mat.NewSymDense(r, nil),
	}
	k := 0
	for a := 0; a < r; a++ {
		for c := a; c < r; c++ {
			b.pa[k], b.pb[k] = a, c
			k++
		}
	}
	return b
}

// barrierCover solves min tr(X) s.t. u_j^T X^{-1} u_j <= 1 (j < m, ||u_j|| <= 1) by a primal barrier
// method: minimise t tr(X) - sum_j log det [[X, u_j], [u_j^T, 1]]
// = t tr(X) - sum_j log(1 - u_j^T X^{-1} u_j) - m log det X (a self-concordant barrier of parameter
// nu = m (r+1)) by damped Newton steps on the r(r+1)/2 entries of X, multiplying t by 10 until
// nu/t <= DesignTolerance*tr(X). The dual weights lambda_j = 1/(t s_j) (s_j = 1 - u_j^T X^{-1} u_j)
// give the lower bound (tr M^{1/2})^2 / sum(lambda), M = sum lambda_j u_j u_j^T, of the dual problem
// max_lambda 2 tr(M^{1/2}) - sum(lambda).
func barrierCover(u []float64, m, r int) (barrierResult, error) {
	b := newBarrierState(u, m, r)
	X := make([]float64, r*r)
	for i := 0; i < r; i++ {
		X[i*r+i] = 2
	}
	nu := float64(m * (r + 1))
	b.t = nu / trace(X, r)
	f, ok := b.eval(X)
	if !ok {
		return barrierResult{}, fmt.Errorf("barrier: the starting point is infeasible")
	}
	bestLam := make([]float64, m)
	bestX := make([]float64, r*r)
	bestPrimal, bestBound := math.Inf(1), 0.0
	steps := 0
	stalled := false
	for outer := 0; outer < 60 && !stalled; outer++ {
		var n int
		var err error
		f, n, stalled, err = b.centre(X, f)
		steps += n
		if err != nil {
			return barrierResult{Steps: steps}, err
		}
		// Keep the best certified pair seen so far: the primal X scaled to feasibility (objective
		// tr(X) max_j h_j) and the dual bound of lambda_j = 1/(t s_j) - both valid at any X.
		if pv := trace(X, r) * maxH(b.sj); pv < bestPrimal {
			bestPrimal = pv
			copy(bestX, X)
		}
		if bd, err := b.dualBound(b.sj, b.t); err != nil {
			return barrierResult{Steps: steps}, err
		} else if bd > bestBound {
			bestBound = bd
			copy(bestLam, b.lam)
		}
		if nu/b.t <= DesignTolerance*trace(X, r) || bestPrimal <= bestBound*(1+0.1*DesignTolerance) {
			break
		}
		b.t *= 10
		f, _ = b.eval(X)
	}
	if math.IsInf(bestPrimal, 1) || bestBound == 0 {
		return barrierResult{Steps: steps}, fmt.Errorf("barrier: no certified solution (the Newton system broke down at the first centring)")
	}
	sum := 0.0
	for _, l := range bestLam {
		sum += l
	}
	for j := range bestLam {
		bestLam[j] /= sum
	}
	return barrierResult{X: bestX, Lambda: bestLam, Bound: bestBound, Steps: steps}, nil
}

// eval computes f(X) = t tr X - sum log s_j - m log det X and fills P, w, s; ok=false outside the domain.
func (b *barrierState) eval(X []float64) (float64, bool) {
	m, r := b.m, b.r
	ld, ok := invSymSmall(X, b.P, r)
	if !ok {
		return 0, false
	}
	f := b.t*trace(X, r) - float64(m)*ld
	for j := 0; j < m; j++ {
		uj := b.u[j*r : j*r+r]
		wj := b.w[j*r : j*r+r]
		h := 0.0
		for a := 0; a < r; a++ {
			x := 0.0
			for c := 0; c < r; c++ {
				x += b.P[a*r+c] * uj[c]
			}
			wj[a] = x
			h += uj[a] * x
		}
		s := 1 - h
		if !(s > 0) {
			return 0, false
		}
		b.sj[j] = s
		f -= math.Log(s)
	}
	return f, true
}

// dualBound sets lam_j = 1/(t s_j) and returns (tr M^{1/2})^2 / sum(lam), M = sum lam_j u_j u_j^T:
// max over the scale of the dual objective 2 tr(M^{1/2}) - sum(lam), a lower bound on min tr(X).
func (b *barrierState) dualBound(sj []float64, t float64) (float64, error) {
	m, r := b.m, b.r
	b.M.Zero()
	sum := 0.0
	for j := 0; j < m; j++ {
		b.lam[j] = 1 / (t * sj[j])
		sum += b.lam[j]
		uj := b.u[j*r : j*r+r]
		for a := 0; a < r; a++ {
			for c := a; c < r; c++ {
				b.M.SetSym(a, c, b.M.At(a, c)+b.lam[j]*uj[a]*uj[c])
			}
		}
	}
	if !b.eig.Factorize(b.M, false) {
		return 0, fmt.Errorf("barrier: eigendecomposition of the dual matrix failed")
	}
	tr := 0.0
	for _, v := range b.eig.Values(nil) {
		tr += math.Sqrt(math.Max(v, 0))
	}
	return tr * tr / sum, nil
}

// centre runs damped Newton steps at the current t from X (where eval gave f), updating X in place,
// and returns the barrier value at the end, the steps taken and whether the Newton system broke
// down (rounding made it indefinite: the caller stops there).
func (b *barrierState) centre(X []float64, f float64) (fEnd float64, steps int, stalled bool, err error) {
	near := 0
	for inner := 0; inner < 50; inner++ {
		b.newtonSystem()
		dec, ok, err := b.newtonDirection()
		if err != nil {
			return f, steps, false, err
		}
		if !ok {
			return f, steps, true, nil
		}
		if dec <= 1e-12 {
			break
		}
		for k := 0; k < b.p; k++ {
			a, c := b.pa[k], b.pb[k]
			b.dX[a*b.r+c] = -b.dv.AtVec(k)
			b.dX[c*b.r+a] = -b.dv.AtVec(k)
		}
		fn, accepted := b.lineSearch(X, f, dec)
		if !accepted {
			f, _ = b.eval(X) // restore P, w, s at X
			break
		}
		f = fn
		steps++
		if dec < 1e-7 {
			break // centred well enough: f is within dec/2 of the centre, and rounding limits more
		}
		if dec < 1e-4 {
			if near++; near > 5 {
				break // in the quadratic region but stalled by rounding (large t)
			}
		}
	}
	return f, steps, false, nil
}

// lineSearch tries X + tau dX. Damped Newton: inside the quadratic region (decrement^2 < 0.25) the
// full step stays in the domain of a self-concordant barrier and is taken as is; otherwise
// backtrack (Armijo). On success X holds the new point and eval's buffers match it.
func (b *barrierState) lineSearch(X []float64, f, dec float64) (float64, bool) {
	tau := 1.0
	for ls := 0; ls < 60; ls++ {
		for i := range b.Xn {
			b.Xn[i] = X[i] + tau*b.dX[i]
		}
		fn, ok := b.eval(b.Xn)
		if ok && (dec < 0.25 || fn <= f-0.25*tau*dec) {
			copy(X, b.Xn)
			return fn, true
		}
		tau /= 2
	}
	return 0, false
}

// newtonSystem fills the gradient g and the Hessian H of the barrier at the point eval last saw,
// in the coordinates of the basis E_alpha.
func (b *barrierState) newtonSystem() {
	m, r, p := b.m, b.r, b.p
	// gradient G = t I - Q - m P, Q = sum w w^T / s
	for i := range b.Q {
		b.Q[i] = 0
	}
	b.H.Zero()
	for j := 0; j < m; j++ {
		wj := b.w[j*r : j*r+r]
		is := 1 / b.sj[j]
		for a := 0; a < r; a++ {
			for c := 0; c < r; c++ {
				b.Q[a*r+c] += is * wj[a] * wj[c]
			}
		}
		b.addConstraintCurvature(wj, is*is)
	}
	for a := 0; a < r; a++ {
		for c := 0; c < r; c++ {
			b.G[a*r+c] = -b.Q[a*r+c] - float64(m)*b.P[a*r+c]
		}
		b.G[a*r+a] += b.t
	}
	for k := 0; k < p; k++ {
		a, c := b.pa[k], b.pb[k]
		if a == c {
			b.g[k] = b.G[a*r+a]
		} else {
			b.g[k] = 2 * b.G[a*r+c]
		}
	}
	b.addMatrixCurvature()
}

// addConstraintCurvature adds term B of the Hessian for one constraint: is2 b b^T with
// b_alpha = w^T E_alpha w.
func (b *barrierState) addConstraintCurvature(wj []float64, is2 float64) {
	p := b.p
	for k := 0; k < p; k++ {
		a, c := b.pa[k], b.pb[k]
		if a == c {
			b.bvec[k] = wj[a] * wj[a]
		} else {
			b.bvec[k] = 2 * wj[a] * wj[c]
		}
	}
	for k := 0; k < p; k++ {
		bk := is2 * b.bvec[k]
		for l := k; l < p; l++ {
			b.H.SetSym(k, l, b.H.At(k, l)+bk*b.bvec[l])
		}
	}
}

// addMatrixCurvature adds terms A and C of the Hessian: H_A(alpha,beta) = 2 tr(E_a P E_b Q),
// H_C = m tr(P E_a P E_b).
func (b *barrierState) addMatrixCurvature() {
	r, p := b.r, b.p
	for l := 0; l < p; l++ {
		basis(b.Eb, b.pa[l], b.pb[l], r)
		for _, term := range [2]struct {
			R    []float64
			coef float64
		}{{b.Q, 2}, {b.P, float64(b.m)}} {
			// K = P E_b R
			tripleProduct(b.K, b.P, b.Eb, term.R, r)
			for k := 0; k <= l; k++ {
				a, c := b.pa[k], b.pb[k]
				v := b.K[c*r+a]
				if a != c {
					v += b.K[a*r+c]
				}
				b.H.SetSym(k, l, b.H.At(k, l)+term.coef*v)
			}
		}
	}
}

// newtonDirection solves the Jacobi-scaled Newton system for the direction dv (the step is -dv)
// and returns the Newton decrement^2; ok is false when rounding has made the system indefinite.
func (b *barrierState) newtonDirection() (dec float64, ok bool, err error) {
	p := b.p
	// Jacobi scaling: near the boundary H mixes entries ~1/s_j^2 ~ t^2 with O(1) ones.
	for k := 0; k < p; k++ {
		b.dscale[k] = 1 / math.Sqrt(b.H.At(k, k))
	}
	for k := 0; k < p; k++ {
		for l := k; l < p; l++ {
			b.H.SetSym(k, l, b.H.At(k, l)*b.dscale[k]*b.dscale[l])
		}
		b.gs[k] = b.g[k] * b.dscale[k]
	}
	var ch mat.Cholesky
	if !ch.Factorize(b.H) {
		return 0, false, nil
	}
	gv := mat.NewVecDense(p, b.gs)
	if err := ch.SolveVecTo(&b.dv, gv); err != nil {
		var cond mat.Condition
		if !errors.As(err, &cond) {
			return 0, false, fmt.Errorf("barrier: %w", err)
		}
		// ill-conditioned but solved: the Newton direction is still usable
	}
	dec = mat.Dot(gv, &b.dv) // Newton decrement^2 (direction is -D dv)
	for k := 0; k < p; k++ {
		b.dv.SetVec(k, b.dv.AtVec(k)*b.dscale[k])
	}
	return dec, true, nil
}
