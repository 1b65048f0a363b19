package engine

import (
	"context"
	"math"
	"testing"

	"github.com/dpsim/dpsim/internal/dpsimtest"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// The shipped scenarios and plans, as every package's tests load them (internal/dpsimtest).
var (
	load             = dpsimtest.LoadScenario
	planOf           = dpsimtest.PlanOf
	loadPlan         = dpsimtest.LoadPlan
	consensusVariant = dpsimtest.ConsensusVariant
	largeConsensus   = dpsimtest.LargeConsensus
)

func runFast(t testing.TB, p *plan.Plan, seed uint64, o Options) (*metrics.Results, *trace.Traces) {
	t.Helper()
	res, tr, err := Run(context.Background(), p, sim.NewSeeds(seed), o)
	require.NoError(t, err)
	return withoutLinks(res), tr
}

// withoutLinks drops the per-link counters, which only an engine that ran the episodes
// reports (the metrics.Accumulator alone does not), so that metrics.Results compare with metrics.AggregateControl's.
func withoutLinks(r *metrics.Results) *metrics.Results {
	if r != nil {
		r.Links = nil
	}
	return r
}

// zBonferroni is the two-sided normal quantile for family-wise level alpha over m comparisons.
func zBonferroni(alpha float64, m int) float64 {
	return distuv.UnitNormal.Quantile(1 - alpha/(2*float64(m)))
}

// graphW returns W = I - L for the plan's graph, the consensus iteration matrix of eq. (25).
func graphW(p *plan.Plan) *mat.Dense {
	n := p.Graph.N
	var w mat.Dense
	w.Sub(identity(n), p.Graph.Laplacian())
	return &w
}

func identity(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, 1)
	}
	return m
}

func matPow(a *mat.Dense, k int) *mat.Dense {
	r, _ := a.Dims()
	out := identity(r)
	for i := 0; i < k; i++ {
		var next mat.Dense
		next.Mul(out, a)
		out = &next
	}
	return out
}

// observabilityInvTrace returns tr((O_t' O_t)^{-1}) for O_t = [C; CA; ...; CA^{t-1}].
func observabilityInvTrace(A, C *mat.Dense, t int) float64 {
	nx, _ := A.Dims()
	g := mat.NewDense(nx, nx, nil)
	h := mat.DenseCopyOf(C)
	for s := 0; s < t; s++ {
		var hh mat.Dense
		hh.Mul(h.T(), h)
		g.Add(g, &hh)
		var next mat.Dense
		next.Mul(h, A)
		h = &next
	}
	var inv mat.Dense
	if err := inv.Inverse(g); err != nil {
		return math.NaN()
	}
	return mat.Trace(&inv)
}

func newNetwork(t testing.TB, p *plan.Plan, x0 []float64) *dynamics.ConsensusNetwork {
	t.Helper()
	net, err := dynamics.NewConsensusNetwork(p.Graph, x0)
	require.NoError(t, err)
	return net
}
