package scenario

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/dynamics"
)

// System returns the plant (A, B, C) of a cloud-control scenario (eq. 23).
func (s *Scenario) System() (*dynamics.LTI, error) {
	if s.Plant == nil {
		return nil, fmt.Errorf("scenario %s: kind %s has no plant", s.Name, s.Kind)
	}
	return dynamics.NewLTI(s.Plant.A.Dense(), s.Plant.B.Dense(), s.Plant.C.Dense())
}

// PrivateSystem returns the private subsystem (A_m, C_m) the noise is designed for, as an
// autonomous LTI (B nil): privacy.model when given, else the plant (Section 5.3). For
// consensus it is the scalar agent model (1, 1) (Section 6: ker D_i = span(1_T)).
func (s *Scenario) PrivateSystem() (*dynamics.LTI, error) {
	A, C := s.PrivateModel()
	if A == nil {
		return nil, fmt.Errorf("scenario %s: no private model", s.Name)
	}
	return dynamics.NewLTI(A, nil, C)
}

// Gains returns the controller gains of eq. (24): K (nu x nx) and L (nx x ny) as written,
// or derived as the paper's authors did: K = dlqr(A, B, Q, R) from controller.lqr and
// L = dlqr(A', C', Q, R)' from controller.observer.
func (s *Scenario) Gains() (K, L *mat.Dense, err error) {
	if s.Plant == nil || s.Controller == nil {
		return nil, nil, fmt.Errorf("scenario %s: kind %s has no controller", s.Name, s.Kind)
	}
	p, c := s.Plant, s.Controller
	switch {
	case c.K != nil:
		K = c.K.Dense()
	case c.LQR != nil:
		if K, err = dynamics.DLQR(p.A.Dense(), p.B.Dense(), c.LQR.Q.Dense(), c.LQR.R.Dense()); err != nil {
			return nil, nil, fmt.Errorf("controller.lqr: %w", err)
		}
	default:
		return nil, nil, errors.New("controller: no K and no lqr")
	}
	switch {
	case c.L != nil:
		L = c.L.Dense()
	case c.Observer != nil:
		if L, err = dynamics.ObserverGain(p.A.Dense(), p.C.Dense(), c.Observer.Q.Dense(), c.Observer.R.Dense()); err != nil {
			return nil, nil, fmt.Errorf("controller.observer: %w", err)
		}
	default:
		return nil, nil, errors.New("controller: no L and no observer")
	}
	return K, L, nil
}

// Reference returns the controller's reference trajectory x_r(t).
func (s *Scenario) Reference() (dynamics.Reference, error) {
	if s.Controller == nil || s.Plant == nil {
		return nil, fmt.Errorf("scenario %s: kind %s has no controller", s.Name, s.Kind)
	}
	r := s.Controller.Reference
	switch r.Kind {
	case RefTanh:
		return dynamics.TanhReference{}, nil
	case RefZero, "":
		return dynamics.ZeroReference{N: s.Plant.Nx()}, nil
	case RefConstant:
		return dynamics.ConstantReference{V: append([]float64(nil), r.Value...)}, nil
	case RefStep:
		return dynamics.NewStepReference(r.Before, r.After, r.At)
	}
	return nil, fmt.Errorf("controller.reference: unknown kind %q", r.Kind)
}

// Graph returns the consensus communication graph, checked by dynamics.Graph.Validate
// (connected, positive weights, rate alpha < 1; the rate costs O(n^3) time and O(n^2)
// memory up to dynamics.MaxDenseRateNodes nodes). plan.New checks it once and keeps it
// (Plan.Graph), with its warnings (weight sums >= 1).
func (s *Scenario) Graph() (*dynamics.Graph, error) {
	g, err := s.buildGraph()
	if err != nil {
		return nil, err
	}
	if _, err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}

// BuildGraph returns the graph the scenario describes with only its structure checked
// (Graph.CheckStructure: O(E)), not its connectivity nor its rate alpha (a dense
// eigen-decomposition up to dynamics.MaxDenseRateNodes nodes). For a scenario whose graph was
// checked already: a plan read back from the file the launcher wrote.
func (s *Scenario) BuildGraph() (*dynamics.Graph, error) {
	g, err := s.buildGraph()
	if err != nil {
		return nil, err
	}
	if err := g.CheckStructure(); err != nil {
		return nil, err
	}
	return g, nil
}

func (s *Scenario) buildGraph() (*dynamics.Graph, error) {
	spec := s.Network
	if spec == nil {
		return nil, fmt.Errorf("scenario %s: kind %s has no graph", s.Name, s.Kind)
	}
	var g *dynamics.Graph
	if spec.Name != "" {
		var err error
		g, err = dynamics.NamedGraph(spec.Name, dynamics.GraphParams{
			N: spec.N, Rows: spec.Rows, Cols: spec.Cols, Degree: spec.Degree, Weight: spec.Weight, Seed: spec.Seed,
		})
		if err != nil {
			return nil, err
		}
	} else {
		g = &dynamics.Graph{N: spec.N, Edges: make([]dynamics.Edge, len(spec.Edges))}
		for k, e := range spec.Edges {
			g.Edges[k] = dynamics.Edge{I: e.I, J: e.J, W: e.W}
		}
	}
	return g, nil
}
