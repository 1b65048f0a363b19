package sim

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// load reads a shipped scenario.
func load(t testing.TB, name string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Load(filepath.Join("..", "..", "scenarios", name+".yaml"))
	require.NoError(t, err)
	return s
}

// planOf resolves one scenario point.
func planOf(t testing.TB, s *scenario.Scenario) *plan.Plan {
	t.Helper()
	p, err := plan.New(s, plan.Options{})
	require.NoError(t, err)
	return p
}

// loadPlan loads a shipped scenario and resolves it (its first point when it sweeps).
func loadPlan(t testing.TB, name string) (*scenario.Scenario, *plan.Plan) {
	t.Helper()
	s := load(t, name).Expand()[0]
	return s, planOf(t, s)
}

func runFast(t testing.TB, p *plan.Plan, seed uint64, o FastOptions) (*Results, *Traces) {
	t.Helper()
	res, tr, err := RunFast(context.Background(), p, seed, o)
	require.NoError(t, err)
	return withoutLinks(res), tr
}

// withoutLinks drops the per-link counters, which only an engine that ran the episodes
// reports (the Accumulator alone does not), so that Results compare with AggregateControl's.
func withoutLinks(r *Results) *Results {
	if r != nil {
		r.Links = nil
	}
	return r
}

// zBonferroni is the two-sided normal quantile for family-wise level alpha over m comparisons.
func zBonferroni(alpha float64, m int) float64 {
	return distuv.UnitNormal.Quantile(1 - alpha/(2*float64(m)))
}

// consensusVariant returns the consensus scenario for a mechanism at epsilon eps (delta 1e-2 for
// Gaussian, 0 for Laplace), with runs and steps as given.
func consensusVariant(t testing.TB, mech privacy.Mechanism, eps float64, runs, steps int) *scenario.Scenario {
	t.Helper()
	name := "consensus-gaussian"
	if mech == privacy.Laplace {
		name = "consensus-laplace"
	}
	var s *scenario.Scenario
	for _, pt := range load(t, name).Expand() {
		if pt.Privacy.Epsilon == eps {
			s = pt
		}
	}
	if s == nil { // not a point of the shipped sweep
		s = load(t, name).Clone()
		s.Sweeps, s.Point = nil, nil
		s.Privacy.Epsilon = eps
	}
	s.Runs, s.Steps = runs, steps
	require.Equal(t, noise.Structured, s.Privacy.Noise)
	return s
}

// largeConsensus is a consensus scenario on a random 4-regular graph of n agents (weight 0.2, so
// every weight sum is 0.8 < 1) with x_i(0) = i.
func largeConsensus(t testing.TB, n, steps int) *scenario.Scenario {
	t.Helper()
	s := load(t, "consensus-gaussian").Expand()[0]
	s.Network = &scenario.GraphSpec{Name: "random-regular", N: n, Degree: 4, Weight: 0.2, Seed: 1}
	s.X0 = make([]float64, n)
	for i := range s.X0 {
		s.X0[i] = float64(i)
	}
	s.Steps = steps
	return s
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
