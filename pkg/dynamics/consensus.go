package dynamics

import (
	"fmt"
	"math"
)

// ConsensusAgent is node i of the private average consensus algorithm, eq. (25):
//
//	x_i(t+1) = x_i(t) + sum_j w_ij (y_j(t) - y_i(t)),   y_i(t) = x_i(t) + gamma_i(t)
//
// It holds its state and its neighbours' weights (in a fixed neighbour order). Step does not
// allocate. The noise gamma_i (Section 6.1: gamma_i(t) = sigma_i eta_i, eta_i drawn once per run)
// is supplied by the caller through Output.
type ConsensusAgent struct {
	x float64
	w []float64
}

// NewConsensusAgent returns an agent with initial state x0 and neighbour weights w (copied; the
// order fixes the order of yneigh in Step).
func NewConsensusAgent(x0 float64, w []float64) *ConsensusAgent {
	return &ConsensusAgent{x: x0, w: append([]float64(nil), w...)}
}

// State returns x_i(t).
func (a *ConsensusAgent) State() float64 { return a.x }

// Reset sets x_i to x0.
func (a *ConsensusAgent) Reset(x0 float64) { a.x = x0 }

// Weights returns the neighbour weights (a view; do not modify).
func (a *ConsensusAgent) Weights() []float64 { return a.w }

// Output returns the message y_i(t) = x_i(t) + gamma_i(t) of eq. (25).
func (a *ConsensusAgent) Output(gamma float64) float64 { return a.x + gamma }

// Step applies eq. (25): x_i += sum_j w_ij (y_j - y_i), with yself = y_i(t) and yneigh[k] the
// message of the k-th neighbour (len(yneigh) = number of neighbours). No allocation.
func (a *ConsensusAgent) Step(yself float64, yneigh []float64) {
	a.x = consensusUpdate(a.x, yself, a.w, yneigh)
}

// StepBy applies eq. (25) and returns the increment it added, sum_j w_ij (y_j - y_i): the
// public part of the update, which a secure agent adds to its published value as well.
func (a *ConsensusAgent) StepBy(yself float64, yneigh []float64) float64 {
	u := ConsensusIncrement(yself, a.w, yneigh)
	a.x = a.x + u
	return u
}

// consensusUpdate is the single implementation of eq. (25) used by agents and the network.
func consensusUpdate(x, yself float64, w, yneigh []float64) float64 {
	return x + ConsensusIncrement(yself, w, yneigh)
}

// ConsensusIncrement is sum_k w[k] (yneigh[k] - yself) of eq. (25), summed from 0 in the order of
// w, every product rounded (docs/protocol.md section 12.4).
func ConsensusIncrement(yself float64, w, yneigh []float64) float64 {
	yneigh = yneigh[:len(w)]
	var u float64
	for k, wk := range w {
		u = u + float64(wk*(yneigh[k]-yself))
	}
	return u
}

// ConsensusNetwork steps every agent of a graph at once from the vector of messages y(t): the
// whole-network form of eq. (25) used by the fast engine. Each agent's update is
// ConsensusAgent.Step on its neighbours' entries of y, so it is the same arithmetic as the
// distributed engine. Step does not allocate.
type ConsensusNetwork struct {
	agents  []ConsensusAgent
	nbr     [][]int   // neighbour indices per agent, same order as the agent's weights
	scratch []float64 // gathered neighbour messages (max degree)
	g       *Graph
}

// NewConsensusNetwork validates g (errors only; warnings are in g.Validate()) and returns the
// network started at x0 (len N, finite).
func NewConsensusNetwork(g *Graph, x0 []float64) (*ConsensusNetwork, error) {
	if _, err := g.Validate(); err != nil {
		return nil, err
	}
	if len(x0) != g.N {
		return nil, fmt.Errorf("dynamics: consensus: x0 has length %d, want N=%d", len(x0), g.N)
	}
	if err := finiteVec("consensus x0", x0); err != nil {
		return nil, err
	}
	net := &ConsensusNetwork{agents: make([]ConsensusAgent, g.N), nbr: make([][]int, g.N), g: g}
	maxDeg := 0
	adj := g.adjacency()
	for i := 0; i < g.N; i++ {
		nb := adj[i]
		w := make([]float64, len(nb))
		idx := make([]int, len(nb))
		for k, e := range nb {
			w[k], idx[k] = e.W, e.J
		}
		net.agents[i] = ConsensusAgent{x: x0[i], w: w}
		net.nbr[i] = idx
		maxDeg = max(maxDeg, len(nb))
	}
	net.scratch = make([]float64, maxDeg)
	return net, nil
}

// N returns the number of agents.
func (n *ConsensusNetwork) N() int { return len(n.agents) }

// Graph returns the network's graph.
func (n *ConsensusNetwork) Graph() *Graph { return n.g }

// Agent returns agent i (shared, not a copy).
func (n *ConsensusNetwork) Agent(i int) *ConsensusAgent { return &n.agents[i] }

// Neighbors returns the neighbour indices of agent i in the order of its weights (a view).
func (n *ConsensusNetwork) Neighbors(i int) []int { return n.nbr[i] }

// Reset sets every state to x0 (len N). It panics on a length mismatch.
func (n *ConsensusNetwork) Reset(x0 []float64) {
	if len(x0) != len(n.agents) {
		panic(fmt.Sprintf("dynamics: consensus reset: x0 has length %d, want %d", len(x0), len(n.agents)))
	}
	for i := range n.agents {
		n.agents[i].x = x0[i]
	}
}

// State writes x(t) into dst (len >= N).
func (n *ConsensusNetwork) State(dst []float64) {
	for i := range n.agents {
		dst[i] = n.agents[i].x
	}
}

// Outputs writes the messages y(t) = x(t) + gamma(t) into y (len >= N; gamma len >= N).
func (n *ConsensusNetwork) Outputs(gamma, y []float64) {
	for i := range n.agents {
		y[i] = n.agents[i].x + gamma[i]
	}
}

// Step advances every agent by eq. (25) using the messages y(t) (len >= N). No allocation.
func (n *ConsensusNetwork) Step(y []float64) {
	for i := range n.agents {
		nb := n.nbr[i]
		buf := n.scratch[:len(nb)]
		for k, j := range nb {
			buf[k] = y[j]
		}
		n.agents[i].Step(y[i], buf)
	}
}

// Sum returns sum_i x_i(t), which eq. (25) preserves exactly in exact arithmetic (Section 6.2).
func (n *ConsensusNetwork) Sum() float64 {
	var s float64
	for i := range n.agents {
		s += n.agents[i].x
	}
	return s
}

// ConsensusLimit returns the limit of eq. (25) with constant offsets gamma (docs/math.md section 5):
// node i converges to xbar0 + mean(gamma) - gamma_i, written into dst (len >= len(x0)).
func ConsensusLimit(x0, gamma, dst []float64) {
	var s, sg float64
	for i := range x0 {
		s += x0[i]
		sg += gamma[i]
	}
	c := (s + sg) / float64(len(x0))
	for i := range x0 {
		dst[i] = c - gamma[i]
	}
}

// Proposition1Bound returns Proposition 1(i)'s bound alpha^t ||x(0)|| + (1 + alpha^t) ||gamma||
// on ||x(t) - 1 xbar0||, for constant offsets gamma_i = sigma_i eta_i.
func Proposition1Bound(alpha float64, t int, x0, gamma []float64) float64 {
	var nx, ng float64
	for i := range x0 {
		nx += x0[i] * x0[i]
		ng += gamma[i] * gamma[i]
	}
	at := math.Pow(alpha, float64(t))
	return at*math.Sqrt(nx) + (1+at)*math.Sqrt(ng)
}
