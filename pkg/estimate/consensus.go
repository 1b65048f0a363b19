package estimate

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// ConsensusEstimator is the eavesdropper's least-squares estimate of one agent's initial value x_i(0)
// in average consensus (Section 6, eq. (25); docs/math.md section 5). Agent i updates
// x_i(t+1) = x_i(t) + u_i(t), u_i(t) = sum_j w_ij (y_j(t) - y_i(t)), from broadcast values, so
//
//	r(t) = y_i(t) - sum_{s<t} u_i(s) = x_i(0) + gamma_i(t)
//
// and the estimate is the mean of r(0..t). With the paper's constant offsets gamma_i(t) = sigma_i eta_i
// it equals x_i(0) + gamma_i exactly at every t: the noise is never averaged away. With fresh i.i.d.
// noise per step it would converge to x_i(0) like 1/sqrt(t).
type ConsensusEstimator struct {
	n, i  int
	nbrs  []int
	w     []float64
	next  int
	u     float64 // sum_{s<t} u_i(s)
	sum   float64 // sum of r(s)
	count int
}

// NewConsensusEstimator returns the estimator for agent i (0-based) of n agents with neighbours nbrs
// and weights w (w[k] = w_{i,nbrs[k]} > 0). Errors name the bad neighbour or weight.
func NewConsensusEstimator(n, i int, nbrs []int, w []float64) (*ConsensusEstimator, error) {
	if n < 1 || i < 0 || i >= n {
		return nil, fmt.Errorf("estimate: consensus: agent %d out of range for %d agents", i, n)
	}
	if err := checkNeighbours(n, i, nbrs, w); err != nil {
		return nil, err
	}
	return &ConsensusEstimator{n: n, i: i, nbrs: append([]int(nil), nbrs...), w: append([]float64(nil), w...)}, nil
}

func checkNeighbours(n, i int, nbrs []int, w []float64) error {
	if len(nbrs) != len(w) {
		return fmt.Errorf("estimate: consensus: agent %d has %d neighbours but %d weights", i, len(nbrs), len(w))
	}
	for k, j := range nbrs {
		switch {
		case j < 0 || j >= n:
			return fmt.Errorf("estimate: consensus: agent %d: neighbour %d out of range [0, %d)", i, j, n)
		case j == i:
			return fmt.Errorf("estimate: consensus: agent %d lists itself as a neighbour", i)
		case !(w[k] > 0) || math.IsInf(w[k], 0):
			return fmt.Errorf("estimate: consensus: agent %d: weight w_%d,%d = %v must be finite and > 0", i, i, j, w[k])
		}
		for _, j2 := range nbrs[:k] {
			if j2 == j {
				return fmt.Errorf("estimate: consensus: agent %d lists neighbour %d twice", i, j)
			}
		}
	}
	return nil
}

// Reset forgets the transcript for a new episode.
func (e *ConsensusEstimator) Reset() { e.next, e.u, e.sum, e.count = 0, 0, 0, 0 }

// Observe adds step t (0, 1, 2, ... in order) with y the full broadcast vector y(t) of length n; only
// y_i and the neighbours' values are read. Errors leave the estimator unchanged. No allocation.
func (e *ConsensusEstimator) Observe(t int, y []float64) error {
	if t != e.next {
		return fmt.Errorf("estimate: consensus: agent %d: step %d out of order (expected %d)", e.i, t, e.next)
	}
	if len(y) != e.n {
		return fmt.Errorf("estimate: consensus: agent %d: step %d: y has %d values, want %d", e.i, t, len(y), e.n)
	}
	yi := y[e.i]
	if math.IsNaN(yi) || math.IsInf(yi, 0) {
		return fmt.Errorf("estimate: consensus: step %d: y[%d] = %v is not finite", t, e.i, yi)
	}
	var ui float64
	for k, j := range e.nbrs {
		yj := y[j]
		if math.IsNaN(yj) || math.IsInf(yj, 0) {
			return fmt.Errorf("estimate: consensus: step %d: y[%d] = %v is not finite", t, j, yj)
		}
		ui += e.w[k] * (yj - yi)
	}
	e.sum += yi - e.u
	e.count++
	e.u += ui
	e.next++
	return nil
}

// Estimate returns the least-squares x_i(0) estimate (= x_i(0) + gamma_i for constant offsets) and
// false before the first observation.
func (e *ConsensusEstimator) Estimate() (float64, bool) {
	if e.count == 0 {
		return 0, false
	}
	return e.sum / float64(e.count), true
}

// Current returns t = number of observed steps and the implied x_i(t) = x_i(0)_hat + sum_{s<t} u_i(s),
// the state agent i holds now; its error equals the initial-state error.
func (e *ConsensusEstimator) Current() (t int, xt float64, ok bool) {
	x0, ok := e.Estimate()
	return e.next, x0 + e.u, ok
}

// NetworkEstimator runs the ConsensusEstimator of every agent at once from the full y vector per
// step, in O(n + edges) per step without allocation.
type NetworkEstimator struct {
	n     int
	start []int // CSR: neighbours of i are idx[start[i]:start[i+1]]
	idx   []int
	w     []float64
	next  int
	u     []float64 // sum_{s<t} u_i(s)
	sum   []float64 // sum of r_i(s)
	count []int     // the steps whose y_i was received, per agent
}

// NewNetworkEstimator builds the estimator from the n x n weight matrix W (W[i][j] = w_ij >= 0,
// zero = no edge, zero diagonal). A nonzero diagonal or negative entry is refused: it usually means the
// Laplacian was passed instead of the weights. W need not be symmetric; row i is what agent i uses.
func NewNetworkEstimator(W *mat.Dense) (*NetworkEstimator, error) {
	if W == nil {
		return nil, fmt.Errorf("estimate: network: W is nil")
	}
	n, c := W.Dims()
	if n == 0 || n != c {
		return nil, fmt.Errorf("estimate: network: W must be square and non-empty, got %dx%d", n, c)
	}
	nbrs := make([][]int, n)
	ws := make([][]float64, n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			v := W.At(i, j)
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				return nil, fmt.Errorf("estimate: network: W[%d][%d] = %v is not finite", i, j, v)
			case i == j && v != 0:
				return nil, fmt.Errorf("estimate: network: W[%d][%d] = %v, the diagonal must be 0 (pass weights, not the Laplacian)", i, i, v)
			case v < 0:
				return nil, fmt.Errorf("estimate: network: W[%d][%d] = %v is negative (pass weights, not the Laplacian)", i, j, v)
			case v > 0:
				nbrs[i] = append(nbrs[i], j)
				ws[i] = append(ws[i], v)
			}
		}
	}
	return NewNetworkEstimatorLists(nbrs, ws)
}

// NewNetworkEstimatorLists builds the estimator from neighbour lists: agent i uses neighbours nbrs[i]
// with weights w[i] (> 0). Suited to large sparse graphs.
func NewNetworkEstimatorLists(nbrs [][]int, w [][]float64) (*NetworkEstimator, error) {
	n := len(nbrs)
	if n == 0 {
		return nil, fmt.Errorf("estimate: network: no agents")
	}
	if len(w) != n {
		return nil, fmt.Errorf("estimate: network: %d neighbour lists but %d weight lists", n, len(w))
	}
	e := &NetworkEstimator{n: n, start: make([]int, n+1), u: make([]float64, n), sum: make([]float64, n), count: make([]int, n)}
	for i := range nbrs {
		if err := checkNeighbours(n, i, nbrs[i], w[i]); err != nil {
			return nil, err
		}
		e.idx = append(e.idx, nbrs[i]...)
		e.w = append(e.w, w[i]...)
		e.start[i+1] = len(e.idx)
	}
	return e, nil
}

// N returns the number of agents.
func (e *NetworkEstimator) N() int { return e.n }

// Reset forgets the transcript for a new episode.
func (e *NetworkEstimator) Reset() {
	e.next = 0
	clear(e.u)
	clear(e.sum)
	clear(e.count)
}

// Observe adds step t (0, 1, 2, ... in order) with the full broadcast vector y(t). Errors leave the
// estimator unchanged. No allocation.
func (e *NetworkEstimator) Observe(t int, y []float64) error {
	return e.ObservePartial(t, y, nil)
}

// ObservePartial adds step t with the broadcast vector y(t) of which only the entries with
// have[i] were received (have nil: all). For an agent whose y_i(t) is missing, y[i] is the
// caller's stand-in (e.g. the newest y_i it saw): it enters the neighbours' input terms u_j, but
// the agent's own estimate takes no sample this step (each agent averages over its own received
// steps). Errors leave the estimator unchanged. No allocation.
func (e *NetworkEstimator) ObservePartial(t int, y []float64, have []bool) error {
	if t != e.next {
		return fmt.Errorf("estimate: network: step %d out of order (expected %d)", t, e.next)
	}
	if len(y) != e.n {
		return fmt.Errorf("estimate: network: step %d: y has %d values, want %d", t, len(y), e.n)
	}
	if have != nil && len(have) != e.n {
		return fmt.Errorf("estimate: network: step %d: have has %d entries, want %d", t, len(have), e.n)
	}
	if k := finite(y); k >= 0 {
		return fmt.Errorf("estimate: network: step %d: y[%d] = %v is not finite", t, k, y[k])
	}
	for i, yi := range y {
		if have == nil || have[i] {
			e.sum[i] += yi - e.u[i]
			e.count[i]++
		}
		var ui float64
		for k := e.start[i]; k < e.start[i+1]; k++ {
			ui += e.w[k] * (y[e.idx[k]] - yi)
		}
		e.u[i] += ui
	}
	e.next++
	return nil
}

// Estimate writes every agent's x_i(0) estimate (its received samples' mean) into dst (length n);
// false before the first step or while some agent has no sample. It panics if len(dst) != n.
func (e *NetworkEstimator) Estimate(dst []float64) bool {
	if len(dst) != e.n {
		panic("estimate: NetworkEstimator.Estimate: len(dst) != n")
	}
	if e.next == 0 {
		return false
	}
	for i, s := range e.sum {
		if e.count[i] == 0 {
			return false
		}
		dst[i] = s / float64(e.count[i])
	}
	return true
}

// Current writes the implied current states x_i(t) = x_i(0)_hat + sum_{s<t} u_i(s) into dst and
// returns t = number of observed steps. It panics if len(dst) != n.
func (e *NetworkEstimator) Current(dst []float64) (t int, ok bool) {
	if !e.Estimate(dst) {
		return e.next, false
	}
	for i, u := range e.u {
		dst[i] += u
	}
	return e.next, true
}
