package dynamics

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// alphaBySVD computes alpha independently as the spectral norm of I - L - 11'/n.
func alphaBySVD(t *testing.T, g *Graph) float64 {
	L := g.Laplacian()
	n := g.N
	M := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			v := -L.At(i, j) - 1/float64(n)
			if i == j {
				v++
			}
			M.Set(i, j, v)
		}
	}
	sv, ok := singularValues(M)
	require.True(t, ok)
	return sv[0]
}

func TestPaperGraph(t *testing.T) {
	g := PaperGraph()
	require.Equal(t, 10, g.N)
	require.Len(t, g.Edges, 14)
	warnings, err := g.Validate()
	require.NoError(t, err)
	// degree-4 nodes 2, 5, 7, 10 (1-based, as in the paper; 1, 4, 6, 9 0-based) have weight sum exactly 1: one line
	require.Equal(t, []string{"weight sums sum_j w_ij >= 1 (up to 1) at nodes 1, 4, 6, 9 (0-based); " +
		"the paper asks < 1 (Section 6.1); convergence still holds while alpha < 1"}, warnings)
	alpha, err := g.Rate()
	require.NoError(t, err)
	t.Logf("paper graph alpha = %.6f", alpha)
	require.Less(t, alpha, 1.0)
	require.InDelta(t, alphaBySVD(t, g), alpha, 1e-12)
	ev, err := g.LaplacianEigenvalues()
	require.NoError(t, err)
	require.InDelta(t, 0, ev[0], 1e-12)
	require.Greater(t, ev[1], 1e-6, "connected")
	require.Less(t, ev[9], 2.0)

	nb := g.Neighbors(1) // node 2 (1-based): 1, 3, 5, 10
	require.Equal(t, []Edge{{1, 0, 0.25}, {1, 2, 0.25}, {1, 4, 0.25}, {1, 9, 0.25}}, nb)
	require.Nil(t, g.Neighbors(10))
}

func TestLaplacianProperties(t *testing.T) {
	for _, name := range GraphNames {
		p := GraphParams{N: 12, Rows: 3, Cols: 4, Degree: 3, Seed: 5}
		if name == "paper10" {
			p.N = 10
		}
		g, err := NamedGraph(name, p)
		require.NoError(t, err, name)
		L := g.Laplacian()
		for i := 0; i < g.N; i++ {
			var row float64
			for j := 0; j < g.N; j++ {
				row += L.At(i, j)
				require.Equal(t, L.At(i, j), L.At(j, i))
			}
			require.InDelta(t, 0, row, 1e-15, "%s: L 1 = 0", name)
		}
		ev, err := g.LaplacianEigenvalues()
		require.NoError(t, err)
		require.GreaterOrEqual(t, ev[0], -1e-12, "%s: PSD", name)
		alpha, err := g.Rate()
		require.NoError(t, err)
		require.InDelta(t, alphaBySVD(t, g), alpha, 1e-12, name)
	}
}

// Closed forms: ring lambda_k = 2w(1 - cos(2 pi k/n)), path lambda_k = 2w(1 - cos(pi k/n)),
// complete lambda = n w (n-1 times).
func TestRateClosedForms(t *testing.T) {
	ring, err := Ring(8, 0.2)
	require.NoError(t, err)
	path, err := Path(7, 0.3)
	require.NoError(t, err)
	comp, err := Complete(5, 0.1)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		g    *Graph
		l2   float64
		ln   float64
	}{
		{"ring", ring, 2 * 0.2 * (1 - math.Cos(2*math.Pi/8)), 2 * 0.2 * 2},
		{"path", path, 2 * 0.3 * (1 - math.Cos(math.Pi/7)), 2 * 0.3 * (1 - math.Cos(6*math.Pi/7))},
		{"complete", comp, 0.5, 0.5},
	} {
		alpha, err := tc.g.Rate()
		require.NoError(t, err)
		require.InDelta(t, math.Max(math.Abs(1-tc.l2), math.Abs(1-tc.ln)), alpha, 1e-12, tc.name)
	}
}

// The rate is kept with the graph, but an edge edited in place (same N, same edge count) must not
// be answered from the cache.
func TestRateCacheFollowsEdits(t *testing.T) {
	g, err := Ring(8, 0.2)
	require.NoError(t, err)
	before, err := g.Rate()
	require.NoError(t, err)
	again, err := g.Rate()
	require.NoError(t, err)
	require.Equal(t, before, again)

	g.Edges[0].W = 0.4 // heavier edge: a different spectrum
	after, err := g.Rate()
	require.NoError(t, err)
	require.NotEqual(t, before, after)
	require.InDelta(t, alphaBySVD(t, g), after, 1e-12)

	g.Edges[0].J = g.Edges[0].I // now a self loop: the error is not cached away
	_, err = g.Rate()
	require.ErrorContains(t, err, "self loop")
}

// The same graph built twice (a scenario's check, then its plan) shares one computation, and
// a graph differing in one weight does not.
func TestRateSharedAcrossCopies(t *testing.T) {
	a, err := RandomRegular(40, 4, 0.2, 3)
	require.NoError(t, err)
	b, err := RandomRegular(40, 4, 0.2, 3)
	require.NoError(t, err)
	ra, err := a.Rate()
	require.NoError(t, err)
	m := lastRate.Load()
	require.NotNil(t, m)
	rb, err := b.Rate()
	require.NoError(t, err)
	require.Equal(t, ra, rb)
	require.Same(t, m, lastRate.Load()) // served from the memo, not recomputed

	b.Edges[len(b.Edges)-1].W = 0.3
	rc, err := b.Rate()
	require.NoError(t, err)
	require.NotSame(t, m, lastRate.Load())
	require.InDelta(t, alphaBySVD(t, b), rc, 1e-12)
}

func TestValidateErrors(t *testing.T) {
	ringHalf, err := Ring(4, 0.5) // lambda_n = 4w = 2: alpha = 1
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		g    *Graph
		want string
	}{
		{"nil", nil, "graph is nil"},
		{"no nodes", &Graph{N: 0}, "at least 1 node"},
		{"out of range", &Graph{N: 3, Edges: []Edge{{0, 1, 0.1}, {1, 3, 0.1}}}, "edge 1 (1-3): node out of range [0, 3)"},
		{"negative node", &Graph{N: 3, Edges: []Edge{{-1, 1, 0.1}}}, "node out of range"},
		{"self loop", &Graph{N: 3, Edges: []Edge{{0, 1, 0.1}, {2, 2, 0.1}}}, "edge 1 (2-2) is a self loop"},
		{"duplicate", &Graph{N: 3, Edges: []Edge{{0, 1, 0.1}, {1, 2, 0.1}, {0, 1, 0.1}}}, "edges 0 and 2 both join nodes 0 and 1"},
		{"reversed duplicate", &Graph{N: 3, Edges: []Edge{{0, 1, 0.1}, {1, 0, 0.1}, {1, 2, 0.1}}}, "edges 0 and 1 both join nodes 0 and 1"},
		{"zero weight", &Graph{N: 2, Edges: []Edge{{0, 1, 0}}}, "weight 0 must be positive"},
		{"negative weight", &Graph{N: 2, Edges: []Edge{{0, 1, -0.2}}}, "weight -0.2 must be positive"},
		{"NaN weight", &Graph{N: 2, Edges: []Edge{{0, 1, math.NaN()}}}, "weight NaN"},
		{"Inf weight", &Graph{N: 2, Edges: []Edge{{0, 1, math.Inf(1)}}}, "weight +Inf"},
		{"disconnected", &Graph{N: 4, Edges: []Edge{{0, 1, 0.1}, {2, 3, 0.1}}}, "not connected: 2 components (node 2 is not reachable"},
		{"isolated", &Graph{N: 3, Edges: []Edge{{0, 1, 0.1}}}, "node 2 is not reachable"},
		{"alpha = 1", ringHalf, "alpha = max(|1-lambda_2|, |1-lambda_n|) = 1 >= 1"},
		{"alpha > 1", &Graph{N: 2, Edges: []Edge{{0, 1, 1.5}}}, "alpha"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.g.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	// weight sum exactly at the edge with alpha < 1 only warns
	w, err := (&Graph{N: 2, Edges: []Edge{{0, 1, 1}}}).Validate()
	require.Error(t, err) // lambda_2 = 2: alpha = 1
	require.Equal(t, []string{"weight sums sum_j w_ij >= 1 (up to 1) at nodes 0, 1 (0-based); " +
		"the paper asks < 1 (Section 6.1); convergence still holds while alpha < 1"}, w)
	// one heavy node: singular noun; many: the list is capped
	star := &Graph{N: 4, Edges: []Edge{{0, 1, 0.4}, {0, 2, 0.4}, {0, 3, 0.4}}}
	w, err = star.Validate()
	require.NoError(t, err)
	require.Len(t, w, 1)
	require.Contains(t, w[0], "(up to 1.2) at node 0 (0-based)")
	big, err := Ring(30, 0.5) // even ring with w = 1/2: alpha = 1, every node heavy
	require.NoError(t, err)
	w, err = big.Validate()
	require.ErrorContains(t, err, "alpha")
	require.Len(t, w, 1)
	require.Contains(t, w[0], "at nodes 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 and 10 more (0-based)")
	w, err = (&Graph{N: 1}).Validate()
	require.NoError(t, err)
	require.Empty(t, w)
}

func TestNamedGraphs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      GraphParams
		n      int
		edges  int
		weight float64
	}{
		{"paper10", GraphParams{}, 10, 14, 0.25},
		{"paper10", GraphParams{N: 10, Weight: 0.2}, 10, 14, 0.2},
		{"ring", GraphParams{N: 6}, 6, 6, 1.0 / 3},
		{"ring", GraphParams{N: 6, Weight: 0.3}, 6, 6, 0.3},
		{"path", GraphParams{N: 5}, 5, 4, 1.0 / 3},
		{"complete", GraphParams{N: 5}, 5, 10, 1.0 / 5},
		{"grid", GraphParams{Rows: 3, Cols: 4}, 12, 3*3 + 2*4, 1.0 / 5},
		{"grid", GraphParams{Rows: 1, Cols: 4}, 4, 3, 1.0 / 3},
		{"random-regular", GraphParams{N: 100, Degree: 4, Seed: 1}, 100, 200, 1.0 / 5},
		{"random-regular", GraphParams{N: 20, Degree: 3, Seed: 2}, 20, 30, 1.0 / 4},
		{"random-regular", GraphParams{N: 12, Degree: 2, Seed: 3}, 12, 12, 1.0 / 3},
		{"random-regular", GraphParams{N: 9, Degree: 8, Seed: 3}, 9, 36, 1.0 / 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NamedGraph(tc.name, tc.p)
			require.NoError(t, err)
			require.Equal(t, tc.n, g.N)
			require.Len(t, g.Edges, tc.edges)
			for _, e := range g.Edges {
				require.Equal(t, tc.weight, e.W)
			}
			warnings, err := g.Validate()
			require.NoError(t, err)
			if tc.name != "paper10" {
				require.Empty(t, warnings, "default weights keep sums below 1")
			}
		})
	}
	_, err := NamedGraph("star", GraphParams{N: 4})
	require.ErrorContains(t, err, `unknown graph "star" (allowed: paper10, ring, path, complete, grid, random-regular)`)
	for _, tc := range []struct {
		name string
		p    GraphParams
		want string
	}{
		{"paper10", GraphParams{N: 11}, "has 10 nodes"},
		{"ring", GraphParams{N: 2}, "ring needs n >= 3"},
		{"path", GraphParams{N: 1}, "path needs n >= 2"},
		{"complete", GraphParams{N: 1}, "complete graph needs n >= 2"},
		{"grid", GraphParams{Rows: 1, Cols: 1}, "grid needs"},
		{"grid", GraphParams{Rows: 0, Cols: 5}, "grid needs"},
		{"random-regular", GraphParams{N: 5, Degree: 3}, "n*d even"},
		{"random-regular", GraphParams{N: 5, Degree: 5}, "1 <= d < n"},
		{"random-regular", GraphParams{N: 6, Degree: 1}, "never connected"},
		{"random-regular", GraphParams{N: 1, Degree: 1}, "n >= 2"},
	} {
		_, err := NamedGraph(tc.name, tc.p)
		require.ErrorContains(t, err, tc.want, "%s %+v", tc.name, tc.p)
	}
}

func TestRandomRegularSeeded(t *testing.T) {
	a, err := RandomRegular(50, 4, 0, 9)
	require.NoError(t, err)
	b, err := RandomRegular(50, 4, 0, 9)
	require.NoError(t, err)
	c, err := RandomRegular(50, 4, 0, 10)
	require.NoError(t, err)
	require.Equal(t, a, b, "same seed, same graph")
	require.NotEqual(t, a.Edges, c.Edges, "different seed, different graph")
	deg := make([]int, a.N)
	for _, e := range a.Edges {
		deg[e.I]++
		deg[e.J]++
	}
	for i, d := range deg {
		require.Equal(t, 4, d, "node %d", i)
	}
	_, err = a.Validate()
	require.NoError(t, err)
	// d = 1, n = 2: the single edge
	g, err := RandomRegular(2, 1, 0.4, 1)
	require.NoError(t, err)
	require.Equal(t, []Edge{{0, 1, 0.4}}, g.Edges)
}

// ringAlpha is the closed form for a ring of n nodes and weight w: lambda_k = 2w(1 - cos(2 pi k/n)),
// lambda_2 at k = 1, lambda_n at k = floor(n/2).
func ringAlpha(n int, w float64) float64 {
	l2 := 2 * w * (1 - math.Cos(2*math.Pi/float64(n)))
	ln := 2 * w * (1 - math.Cos(2*math.Pi*float64(n/2)/float64(n)))
	return math.Max(math.Abs(1-l2), math.Abs(1-ln))
}

// Above MaxDenseRateNodes, Rate uses Lanczos on the sparse Laplacian (regression: it used to refuse
// N > 1000, so consensus scenarios with e.g. a 1500-node ring could not run). Validate certifies
// alpha < 1 from weight sums < 1 (Gershgorin) and connectivity, and otherwise from the sparse rate.
func TestLargeGraphsSparseRate(t *testing.T) {
	g, err := Ring(1500, 0)
	require.NoError(t, err)
	w, err := g.Validate()
	require.NoError(t, err)
	require.Empty(t, w)
	alpha, err := g.Rate()
	require.NoError(t, err)
	require.InDelta(t, ringAlpha(1500, 1.0/3), alpha, 1e-12)
	info, err := g.RateInfo()
	require.NoError(t, err)
	require.Equal(t, RateLanczos, info.Method)
	require.True(t, info.Converged)

	// weight sums >= 1: an odd ring with w = 1/2 converges (lambda_n = 1 + cos(pi/n) < 2), an even one
	// does not (lambda_n = 2, alpha = 1), and the sparse rate tells them apart
	odd, err := Ring(MaxDenseRateNodes+1, 0.5)
	require.NoError(t, err)
	w, err = odd.Validate()
	require.NoError(t, err)
	require.Len(t, w, 1)
	require.Contains(t, w[0], "and 981 more (0-based)")
	even, err := Ring(MaxDenseRateNodes+2, 0.5)
	require.NoError(t, err)
	_, err = even.Validate()
	require.ErrorContains(t, err, "alpha = max(|1-lambda_2|, |1-lambda_n|) = 1 >= 1")

	net, err := NewConsensusNetwork(g, make([]float64, g.N))
	require.NoError(t, err)
	require.Equal(t, 1500, net.N())
}

// TestLanczosMatchesDense: on graphs of 500-1000 nodes the sparse rate equals the dense one to 1e-8
// (in practice to ~1e-14), with both eigenvalues.
func TestLanczosMatchesDense(t *testing.T) {
	mk := func(g *Graph, err error) *Graph {
		require.NoError(t, err)
		return g
	}
	graphs := map[string]*Graph{
		"ring600":        mk(Ring(600, 0)),
		"ring1000 w1/2":  mk(Ring(1000, 0.5)),
		"path800":        mk(Path(800, 0)),
		"grid25x40":      mk(Grid(25, 40, 0)),
		"rr900 d3":       mk(RandomRegular(900, 3, 0, 1)),
		"complete500":    mk(Complete(500, 0)),
		"grid30x30 w1/4": mk(Grid(30, 30, 0.25)),
	}
	if testing.Short() {
		graphs = map[string]*Graph{"ring600": graphs["ring600"], "rr900 d3": graphs["rr900 d3"]}
	}
	for name, g := range graphs {
		dense, err := g.RateInfo()
		require.NoError(t, err)
		require.Equal(t, RateDense, dense.Method)
		sparse, err := g.lanczosRate(0)
		require.NoError(t, err, name)
		require.True(t, sparse.Converged, name)
		require.InDelta(t, dense.Alpha, sparse.Alpha, 1e-8, name)
		require.InDelta(t, dense.Lambda2, sparse.Lambda2, 1e-8, name)
		require.InDelta(t, dense.LambdaN, sparse.LambdaN, 1e-8, name)
		require.GreaterOrEqual(t, sparse.AlphaUpper, dense.Alpha-1e-12, name)
		require.LessOrEqual(t, sparse.Lambda2Err, LanczosTolerance*2*2, name)
	}
}

// TestLanczosClosedForms: a 5000-node ring has the closed-form alpha; a 10^4-node random regular graph
// takes well under 5 s (it is an expander: lambda_2 is well separated, a few hundred steps).
func TestLanczosClosedForms(t *testing.T) {
	for _, tc := range []struct {
		n int
		w float64
	}{{5000, 0}, {5001, 0.3}} {
		g, err := Ring(tc.n, tc.w)
		require.NoError(t, err)
		info, err := g.RateInfo()
		require.NoError(t, err)
		require.True(t, info.Converged)
		require.InDelta(t, ringAlpha(tc.n, g.Edges[0].W), info.Alpha, 1e-10, "ring %d", tc.n)
		require.InDelta(t, 2*g.Edges[0].W*(1-math.Cos(2*math.Pi/float64(tc.n))), info.Lambda2, 1e-10)
	}
	rr, err := RandomRegular(10000, 4, 0, 1)
	require.NoError(t, err)
	info, err := rr.RateInfo()
	require.NoError(t, err)
	t.Logf("random-regular n=10^4 d=4: alpha = %.12f, %d Lanczos steps", info.Alpha, info.Iterations)
	require.True(t, info.Converged)
	// a d-regular graph with weight w: lambda_n <= 2 d w, and alpha > 1 - lambda_2 with the Alon-Boppana
	// bound lambda_2 <= w (d - 2 sqrt(d-1)) + o(1): alpha is at least ~ 1 - 0.2 (4 - 3.46)
	require.Less(t, info.LambdaN, 2*4*0.2+1e-12)
	require.Greater(t, info.Alpha, 1-0.2*(4-2*math.Sqrt(3))-0.01)
}

// TestLanczosNotConverged: with too small a step budget the result is the rigorous upper bound (Mohar's
// lambda_2 >= 4 w_min/(N D), Gershgorin's lambda_n <= 2 max sum), flagged as not converged.
func TestLanczosNotConverged(t *testing.T) {
	g, err := Ring(3000, 0)
	require.NoError(t, err)
	info, err := g.lanczosRate(40)
	require.NoError(t, err)
	require.False(t, info.Converged)
	require.Equal(t, 40, info.Iterations)
	exact := ringAlpha(3000, 1.0/3)
	require.GreaterOrEqual(t, info.Alpha, exact)
	require.Equal(t, info.Alpha, info.AlphaUpper)
	mohar := 1 - 4*(1.0/3)/(3000*2*1500)
	require.InDelta(t, mohar, info.Alpha, 1e-15)
	require.Less(t, info.Alpha, 1.0)
}

func TestAnyAdmissible(t *testing.T) {
	require.False(t, anyAdmissible([]int{3, 3}, map[[2]int]bool{}), "only a self loop left")
	require.False(t, anyAdmissible([]int{0, 1}, map[[2]int]bool{{0, 1}: true}), "only a duplicate left")
	require.True(t, anyAdmissible([]int{1, 0, 2}, map[[2]int]bool{{0, 1}: true}))
	// d close to n forces the stuck/restart path to be exercised at least sometimes; the result is
	// still d-regular and simple
	g, err := RandomRegular(8, 6, 0, 11)
	require.NoError(t, err)
	require.Len(t, g.Edges, 24)
	_, err = g.Validate()
	require.NoError(t, err)
}

func TestRateNilGraph(t *testing.T) {
	var g *Graph
	_, err := g.RateInfo()
	require.ErrorContains(t, err, "nil")
}
