package dynamics

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/rng"
)

// Edge is an undirected edge {I, J} of weight W (nodes are 0-based).
type Edge struct {
	I, J int
	W    float64
}

// Graph is an undirected weighted communication graph for the consensus algorithm (25): w_ij =
// w_ji = W for every edge, 0 otherwise. Each unordered pair appears at most once in Edges.
type Graph struct {
	N     int
	Edges []Edge

	adj atomic.Pointer[adjCache] // Neighbors' lists
}

// checkStructure checks everything but connectivity and the rate: node range, no self loops, no
// duplicate pairs (in either orientation), finite positive weights.
// CheckStructure checks what every graph must satisfy, in O(E): at least one node, edges
// between existing distinct nodes, positive finite weights, each undirected edge once.
// Validate adds connectivity and the consensus rate.
func (g *Graph) CheckStructure() error { return g.checkStructure() }

func (g *Graph) checkStructure() error {
	if g == nil {
		return errors.New("dynamics: graph is nil")
	}
	if g.N < 1 {
		return fmt.Errorf("dynamics: graph needs at least 1 node, got N=%d", g.N)
	}
	seen := make(map[[2]int]int, len(g.Edges))
	for k, e := range g.Edges {
		if e.I < 0 || e.I >= g.N || e.J < 0 || e.J >= g.N {
			return fmt.Errorf("dynamics: edge %d (%d-%d): node out of range [0, %d)", k, e.I, e.J, g.N)
		}
		if e.I == e.J {
			return fmt.Errorf("dynamics: edge %d (%d-%d) is a self loop", k, e.I, e.J)
		}
		if !(e.W > 0) || math.IsInf(e.W, 0) {
			return fmt.Errorf("dynamics: edge %d (%d-%d): weight %v must be positive and finite", k, e.I, e.J, e.W)
		}
		key := [2]int{min(e.I, e.J), max(e.I, e.J)}
		if prev, dup := seen[key]; dup {
			return fmt.Errorf("dynamics: edges %d and %d both join nodes %d and %d (list each undirected edge once)",
				prev, k, key[0], key[1])
		}
		seen[key] = k
	}
	return nil
}

// components returns the connected components' count and, for a disconnected graph, one node
// unreachable from node 0.
func (g *Graph) components() (count, unreachable int) {
	adj := make([][]int, g.N)
	for _, e := range g.Edges {
		adj[e.I] = append(adj[e.I], e.J)
		adj[e.J] = append(adj[e.J], e.I)
	}
	comp := make([]int, g.N)
	for i := range comp {
		comp[i] = -1
	}
	unreachable = -1
	stack := []int{}
	for s := 0; s < g.N; s++ {
		if comp[s] >= 0 {
			continue
		}
		if count == 1 && unreachable < 0 {
			unreachable = s
		}
		comp[s] = count
		stack = append(stack[:0], s)
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, w := range adj[v] {
				if comp[w] < 0 {
					comp[w] = count
					stack = append(stack, w)
				}
			}
		}
		count++
	}
	return count, unreachable
}

// WeightSums returns sum_j w_ij for every node i.
func (g *Graph) WeightSums() []float64 {
	s := make([]float64, g.N)
	for _, e := range g.Edges {
		if e.I >= 0 && e.I < g.N && e.J >= 0 && e.J < g.N {
			s[e.I] += e.W
			s[e.J] += e.W
		}
	}
	return s
}

// alphaTol is the margin below 1 that Validate requires of alpha: eigenvalues are computed to
// about 1e-15 relative, so alpha within 1e-12 of 1 (e.g. an even ring with weight 1/2, lambda_n = 2)
// counts as alpha = 1.
const alphaTol = 1e-12

// MaxDenseRateNodes is the largest graph for which Rate computes the whole Laplacian spectrum (a
// dense symmetric eigenvalue problem: O(N^3) time, about 0.5 s at N = 1000, and 8 N^2 bytes). Larger
// graphs get the sparse Lanczos rate (RateInfo, LanczosTolerance).
const MaxDenseRateNodes = 1000

// maxListedNodes caps the node list of the weight-sum warning.
const maxListedNodes = 20

// Validate checks the graph for the consensus algorithm (25): nodes in range, no self loops, no
// duplicate edges, positive finite weights (so W is symmetric and nonnegative), connected, and
// rate alpha < 1 - 1e-12 (Proposition 1), else an error. The paper also asks sum_j w_ij < 1 at
// every node (Section 6.1), but its own example graph has degree-4 nodes with weight 1/4
// (sum = 1) and still converges; so nodes with sum >= 1 only produce one warning line listing
// them (0-based, as the agents agent.0 ... and x0's entries), and the graph is refused only when
// alpha >= 1.
//
// Cost: O(N + E), plus the rate (see RateInfo). Above MaxDenseRateNodes, alpha < 1 is certified
// without eigenvalues when every weight sum is below 1 (Gershgorin: lambda_n <= 2 max_i sum_j w_ij
// < 2, and connectivity gives lambda_2 > 0); otherwise the sparse rate's upper bound AlphaUpper
// must be below 1 - 1e-12.
func (g *Graph) Validate() (warnings []string, err error) {
	if err := g.checkStructure(); err != nil {
		return nil, err
	}
	if n, u := g.components(); n > 1 {
		return nil, fmt.Errorf("dynamics: graph is not connected: %d components (node %d is not reachable from node 0)", n, u)
	}
	maxSum := 0.0
	var heavy []string
	heavyCount := 0
	for i, s := range g.WeightSums() {
		maxSum = math.Max(maxSum, s)
		if s >= 1 {
			if heavyCount++; heavyCount <= maxListedNodes {
				heavy = append(heavy, fmt.Sprint(i))
			}
		}
	}
	if heavyCount > 0 {
		list := strings.Join(heavy, ", ")
		if heavyCount > maxListedNodes {
			list += fmt.Sprintf(" and %d more", heavyCount-maxListedNodes)
		}
		noun := "nodes"
		if heavyCount == 1 {
			noun = "node"
		}
		warnings = append(warnings, fmt.Sprintf("weight sums sum_j w_ij >= 1 (up to %.6g) at %s %s (0-based); "+
			"the paper asks < 1 (Section 6.1); convergence still holds while alpha < 1", maxSum, noun, list))
	}
	if g.N > MaxDenseRateNodes && maxSum < 1 {
		return warnings, nil
	}
	info, err := g.RateInfo()
	if err != nil {
		return warnings, err
	}
	if !(info.AlphaUpper < 1-alphaTol) {
		if !info.Converged {
			return warnings, fmt.Errorf("dynamics: cannot certify alpha < 1 for N=%d nodes: the largest weight sum is %.6g >= 1 "+
				"and the sparse (Lanczos) rate did not converge in %d steps (its upper bound is %.6g); use weights with "+
				"every sum below 1, e.g. 1/(max degree + 1)", g.N, maxSum, info.Iterations, info.AlphaUpper)
		}
		return warnings, fmt.Errorf("dynamics: consensus rate alpha = max(|1-lambda_2|, |1-lambda_n|) = %.6g >= 1: "+
			"the iteration does not converge (reduce the weights, e.g. to 1/(max degree + 1))", info.AlphaUpper)
	}
	return warnings, nil
}

// Laplacian returns the weighted graph Laplacian L = Deg - W (symmetric positive semidefinite,
// L 1 = 0). The paper (Section 6.2) writes the negated matrix; its eigenvalue statements
// (lambda_1 = 0 < lambda_2 <= ... <= lambda_n < 2) and alpha refer to this standard L, for which
// eq. (25) without noise reads x(t+1) = (I - L) x(t). Edges with out-of-range endpoints or self
// loops are ignored (call Validate first).
func (g *Graph) Laplacian() *mat.Dense {
	n := max(g.N, 1)
	L := mat.NewDense(n, n, nil)
	for _, e := range g.Edges {
		if e.I < 0 || e.I >= g.N || e.J < 0 || e.J >= g.N || e.I == e.J {
			continue
		}
		L.Set(e.I, e.J, L.At(e.I, e.J)-e.W)
		L.Set(e.J, e.I, L.At(e.J, e.I)-e.W)
		L.Set(e.I, e.I, L.At(e.I, e.I)+e.W)
		L.Set(e.J, e.J, L.At(e.J, e.J)+e.W)
	}
	return L
}

// LaplacianEigenvalues returns the eigenvalues of Laplacian() in ascending order. It refuses
// graphs with more than MaxDenseRateNodes nodes (dense O(N^3) eigenvalue problem).
func (g *Graph) LaplacianEigenvalues() (vals []float64, err error) {
	defer func() {
		// gonum's LAPACK panics on some inputs (weights spanning hundreds of decades): a
		// scenario is user input, and its check must fail with a message, not crash
		if r := recover(); r != nil {
			vals, err = nil, fmt.Errorf("dynamics: the Laplacian's spectrum could not be computed (its weights span too many orders of magnitude: %s): %v", g.weightSpan(), r)
		}
	}()
	if err := g.checkStructure(); err != nil {
		return nil, err
	}
	if g.N > MaxDenseRateNodes {
		return nil, fmt.Errorf("dynamics: Laplacian spectrum of N=%d nodes exceeds the dense limit N=%d "+
			"(O(N^3) time, %d MB)", g.N, MaxDenseRateNodes, 8*g.N*g.N>>20)
	}
	L := g.Laplacian()
	n, _ := L.Dims()
	scale := spectrumScale(L)
	S := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			S.SetSym(i, j, L.At(i, j)/scale)
		}
	}
	var es mat.EigenSym
	if !es.Factorize(S, false) {
		return nil, errors.New("dynamics: eigen-decomposition of the Laplacian did not converge")
	}
	vals = es.Values(nil)
	for i := range vals {
		vals[i] *= scale
	}
	return vals, nil
}

// spectrumScale is the power of two that brings the Laplacian's largest diagonal entry (the
// largest weighted degree) near 1 when it lies far outside [2^-100, 2^100], and 1 otherwise.
// gonum's tridiagonal eigenvalue routine panics on entries near the bottom of the float64
// range (weights of 1e-150: "lapack: insufficient length of a"); a power of two divides and
// multiplies exactly, and ordinary graphs keep their bit-exact spectrum.
func spectrumScale(L *mat.Dense) float64 {
	n, _ := L.Dims()
	top := 0.0
	for i := 0; i < n; i++ {
		top = math.Max(top, math.Abs(L.At(i, i)))
	}
	if top == 0 || (top >= 0x1p-100 && top <= 0x1p100) {
		return 1
	}
	_, exp := math.Frexp(top)
	return math.Ldexp(1, exp)
}

// Rate returns alpha = max(|1 - lambda_2|, |1 - lambda_n|) with lambda_1 <= ... <= lambda_n the
// Laplacian eigenvalues (Section 6.2, Proposition 1): the contraction factor of the disagreement
// x(t) - 1 xbar0 per step. For N = 1 it is 0. It does not check connectivity: a disconnected graph
// has lambda_2 = 0 and thus alpha >= 1. Exact (dense spectrum) for N <= MaxDenseRateNodes; larger
// graphs use Lanczos on the sparse Laplacian, within LanczosTolerance of the exact value, or, when
// Lanczos does not converge within its step budget, a rigorous upper bound (see RateInfo, which
// also says which case applies).
func (g *Graph) Rate() (float64, error) {
	info, err := g.RateInfo()
	if err != nil {
		return 0, err
	}
	return info.Alpha, nil
}

// Neighbors returns the edges at node i oriented from i (I = i, J = the neighbour), sorted by J:
// O(degree) after the first call, which builds the adjacency lists of every node in O(E log E)
// and keeps them (rebuilt if N or the number of edges changed since). The slice is shared: do
// not modify it. It returns nil for i out of range. Safe for concurrent use.
func (g *Graph) Neighbors(i int) []Edge {
	if i < 0 || i >= g.N {
		return nil
	}
	return g.adjacencyCached()[i]
}

// adjCache is the graph's adjacency lists with the shape they were built for.
type adjCache struct {
	n, edges int
	adj      [][]Edge
}

// adjacencyCached returns the adjacency lists, built once per graph shape.
func (g *Graph) adjacencyCached() [][]Edge {
	if c := g.adj.Load(); c != nil && c.n == g.N && c.edges == len(g.Edges) {
		return c.adj
	}
	c := &adjCache{n: g.N, edges: len(g.Edges), adj: g.adjacency()}
	g.adj.Store(c)
	return c.adj
}

// adjacency returns, for every node, its edges oriented from it and sorted by neighbour: O(E log E).
// Invalid edges are skipped.
func (g *Graph) adjacency() [][]Edge {
	adj := make([][]Edge, max(g.N, 0))
	for _, e := range g.Edges {
		if e.I < 0 || e.I >= g.N || e.J < 0 || e.J >= g.N || e.I == e.J {
			continue
		}
		adj[e.I] = append(adj[e.I], Edge{I: e.I, J: e.J, W: e.W})
		adj[e.J] = append(adj[e.J], Edge{I: e.J, J: e.I, W: e.W})
	}
	for _, a := range adj {
		sort.Slice(a, func(x, y int) bool { return a[x].J < a[y].J })
	}
	return adj
}

// MaxDegree returns the largest number of edges at a node.
func (g *Graph) MaxDegree() int {
	deg := make([]int, max(g.N, 0))
	m := 0
	for _, e := range g.Edges {
		if e.I >= 0 && e.I < g.N && e.J >= 0 && e.J < g.N {
			deg[e.I]++
			deg[e.J]++
			m = max(m, deg[e.I], deg[e.J])
		}
	}
	return m
}

// PaperGraph returns the 10-node graph of the paper's Section 6.3 example, every weight 1/4.
// Edges (1-based, as in the paper): 1-2, 1-10, 2-3, 2-5, 2-10, 3-4, 4-5, 5-6, 5-7, 6-7, 7-8,
// 7-10, 8-9, 9-10. Nodes 2, 5, 7 and 10 have degree 4, so their weight sum is exactly 1 (Validate
// warns) while alpha < 1.
func PaperGraph() *Graph {
	pairs := [][2]int{{1, 2}, {1, 10}, {2, 3}, {2, 5}, {2, 10}, {3, 4}, {4, 5}, {5, 6}, {5, 7}, {6, 7},
		{7, 8}, {7, 10}, {8, 9}, {9, 10}}
	g := &Graph{N: 10}
	for _, p := range pairs {
		g.Edges = append(g.Edges, Edge{I: p[0] - 1, J: p[1] - 1, W: 0.25})
	}
	return g
}

// defaultWeight applies the generated-graph convention: w <= 0 means 1/(maxDegree+1), which keeps
// every node's weight sum below 1 and alpha < 1 on a connected graph.
func setWeights(g *Graph, w float64) *Graph {
	if !(w > 0) {
		w = 1 / float64(g.MaxDegree()+1)
	}
	for k := range g.Edges {
		g.Edges[k].W = w
	}
	return g
}

// Ring returns the cycle 0-1-...-(n-1)-0 (n >= 3) with edge weight w (w <= 0: 1/(max degree+1) = 1/3).
func Ring(n int, w float64) (*Graph, error) {
	if n < 3 {
		return nil, fmt.Errorf("dynamics: ring needs n >= 3 nodes, got %d", n)
	}
	g := &Graph{N: n}
	for i := 0; i < n; i++ {
		g.Edges = append(g.Edges, Edge{I: i, J: (i + 1) % n})
	}
	return setWeights(g, w), nil
}

// Path returns the path 0-1-...-(n-1) (n >= 2) with edge weight w (w <= 0: 1/(max degree+1)).
func Path(n int, w float64) (*Graph, error) {
	if n < 2 {
		return nil, fmt.Errorf("dynamics: path needs n >= 2 nodes, got %d", n)
	}
	g := &Graph{N: n}
	for i := 0; i+1 < n; i++ {
		g.Edges = append(g.Edges, Edge{I: i, J: i + 1})
	}
	return setWeights(g, w), nil
}

// Complete returns the complete graph on n >= 2 nodes with edge weight w (w <= 0: 1/n).
func Complete(n int, w float64) (*Graph, error) {
	if n < 2 {
		return nil, fmt.Errorf("dynamics: complete graph needs n >= 2 nodes, got %d", n)
	}
	g := &Graph{N: n}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			g.Edges = append(g.Edges, Edge{I: i, J: j})
		}
	}
	return setWeights(g, w), nil
}

// Grid returns the rows x cols 4-neighbour grid (node r*cols + c), rows*cols >= 2, with edge
// weight w (w <= 0: 1/(max degree+1)).
func Grid(rows, cols int, w float64) (*Graph, error) {
	if rows < 1 || cols < 1 || rows*cols < 2 {
		return nil, fmt.Errorf("dynamics: grid needs rows, cols >= 1 and at least 2 nodes, got %dx%d", rows, cols)
	}
	g := &Graph{N: rows * cols}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			v := r*cols + c
			if c+1 < cols {
				g.Edges = append(g.Edges, Edge{I: v, J: v + 1})
			}
			if r+1 < rows {
				g.Edges = append(g.Edges, Edge{I: v, J: v + cols})
			}
		}
	}
	return setWeights(g, w), nil
}

// randomRegularAttempts bounds the restarts of RandomRegular.
const randomRegularAttempts = 2000

// RandomRegular returns a connected simple d-regular graph on n nodes drawn with the seeded
// stream rng.New(seed, Label("random-regular"), n, d): the pairing (configuration) model in the
// Steger-Wormald form (stubs paired one at a time among the admissible pairs), restarted when it
// gets stuck or the result is disconnected. Requires 1 <= d < n and n*d even (d = 1 only for
// n = 2; d = 2 gives a Hamiltonian cycle, by rejection). Edge weight w (w <= 0: 1/(d+1)).
func RandomRegular(n, d int, w float64, seed uint64) (*Graph, error) {
	switch {
	case n < 2:
		return nil, fmt.Errorf("dynamics: random-regular needs n >= 2 nodes, got %d", n)
	case d < 1 || d >= n:
		return nil, fmt.Errorf("dynamics: random-regular degree d=%d must satisfy 1 <= d < n=%d", d, n)
	case n*d%2 != 0:
		return nil, fmt.Errorf("dynamics: random-regular needs n*d even, got n=%d d=%d", n, d)
	case d == 1 && n > 2:
		return nil, fmt.Errorf("dynamics: a 1-regular graph on n=%d > 2 nodes is never connected", n)
	}
	r := rng.New(seed, rng.Label("random-regular"), uint64(n), uint64(d))
	stubs := make([]int, 0, n*d)
	adj := make(map[[2]int]bool, n*d/2)
	for attempt := 0; attempt < randomRegularAttempts; attempt++ {
		stubs = stubs[:0]
		for v := 0; v < n; v++ {
			for k := 0; k < d; k++ {
				stubs = append(stubs, v)
			}
		}
		clear(adj)
		g := &Graph{N: n}
		ok := true
		for len(stubs) > 0 {
			paired := false
			// Random tries first; when they keep failing, check whether any admissible pair is left.
			for try := 0; try < 50; try++ {
				a, b := r.IntN(len(stubs)), r.IntN(len(stubs))
				if pairStubs(&stubs, adj, g, a, b) {
					paired = true
					break
				}
			}
			if !paired && !anyAdmissible(stubs, adj) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if c, _ := g.components(); c != 1 {
			continue
		}
		slices.SortFunc(g.Edges, func(x, y Edge) int {
			if x.I != y.I {
				return x.I - y.I
			}
			return x.J - y.J
		})
		return setWeights(g, w), nil
	}
	return nil, fmt.Errorf("dynamics: random-regular n=%d d=%d: no connected simple graph in %d attempts (seed %d)",
		n, d, randomRegularAttempts, seed)
}

// pairStubs joins stubs a and b when they form a new non-loop edge, removing both stubs.
func pairStubs(stubs *[]int, adj map[[2]int]bool, g *Graph, a, b int) bool {
	s := *stubs
	if a == b {
		return false
	}
	u, v := s[a], s[b]
	key := [2]int{min(u, v), max(u, v)}
	if u == v || adj[key] {
		return false
	}
	adj[key] = true
	g.Edges = append(g.Edges, Edge{I: key[0], J: key[1]})
	// remove the two stubs (higher index first)
	hi, lo := max(a, b), min(a, b)
	s[hi] = s[len(s)-1]
	s = s[:len(s)-1]
	s[lo] = s[len(s)-1]
	s = s[:len(s)-1]
	*stubs = s
	return true
}

func anyAdmissible(stubs []int, adj map[[2]int]bool) bool {
	for a := 0; a < len(stubs); a++ {
		for b := a + 1; b < len(stubs); b++ {
			u, v := stubs[a], stubs[b]
			if u != v && !adj[[2]int{min(u, v), max(u, v)}] {
				return true
			}
		}
	}
	return false
}

// GraphParams are the parameters of NamedGraph. Unused fields are ignored.
type GraphParams struct {
	N      int     // nodes (ring, path, complete, random-regular); paper10: 0 or 10
	Rows   int     // grid rows
	Cols   int     // grid columns
	Degree int     // random-regular degree
	Weight float64 // edge weight; <= 0: 1/(max degree + 1) (paper10: the paper's 1/4)
	Seed   uint64  // random-regular seed
}

// GraphNames lists the names NamedGraph accepts.
var GraphNames = []string{"paper10", "ring", "path", "complete", "grid", "random-regular"}

// NamedGraph builds a graph by name: paper10 (PaperGraph; Weight > 0 overrides 1/4), ring, path,
// complete (N nodes), grid (Rows x Cols), random-regular (N nodes, Degree, Seed). For generated
// graphs Weight <= 0 selects 1/(max degree + 1). The graph is not validated (call Validate).
func NamedGraph(name string, p GraphParams) (*Graph, error) {
	switch name {
	case "paper10":
		if p.N != 0 && p.N != 10 {
			return nil, fmt.Errorf("dynamics: graph paper10 has 10 nodes, got n=%d", p.N)
		}
		g := PaperGraph()
		if p.Weight > 0 {
			setWeights(g, p.Weight)
		}
		return g, nil
	case "ring":
		return Ring(p.N, p.Weight)
	case "path":
		return Path(p.N, p.Weight)
	case "complete":
		return Complete(p.N, p.Weight)
	case "grid":
		return Grid(p.Rows, p.Cols, p.Weight)
	case "random-regular":
		return RandomRegular(p.N, p.Degree, p.Weight, p.Seed)
	}
	return nil, fmt.Errorf("dynamics: unknown graph %q (allowed: %s)", name, strings.Join(GraphNames, ", "))
}

// weightSpan words the smallest and largest edge weight.
func (g *Graph) weightSpan() string {
	if len(g.Edges) == 0 {
		return "no edges"
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, e := range g.Edges {
		lo, hi = math.Min(lo, e.W), math.Max(hi, e.W)
	}
	return fmt.Sprintf("from %g to %g", lo, hi)
}
