package privacy

import (
	"encoding/binary"
	"fmt"
	"github.com/dpsim/dpsim/internal/rowmajor"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// DefaultBudget is the work budget (floating-point operations) used when a caller passes budget <= 0:
// about ten seconds of exact circuit enumeration on one core.
const DefaultBudget int64 = 10_000_000_000

// BruteForceMaxSets is the largest number of q-subsets BruteForceSensitivity will enumerate.
const BruteForceMaxSets = 200_000

// WorstPair is the adjacent pair (Definition 4) that attains a sensitivity: the auditor replays it.
type WorstPair struct {
	FreeSet    []int     // 0-based free coordinates of x (the complement of d_j), sorted
	Coordinate int       // the free coordinate that changes
	Diff       []float64 // x - x' for a unit change (Diff[Coordinate] = 1); scale by mu
	Param      []float64 // LambdaBar^+ F Diff; for dynamics with LambdaBar = O_T: the initial-state difference
	Time       int       // dynamics only: Coordinate = Time*nx + Component (else -1)
	Component  int       // dynamics only (else -1)
}

// Sensitivity is Delta_N (Norm 2, Theorem 1 / eq. (12)) or Delta_L (Norm 1, Theorem 2 / eq. (15)) of a
// mechanism over an affine manifold, with the pair that attains it.
type Sensitivity struct {
	Adjacency Adjacency
	Norm      int     // 2 for Gaussian (Delta_N), 1 for Laplace (Delta_L)
	Value     float64 // max over adjacent unit pairs of ||LambdaBar^+ F (x - x')||_Norm
	Worst     WorstPair
	// Constraints are the distinct worst N_ij directions (one per circuit, or per block index pair),
	// each with its largest magnitude: Sigma >= c N N^T for all of them is the LMI set (12).
	// Nil when the noise space is the whole output space (iid baselines), where only a scalar design
	// makes sense.
	Constraints [][]float64
	Evaluated   int64 // index sets / subsets examined (the cost)
	Circuits    int64 // distinct circuits (manifold) or nonsingular index sets (brute force, block) that gave a value
	// MinDet is the smallest |det D_{d_j}| over the index sets the sensitivity kept (those it judged
	// nonsingular), a measure of how close the calibration comes to a singular free set: a tiny one
	// makes Psi_j (eq. 5), hence the sensitivity, large and sensitive to rounding of the model. For the
	// dynamics D is eq. (20) as written, [A -I 0 ...; 0 A -I ...], whose complementary minors give
	// |det D_{d_j}| = |det (D_perp)_S| (S the free set, D_perp = [I; A; ...; A^{T-1}]); for
	// ManifoldSensitivity it is D with orthonormal rows (|det D_{d_j}| = |det N_S| for an orthonormal
	// kernel basis N); for BruteForceSensitivity it is D as given. 0 when not computed.
	MinDet float64
}

func checkNorm(norm int) error {
	if norm != 1 && norm != 2 {
		return fmt.Errorf("sensitivity norm must be 2 (Gaussian, Delta_N) or 1 (Laplace, Delta_L), got %d", norm)
	}
	return nil
}

func vecNorm(v []float64, p int) float64 {
	if p == 1 {
		s := 0.0
		for _, x := range v {
			s += math.Abs(x)
		}
		return s
	}
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// binomial returns C(n, k) as a float64 (exact below 2^53).
func binomial(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	if k > n-k {
		k = n - k
	}
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return math.Round(c)
}

// nextCombination advances idx (a strictly increasing k-subset of {0..n-1}) in lexicographic order.
func nextCombination(idx []int, n int) bool {
	k := len(idx)
	i := k - 1
	for i >= 0 && idx[i] == n-k+i {
		i--
	}
	if i < 0 {
		return false
	}
	idx[i]++
	for j := i + 1; j < k; j++ {
		idx[j] = idx[j-1] + 1
	}
	return true
}

// directionKey quantises the direction of v (sign-normalised unit vector) to a map key; scale is
// the quantisation step (e.g. 2^40). It returns the key and ||v||_2.
func directionKey(v []float64, scale float64, buf []byte) (string, float64) {
	nrm := vecNorm(v, 2)
	if nrm == 0 {
		return "", 0
	}
	sign := 1.0
	for _, x := range v {
		if math.Abs(x) > 1e-6*nrm {
			if x < 0 {
				sign = -1
			}
			break
		}
	}
	buf = buf[:0]
	for _, x := range v {
		q := int64(math.Round(sign * x / nrm * scale))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(q))
	}
	return string(buf), nrm
}

// constraintSet keeps one vector per direction (unit direction quantised at 2^-44), the one of largest
// magnitude: only it binds in (12). Near-parallel vectors that rounding puts in different bins stay
// apart, which is harmless (a dominated LMI).
type constraintSet struct {
	index map[string]int
	vecs  [][]float64
	norms []float64
	buf   []byte
}

func newConstraintSet() *constraintSet { return &constraintSet{index: map[string]int{}} }

func (c *constraintSet) add(v []float64) {
	key, nrm := directionKey(v, 1<<44, c.buf)
	if nrm == 0 {
		return
	}
	if j, ok := c.index[key]; ok {
		if nrm > c.norms[j] {
			copy(c.vecs[j], v)
			c.norms[j] = nrm
		}
		return
	}
	c.index[key] = len(c.vecs)
	c.vecs = append(c.vecs, append([]float64(nil), v...))
	c.norms = append(c.norms, nrm)
}

// circuitSpec describes a kernel basis N (n x k, row-major) and the map z -> ||G z|| for the exact
// circuit enumeration of docs/math.md section 1.
type circuitSpec struct {
	n, k    int
	rows    []float64                 // N, row-major
	rowNorm []float64                 // ||N_i||
	thresh  []float64                 // zeroTol*||N_i||: |N_i z| at or below it counts as zero (z is a unit vector)
	value   func(z []float64) float64 // ||G z||_norm
	param   func(dst, z []float64)    // dst = G z; used for constraints and the worst pair
	r       int                       // len(G z)
	collect bool                      // collect constraints
}

type circuitResult struct {
	best       float64
	bestR      []int
	bestI      int
	bestZ      []float64
	bestNiz    float64
	evaluated  int64
	circuits   int64
	minDet     float64 // smallest |det N_S| over the kept free sets S = R ∪ {i} (+Inf when none)
	constraint *constraintSet
}

// nullWork is scratch space for the Householder null vector of k-1 rows of length k.
type nullWork struct {
	a, v, beta []float64
	vol        float64 // after nullVec: the (k-1)-volume of the row-normalised N_R, prod |R_jj|
}

func newNullWork(k int) *nullWork {
	return &nullWork{a: make([]float64, k*k), v: make([]float64, k*k), beta: make([]float64, k)}
}

// nullVec writes into z (unit 2-norm) a vector with N_R z = 0 for the rows idx of N; it returns false
// when those rows are numerically dependent (the index set would make D_{d_j} singular).
// It works on the row-normalised N_R^T with Householder reflections: z is the last column of Q.
func (w *nullWork) nullVec(sp *circuitSpec, idx []int, z []float64) bool {
	k := sp.k
	km := len(idx)
	a := w.a
	w.vol = 1
	for j, ri := range idx {
		nr := sp.rowNorm[ri]
		if nr == 0 {
			return false
		}
		row := sp.rows[ri*k : ri*k+k]
		col := a[j*k : j*k+k]
		for i := 0; i < k; i++ {
			col[i] = row[i] / nr
		}
	}
	for j := 0; j < km; j++ {
		col := a[j*k : j*k+k]
		s := 0.0
		for i := j; i < k; i++ {
			s += col[i] * col[i]
		}
		alpha := math.Sqrt(s)
		if alpha <= pivotTol {
			return false
		}
		w.vol *= alpha
		if col[j] > 0 {
			alpha = -alpha
		}
		v := w.v[j*k : j*k+k]
		v[j] = col[j] - alpha
		vn := v[j] * v[j]
		for i := j + 1; i < k; i++ {
			v[i] = col[i]
			vn += v[i] * v[i]
		}
		w.beta[j] = 2 / vn
		for c := j + 1; c < km; c++ {
			cc := a[c*k : c*k+k]
			d := 0.0
			for i := j; i < k; i++ {
				d += v[i] * cc[i]
			}
			d *= w.beta[j]
			for i := j; i < k; i++ {
				cc[i] -= d * v[i]
			}
		}
	}
	for i := range z {
		z[i] = 0
	}
	z[k-1] = 1
	for j := km - 1; j >= 0; j-- {
		v := w.v[j*k : j*k+k]
		d := 0.0
		for i := j; i < k; i++ {
			d += v[i] * z[i]
		}
		d *= w.beta[j]
		for i := j; i < k; i++ {
			z[i] -= d * v[i]
		}
	}
	nz := vecNorm(z, 2)
	for i := range z {
		z[i] /= nz
	}
	return true
}

// minSupport returns the row i with the smallest nonzero |N_i z| (relative tolerance zeroTol) and
// that signed value; ok is false when N z vanishes numerically.
func (sp *circuitSpec) minSupport(z []float64) (int, float64, bool) {
	k := sp.k
	rows := sp.rows
	best := math.Inf(1)
	bi := -1
	var bv float64
	switch k {
	case 1:
		z0 := z[0]
		rows = rows[:len(sp.thresh)]
		for i, t := range sp.thresh {
			x := rows[i] * z0
			ax := math.Abs(x)
			if ax < best && ax > t {
				best, bi, bv = ax, i, x
			}
		}
	case 2:
		z0, z1 := z[0], z[1]
		th := sp.thresh
		rows = rows[:2*len(th)]
		for i, t := range th {
			x := rows[2*i]*z0 + rows[2*i+1]*z1
			ax := math.Abs(x)
			if ax < best && ax > t {
				best, bi, bv = ax, i, x
			}
		}
	default:
		for i, t := range sp.thresh {
			row := rows[i*k : i*k+k]
			x := 0.0
			for j, zj := range z {
				x += row[j] * zj
			}
			ax := math.Abs(x)
			if ax < best && ax > t {
				best, bi, bv = ax, i, x
			}
		}
	}
	return bi, bv, bi >= 0
}

// enumerateCircuits is the exact enumeration of docs/math.md section 1: every (k-1)-row subset R of N with
// rank k-1 fixes a circuit z (null(N_R)); its worst coordinate is the smallest nonzero |N_i z|, and
// the circuit's value is ||G z|| / |N_i z|. Every Definition-4 pair (d_j, i) is such a pair
// (free set R ∪ {i}), so the maximum is exact. Parallel z (the same circuit reached from different R)
// are scanned once.
func enumerateCircuits(sp *circuitSpec) circuitResult {
	k := sp.k
	sp.thresh = make([]float64, sp.n)
	for i, nr := range sp.rowNorm {
		sp.thresh[i] = zeroTol * nr
	}
	res := circuitResult{best: -1, bestI: -1, minDet: math.Inf(1)}
	if sp.collect {
		res.constraint = newConstraintSet()
	}
	w := newNullWork(k)
	z := make([]float64, k)
	gz := make([]float64, sp.r)
	// seen maps a circuit to its smallest nonzero |N_i z| (0: no kept coordinate): every R reaching
	// it gives free sets R ∪ {i} with |det N_{R ∪ {i}}| = vol(N_R) |N_i z| (z a unit normal of N_R),
	// smallest at that i, so the smallest kept |det| needs only the volume of each R.
	seen := map[string]float64{}
	var keyBuf []byte
	idx := make([]int, k-1)
	for j := range idx {
		idx[j] = j
	}
	if k-1 > sp.n {
		return res
	}
	for {
		res.evaluated++
		if w.nullVec(sp, idx, z) {
			var key string
			if k > 1 {
				key, _ = directionKey(z, 1<<40, keyBuf)
			}
			minNiz, dup := seen[key]
			if !dup {
				seen[key] = 0
				if i, niz, ok := sp.minSupport(z); ok {
					seen[key] = math.Abs(niz)
					minNiz = math.Abs(niz)
					res.circuits++
					val := sp.value(z) / math.Abs(niz)
					if sp.collect {
						sp.param(gz, z)
						for j := range gz {
							gz[j] /= niz
						}
						res.constraint.add(gz)
					}
					if val > res.best {
						res.best = val
						res.bestR = append(res.bestR[:0], idx...)
						res.bestI = i
						res.bestZ = append(res.bestZ[:0], z...)
						res.bestNiz = niz
					}
				}
			}
			if minNiz > 0 {
				vol := w.vol
				for _, ri := range idx {
					vol *= sp.rowNorm[ri]
				}
				if d := vol * minNiz; d < res.minDet {
					res.minDet = d
				}
			}
		}
		if k == 1 || !nextCombination(idx, sp.n) {
			break
		}
	}
	return res
}

// worstFromCircuit builds the WorstPair of a circuit result: Diff = N z/(N_i z), Param = G z/(N_i z).
func (sp *circuitSpec) worstFromCircuit(res circuitResult) WorstPair {
	k := sp.k
	wp := WorstPair{Coordinate: res.bestI, Time: -1, Component: -1}
	wp.FreeSet = append(append([]int(nil), res.bestR...), res.bestI)
	sort.Ints(wp.FreeSet)
	wp.Diff = make([]float64, sp.n)
	for i := 0; i < sp.n; i++ {
		x := 0.0
		for j := 0; j < k; j++ {
			x += sp.rows[i*k+j] * res.bestZ[j]
		}
		wp.Diff[i] = x / res.bestNiz
	}
	for _, ri := range res.bestR {
		wp.Diff[ri] = 0
	}
	wp.Diff[res.bestI] = 1
	wp.Param = make([]float64, sp.r)
	sp.param(wp.Param, res.bestZ)
	for j := range wp.Param {
		wp.Param[j] /= res.bestNiz
	}
	return wp
}

func budgetError(what string, sets float64, perSet float64, budget int64) error {
	return fmt.Errorf("%s: exact enumeration needs %.4g index subsets x %.3g flops = %.3g flops, above the budget of %d flops "+
		"(use a shorter horizon, the block adjacency, or raise the budget)", what, sets, perSet, sets*perSet, budget)
}

// ManifoldSensitivity computes Delta_N (norm 2) or Delta_L (norm 1) of Definition 4 over every valid
// index set, exactly, by circuit enumeration (docs/math.md section 1): with N an orthonormal basis of ker D
// (n x k) and G = LambdaBar^+ F N, every (k-1)-row subset R of N of rank k-1 gives a circuit z
// (null(N_R)), worst coordinate i = argmin nonzero |N_i z|, value ||G z|| / |N_i z|.
//
// Cost: C(n, k-1) subsets x n*k flops (k = n - q); above budget (flops; <= 0 means DefaultBudget) it
// refuses with an error naming the cost. For k = 1 (consensus) there is a single circuit.
func ManifoldSensitivity(p Problem, norm int, budget int64) (Sensitivity, error) {
	if err := checkNorm(norm); err != nil {
		return Sensitivity{}, err
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	n, _, _, r, err := p.Dims()
	if err != nil {
		return Sensitivity{}, err
	}
	N, err := kernelOf(p.D, n)
	if err != nil {
		return Sensitivity{}, err
	}
	_, k := N.Dims()
	sets := binomial(n, k-1)
	perSet := float64(n*k + k*k*k + r*k)
	if sets*perSet > float64(budget) {
		return Sensitivity{}, budgetError(fmt.Sprintf("manifold sensitivity (n=%d, k=%d)", n, k), sets, perSet, budget)
	}
	var fn mat.Dense
	fn.Mul(p.F, N)
	G, err := pinvTimes(p.LambdaBar, &fn) // r x k
	if err != nil {
		return Sensitivity{}, err
	}
	sp := &circuitSpec{n: n, k: k, rows: rowmajor.Copy(N), r: r, collect: true}
	sp.rowNorm = rowNorms(sp.rows, n, k)
	gdata := rowmajor.Copy(G)
	sp.param = func(dst, z []float64) {
		for i := 0; i < r; i++ {
			x := 0.0
			for j := 0; j < k; j++ {
				x += gdata[i*k+j] * z[j]
			}
			dst[i] = x
		}
	}
	tmp := make([]float64, r)
	sp.value = func(z []float64) float64 {
		sp.param(tmp, z)
		return vecNorm(tmp, norm)
	}
	res := enumerateCircuits(sp)
	if res.bestI < 0 {
		return Sensitivity{}, fmt.Errorf("manifold sensitivity: no valid index set found (is every coordinate fixed by D?)")
	}
	return Sensitivity{
		Adjacency:   Manifold,
		Norm:        norm,
		Value:       res.best,
		Worst:       sp.worstFromCircuit(res),
		Constraints: res.constraint.vecs,
		Evaluated:   res.evaluated,
		Circuits:    res.circuits,
		MinDet:      res.minDet,
	}, nil
}

func rowNorms(rows []float64, n, k int) []float64 {
	out := make([]float64, n)
	for i := 0; i < n; i++ {
		out[i] = vecNorm(rows[i*k:i*k+k], 2)
	}
	return out
}

// BruteForceSensitivity is the literal Definition 4 / eq. (13): it enumerates every q-subset d_j of
// the n coordinates, keeps those with D_{d_j} nonsingular (1-norm condition number below 1e10),
// forms Psi_j = I - E_{d_j} D_{d_j}^{-1} D (eq. (5)) and takes, over every free i,
// ||LambdaBar^+ F Psi_j e_i|| (Norm 2 or 1). It is the reference the fast paths are tested against;
// it refuses above BruteForceMaxSets subsets. Constraints holds every distinct N_ij of (13).
func BruteForceSensitivity(p Problem, norm int) (Sensitivity, error) {
	if err := checkNorm(norm); err != nil {
		return Sensitivity{}, err
	}
	n, q, _, _, err := p.Dims()
	if err != nil {
		return Sensitivity{}, err
	}
	k := n - q
	if c := binomial(n, q); c > BruteForceMaxSets {
		return Sensitivity{}, fmt.Errorf("brute-force sensitivity: C(%d,%d) = %.4g index sets exceed the limit %d; use ManifoldSensitivity", n, q, c, BruteForceMaxSets)
	}
	var free [][]int
	idx := make([]int, k)
	for j := range idx {
		idx[j] = j
	}
	for {
		free = append(free, append([]int(nil), idx...))
		if !nextCombination(idx, n) {
			break
		}
	}
	s, err := sensitivityOverFreeSets(p, norm, free)
	if err != nil {
		return Sensitivity{}, err
	}
	s.Adjacency = Manifold
	return s, nil
}

// sensitivityOverFreeSets evaluates eq. (13) literally over the given free sets (complements of
// d_j), skipping those with D_{d_j} singular.
func sensitivityOverFreeSets(p Problem, norm int, freeSets [][]int) (Sensitivity, error) {
	n, q, m, r, err := p.Dims()
	if err != nil {
		return Sensitivity{}, err
	}
	eye := mat.NewDense(m, m, nil)
	for i := 0; i < m; i++ {
		eye.Set(i, i, 1)
	}
	P, err := pinvTimes(p.LambdaBar, eye) // r x m
	if err != nil {
		return Sensitivity{}, err
	}
	var PF mat.Dense
	PF.Mul(P, p.F) // r x n
	cons := newConstraintSet()
	out := Sensitivity{Norm: norm, Value: -1}
	inFree := make([]bool, n)
	v := mat.NewVecDense(n, nil)
	par := mat.NewVecDense(r, nil)
	for _, S := range freeSets {
		out.Evaluated++
		if len(S) != n-q {
			return Sensitivity{}, fmt.Errorf("free set %v has %d coordinates, want n-q = %d", S, len(S), n-q)
		}
		for i := range inFree {
			inFree[i] = false
		}
		for _, i := range S {
			inFree[i] = true
		}
		var d []int
		for i := 0; i < n; i++ {
			if !inFree[i] {
				d = append(d, i)
			}
		}
		var lu mat.LU
		if q > 0 {
			Dd := mat.NewDense(q, q, nil)
			for a := 0; a < q; a++ {
				for b, col := range d {
					Dd.Set(a, b, p.D.At(a, col))
				}
			}
			lu.Factorize(Dd)
			if c := lu.Cond(); !(c < condLimit) {
				continue
			}
			if d := math.Abs(lu.Det()); out.MinDet == 0 || d < out.MinDet {
				out.MinDet = d
			}
		}
		out.Circuits++
		for _, i := range S {
			// Psi_j e_i = e_i - E_{d_j} D_{d_j}^{-1} D e_i
			v.Zero()
			v.SetVec(i, 1)
			if q > 0 {
				var y mat.VecDense
				if err := lu.SolveVecTo(&y, false, p.D.ColView(i)); err != nil {
					return Sensitivity{}, fmt.Errorf("brute force: solving D_dj: %w", err)
				}
				for a, col := range d {
					v.SetVec(col, -y.AtVec(a))
				}
			}
			par.MulVec(&PF, v)
			val := vecNorm(par.RawVector().Data, norm)
			cons.add(par.RawVector().Data)
			if val > out.Value {
				out.Value = val
				out.Worst = WorstPair{
					FreeSet:    append([]int(nil), S...),
					Coordinate: i,
					Diff:       append([]float64(nil), v.RawVector().Data...),
					Param:      append([]float64(nil), par.RawVector().Data...),
					Time:       -1, Component: -1,
				}
			}
		}
	}
	if out.Value < 0 {
		return Sensitivity{}, fmt.Errorf("sensitivity: none of the %d index sets has D_dj nonsingular", len(freeSets))
	}
	out.Constraints = cons.vecs
	return out, nil
}
