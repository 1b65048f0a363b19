package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// resolveDynamics builds what the scenario point describes with pkg/dynamics - the plant, the
// private model, the gains (an LQR design), the observer-controller, or the graph and its rate
// alpha - once, and refuses what only the dynamics can refuse as scenario.Parse refuses the
// rest: a *scenario.ValidationError naming the field and its line ("scenario FILE:
// controller.lqr: ... (line 12)"). What is suspicious goes to p.Warnings.
func (p *Plan) resolveDynamics() error {
	s := p.Scenario
	var problems []scenario.Problem
	switch s.Kind {
	case scenario.CloudControl:
		problems = p.resolveControl()
	case scenario.Consensus:
		problems = p.resolveConsensus()
	default:
		return fmt.Errorf("scenario %s: unknown kind %q", s.Name, s.Kind)
	}
	return s.Refuse(problems)
}

func (p *Plan) resolveControl() []scenario.Problem {
	s := p.Scenario
	sys, err := s.System()
	if err != nil {
		return []scenario.Problem{s.Problem("plant", err)}
	}
	p.System = sys
	var problems []scenario.Problem
	if _, err := s.PrivateSystem(); err != nil {
		problems = append(problems, s.Problem("privacy.model", err))
	}
	if p.K, p.L, err = s.Gains(); err != nil {
		// Gains names the field first: "controller.lqr: ...", "controller: no K and no lqr"
		path, msg, _ := strings.Cut(err.Error(), ": ")
		return append(problems, s.Problem(path, errors.New(msg)))
	}
	if p.Reference, err = s.Reference(); err != nil {
		return append(problems, s.Problem("controller.reference", err))
	}
	if _, err := dynamics.NewObserverController(sys, p.K, p.L, p.Reference, s.Controller.Xhat0); err != nil {
		return append(problems, s.Problem("controller", err))
	}
	if len(problems) > 0 {
		return problems
	}
	if mr, mc := p.ModelC.Dims(); mc > 0 && mr != sys.Ny() {
		return []scenario.Problem{s.Problem("privacy.model.C",
			fmt.Errorf("%d outputs, the plant has %d: the noise is added to the plant's output", mr, sys.Ny()))}
	}
	p.Warnings = loopWarnings(sys, p.K, p.L)
	return nil
}

// loopWarnings warns of a state feedback A - B K or an observer A - L C that is not stable.
func loopWarnings(sys *dynamics.LTI, K, L *mat.Dense) []string {
	var warnings []string
	var acl, aol mat.Dense
	acl.Mul(sys.B, K)
	acl.Sub(sys.A, &acl)
	if rho := dynamics.SpectralRadius(&acl); !(rho < 1) {
		warnings = append(warnings, fmt.Sprintf("controller.K: A - B K has spectral radius %.4g >= 1: the state feedback is not stabilising", rho))
	}
	aol.Mul(L, sys.C)
	aol.Sub(sys.A, &aol)
	if rho := dynamics.SpectralRadius(&aol); !(rho < 1) {
		warnings = append(warnings, fmt.Sprintf("controller.L: A - L C has spectral radius %.4g >= 1: the observer does not converge", rho))
	}
	return warnings
}

// resolveConsensus builds the graph and checks it once (dynamics.Graph.Validate: connected,
// rate alpha < 1, from the dense spectrum up to dynamics.MaxDenseRateNodes nodes, above with
// the sparse rate or the Gershgorin bound), then computes alpha (served from Validate's).
func (p *Plan) resolveConsensus() []scenario.Problem {
	s := p.Scenario
	g, err := s.BuildGraph()
	if err == nil {
		p.GraphWarnings, err = g.Validate()
	}
	if err == nil {
		p.Alpha, err = g.Rate()
	}
	if err != nil {
		return []scenario.Problem{s.Problem("graph", err)}
	}
	p.Graph = g
	if w := weightWarning(g, p.Alpha); w != "" {
		p.Warnings = append(p.Warnings, w)
	}
	return nil
}

// maxHeavyAgents caps the agents weightWarning lists.
const maxHeavyAgents = 20

// weightWarning warns of the agents whose edge weights sum to 1 or more ("" when none): allowed
// while the rate alpha < 1, as in the paper's own graph.
func weightWarning(g *dynamics.Graph, alpha float64) string {
	var heavy []string
	count, top := 0, 0.0
	for i, sum := range g.WeightSums() {
		if sum >= 1 {
			if count++; count <= maxHeavyAgents {
				heavy = append(heavy, fmt.Sprint(i)) // 0-based, as x0 and agent.N
			}
			top = max(top, sum)
		}
	}
	if count == 0 {
		return ""
	}
	list := strings.Join(heavy, ", ")
	if count > maxHeavyAgents {
		list += fmt.Sprintf(" and %d more", count-maxHeavyAgents)
	}
	return fmt.Sprintf("graph: agents %s (0-based, as x0 and agent.N) have edge-weight sums >= 1 (up to %.4g); "+
		"the paper asks sum_j w_ij < 1, but the rate alpha = %.4g < 1, so consensus still converges", list, top, alpha)
}

// warnings returns the scenario's warnings followed by the plan's that are not among them.
func (p *Plan) warnings(scenarioWarnings []string) []string {
	out := slices.Clone(scenarioWarnings)
	for _, w := range p.Warnings {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}
