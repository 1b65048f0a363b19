package dynamics

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/rng"
)

// x(0) of the paper's Section 6.3 example (average 15, not the 10 its text says).
var paperX0 = []float64{10, 100, 20, -30, -20, -60, 70, 0, 80, -20}

// sum_i x_i is preserved by eq. (25) whatever the offsets, here fresh arbitrary offsets every step.
func TestConsensusSumPreserved(t *testing.T) {
	for _, name := range []string{"paper10", "ring", "grid", "random-regular"} {
		p := GraphParams{N: 30, Rows: 5, Cols: 6, Degree: 4, Seed: 3}
		if name == "paper10" {
			p.N = 10
		}
		g, err := NamedGraph(name, p)
		require.NoError(t, err)
		x0 := paperX0
		if g.N != 10 {
			x0 = make([]float64, g.N)
			r := rng.New(1, rng.Label("x0"))
			for i := range x0 {
				x0[i] = 100 * r.NormFloat64()
			}
		}
		net, err := NewConsensusNetwork(g, x0)
		require.NoError(t, err)
		s0, scale := 0.0, 0.0
		for _, v := range x0 {
			s0 += v
			scale += math.Abs(v)
		}
		r := rng.New(2, rng.Label("offsets"), uint64(g.N))
		gamma, y := make([]float64, g.N), make([]float64, g.N)
		for step := 0; step < 1000; step++ {
			for i := range gamma {
				gamma[i] = 50 * r.NormFloat64()
			}
			net.Outputs(gamma, y)
			net.Step(y)
		}
		require.InDelta(t, s0, net.Sum(), 1e-12*scale, "%s: sum preserved to 1e-12 relative", name)
	}
	require.InDelta(t, 15, func() float64 {
		s := 0.0
		for _, v := range paperX0 {
			s += v
		}
		return s / 10
	}(), 0)
}

// With constant offsets gamma_i = sigma_i eta_i (Section 6.1) node i converges to
// xbar0 + mean(gamma) - gamma_i, and Proposition 1(i)'s bound holds at every step.
func TestConsensusConstantOffsetsLimit(t *testing.T) {
	g := PaperGraph()
	alpha, err := g.Rate()
	require.NoError(t, err)
	net, err := NewConsensusNetwork(g, paperX0)
	require.NoError(t, err)
	r := rng.New(3, rng.Label("eta"))
	gamma := make([]float64, 10)
	for i := range gamma {
		gamma[i] = 2.5244 * r.NormFloat64()
	}
	want := make([]float64, 10)
	ConsensusLimit(paperX0, gamma, want)
	y, x := make([]float64, 10), make([]float64, 10)
	for step := 0; step <= 300; step++ {
		net.State(x)
		var dev float64
		for i := range x {
			dev += (x[i] - 15) * (x[i] - 15)
		}
		require.LessOrEqual(t, math.Sqrt(dev), Proposition1Bound(alpha, step, paperX0, gamma)*(1+1e-12), "Prop. 1(i) at t=%d", step)
		net.Outputs(gamma, y)
		net.Step(y)
	}
	net.State(x)
	// alpha^300 ~ 1e-25: converged to rounding
	require.InDeltaSlice(t, want, x, 1e-10)
	var mg float64
	for _, v := range gamma {
		mg += v / 10
	}
	require.InDelta(t, 15+mg-gamma[3], want[3], 1e-12)

	// no noise: plain average consensus to xbar0 = 15, with the rate alpha
	net.Reset(paperX0)
	zero := make([]float64, 10)
	for step := 0; step < 100; step++ {
		net.Outputs(zero, y)
		net.Step(y)
	}
	net.State(x)
	for i := range x {
		require.InDelta(t, 15, x[i], 100*math.Pow(alpha, 100)+1e-12)
	}
}

// The network update is the agents' update: stepping agents by hand gives identical numbers.
func TestConsensusNetworkEqualsAgents(t *testing.T) {
	g, err := RandomRegular(20, 3, 0, 4)
	require.NoError(t, err)
	x0 := make([]float64, 20)
	for i := range x0 {
		x0[i] = float64(i*i) - 30
	}
	net, err := NewConsensusNetwork(g, x0)
	require.NoError(t, err)
	agents := make([]*ConsensusAgent, g.N)
	nbrs := make([][]Edge, g.N)
	for i := range agents {
		nbrs[i] = g.Neighbors(i)
		w := make([]float64, len(nbrs[i]))
		for k, e := range nbrs[i] {
			w[k] = e.W
		}
		agents[i] = NewConsensusAgent(x0[i], w)
	}
	gamma := make([]float64, g.N)
	for i := range gamma {
		gamma[i] = math.Sin(float64(i))
	}
	y := make([]float64, g.N)
	x := make([]float64, g.N)
	for step := 0; step < 50; step++ {
		for i, a := range agents {
			y[i] = a.Output(gamma[i])
		}
		for i, a := range agents {
			yn := make([]float64, len(nbrs[i]))
			for k, e := range nbrs[i] {
				yn[k] = y[e.J]
			}
			a.Step(y[i], yn)
		}
		net.Outputs(gamma, y)
		net.Step(y)
		net.State(x)
		for i, a := range agents {
			require.Equal(t, a.State(), x[i], "agent %d step %d", i, step)
		}
	}
}

func TestConsensusAllocationFree(t *testing.T) {
	g, err := RandomRegular(100, 4, 0, 1)
	require.NoError(t, err)
	net, err := NewConsensusNetwork(g, make([]float64, 100))
	require.NoError(t, err)
	y, gamma := make([]float64, 100), make([]float64, 100)
	require.Zero(t, testing.AllocsPerRun(200, func() {
		net.Outputs(gamma, y)
		net.Step(y)
	}))
	a := NewConsensusAgent(1, []float64{0.25, 0.25})
	yn := []float64{3, 5}
	require.Zero(t, testing.AllocsPerRun(200, func() { a.Step(1, yn) }))
}

func TestConsensusAgentStep(t *testing.T) {
	a := NewConsensusAgent(2, []float64{0.25, 0.5})
	require.Equal(t, 2.5, a.Output(0.5))
	a.Step(2.5, []float64{4.5, 0.5}) // 2 + 0.25*2 + 0.5*(-2)
	require.Equal(t, 1.5, a.State())
	a.Reset(7)
	require.Equal(t, 7.0, a.State())
	require.Equal(t, []float64{0.25, 0.5}, a.Weights())
}

func TestNewConsensusNetworkErrors(t *testing.T) {
	_, err := NewConsensusNetwork(PaperGraph(), []float64{1, 2})
	require.ErrorContains(t, err, "x0 has length 2, want N=10")
	_, err = NewConsensusNetwork(&Graph{N: 3, Edges: []Edge{{0, 1, 0.1}}}, []float64{1, 2, 3})
	require.ErrorContains(t, err, "not connected")
	bad := append([]float64(nil), paperX0...)
	bad[4] = math.NaN()
	_, err = NewConsensusNetwork(PaperGraph(), bad)
	require.ErrorContains(t, err, "consensus x0[4] = NaN")
	net, err := NewConsensusNetwork(PaperGraph(), paperX0)
	require.NoError(t, err)
	require.Equal(t, 10, net.N())
	require.Equal(t, []int{0, 2, 4, 9}, net.Neighbors(1))
	require.Equal(t, 100.0, net.Agent(1).State())
	require.Panics(t, func() { net.Reset([]float64{1}) })
}
