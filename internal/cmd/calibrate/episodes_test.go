package calibrate

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// TestEpisodesGaussian: --episodes k states the whole run's epsilon, which solves the GDP delta(eps) of
// mu_run = sqrt(k) mu*Delta/sigma at the asked delta.
func TestEpisodesGaussian(t *testing.T) {
	one := runJSON(t, "--epsilon", "1", "--delta", "1e-2")
	require.EqualValues(t, 1, one["episodes"])
	require.InDelta(t, 1, one["epsilon_run"].(float64), 1e-12)
	m := runJSON(t, "--epsilon", "1", "--delta", "1e-2", "--episodes", "16", "--mu", "2", "--sensitivity", "0.5")
	require.EqualValues(t, 16, m["episodes"])
	require.Equal(t, "gdp-exact", m["composition"])
	require.Equal(t, "episode", m["calibrated_for"])
	muEp := 1 / m["sigma"].(float64)
	require.InDelta(t, muEp, m["mu_episode"].(float64), 1e-15)
	require.InDelta(t, 4*muEp, m["mu_run"].(float64), 1e-14)
	epsRun, muRun := m["epsilon_run"].(float64), m["mu_run"].(float64)
	d := privacy.Phi(-epsRun/muRun+muRun/2) - math.Exp(epsRun)*privacy.Phi(-epsRun/muRun-muRun/2)
	require.InDelta(t, 1, d/1e-2, 1e-9)
	txt, err := run(t, "--epsilon", "1", "--delta", "1e-2", "--episodes", "16")
	require.NoError(t, err)
	require.Contains(t, txt, "whole run, 16 episodes")
	// A non-tight calibration is composed through its exact mu, and says so.
	pb := runJSON(t, "--epsilon", "1", "--delta", "1e-2", "--episodes", "16", "--calibration", "paper-bound")
	require.Less(t, pb["epsilon_run"].(float64), epsRun)
	require.Contains(t, pb["composition_note"], "paper-bound calibration")
}

// TestRunEpsilon: calibrating for a whole run and composing returns the asked budget.
func TestRunEpsilon(t *testing.T) {
	m := runJSON(t, "--run-epsilon", "2", "--delta", "1e-5", "--episodes", "25")
	require.Equal(t, "run", m["calibrated_for"])
	require.InDelta(t, 2, m["epsilon_run"].(float64), 2e-9)
	require.LessOrEqual(t, m["epsilon_run"].(float64), 2*(1+1e-14))
	require.InDelta(t, m["mu_run"].(float64)/5, m["mu_episode"].(float64), 1e-15)
	l := runJSON(t, "--mechanism", "laplace", "--run-epsilon", "1", "--episodes", "10")
	require.InDelta(t, 10, l["b"].(float64), 1e-12) // delta 0: eps/k per episode
	require.InDelta(t, 1, l["epsilon_run"].(float64), 1e-15)
	require.Equal(t, "kov-optimal", l["composition"])
	ld := runJSON(t, "--mechanism", "laplace", "--run-epsilon", "1", "--episodes", "10", "--delta", "1e-3")
	require.Less(t, ld["b"].(float64), 10.0) // the run's delta buys less noise per episode
	require.InDelta(t, 1, ld["epsilon_run"].(float64), 1e-9)
	require.Contains(t, ld, "run_alternatives")
}

func TestEpisodesLaplace(t *testing.T) {
	m := runJSON(t, "--mechanism", "laplace", "--epsilon", "0.1", "--episodes", "100")
	require.InDelta(t, 10, m["epsilon_run"].(float64), 1e-12) // delta 0: k eps, optimal
	m = runJSON(t, "--mechanism", "laplace", "--epsilon", "0.1", "--episodes", "100", "--delta", "1e-5")
	e := m["epsilon_run"].(float64)
	require.Less(t, e, 10.0)
	require.Less(t, e, privacy.AdvancedComposition(0.1, 100, 1e-5))
	require.InDelta(t, 1e-5, privacy.KOVDelta(0.1, 100, e), 1e-14)
}

func TestEpisodesUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--epsilon", "1", "--delta", "0.01", "--episodes", "0"}, "--episodes 0 must be"},
		{[]string{"--run-epsilon", "1", "--delta", "0.01"}, "--run-epsilon needs --episodes"},
		{[]string{"--run-epsilon", "1", "--epsilon", "1", "--delta", "0.01", "--episodes", "2"}, "not both"},
		{[]string{"--run-epsilon", "-1", "--delta", "0.01", "--episodes", "2"}, "--run-epsilon -1 must be"},
		{[]string{"--mechanism", "laplace", "--epsilon", "1", "--episodes", "2", "--delta", "1"}, "whole run's delta"},
		{[]string{"--scenario", scenarioPath("cloud-vehicle.yaml"), "--run-epsilon", "1"}, "scalar-mode flag"},
		{[]string{"--scenario", scenarioPath("cloud-vehicle.yaml"), "--episodes", "-2"}, "--episodes -2"},
	} {
		_, err := run(t, c.args...)
		require.Error(t, err, c.args)
		require.True(t, errors.Is(err, cli.ErrUsage), "%v: %v", c.args, err)
		require.ErrorContains(t, err, c.want)
	}
}

// TestScenarioEpisodes: scenario mode states the run for its episodes, for privacy.episodes, or for --episodes;
// a scenario calibrated with privacy.run_epsilon composes back to it.
func TestScenarioEpisodes(t *testing.T) {
	m := runJSON(t, "--scenario", scenarioPath("cloud-vehicle.yaml"))
	require.Equal(t, "episodes", m["episodes_from"])
	require.Contains(t, m, "epsilon_run")
	m = runJSON(t, "--scenario", scenarioPath("cloud-vehicle.yaml"), "--episodes", "9")
	require.EqualValues(t, 9, m["episodes"])
	require.Equal(t, "--episodes", m["episodes_from"])
	require.InDelta(t, 3*m["mu_episode"].(float64), m["mu_run"].(float64), 1e-12)

	src, err := os.ReadFile(scenarioPath("cloud-vehicle.yaml"))
	require.NoError(t, err)
	doc := replaceBudget(t, string(src), "run_epsilon: 4\n  episodes: 16\n")
	f := filepath.Join(t.TempDir(), "run.yaml")
	require.NoError(t, os.WriteFile(f, []byte(doc), 0o600))
	r := runJSON(t, "--scenario", f)
	require.Equal(t, "run", r["calibrated_for"])
	require.Equal(t, "privacy.episodes", r["episodes_from"])
	require.InDelta(t, 4, r["epsilon_run"].(float64), 4e-9)
	require.InDelta(t, 4, r["run_epsilon_asked"].(float64), 0)
}

// replaceBudget swaps the scenario's "  epsilon: 1\n" line for repl.
func replaceBudget(t *testing.T, doc, repl string) string {
	t.Helper()
	const line = "  epsilon: 1\n"
	i := strings.Index(doc, line)
	require.GreaterOrEqual(t, i, 0)
	return doc[:i] + "  " + repl + doc[i+len(line):]
}
