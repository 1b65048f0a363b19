package privacy

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// Solver settings of the optimal-Sigma design (Algorithm 1, step 3).
const (
	// DesignTolerance is the relative duality gap the optimal-Sigma solver aims at (reached up to rounding).
	DesignTolerance = 1e-9
	// feasMargin is the relative margin by which the returned Sigma over-satisfies its tightest LMI.
	feasMargin = 1e-12
)

// GaussianDesign is the output of Algorithm 1 (structured Gaussian noise gamma = LambdaBar sqrt(Sigma) eta).
type GaussianDesign struct {
	Sensitivity
	// KappaInv is kappa_eps^{-1}(delta) (eq. (7)); the exact (tight) calibration is sigma = mu*Delta/KappaInv.
	KappaInv float64
	// ScalarSigma is the scalar choice Sigma = ScalarSigma^2 I from the chosen calibration.
	ScalarSigma float64
	// Sigma minimises trace(LambdaBar Sigma LambdaBar^T) subject to Sigma >= LMIScale N N^T for every
	// constraint N (eq. (12)); SqrtSigma is its symmetric square root (noise: LambdaBar SqrtSigma eta).
	Sigma     *mat.SymDense
	SqrtSigma *mat.Dense
	// TraceScalar = ScalarSigma^2 trace(LambdaBar^T LambdaBar); TraceOptimal = trace(LambdaBar Sigma LambdaBar^T) <= TraceScalar.
	TraceScalar, TraceOptimal float64
	Iterations                int // Newton steps of the barrier method (all cutting-plane rounds)
	WorkingSet                int // constraints in the final working set of the solver
	// MaxLMIViolation = max(0, -min_N lambda_min(Sigma - LMIScale N N^T)): zero when every LMI (12) holds
	// (the optimal Sigma carries a 1e-12 relative margin; the scalar fallback can show rounding ~1e-16 ||Sigma||).
	MaxLMIViolation float64

	Calibration       Calibration
	Epsilon, Delta    float64
	Mu                float64
	LMIScale          float64   // c of the LMIs Sigma >= c N N^T: (mu/KappaInv)^2 for Tight, (ScalarSigma/Value)^2 in general
	MinLMIEigenvalue  float64   // min over N of lambda_min(Sigma - c N N^T) (>= 0 up to rounding)
	DualBound         float64   // lower bound on the optimal trace from the dual weights (weak duality)
	DualityGap        float64   // TraceOptimal/DualBound - 1
	DualWeights       []float64 // dual weights on Constraints (sum 1): a certificate of DualBound
	Converged         bool      // DualityGap <= 10 DesignTolerance
	ScalarIsOptimal   bool      // the solver's Sigma did not beat the scalar choice, which is returned instead
	TraceSavedPercent float64   // 100 (1 - TraceOptimal/TraceScalar)
}

// DesignGaussian is Algorithm 1. s must be a 2-norm Sensitivity whose Constraints are the N_ij of
// (13) in the units of lambdaBar (ManifoldSensitivity, BruteForceSensitivity or DynamicsSensitivity
// with lambdaBar = O_T). The scalar choice is sigma = GaussianSigma(cal, eps, delta, mu, s.Value),
// Sigma = sigma^2 I. The optimal Sigma minimises trace(LambdaBar Sigma LambdaBar^T) under the LMIs
// (12) Sigma >= c N N^T with c = (mu/KappaInverse(eps,delta))^2 for the tight calibration; for the
// paper-bound and classic calibrations c = (sigma/Value)^2, the constant that makes the scalar choice
// exactly that calibration's sigma (the same, more conservative, guarantee). lambdaBar nil means
// the weight I (minimise trace(Sigma)).
//
// Solver: with W = LambdaBar^T LambdaBar = L L^T and u = L^T N, the problem is the minimum-trace
// covering ellipsoid min tr(X) s.t. u^T X^{-1} u <= 1/c (Schur complement of (12)). Its dual is
// max over weights lambda >= 0 of c (tr M^{1/2})^2 / sum(lambda), M = sum lambda_j u_j u_j^T. A
// primal barrier method (damped Newton on the r(r+1)/2 entries of X) follows the central path on a
// working set of constraints, grown by cutting planes until no constraint is violated (most of the
// up to 10^4 constraints of a long horizon are inactive); the central-path weights certify the
// result (DualBound, DualWeights, DualityGap, typically ~1e-10).
// The returned Sigma is scaled so that every LMI holds exactly (tightest one with margin 1e-12), and
// verified: MinLMIEigenvalue = min_N lambda_min(Sigma - c N N^T). If the solver's Sigma does not beat
// the scalar choice (r = 1, or isotropic constraints), the scalar Sigma is returned. Cost: ~60-120
// Newton steps of O(w r^4) on a working set of w constraints, plus O(m r^3) checks over all m.
func DesignGaussian(s Sensitivity, eps, delta, mu float64, cal Calibration, lambdaBar *mat.Dense) (GaussianDesign, error) {
	r, err := checkDesignSensitivity(s)
	if err != nil {
		return GaussianDesign{}, fmt.Errorf("gaussian design: %w", err)
	}
	kinv, err := KappaInverse(eps, delta)
	if err != nil {
		return GaussianDesign{}, fmt.Errorf("gaussian design: %w", err)
	}
	sigma, err := GaussianSigma(cal, eps, delta, mu, s.Value)
	if err != nil {
		return GaussianDesign{}, fmt.Errorf("gaussian design: %w", err)
	}
	// The LMI constant c of (12). Tight: (mu/kappa^{-1})^2, the exact Theorem-1 bound. Other
	// calibrations: the c for which the scalar choice sigma^2 I touches the LMIs, i.e. the same (more
	// conservative) guarantee that calibration gives the scalar design.
	c := (sigma / s.Value) * (sigma / s.Value)
	if cal == Tight || cal == "" {
		c = (mu / kinv) * (mu / kinv)
	}
	W, L, err := designWeight(lambdaBar, r)
	if err != nil {
		return GaussianDesign{}, fmt.Errorf("gaussian design: %w", err)
	}
	trW := mat.Trace(W)

	d := GaussianDesign{Sensitivity: s, KappaInv: kinv, ScalarSigma: sigma, Calibration: cal,
		Epsilon: eps, Delta: delta, Mu: mu, LMIScale: c, TraceScalar: sigma * sigma * trW}
	if d.Calibration == "" {
		d.Calibration = Tight
	}

	m := len(s.Constraints)
	us := whitenConstraints(s.Constraints, L, r)
	if rk := numRank(mat.NewDense(m, r, us)); rk < r {
		return GaussianDesign{}, fmt.Errorf("gaussian design: the %d constraints span only %d of the %d dimensions: the LMIs (12) would leave a direction without noise, violating (8); pass the complete constraint set", m, rk, r)
	}
	sol, err := solveMinTraceCover(us, m, r)
	if err != nil {
		return GaussianDesign{}, fmt.Errorf("gaussian design: %w", err)
	}
	d.Iterations = sol.iterations
	d.WorkingSet = sol.working
	d.DualWeights = sol.lambda
	d.DualBound = c * sol.bound

	Sigma, err := feasibleSigma(sol.X, L, s.Constraints, c)
	if err != nil {
		return GaussianDesign{}, fmt.Errorf("gaussian design: %w", err)
	}
	if err := d.settle(Sigma, W); err != nil {
		return GaussianDesign{}, fmt.Errorf("gaussian design: %w", err)
	}
	return d, nil
}

// checkDesignSensitivity checks that s is a 2-norm sensitivity with constraints of one length r,
// none longer than its finite, positive Value, and returns r.
func checkDesignSensitivity(s Sensitivity) (int, error) {
	if s.Norm != 2 {
		return 0, fmt.Errorf("needs the 2-norm sensitivity Delta_N, got norm %d", s.Norm)
	}
	if len(s.Constraints) == 0 {
		return 0, fmt.Errorf("the sensitivity carries no LMI constraints (iid baselines use GaussianSigma for a scalar sigma)")
	}
	if !(s.Value > 0) || math.IsInf(s.Value, 0) {
		return 0, fmt.Errorf("sensitivity %v must be finite and > 0", s.Value)
	}
	r := len(s.Constraints[0])
	maxN := 0.0
	for j, v := range s.Constraints {
		if len(v) != r {
			return 0, fmt.Errorf("constraint %d has length %d, constraint 0 has %d", j, len(v), r)
		}
		maxN = math.Max(maxN, vecNorm(v, 2))
	}
	if maxN > s.Value*(1+1e-9) {
		return 0, fmt.Errorf("a constraint has norm %.6g above the sensitivity %.6g: constraints and sensitivity do not belong together", maxN, s.Value)
	}
	return r, nil
}

// designWeight returns the weight W = LambdaBar^T LambdaBar (r x r; I for a nil lambdaBar) and its
// lower Cholesky factor L (W = L L^T).
func designWeight(lambdaBar *mat.Dense, r int) (*mat.SymDense, *mat.TriDense, error) {
	W := mat.NewSymDense(r, nil)
	if lambdaBar == nil {
		for i := 0; i < r; i++ {
			W.SetSym(i, i, 1)
		}
	} else {
		lm, lr := lambdaBar.Dims()
		if lr != r {
			return nil, nil, fmt.Errorf("LambdaBar is %dx%d but the constraints live in R^%d", lm, lr, r)
		}
		W.SymOuterK(1, lambdaBar.T())
	}
	var chol mat.Cholesky
	if !chol.Factorize(W) {
		return nil, nil, fmt.Errorf("LambdaBar^T LambdaBar is not positive definite (LambdaBar must have full column rank)")
	}
	var L mat.TriDense
	chol.LTo(&L)
	return W, &L, nil
}

// whitenConstraints returns u_j = L^T v_j for every constraint v_j, m x r row-major.
func whitenConstraints(cons [][]float64, L *mat.TriDense, r int) []float64 {
	us := make([]float64, len(cons)*r)
	for j, v := range cons {
		for a := 0; a < r; a++ {
			x := 0.0
			for b := a; b < r; b++ {
				x += L.At(b, a) * v[b]
			}
			us[j*r+a] = x
		}
	}
	return us
}

// feasibleSigma maps the solver's X back: Sigma = L^{-T} X L^{-1}, then scaled so that every LMI
// Sigma >= c N N^T holds.
func feasibleSigma(X *mat.SymDense, L *mat.TriDense, cons [][]float64, c float64) (*mat.SymDense, error) {
	var Linv mat.TriDense
	if err := Linv.InverseTri(L); err != nil {
		return nil, err
	}
	var tmp, sig mat.Dense
	tmp.Mul(Linv.T(), X)
	sig.Mul(&tmp, &Linv)
	Sigma := symmetrize(&sig)
	if err := scaleToFeasible(Sigma, cons, c); err != nil {
		return nil, err
	}
	return Sigma, nil
}

// settle sets Sigma (or the scalar choice when Sigma does not beat it) and what is computed from
// it: the traces, the duality gap, the LMI check and the square root. W is the weight
// LambdaBar^T LambdaBar; d holds the scalar choice, the constraints and the dual bound.
func (d *GaussianDesign) settle(Sigma *mat.SymDense, W *mat.SymDense) error {
	var ws mat.Dense
	ws.Mul(W, Sigma)
	d.TraceOptimal = mat.Trace(&ws)
	if !(d.TraceOptimal < d.TraceScalar) {
		d.ScalarIsOptimal = true
		r := Sigma.SymmetricDim()
		Sigma = mat.NewSymDense(r, nil)
		for i := 0; i < r; i++ {
			Sigma.SetSym(i, i, d.ScalarSigma*d.ScalarSigma)
		}
		d.TraceOptimal = d.TraceScalar
	}
	d.Sigma = Sigma
	d.DualityGap = d.TraceOptimal/d.DualBound - 1
	d.Converged = d.DualityGap <= 10*DesignTolerance
	d.TraceSavedPercent = 100 * (1 - d.TraceOptimal/d.TraceScalar)
	d.MinLMIEigenvalue = minLMIEigenvalue(Sigma, d.Constraints, d.LMIScale)
	d.MaxLMIViolation = math.Max(0, -d.MinLMIEigenvalue)
	var err error
	d.SqrtSigma, err = symSqrt(Sigma)
	return err
}

type coverSolution struct {
	X          *mat.SymDense // primal, in the (unnormalised) u coordinates, c = 1
	lambda     []float64     // dual weights on all constraints, sum 1 (zero outside the working set)
	bound      float64       // dual lower bound on min tr(X) (c = 1), weak duality
	iterations int           // Newton steps, all rounds
	rounds     int           // cutting-plane rounds
	working    int           // final working-set size
}

// solveMinTraceCover solves the minimum-trace covering ellipsoid problem
//
//	min tr(X)  s.t.  [[X, u_j], [u_j^T, 1]] >= 0  (i.e. u_j^T X^{-1} u_j <= 1)  for every j
//
// with a cutting-plane loop around barrierCover: most of the (possibly 10^4) constraints are
// inactive at the optimum (at most r(r+1)/2 carry dual weight generically), so it solves on a
// working set (a spanning subset plus the longest u_j), adds the constraints the solution violates
// (h_j = u_j^T X^{-1} u_j > 1 + DesignTolerance), and repeats. Dual weights of a subset are dual
// feasible for the whole problem, so the bound stays valid; the primal is scaled to feasibility on
// every constraint by the caller.
func solveMinTraceCover(us []float64, m, r int) (coverSolution, error) {
	u, norms, smax, err := normaliseConstraints(us, m, r)
	if err != nil {
		return coverSolution{}, err
	}
	p := r * (r + 1) / 2
	ws := workingSet{in: make([]bool, m)}
	if err := ws.addSpanning(u, m, r); err != nil {
		return coverSolution{}, err
	}
	ws.addLongest(norms, min(m, 2*p+8))
	sol := coverSolution{}
	P := make([]float64, r*r)
	var viols []violation
	var res barrierResult
	for round := 0; round < 200; round++ {
		sub := make([]float64, 0, len(ws.list)*r)
		for _, j := range ws.list {
			sub = append(sub, u[j*r:j*r+r]...)
		}
		var err error
		res, err = barrierCover(sub, len(ws.list), r)
		sol.iterations += res.Steps
		sol.rounds++
		if err != nil {
			return coverSolution{}, err
		}
		if _, ok := invSymSmall(res.X, P, r); !ok {
			return coverSolution{}, fmt.Errorf("barrier: the working-set solution is not positive definite")
		}
		viols = violations(viols[:0], u, P, ws.in, m, r)
		if len(viols) == 0 {
			break
		}
		sort.Slice(viols, func(a, b int) bool { return viols[a].h > viols[b].h })
		for _, v := range viols[:min(len(viols), 2*p+8)] {
			ws.add(v.j)
		}
	}
	sol.working = len(ws.list)
	sol.lambda = make([]float64, m)
	for i, j := range ws.list {
		sol.lambda[j] = res.Lambda[i]
	}
	sol.bound = smax * smax * res.Bound
	sol.X = mat.NewSymDense(r, nil)
	for a := 0; a < r; a++ {
		for b := a; b < r; b++ {
			sol.X.SetSym(a, b, smax*smax*0.5*(res.X[a*r+b]+res.X[b*r+a]))
		}
	}
	return sol, nil
}

// normaliseConstraints scales the m constraints us (m x r, row-major) to max ||u_j|| = 1 and
// returns them with their norms before scaling and the largest norm smax.
func normaliseConstraints(us []float64, m, r int) (u, norms []float64, smax float64, err error) {
	norms = make([]float64, m)
	for j := 0; j < m; j++ {
		norms[j] = vecNorm(us[j*r:j*r+r], 2)
		smax = math.Max(smax, norms[j])
	}
	if !(smax > 0) || math.IsInf(smax, 0) {
		return nil, nil, 0, fmt.Errorf("constraints must be finite and not all zero")
	}
	u = make([]float64, m*r)
	for i := range u {
		u[i] = us[i] / smax
	}
	return u, norms, smax, nil
}

// workingSet is the subset of the constraints the barrier method solves on, in the order added.
type workingSet struct {
	in   []bool // in[j]: constraint j is in the set
	list []int
}

func (ws *workingSet) add(j int) {
	if !ws.in[j] {
		ws.in[j] = true
		ws.list = append(ws.list, j)
	}
}

// addSpanning adds r constraints that span R^r: greedy pivoting on the residual after projection
// (Gram-Schmidt).
func (ws *workingSet) addSpanning(u []float64, m, r int) error {
	var ortho [][]float64
	res := make([]float64, r)
	for len(ortho) < r {
		best, bi := 0.0, -1
		var bestRes []float64
		for j := 0; j < m; j++ {
			copy(res, u[j*r:j*r+r])
			for _, q := range ortho {
				d := 0.0
				for a := range res {
					d += q[a] * res[a]
				}
				for a := range res {
					res[a] -= d * q[a]
				}
			}
			if nr := vecNorm(res, 2); nr > best {
				best, bi = nr, j
				bestRes = append(bestRes[:0], res...)
			}
		}
		if bi < 0 || best <= rankTol {
			return fmt.Errorf("the constraints do not span R^%d", r)
		}
		for a := range bestRes {
			bestRes[a] /= best
		}
		ortho = append(ortho, bestRes)
		ws.add(bi)
	}
	return nil
}

// addLongest adds the n constraints of largest norm.
func (ws *workingSet) addLongest(norms []float64, n int) {
	order := make([]int, len(norms))
	for j := range order {
		order[j] = j
	}
	sort.Slice(order, func(a, b int) bool { return norms[order[a]] > norms[order[b]] })
	for _, j := range order[:n] {
		ws.add(j)
	}
}

// violation is a constraint outside the working set that the working-set solution violates.
type violation struct {
	j int
	h float64 // u_j^T X^{-1} u_j > 1 + DesignTolerance
}

// violations appends to out the constraints outside the working set (in) with
// h_j = u_j^T P u_j > 1 + DesignTolerance, P = X^{-1}.
func violations(out []violation, u, P []float64, in []bool, m, r int) []violation {
	for j := 0; j < m; j++ {
		if in[j] {
			continue
		}
		uj := u[j*r : j*r+r]
		h := 0.0
		for a := 0; a < r; a++ {
			x := 0.0
			for b := 0; b < r; b++ {
				x += P[a*r+b] * uj[b]
			}
			h += uj[a] * x
		}
		if h > 1+DesignTolerance {
			out = append(out, violation{j, h})
		}
	}
	return out
}

// maxH returns max_j h_j = max_j (1 - s_j).
func maxH(sj []float64) float64 {
	mx := 0.0
	for _, s := range sj {
		mx = math.Max(mx, 1-s)
	}
	return mx
}

func trace(X []float64, r int) float64 {
	s := 0.0
	for i := 0; i < r; i++ {
		s += X[i*r+i]
	}
	return s
}

// basis writes E = sym(e_a e_b^T) (e_a e_a^T when a == b) into E (r x r, row-major).
func basis(E []float64, a, b, r int) {
	for i := range E {
		E[i] = 0
	}
	E[a*r+b] = 1
	E[b*r+a] = 1
}

// tripleProduct writes K = P E R for r x r row-major matrices.
func tripleProduct(K, P, E, R []float64, r int) {
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			s := 0.0
			for k := 0; k < r; k++ {
				pk := P[i*r+k]
				if pk == 0 {
					continue
				}
				for l := 0; l < r; l++ {
					if e := E[k*r+l]; e != 0 {
						s += pk * e * R[l*r+j]
					}
				}
			}
			K[i*r+j] = s
		}
	}
}

// invSymSmall writes X^{-1} into P for a symmetric positive definite r x r X (row-major) and returns
// log det X; ok is false when X is not positive definite.
func invSymSmall(X, P []float64, r int) (float64, bool) {
	S := mat.NewSymDense(r, nil)
	for a := 0; a < r; a++ {
		for b := a; b < r; b++ {
			S.SetSym(a, b, 0.5*(X[a*r+b]+X[b*r+a]))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(S) {
		return 0, false
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return 0, false
	}
	for a := 0; a < r; a++ {
		for b := 0; b < r; b++ {
			P[a*r+b] = inv.At(a, b)
		}
	}
	return ch.LogDet(), true
}

func symmetrize(a *mat.Dense) *mat.SymDense {
	r, _ := a.Dims()
	s := mat.NewSymDense(r, nil)
	for i := 0; i < r; i++ {
		for j := i; j < r; j++ {
			s.SetSym(i, j, 0.5*(a.At(i, j)+a.At(j, i)))
		}
	}
	return s
}

// scaleToFeasible multiplies Sigma by rho (1+feasMargin) with rho = max_N c N^T Sigma^{-1} N, so
// that every LMI Sigma >= c N N^T holds (Schur complement: iff c N^T Sigma^{-1} N <= 1).
func scaleToFeasible(Sigma *mat.SymDense, cons [][]float64, c float64) error {
	var ch mat.Cholesky
	if !ch.Factorize(Sigma) {
		return fmt.Errorf("the designed Sigma is not positive definite")
	}
	r := Sigma.SymmetricDim()
	var x mat.VecDense
	rho := 0.0
	for _, v := range cons {
		nv := mat.NewVecDense(r, v)
		if err := ch.SolveVecTo(&x, nv); err != nil {
			return fmt.Errorf("feasibility scaling: %w", err)
		}
		rho = math.Max(rho, c*mat.Dot(nv, &x))
	}
	if !(rho > 0) || math.IsInf(rho, 0) {
		return fmt.Errorf("feasibility scaling failed (rho = %v)", rho)
	}
	Sigma.ScaleSym(rho*(1+feasMargin), Sigma)
	return nil
}

// minLMIEigenvalue returns min over the constraints N of lambda_min(Sigma - c N N^T).
func minLMIEigenvalue(Sigma *mat.SymDense, cons [][]float64, c float64) float64 {
	r := Sigma.SymmetricDim()
	tmp := mat.NewSymDense(r, nil)
	var eig mat.EigenSym
	vals := make([]float64, r)
	mn := math.Inf(1)
	for _, v := range cons {
		tmp.CopySym(Sigma)
		tmp.SymRankOne(tmp, -c, mat.NewVecDense(r, v))
		if !eig.Factorize(tmp, false) {
			return math.NaN()
		}
		eig.Values(vals)
		mn = math.Min(mn, vals[0])
	}
	return mn
}

// symSqrt is the symmetric square root of a positive semidefinite matrix.
func symSqrt(S *mat.SymDense) (*mat.Dense, error) {
	r := S.SymmetricDim()
	var eig mat.EigenSym
	if !eig.Factorize(S, true) {
		return nil, fmt.Errorf("eigendecomposition of Sigma failed")
	}
	vals := eig.Values(nil)
	var V mat.Dense
	eig.VectorsTo(&V)
	out := mat.NewDense(r, r, nil)
	for i, v := range vals {
		sv := math.Sqrt(math.Max(v, 0))
		for a := 0; a < r; a++ {
			for b := 0; b < r; b++ {
				out.Set(a, b, out.At(a, b)+sv*V.At(a, i)*V.At(b, i))
			}
		}
	}
	return out, nil
}

// LaplaceDesign is the output of Algorithm 2: gamma = Scale * LambdaBar * eta, eta ~ Laplace(0,1)^r
// (variance 2 Scale^2 per component of eta).
type LaplaceDesign struct {
	Sensitivity
	Epsilon, Mu float64
	Scale       float64 // sigma of eq. (14): mu * Delta_L_bar / eps
}

// DesignLaplace is Algorithm 2: sigma = mu * Delta_L_bar / eps (eq. (14)) for a 1-norm sensitivity s
// (eq. (15)), which gives (eps, 0)-DP by Theorem 2.
func DesignLaplace(s Sensitivity, eps, mu float64) (LaplaceDesign, error) {
	if s.Norm != 1 {
		return LaplaceDesign{}, fmt.Errorf("laplace design: needs the 1-norm sensitivity Delta_L (eq. (15)), got norm %d", s.Norm)
	}
	b, err := LaplaceScale(eps, mu, s.Value)
	if err != nil {
		return LaplaceDesign{}, fmt.Errorf("laplace design: %w", err)
	}
	return LaplaceDesign{Sensitivity: s, Epsilon: eps, Mu: mu, Scale: b}, nil
}
