package dynamics

import (
	"errors"
	"math"
	"slices"
	"sync/atomic"

	"gonum.org/v1/gonum/lapack/gonum"

	"github.com/dpsim/dpsim/pkg/rng"
)

// This file computes the consensus rate alpha = max(|1 - lambda_2|, |1 - lambda_n|) (Section 6.2,
// Proposition 1) of graphs too large for the dense spectrum: the Lanczos iteration on the sparse
// Laplacian restricted to the complement of the all-ones vector (where L's spectrum is lambda_2..lambda_n),
// which yields both extreme eigenvalues from one Krylov sequence.

// Rate methods reported in RateInfo.Method.
const (
	RateDense   = "dense"   // all eigenvalues of the dense Laplacian (N <= MaxDenseRateNodes)
	RateLanczos = "lanczos" // extreme Ritz values of the sparse Laplacian on 1-perp
)

// LanczosTolerance is the target of the sparse rate: Lanczos stops once both extreme Ritz values
// carry a residual bound |beta_k s_k| <= LanczosTolerance * max(1, lambda_n upper bound), so lambda_2,
// lambda_n and alpha are each within that absolute distance of the exact values (alpha <= ~1, so the
// bound is also relative to alpha whenever alpha is not tiny).
const LanczosTolerance = 1e-10

// lanczosWork bounds the sparse iteration's cost: at most lanczosWork / (nnz(L) + 8 N) Lanczos steps
// (about 2 s), and never more than lanczosMaxIter or fewer than lanczosMinIter.
const (
	lanczosWork    = 2e9
	lanczosMaxIter = 100000
	lanczosMinIter = 500
)

// RateInfo is the consensus rate with its provenance.
type RateInfo struct {
	// Alpha = max(|1 - Lambda2|, |1 - LambdaN|): exact (dense, Lanczos converged), else the upper bound
	// AlphaUpper.
	Alpha float64
	// AlphaUpper >= alpha: Alpha plus the eigenvalue error bounds (dense: Alpha itself). When Lanczos did
	// not converge it is max(|1 - lambda_2_lower|, |1 - theta_1|, |1 - theta_k|, |1 - lambda_n_upper|)
	// with the rigorous bounds lambda_2 >= 4 w_min / (N * 2 ecc(0)) (Mohar 1991, lambda_2 >= 4/(N D) for
	// unit weights, times the smallest weight; diameter D <= 2 ecc(0)) and lambda_n <= 2 max_i sum_j w_ij
	// (Gershgorin).
	AlphaUpper float64
	// Lambda2, LambdaN: the second-smallest and the largest Laplacian eigenvalue (estimates when
	// Lanczos did not converge: Ritz values, Lambda2 >= lambda_2 and LambdaN <= lambda_n).
	Lambda2, LambdaN float64
	// Lambda2Err, LambdaNErr: residual bounds of the Ritz values (0 for dense).
	Lambda2Err, LambdaNErr float64
	Method                 string
	Converged              bool
	// Iterations: Lanczos steps (0 for dense).
	Iterations int
}

// RateInfo returns the consensus rate alpha (Section 6.2, Proposition 1) with how it was computed:
// the dense spectrum for N <= MaxDenseRateNodes, else Lanczos on the sparse Laplacian (see
// LanczosTolerance; cost O(k (N + E)) for k steps, memory O(N + E + k)). When Lanczos does not reach
// the tolerance within its step budget, Converged is false and Alpha is the rigorous upper bound
// AlphaUpper. For N = 1 alpha is 0. Connectivity is not checked (a disconnected graph has
// lambda_2 = 0, alpha >= 1).
//
// The last result is kept for the process with a copy of the graph it belongs to, and served
// again for a graph with the same N and edges: Validate and Rate, and the same graph built
// twice (a plan built again for the same point), share one computation - a dense
// eigen-decomposition costs seconds at N = 1000, the O(E) comparison nothing. A graph edited
// in place no longer matches and is recomputed. Safe for concurrent use.
func (g *Graph) RateInfo() (RateInfo, error) {
	if g == nil {
		return g.rateInfo() // its structure check names the problem
	}
	if m := lastRate.Load(); m != nil && m.n == g.N && slices.Equal(m.edges, g.Edges) {
		return m.info, m.err
	}
	info, err := g.rateInfo()
	lastRate.Store(&rateMemo{n: g.N, edges: slices.Clone(g.Edges), info: info, err: err})
	return info, err
}

// lastRate is the process's last RateInfo computed, with its graph.
var lastRate atomic.Pointer[rateMemo]

type rateMemo struct {
	n     int
	edges []Edge
	info  RateInfo
	err   error
}

func (g *Graph) rateInfo() (RateInfo, error) {
	if err := g.checkStructure(); err != nil {
		return RateInfo{}, err
	}
	if g.N < 2 {
		return RateInfo{Method: RateDense, Converged: true}, nil
	}
	if g.N <= MaxDenseRateNodes {
		ev, err := g.LaplacianEigenvalues()
		if err != nil {
			return RateInfo{}, err
		}
		l2, ln := ev[1], ev[len(ev)-1]
		a := math.Max(math.Abs(1-l2), math.Abs(1-ln))
		return RateInfo{Alpha: a, AlphaUpper: a, Lambda2: l2, LambdaN: ln, Method: RateDense, Converged: true}, nil
	}
	return g.lanczosRate(0)
}

// sparseLaplacian is L = Deg - W in compressed rows (off-diagonal part) plus the diagonal.
type sparseLaplacian struct {
	n     int
	start []int     // row i's neighbours are col[start[i]:start[i+1]]
	col   []int32   // neighbour indices
	w     []float64 // edge weights
	diag  []float64 // weighted degrees sum_j w_ij
}

func newSparseLaplacian(g *Graph) *sparseLaplacian {
	n := g.N
	cnt := make([]int, n+1)
	for _, e := range g.Edges {
		cnt[e.I+1]++
		cnt[e.J+1]++
	}
	for i := 0; i < n; i++ {
		cnt[i+1] += cnt[i]
	}
	s := &sparseLaplacian{n: n, start: cnt, col: make([]int32, cnt[n]), w: make([]float64, cnt[n]), diag: make([]float64, n)}
	pos := append([]int(nil), cnt[:n]...)
	for _, e := range g.Edges {
		s.col[pos[e.I]], s.w[pos[e.I]] = int32(e.J), e.W
		pos[e.I]++
		s.col[pos[e.J]], s.w[pos[e.J]] = int32(e.I), e.W
		pos[e.J]++
		s.diag[e.I] += e.W
		s.diag[e.J] += e.W
	}
	return s
}

// mul writes dst = L x.
func (s *sparseLaplacian) mul(dst, x []float64) {
	for i := 0; i < s.n; i++ {
		v := s.diag[i] * x[i]
		for k := s.start[i]; k < s.start[i+1]; k++ {
			v -= s.w[k] * x[s.col[k]]
		}
		dst[i] = v
	}
}

// lanczosRate runs Lanczos (no reorthogonalisation: the extreme Ritz values converge regardless, and
// lost orthogonality only adds copies of converged ones, Paige 1976) on L restricted to 1-perp. Every
// Krylov vector is re-projected onto 1-perp so that rounding cannot reintroduce the eigenvalue 0. The
// start vector is a fixed-seed Gaussian vector (deterministic result; a component along every
// eigenvector with probability 1, so the extreme Ritz values approach lambda_2 and lambda_n).
// maxIter <= 0 selects the default step budget (lanczosWork).
func (g *Graph) lanczosRate(maxIter int) (RateInfo, error) {
	L := newSparseLaplacian(g)
	n := g.N
	maxSum, minW := 0.0, math.Inf(1)
	for _, d := range L.diag {
		maxSum = math.Max(maxSum, d)
	}
	for _, e := range g.Edges {
		minW = math.Min(minW, e.W)
	}
	lnUpper := 2 * maxSum // Gershgorin
	tol := LanczosTolerance * math.Max(1, lnUpper)
	if maxIter <= 0 {
		maxIter = int(lanczosWork / float64(len(L.col)+8*n))
		maxIter = min(max(maxIter, lanczosMinIter), lanczosMaxIter)
	}

	r := rng.New(0, rng.Label("lanczos"), uint64(n), uint64(len(g.Edges)))
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	if !projectNormalize(v) {
		return RateInfo{}, errors.New("dynamics: lanczos start vector vanished")
	}
	vPrev := make([]float64, n)
	w := make([]float64, n)
	var alpha, beta []float64 // T_k: diagonal alpha, off-diagonal beta (beta[j] couples j and j+1)
	info := RateInfo{Method: RateLanczos}
	var ws tridiagWork
	next := 20
	for j := 0; j < maxIter; j++ {
		L.mul(w, v)
		a := dot(v, w)
		for i := range w {
			w[i] -= a * v[i]
		}
		if j > 0 {
			b := beta[j-1]
			for i := range w {
				w[i] -= b * vPrev[i]
			}
		}
		projectOnes(w)
		alpha = append(alpha, a)
		b := math.Sqrt(dot(w, w))
		info.Iterations = j + 1
		// Breakdown: the Krylov space is invariant, its Ritz values are exact eigenvalues, and with a
		// generic start it holds every distinct eigenvalue of L on 1-perp.
		breakdown := b <= 1e-14*math.Max(1, lnUpper)
		if breakdown || j+1 == next || j+1 == maxIter {
			lo, hi, rlo, rhi := ws.extremeRitz(alpha, beta, b)
			if breakdown {
				rlo, rhi = 0, 0
			}
			info.Lambda2, info.LambdaN, info.Lambda2Err, info.LambdaNErr = lo, hi, rlo, rhi
			if rlo <= tol && rhi <= tol {
				info.Converged = true
				break
			}
			next = j + 1 + max(20, (j+1)/8)
		}
		if breakdown {
			break
		}
		beta = append(beta, b)
		for i := range w {
			vPrev[i] = v[i]
			v[i] = w[i] / b
		}
	}
	l2, ln := info.Lambda2, info.LambdaN
	info.Alpha = math.Max(math.Abs(1-l2), math.Abs(1-ln))
	if info.Converged {
		// lambda_2 in [l2 - err, l2] and lambda_n in [ln, min(ln + err, Gershgorin)].
		info.AlphaUpper = max(info.Alpha, math.Abs(1-(l2-info.Lambda2Err)), math.Abs(1-math.Min(ln+info.LambdaNErr, lnUpper)))
		return info, nil
	}
	l2Lower := 4 * minW / (float64(n) * float64(2*g.eccentricity(0)))
	info.AlphaUpper = max(info.Alpha, math.Abs(1-math.Min(l2Lower, l2)), math.Abs(1-math.Max(lnUpper, ln)))
	info.Alpha = info.AlphaUpper
	return info, nil
}

// eccentricity returns the largest hop distance from node s (BFS; unreachable nodes ignored).
func (g *Graph) eccentricity(s int) int {
	adj := g.adjacency()
	dist := make([]int, g.N)
	for i := range dist {
		dist[i] = -1
	}
	dist[s] = 0
	queue := []int{s}
	ecc := 0
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, e := range adj[u] {
			if dist[e.J] < 0 {
				dist[e.J] = dist[u] + 1
				ecc = max(ecc, dist[e.J])
				queue = append(queue, e.J)
			}
		}
	}
	return max(ecc, 1)
}

func dot(x, y []float64) float64 {
	var s float64
	for i, v := range x {
		s += v * y[i]
	}
	return s
}

// projectOnes removes the component along the all-ones vector.
func projectOnes(x []float64) {
	var m float64
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	for i := range x {
		x[i] -= m
	}
}

// projectNormalize projects x onto 1-perp and scales it to unit length; false if nothing is left.
func projectNormalize(x []float64) bool {
	projectOnes(x)
	nrm := math.Sqrt(dot(x, x))
	if !(nrm > 0) {
		return false
	}
	for i := range x {
		x[i] /= nrm
	}
	return true
}

// tridiagWork holds scratch space for extremeRitz.
type tridiagWork struct {
	dl, d, du, x, saved []float64
}

// extremeRitz returns the smallest and largest eigenvalues theta of the k x k symmetric tridiagonal
// T (diagonal alpha, off-diagonal beta, len(beta) = k-1) and their Lanczos residual bounds
// |bNext * s_k| (s_k the last component of the unit eigenvector of T): an eigenvalue of L lies within
// that distance of theta.
func (ws *tridiagWork) extremeRitz(alpha, beta []float64, bNext float64) (lo, hi, rlo, rhi float64) {
	k := len(alpha)
	lo = tridiagEigen(alpha, beta, 0)
	hi = tridiagEigen(alpha, beta, k-1)
	rlo = math.Abs(bNext * ws.lastComponent(alpha, beta, lo))
	rhi = math.Abs(bNext * ws.lastComponent(alpha, beta, hi))
	return lo, hi, rlo, rhi
}

// sturmCount returns the number of eigenvalues of T smaller than x.
func sturmCount(alpha, beta []float64, x float64) int {
	count := 0
	q := 1.0
	for i, a := range alpha {
		if i == 0 {
			q = a - x
		} else {
			q = a - x - beta[i-1]*beta[i-1]/q
		}
		if q == 0 {
			q = -1e-300
		}
		if q < 0 {
			count++
		}
	}
	return count
}

// tridiagEigen returns the idx-th smallest eigenvalue (0-based) of T by bisection on the Sturm count.
func tridiagEigen(alpha, beta []float64, idx int) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, a := range alpha {
		r := 0.0
		if i > 0 {
			r += math.Abs(beta[i-1])
		}
		if i < len(beta) {
			r += math.Abs(beta[i])
		}
		lo = math.Min(lo, a-r)
		hi = math.Max(hi, a+r)
	}
	for it := 0; it < 200; it++ {
		mid := 0.5 * (lo + hi)
		if mid <= lo || mid >= hi {
			break
		}
		if sturmCount(alpha, beta, mid) > idx {
			hi = mid
		} else {
			lo = mid
		}
	}
	return 0.5 * (lo + hi)
}

// lastComponent returns the last component of the unit eigenvector of T for the eigenvalue theta, by
// two steps of inverse iteration (tridiagonal Gaussian elimination with partial pivoting).
func (ws *tridiagWork) lastComponent(alpha, beta []float64, theta float64) float64 {
	k := len(alpha)
	if k == 1 {
		return 1
	}
	if cap(ws.d) < k {
		c := 2 * k
		ws.dl, ws.d, ws.du, ws.x, ws.saved = make([]float64, c), make([]float64, c), make([]float64, c), make([]float64, c), make([]float64, c)
	}
	dl, d, du, x, saved := ws.dl[:k-1], ws.d[:k], ws.du[:k-1], ws.x[:k], ws.saved[:k]
	for i := range x {
		x[i] = 1 / math.Sqrt(float64(k))
	}
	shift := theta
	var impl gonum.Implementation
	for step := 0; step < 2; step++ {
		for try := 0; ; try++ {
			copy(dl, beta)
			copy(du, beta)
			for i, a := range alpha {
				d[i] = a - shift
			}
			copy(saved, x)
			if impl.Dgtsv(k, 1, dl, d, du, x, 1) {
				break
			}
			// exactly singular: move the shift by a few ulps and retry
			copy(x, saved)
			shift += math.Max(math.Abs(shift), 1e-300) * 1e-14 * float64(try+1)
			if try > 5 {
				return 1
			}
		}
		nrm := math.Sqrt(dot(x, x))
		if !(nrm > 0) || math.IsInf(nrm, 0) {
			return 1 // no information: the caller then sees a large residual
		}
		for i := range x {
			x[i] /= nrm
		}
	}
	return x[k-1]
}
