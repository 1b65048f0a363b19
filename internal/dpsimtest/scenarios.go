package dpsimtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// LoadScenario reads the shipped scenario scenarios/<name>.yaml.
func LoadScenario(t testing.TB, name string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Load(Scenario(name))
	require.NoError(t, err)
	return s
}

// PlanOf resolves one scenario point.
func PlanOf(t testing.TB, s *scenario.Scenario) *plan.Plan {
	t.Helper()
	p, err := plan.New(s, plan.Options{})
	require.NoError(t, err)
	return p
}

// LoadPlan loads a shipped scenario and resolves it (its first point when it sweeps).
func LoadPlan(t testing.TB, name string) (*scenario.Scenario, *plan.Plan) {
	t.Helper()
	s := LoadScenario(t, name).Expand()[0]
	return s, PlanOf(t, s)
}

// ConsensusVariant returns the shipped consensus scenario for a mechanism at epsilon eps (delta
// 1e-2 for Gaussian, 0 for Laplace), with runs and steps as given.
func ConsensusVariant(t testing.TB, mech privacy.Mechanism, eps float64, runs, steps int) *scenario.Scenario {
	t.Helper()
	name := "consensus-gaussian"
	if mech == privacy.Laplace {
		name = "consensus-laplace"
	}
	var s *scenario.Scenario
	for _, pt := range LoadScenario(t, name).Expand() {
		if pt.Privacy.Epsilon == eps {
			s = pt
		}
	}
	if s == nil { // not a point of the shipped sweep
		s = LoadScenario(t, name).Clone()
		s.Sweeps, s.Point = nil, nil
		s.Privacy.Epsilon = eps
	}
	s.Runs, s.Steps = runs, steps
	require.Equal(t, noise.Structured, s.Privacy.Noise)
	return s
}

// LargeConsensus is consensus-gaussian on a random 4-regular graph of n agents (weight 0.2, so
// every weight sum is 0.8 < 1) with x_i(0) = i.
func LargeConsensus(t testing.TB, n, steps int) *scenario.Scenario {
	t.Helper()
	s := LoadScenario(t, "consensus-gaussian").Expand()[0]
	s.Network = &scenario.GraphSpec{Name: "random-regular", N: n, Degree: 4, Weight: 0.2, Seed: 1}
	s.X0 = make([]float64, n)
	for i := range s.X0 {
		s.X0[i] = float64(i)
	}
	s.Steps = steps
	return s
}

// ConsensusYAML is the scenario file of LargeConsensus's kind: n agents on a random 4-regular
// graph drawn with seed (weight 0.2, every weight sum 0.8), x_i(0) = i, as the bytes a parser
// reads (the benchmarks of parsing and planning draw a new graph per iteration with it).
func ConsensusYAML(n, seed int) []byte {
	x0 := make([]string, n)
	for i := range x0 {
		x0[i] = strconv.Itoa(i)
	}
	return []byte(fmt.Sprintf(`name: large
kind: consensus
steps: 30
episodes: 10
seed: 1
graph:
  name: random-regular
  n: %d
  degree: 4
  weight: 0.2
  seed: %d
x0: [%s]
privacy:
  mechanism: gaussian
  epsilon: 1
  delta: 0.01
  mu: 1
  noise: structured
`, n, seed, strings.Join(x0, ", ")))
}

// LoadPlanSampler is LoadPlan with privacy.sampler set to sampler (secure or float).
func LoadPlanSampler(t testing.TB, name string, sampler noise.Sampler) (*scenario.Scenario, *plan.Plan) {
	t.Helper()
	s := LoadScenario(t, name).Expand()[0]
	s.Privacy.Sampler = sampler
	return s, PlanOf(t, s)
}

// ScenarioVariant writes the shipped scenario scenarios/<name>.yaml with its text replaced
// (pairs regexp -> literal; each regexp must match) into a temporary file and returns its path.
func ScenarioVariant(t testing.TB, name string, repl ...string) string {
	t.Helper()
	data, err := os.ReadFile(Scenario(name))
	require.NoError(t, err)
	s := string(data)
	for i := 0; i+1 < len(repl); i += 2 {
		re := regexp.MustCompile(repl[i])
		require.True(t, re.MatchString(s), "%s: %q", name, repl[i])
		s = re.ReplaceAllLiteralString(s, repl[i+1])
	}
	path := filepath.Join(t.TempDir(), name+"-variant.yaml")
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
	return path
}
