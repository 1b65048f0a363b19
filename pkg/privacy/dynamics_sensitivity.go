package privacy

import (
	"fmt"
	"github.com/dpsim/dpsim/internal/rowmajor"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Cloud control (Section 5): the trajectory x = [x(0); ...; x(T-1)] of x(t+1) = A x(t) + B u(t) lies on
// D x + b = 0 (eq. (20)), whose kernel is spanned by D_perp = [I; A; ...; A^{T-1}] (eq. (21)); the
// plant releases F x + gamma with F = I_T (x) C, so F D_perp = O_T. A kernel vector is D_perp z with z
// the initial-state difference, and the circuits of ker D are enumerated on the rows e_k^T A^t of
// D_perp (n_x columns) without forming the (T n_x)-square matrices D or Psi_j.
//
// Private model: when only a subsystem of the plant is private - the paper's vehicle protects the
// position only, whose dynamics p(t+1) = p(t) + Ts v(t) + ... treat the velocity as an input - call
// DynamicsSensitivity(A_m, C_m, ...) with that subsystem (A_m = 1, C_m = 1 for the vehicle); the noise
// is then gamma(t) = C_m A_m^t sqrt(Sigma) eta. The default private model is the plant (A, C) itself.

// dynamicsModel holds D_perp's rows for a horizon T.
type dynamicsModel struct {
	A, C   *mat.Dense
	nx, ny int
	T      int
	rows   []float64 // D_perp, row-major: row t*nx+k is e_k^T A^t
	norms  []float64
}

func newDynamicsModel(A, C *mat.Dense, T int) (*dynamicsModel, error) {
	if A == nil || C == nil {
		return nil, fmt.Errorf("dynamics sensitivity: A and C must be given")
	}
	ar, ac := A.Dims()
	if ar != ac {
		return nil, fmt.Errorf("dynamics sensitivity: A is %dx%d, must be square", ar, ac)
	}
	ny, cn := C.Dims()
	if cn != ar {
		return nil, fmt.Errorf("dynamics sensitivity: C is %dx%d but A is %dx%d (C needs %d columns)", ny, cn, ar, ac, ar)
	}
	if T < 1 {
		return nil, fmt.Errorf("dynamics sensitivity: horizon T = %d, must be >= 1", T)
	}
	nx := ar
	for i := 0; i < nx; i++ {
		for j := 0; j < nx; j++ {
			if v := A.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("dynamics sensitivity: A[%d][%d] = %v is not finite", i, j, v)
			}
		}
	}
	m := &dynamicsModel{A: A, C: C, nx: nx, ny: ny, T: T}
	m.rows = make([]float64, T*nx*nx)
	P := make([]float64, nx*nx) // A^t, row-major
	Q := make([]float64, nx*nx)
	for i := 0; i < nx; i++ {
		P[i*nx+i] = 1
	}
	for t := 0; t < T; t++ {
		copy(m.rows[t*nx*nx:], P)
		for i := 0; i < nx; i++ {
			for j := 0; j < nx; j++ {
				s := 0.0
				for l := 0; l < nx; l++ {
					s += A.At(i, l) * P[l*nx+j]
				}
				Q[i*nx+j] = s
			}
		}
		P, Q = Q, P
	}
	m.norms = rowNorms(m.rows, T*nx, nx)
	for i, v := range m.norms {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("dynamics sensitivity: A^t overflows at t = %d (T = %d is too long for this unstable A)", i/nx, T)
		}
	}
	return m, nil
}

// checkAssumption1 checks Assumption 1 of Section 5.2: (i) rank O_T = n_x (observable over T steps),
// (ii) A nonsingular. Numerical rank uses this package's rankTol = 1e-10 relative to sigma_max, the
// threshold of every other rank decision here (condition (8), circuits), deliberately stricter than
// pkg/dynamics' LTI.CheckAssumption1 (max(rows, cols) * eps * sigma_max, a pure diagnostic): a
// near-unobservable direction (sigma_min/sigma_max < 1e-10) would give a sensitivity computed from an
// ill-conditioned O_T^+, so it is refused here. See the comment on rankTol in pkg/dynamics/lti.go.
func checkAssumption1(A, C *mat.Dense, T int) error {
	nx, _ := A.Dims()
	ny, _ := C.Dims()
	if s := singularValues(A); len(s) == 0 || !(s[len(s)-1] > rankTol*s[0]) {
		smin := 0.0
		if len(s) > 0 {
			smin = s[len(s)-1]
		}
		return fmt.Errorf("assumption 1 (ii) fails: A is singular (smallest singular value %.3g): some coordinate of x would be fixed by the constraint D x + b = 0", smin)
	}
	// rank O_T = rank O_min(T, nx) by Cayley-Hamilton.
	tt := T
	if tt > nx {
		tt = nx
	}
	O := mat.NewDense(tt*ny, nx, nil)
	P := mat.NewDense(ny, nx, nil)
	P.Copy(C)
	for t := 0; t < tt; t++ {
		O.Slice(t*ny, (t+1)*ny, 0, nx).(*mat.Dense).Copy(P)
		var nxt mat.Dense
		nxt.Mul(P, A)
		P.Copy(&nxt)
	}
	if rk := numRank(O); rk < nx {
		msg := fmt.Sprintf("assumption 1 (i) fails: (A, C) is not observable over T = %d steps: rank O_T = %d < n_x = %d", T, rk, nx)
		var svd mat.SVD
		if svd.Factorize(O, mat.SVDFull) {
			var v mat.Dense
			svd.VTo(&v)
			msg += fmt.Sprintf("; the initial-state direction %s is invisible in the output, so LambdaBar = O_T cannot carry noise for it", FormatVector(canonicalSign(mat.Col(nil, nx-1, &v))))
		}
		return fmt.Errorf("%s", msg)
	}
	return nil
}

// DynamicsSensitivity is the fast path for cloud control (Section 5, Theorem 3) with LambdaBar = O_T:
// since O_T^+ (I_T (x) C) D_perp = I when O_T has full column rank, LambdaBar^+ F (x - x') is the
// initial-state difference z of the adjacent pair, and the sensitivity is max ||z|| / |(A^t z)_k|
// over the pairs of the chosen adjacency (Norm 2: Delta_N; Norm 1: Delta_L).
//
//   - Manifold (Definition 4): every (n_x - 1)-subset R of the rows e_k^T A^t of D_perp with rank n_x - 1
//     gives a circuit z (unit, null(D_perp,R)); its worst coordinate is the smallest nonzero |(A^t z)_k|
//     over all t, k. Cost C(T n_x, n_x - 1) subsets x T n_x^2 flops; refused above budget (flops,
//     <= 0 means DefaultBudget). For n_x = 1 there is one circuit, for n_x = 2 there are T n_x subsets.
//   - Block (Theorem 3, eq. (22) with j - 1 = t): the T index sets "all of x(t) free"; the unit change of
//     x_k(t) has z = A^{-t} e_k, value max_{t,k} ||A^{-t} e_k||. Cost T n_x^3.
//
// Assumption 1 (observable over T, A nonsingular) is checked. Worst.Time/Component locate the changed
// coordinate; Worst.Param is z; Constraints are the LMI directions of (12)/(22) in the same units.
func DynamicsSensitivity(A, C *mat.Dense, T int, adj Adjacency, norm int, budget int64) (Sensitivity, error) {
	if err := checkNorm(norm); err != nil {
		return Sensitivity{}, err
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	if A != nil {
		nx, _ := A.Dims()
		if err := dynamicsBudget(adj, T, nx, float64(nx), budget); err != nil {
			return Sensitivity{}, err
		}
	}
	m, err := newDynamicsModel(A, C, T)
	if err != nil {
		return Sensitivity{}, err
	}
	if err := checkAssumption1(A, C, T); err != nil {
		return Sensitivity{}, fmt.Errorf("dynamics sensitivity: %w", err)
	}
	nx := m.nx
	value := func(z []float64) float64 { return vecNorm(z, norm) }
	param := func(dst, z []float64) { copy(dst, z) }
	return m.sensitivity(adj, norm, budget, value, param, nx, float64(nx), true)
}

// sensitivity dispatches on the adjacency for value(z) = ||G z||, param = G z (length r).
func (m *dynamicsModel) sensitivity(adj Adjacency, norm int, budget int64, value func([]float64) float64,
	param func(dst, z []float64), r int, valueCost float64, collect bool) (Sensitivity, error) {
	nx := m.nx
	n := m.T * nx
	if err := dynamicsBudget(adj, m.T, nx, valueCost, budget); err != nil {
		return Sensitivity{}, err
	}
	switch adj {
	case Manifold:
		sp := &circuitSpec{n: n, k: nx, rows: m.rows, rowNorm: m.norms, value: value, param: param, r: r, collect: collect}
		res := enumerateCircuits(sp)
		if res.bestI < 0 {
			return Sensitivity{}, fmt.Errorf("manifold sensitivity of the dynamics: no valid index set")
		}
		s := Sensitivity{Adjacency: Manifold, Norm: norm, Value: res.best, Worst: sp.worstFromCircuit(res),
			Evaluated: res.evaluated, Circuits: res.circuits, MinDet: res.minDet}
		if collect {
			s.Constraints = res.constraint.vecs
		}
		s.Worst.Time, s.Worst.Component = res.bestI/nx, res.bestI%nx
		return s, nil
	default:
		return m.block(norm, value, param, r, collect)
	}
}

// dynamicsBudget refuses, before any work, an enumeration whose cost exceeds the budget (flops).
// valueCost is the cost of one value ||G z||.
func dynamicsBudget(adj Adjacency, T, nx int, valueCost float64, budget int64) error {
	n := T * nx
	switch adj {
	case Manifold:
		sets := binomial(n, nx-1)
		perSet := float64(n*nx+nx*nx*nx) + valueCost
		if sets*perSet > float64(budget) {
			return budgetError(fmt.Sprintf("manifold sensitivity of the dynamics (T=%d, n_x=%d)", T, nx), sets, perSet, budget)
		}
	case Block:
		perSet := float64(nx*nx) + valueCost
		if float64(n)*perSet > float64(budget) {
			return budgetError(fmt.Sprintf("block sensitivity of the dynamics (T=%d, n_x=%d)", T, nx), float64(n), perSet, budget)
		}
	default:
		return fmt.Errorf("unknown adjacency %q (allowed: %s, %s)", adj, Manifold, Block)
	}
	return nil
}

// block evaluates the T block index sets of Theorem 3: free set = the coordinates of x(t), the unit
// change of x_k(t) has initial-state difference z = A^{-t} e_k (Appendix C: Psi_j E = D_perp A^{1-j}).
func (m *dynamicsModel) block(norm int, value func([]float64) float64, param func(dst, z []float64), r int, collect bool) (Sensitivity, error) {
	nx, T := m.nx, m.T
	var Ainv mat.Dense
	if err := Ainv.Inverse(m.A); err != nil {
		return Sensitivity{}, fmt.Errorf("block sensitivity: assumption 1 (ii) fails: A is not invertible: %w", err)
	}
	W := mat.NewDense(nx, nx, nil) // A^{-t}
	for i := 0; i < nx; i++ {
		W.Set(i, i, 1)
	}
	var cons *constraintSet
	if collect {
		cons = newConstraintSet()
	}
	z := make([]float64, nx)
	gz := make([]float64, r)
	best, bt, bk := -1.0, -1, -1
	var bestZ []float64
	var next mat.Dense
	for t := 0; t < T; t++ {
		for k := 0; k < nx; k++ {
			mat.Col(z, k, W)
			if math.IsInf(vecNorm(z, 2), 0) || math.IsNaN(z[0]) {
				return Sensitivity{}, fmt.Errorf("block sensitivity: A^-%d overflows (A has eigenvalues near 0 and T = %d is long)", t, T)
			}
			v := value(z)
			if collect {
				param(gz, z)
				cons.add(gz)
			}
			if v > best {
				best, bt, bk = v, t, k
				bestZ = append(bestZ[:0], z...)
			}
		}
		next.Mul(&Ainv, W)
		W.Copy(&next)
	}
	wp := WorstPair{Coordinate: bt*nx + bk, Time: bt, Component: bk}
	for k := 0; k < nx; k++ {
		wp.FreeSet = append(wp.FreeSet, bt*nx+k)
	}
	n := T * nx
	wp.Diff = make([]float64, n)
	for i := 0; i < n; i++ {
		s := 0.0
		for j := 0; j < nx; j++ {
			s += m.rows[i*nx+j] * bestZ[j]
		}
		wp.Diff[i] = s
	}
	for k := 0; k < nx; k++ {
		wp.Diff[bt*nx+k] = 0
	}
	wp.Diff[wp.Coordinate] = 1
	wp.Param = make([]float64, r)
	param(wp.Param, bestZ)
	// Free set x(t): |det D_{d_j}| = |det A^t| = |det A|^t, smallest at t = 0 or t = T-1.
	detA := math.Abs(mat.Det(m.A))
	s := Sensitivity{Adjacency: Block, Norm: norm, Value: best, Worst: wp, Evaluated: int64(T), Circuits: int64(T),
		MinDet: math.Min(1, math.Pow(detA, float64(T-1)))}
	if collect {
		s.Constraints = cons.vecs
	}
	return s, nil
}

// IIDSensitivity is the sensitivity of the iid-calibrated baseline (docs/math.md section 4): the same
// trajectory mechanism F = I_T (x) C over the manifold (20), but with LambdaBar = I (r = T n_y, noise
// Lambda = sigma I on every released output). The value is max ||O_T z||_Norm / |(A^t z)_k| over the
// adjacency's pairs (z the initial-state difference), so it grows with T where the structured
// (LambdaBar = O_T) sensitivity does not. Observability is not needed; Block needs A nonsingular.
// Worst.Param is the output difference O_T z (length T n_y). Constraints is nil: in R^{T n_y} only
// the scalar design Lambda = sigma I is used.
func IIDSensitivity(A, C *mat.Dense, T int, adj Adjacency, norm int, budget int64) (Sensitivity, error) {
	if err := checkNorm(norm); err != nil {
		return Sensitivity{}, err
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	if A != nil && C != nil {
		nx, _ := A.Dims()
		ny, _ := C.Dims()
		vc := float64(nx * nx)
		if norm == 1 {
			vc = float64(T * (nx*nx + ny*nx))
		}
		if err := dynamicsBudget(adj, T, nx, vc, budget); err != nil {
			return Sensitivity{}, err
		}
	}
	m, err := newDynamicsModel(A, C, T)
	if err != nil {
		return Sensitivity{}, err
	}
	nx, ny := m.nx, m.ny
	Cd := rowmajor.Copy(C)
	// out = O_T z: y(t) = C (A^t z), A^t z from D_perp's rows.
	param := func(dst, z []float64) {
		for t := 0; t < T; t++ {
			blk := m.rows[t*nx*nx : (t+1)*nx*nx]
			for i := 0; i < ny; i++ {
				s := 0.0
				for l := 0; l < nx; l++ {
					x := 0.0
					for j := 0; j < nx; j++ {
						x += blk[l*nx+j] * z[j]
					}
					s += Cd[i*nx+l] * x
				}
				dst[t*ny+i] = s
			}
		}
	}
	var value func([]float64) float64
	var valueCost float64
	if norm == 2 {
		// ||O_T z||^2 = z^T W z with the observability Gram W = O_T^T O_T.
		W := make([]float64, nx*nx)
		col := make([]float64, T*ny)
		e := make([]float64, nx)
		cols := make([][]float64, nx)
		for j := 0; j < nx; j++ {
			for i := range e {
				e[i] = 0
			}
			e[j] = 1
			param(col, e)
			cols[j] = append([]float64(nil), col...)
		}
		for a := 0; a < nx; a++ {
			for b := 0; b < nx; b++ {
				s := 0.0
				for i := range cols[a] {
					s += cols[a][i] * cols[b][i]
				}
				W[a*nx+b] = s
			}
		}
		value = func(z []float64) float64 {
			s := 0.0
			for a := 0; a < nx; a++ {
				x := 0.0
				for b := 0; b < nx; b++ {
					x += W[a*nx+b] * z[b]
				}
				s += z[a] * x
			}
			return math.Sqrt(math.Max(s, 0))
		}
		valueCost = float64(nx * nx)
	} else {
		buf := make([]float64, T*ny)
		value = func(z []float64) float64 {
			param(buf, z)
			return vecNorm(buf, 1)
		}
		valueCost = float64(T * (nx*nx + ny*nx))
	}
	if adj == Block {
		if s := singularValues(A); len(s) == 0 || !(s[len(s)-1] > rankTol*s[0]) {
			return Sensitivity{}, fmt.Errorf("iid sensitivity (block): A is singular, the block index sets t >= 1 are not valid (Assumption 1 (ii))")
		}
	}
	return m.sensitivity(adj, norm, budget, value, param, T*ny, valueCost, false)
}

// SingleReleaseSensitivity is the sensitivity the iid-naive baseline calibrates for: one step's output
// y(t) = C x(t) released once, i.e. IIDSensitivity with T = 1 (no dynamic constraint: every state
// coordinate is free and changes alone), = max_k ||C e_k||_Norm for either adjacency. Using it for T
// releases under-calibrates: the T-step iid sensitivity (IIDSensitivity) is larger (sqrt(T) for the
// position-only model A = 1, C = 1).
func SingleReleaseSensitivity(A, C *mat.Dense, adj Adjacency, norm int) (Sensitivity, error) {
	return IIDSensitivity(A, C, 1, adj, norm, 0)
}
