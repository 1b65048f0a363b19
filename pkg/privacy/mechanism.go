package privacy

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Numerical tolerances shared by the sensitivity code. They are relative: every test compares a
// quantity with the scale of the matrix or vector it comes from.
const (
	// rankTol decides numerical rank: a singular value below rankTol*s_max counts as zero
	// (rank condition (8), ker D, Lambda_bar of full column rank, Assumption 1).
	rankTol = 1e-10
	// zeroTol decides whether a kernel vector vanishes at a coordinate: |N_i z| <= zeroTol*||N_i||*||z||
	// is treated as an exact zero (the coordinate is not in the circuit's support). A circuit entry
	// that is nonzero but below this level would be an index set D_{d_j} with condition number
	// ~1/zeroTol, i.e. a sensitivity ~1e10 times larger: such systems offer no privacy anyway.
	zeroTol = 1e-10
	// pivotTol is the smallest accepted |R_jj| of the row-normalised (k-1)-row subsets N_R: below it the
	// rows are treated as dependent (the index set D_{d_j} of Definition 4 is singular).
	pivotTol = 1e-10
	// condLimit is the brute-force nonsingularity test for D_{d_j} (1-norm condition estimate).
	condLimit = 1e10
)

// Problem is a linear query over an affine manifold (Section 2, eqs. (2)-(3)):
//
//	M(x) = F x + LambdaBar sqrt(Sigma) eta,   x in C_d = {x : D x + b = 0}.
//
// F is m x n, D is q x n of full row rank q < n (nil means no constraint: q = 0), LambdaBar is
// m x r of full column rank; Algorithm 1 takes it with the column space of F D_perp. The offset b
// does not enter any sensitivity, so it is not stored.
type Problem struct {
	F, D, LambdaBar *mat.Dense
}

// Dims returns n (data), q (constraints), m (outputs) and r (noise dimension) after validating the
// shapes: D full row rank with q < n, LambdaBar m x r of full column rank.
func (p Problem) Dims() (n, q, m, r int, err error) {
	if p.F == nil {
		return 0, 0, 0, 0, fmt.Errorf("problem: F is nil")
	}
	m, n = p.F.Dims()
	if p.D != nil {
		var dn int
		q, dn = p.D.Dims()
		if dn != n {
			return 0, 0, 0, 0, fmt.Errorf("problem: D is %dx%d but F has %d columns (both act on x in R^%d)", q, dn, n, n)
		}
		if q >= n {
			return 0, 0, 0, 0, fmt.Errorf("problem: D is %dx%d with q >= n: the manifold leaves no free coordinate", q, n)
		}
		if rk := numRank(p.D); rk != q {
			return 0, 0, 0, 0, fmt.Errorf("problem: D (%dx%d) must have full row rank %d, has rank %d", q, n, q, rk)
		}
	}
	if p.LambdaBar == nil {
		return 0, 0, 0, 0, fmt.Errorf("problem: LambdaBar is nil")
	}
	lm, lr := p.LambdaBar.Dims()
	if lm != m {
		return 0, 0, 0, 0, fmt.Errorf("problem: LambdaBar is %dx%d but F has %d rows", lm, lr, m)
	}
	if lr > lm {
		return 0, 0, 0, 0, fmt.Errorf("problem: LambdaBar is %dx%d: more columns than rows cannot have full column rank", lm, lr)
	}
	if rk := numRank(p.LambdaBar); rk != lr {
		return 0, 0, 0, 0, fmt.Errorf("problem: LambdaBar (%dx%d) must have full column rank %d (its pseudo-inverse is (L^T L)^-1 L^T), has rank %d", lm, lr, lr, rk)
	}
	return n, q, m, lr, nil
}

// singularValues returns the singular values of a (descending).
func singularValues(a mat.Matrix) []float64 {
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDNone) {
		return nil
	}
	return svd.Values(nil)
}

// numRank is the numerical rank of a with relative tolerance rankTol.
func numRank(a mat.Matrix) int {
	s := singularValues(a)
	if len(s) == 0 || s[0] == 0 || math.IsNaN(s[0]) {
		return 0
	}
	k := 0
	for _, v := range s {
		if v > rankTol*s[0] {
			k++
		}
	}
	return k
}

// KernelBasis returns an orthonormal basis N (n x (n-q)) of ker D, i.e. a D_perp of Theorem 1
// (D D_perp = 0, [D^T D_perp] of full rank). D must have full row rank q < n.
func KernelBasis(D *mat.Dense) (*mat.Dense, error) {
	if D == nil {
		return nil, fmt.Errorf("kernel basis: D is nil")
	}
	q, n := D.Dims()
	if q >= n {
		return nil, fmt.Errorf("kernel basis: D is %dx%d, q >= n leaves a trivial kernel", q, n)
	}
	var svd mat.SVD
	if !svd.Factorize(D, mat.SVDFull) {
		return nil, fmt.Errorf("kernel basis: SVD of D (%dx%d) did not converge", q, n)
	}
	s := svd.Values(nil)
	for i, v := range s {
		if !(v > rankTol*s[0]) {
			return nil, fmt.Errorf("kernel basis: D (%dx%d) is rank deficient (singular value %d is %.3g, largest %.3g): remove redundant constraints", q, n, i+1, v, s[0])
		}
	}
	var v mat.Dense
	svd.VTo(&v)
	N := mat.NewDense(n, n-q, nil)
	N.Copy(v.Slice(0, n, q, n))
	return N, nil
}

// kernelOf returns an orthonormal kernel basis of D, or I_n when D is nil (q = 0).
func kernelOf(D *mat.Dense, n int) (*mat.Dense, error) {
	if D == nil {
		N := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			N.Set(i, i, 1)
		}
		return N, nil
	}
	return KernelBasis(D)
}

// pinvTimes returns L^+ X = (L^T L)^{-1} L^T X for L of full column rank (least squares via QR).
func pinvTimes(L, X mat.Matrix) (*mat.Dense, error) {
	var out mat.Dense
	if err := out.Solve(L, X); err != nil {
		return nil, fmt.Errorf("pseudo-inverse of LambdaBar: %w", err)
	}
	return &out, nil
}

// RankError reports a failure of the rank condition (8) of Theorems 1 and 2: the noise
// Lambda does not span F ker D, so some direction of the data is published without noise and no
// (eps, delta) holds at all.
type RankError struct {
	R          int       // columns of Lambda
	RankLambda int       // rank(Lambda); must equal R
	RankJoint  int       // rank([Lambda, F D_perp]); must equal R
	Missing    []float64 // a unit vector of F ker D that is not in span(Lambda) (nil if Lambda itself is rank deficient)
	Coeffs     []float64 // Missing = F D_perp Coeffs / ||F D_perp Coeffs||, Coeffs a unit vector (for dynamics: an initial-state direction)
	Distance   float64   // distance of Missing from span(Lambda), in (0, 1]
}

func (e *RankError) Error() string {
	if e.RankLambda != e.R {
		return fmt.Sprintf("rank condition (8) fails: Lambda has %d columns but rank %d (the noise must have full column rank)", e.R, e.RankLambda)
	}
	return fmt.Sprintf("rank condition (8) fails: rank(Lambda) = %d but rank([Lambda, F D_perp]) = %d; "+
		"the noise misses the direction %s of F ker D (= F D_perp w, w = %s; distance %.3g from span(Lambda)): it would be published without noise",
		e.RankLambda, e.RankJoint, FormatVector(e.Missing), FormatVector(e.Coeffs), e.Distance)
}

// CheckRank checks the rank condition (8) of Theorems 1 and 2:
// rank(Lambda) = rank([Lambda, F D_perp]) = r, with r the number of columns of Lambda.
// On failure it returns a *RankError naming a unit vector of F ker D outside span(Lambda).
func CheckRank(Lambda, F, DPerp *mat.Dense) error {
	if Lambda == nil || F == nil || DPerp == nil {
		return fmt.Errorf("rank condition (8): Lambda, F and D_perp must all be given")
	}
	m, r := Lambda.Dims()
	fm, fn := F.Dims()
	dn, k := DPerp.Dims()
	if fm != m || fn != dn {
		return fmt.Errorf("rank condition (8): shapes do not fit: Lambda %dx%d, F %dx%d, D_perp %dx%d", m, r, fm, fn, dn, k)
	}
	var fk mat.Dense
	fk.Mul(F, DPerp) // m x k, spans F ker D
	return CheckRankImage(Lambda, &fk)
}

// CheckRankImage is CheckRank given the product F D_perp directly (m x k, spanning F ker D). For
// dynamics F D_perp = O_T, so the check needs O(T n_y n_x) memory instead of the (T n_y) x (T n_x)
// matrix F = I_T (x) C.
func CheckRankImage(Lambda, FDPerp *mat.Dense) error {
	if Lambda == nil || FDPerp == nil {
		return fmt.Errorf("rank condition (8): Lambda and F D_perp must both be given")
	}
	m, r := Lambda.Dims()
	if fm, _ := FDPerp.Dims(); fm != m {
		return fmt.Errorf("rank condition (8): shapes do not fit: Lambda %dx%d, F D_perp has %d rows", m, r, fm)
	}
	_, k := FDPerp.Dims()
	fk := FDPerp
	rl := numRank(Lambda)
	if rl != r {
		return &RankError{R: r, RankLambda: rl, RankJoint: -1}
	}
	// Orthonormal basis Q of span(Lambda) from the thin SVD.
	var svd mat.SVD
	if !svd.Factorize(Lambda, mat.SVDThin) {
		return fmt.Errorf("rank condition (8): SVD of Lambda did not converge")
	}
	var u mat.Dense
	svd.UTo(&u)
	Q := u.Slice(0, m, 0, r)
	// Residual of F D_perp outside span(Lambda).
	var qt, res mat.Dense
	qt.Mul(Q.T(), fk)
	res.Mul(Q, &qt)
	res.Sub(fk, &res)
	sfk := singularValues(fk)
	if len(sfk) == 0 || sfk[0] == 0 {
		return nil // F ker D = {0}: nothing to hide, condition holds trivially
	}
	var rsvd mat.SVD
	if !rsvd.Factorize(&res, mat.SVDThin) {
		return fmt.Errorf("rank condition (8): SVD of the residual did not converge")
	}
	rs := rsvd.Values(nil)
	missing := 0
	for _, v := range rs {
		if v > rankTol*sfk[0] {
			missing++
		}
	}
	if missing == 0 {
		return nil
	}
	var rv mat.Dense
	rsvd.VTo(&rv)
	w := mat.Col(nil, 0, &rv) // the combination of D_perp columns with the largest residual
	dir := mat.NewVecDense(m, nil)
	dir.MulVec(fk, mat.NewVecDense(k, w))
	nrm := mat.Norm(dir, 2)
	dir.ScaleVec(1/nrm, dir)
	// fix the sign on Missing and carry it to w
	data := dir.RawVector().Data
	flipped := append([]float64(nil), data...)
	canonicalSign(flipped)
	if len(data) > 0 && !sameSign(flipped, data) {
		for i := range w {
			w[i] = -w[i]
		}
	}
	// distance of the unit direction from span(Lambda)
	var rw mat.VecDense
	rw.MulVec(&res, mat.NewVecDense(k, w))
	return &RankError{R: r, RankLambda: rl, RankJoint: r + missing, Missing: flipped, Coeffs: w, Distance: mat.Norm(&rw, 2) / nrm}
}

func sameSign(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// canonicalSign flips v so that its first clearly nonzero entry is positive (for stable messages).
func canonicalSign(v []float64) []float64 {
	mx := 0.0
	for _, x := range v {
		mx = math.Max(mx, math.Abs(x))
	}
	for _, x := range v {
		if math.Abs(x) > 1e-6*mx {
			if x < 0 {
				for i := range v {
					v[i] = -v[i]
				}
			}
			break
		}
	}
	return v
}

// FormatVector prints a vector compactly: all entries when it has at most 8, otherwise its (at most
// 6) largest entries by magnitude as "e<index>:<value>" (0-based) and how many were left out.
func FormatVector(v []float64) string {
	if len(v) <= 8 {
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = trimZero(x)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return math.Abs(v[idx[a]]) > math.Abs(v[idx[b]]) })
	mx := math.Abs(v[idx[0]])
	var parts []string
	for _, i := range idx[:6] {
		if math.Abs(v[i]) <= 1e-9*mx {
			break
		}
		parts = append(parts, fmt.Sprintf("e%d:%s", i, trimZero(v[i])))
	}
	nz := 0
	for _, x := range v {
		if math.Abs(x) > 1e-9*mx {
			nz++
		}
	}
	s := "{" + strings.Join(parts, " ")
	if nz > len(parts) {
		s += fmt.Sprintf(" ... +%d more nonzero", nz-len(parts))
	}
	return s + fmt.Sprintf(" of %d}", len(v))
}

func trimZero(x float64) string {
	if math.Abs(x) < 5e-13 {
		return "0"
	}
	return fmt.Sprintf("%.4g", x)
}

// DeltaN is the Gaussian sensitivity Delta_N of Theorem 1 (eq. (9)) for a given noise matrix Lambda
// (m x r): the manifold sensitivity with Lambda in place of LambdaBar, after checking the rank
// condition (8). The mechanism is (eps, delta)-DP iff the rank check passes and
// Value <= KappaInverse(eps, delta)/mu.
func DeltaN(F, D, Lambda *mat.Dense, budget int64) (Sensitivity, error) {
	return deltaFor(F, D, Lambda, 2, budget)
}

// DeltaL is the Laplace sensitivity Delta_L of Theorem 2 (eq. (10)) for a given noise matrix Lambda:
// (eps, 0)-DP iff the rank condition (8) holds and Value <= eps/mu.
func DeltaL(F, D, Lambda *mat.Dense, budget int64) (Sensitivity, error) {
	return deltaFor(F, D, Lambda, 1, budget)
}

func deltaFor(F, D, Lambda *mat.Dense, norm int, budget int64) (Sensitivity, error) {
	p := Problem{F: F, D: D, LambdaBar: Lambda}
	n, _, _, _, err := p.Dims()
	if err != nil {
		var re *RankError
		if Lambda != nil {
			if m, r := Lambda.Dims(); m > 0 && numRank(Lambda) != r {
				re = &RankError{R: r, RankLambda: numRank(Lambda), RankJoint: -1}
				return Sensitivity{}, re
			}
		}
		return Sensitivity{}, err
	}
	N, err := kernelOf(D, n)
	if err != nil {
		return Sensitivity{}, err
	}
	if err := CheckRank(Lambda, F, N); err != nil {
		return Sensitivity{}, err
	}
	return ManifoldSensitivity(p, norm, budget)
}
