package calibrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/privacy"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(args, &out, &errOut)
	return out.String(), err
}

func runJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, err := run(t, append(args, "--json")...)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	return m
}

var requiredKeys = []string{"sigma", "sensitivity", "adjacency", "calibration", "rank_ok", "worst_pair"}

func TestScalarPaperBoundReproducesPaper(t *testing.T) {
	for _, c := range []struct{ eps, want float64 }{{1, 2.5244}, {0.1, 23.4765}, {0.01, 232.8495}} {
		m := runJSON(t, "--mechanism", "gaussian", "--epsilon", ftoa(c.eps), "--delta", "0.01", "--mu", "1", "--calibration", "paper-bound")
		for _, k := range requiredKeys {
			require.Contains(t, m, k)
		}
		require.InDelta(t, c.want, m["sigma"].(float64), 1e-4)
	}
}

func TestScalarTightSatisfiesDefinition(t *testing.T) {
	m := runJSON(t, "--epsilon", "0.5", "--delta", "1e-5", "--mu", "2", "--sensitivity", "3")
	sigma := m["sigma"].(float64)
	require.True(t, privacy.GaussianSatisfies(0.5, 1e-5, 2, 3, sigma))
	require.False(t, privacy.GaussianSatisfies(0.5, 1e-5, 2, 3, 0.999*sigma))
	require.Equal(t, "tight", m["calibration"])
}

// TestScalarLaplace: the Laplace scale is b (variance 2 b^2), not a standard deviation, so the JSON
// calls it "b" and has no "sigma" key; the Gaussian keeps its documented "sigma" and no "b".
func TestScalarLaplace(t *testing.T) {
	m := runJSON(t, "--mechanism", "laplace", "--epsilon", "0.1", "--mu", "1")
	require.Contains(t, m, "b")
	require.InDelta(t, 10, m["b"].(float64), 1e-12)
	require.InDelta(t, 200, m["variance"].(float64), 1e-9)
	require.NotContains(t, m, "sigma")
	require.Equal(t, "laplace", m["mechanism"])
	g := runJSON(t, "--mechanism", "gaussian", "--epsilon", "1", "--delta", "0.01")
	require.Contains(t, g, "sigma")
	require.NotContains(t, g, "b")
}

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--epsilon", "1"}, "--delta is required"},
		{[]string{"--delta", "0.01"}, "--epsilon is required"},
		{[]string{"--mechanism", "cauchy", "--epsilon", "1"}, "allowed: gaussian, laplace"},
		{[]string{"--epsilon", "1", "--delta", "0.01", "--calibration", "loose"}, "allowed: tight, paper-bound, classic"},
		{[]string{"--mechanism", "laplace", "--epsilon", "1", "--delta", "0.1"}, "pure (eps, 0)-DP"},
		{[]string{"--scenario", "x.yaml", "--epsilon", "1"}, "scalar-mode flag"},
		{[]string{"--adjacency", "block", "--epsilon", "1", "--delta", "0.1"}, "need --scenario"},
		{[]string{"--scenario", "../../../scenarios/cloud-vehicle.yaml", "--adjacency", "circuit"}, "allowed: manifold, block"},
		{[]string{"stray"}, "unexpected argument"},
	} {
		_, err := run(t, c.args...)
		require.Error(t, err, c.args)
		require.True(t, errors.Is(err, cli.ErrUsage), "%v: %v", c.args, err)
		require.ErrorContains(t, err, c.want)
	}
}

func TestDomainErrors(t *testing.T) {
	_, err := run(t, "--epsilon", "1.5", "--delta", "0.01", "--calibration", "classic")
	require.ErrorContains(t, err, "only valid for 0 < epsilon < 1")
	_, err = run(t, "--epsilon", "-1", "--delta", "0.01")
	require.Error(t, err)
	_, err = run(t, "--epsilon", "1", "--delta", "1.5")
	require.Error(t, err)
	_, err = run(t, "--scenario", "does-not-exist.yaml")
	require.ErrorContains(t, err, "does-not-exist.yaml")
}

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	err := Run([]string{"--help"}, &out, &errOut)
	require.True(t, errors.Is(err, flag.ErrHelp))
	for _, f := range []string{"-mechanism", "-epsilon", "-delta", "-mu", "-sensitivity", "-calibration", "-scenario", "-adjacency", "-json"} {
		require.Contains(t, errOut.String(), f)
	}
}

func scenarioPath(name string) string { return filepath.Join("..", "..", "..", "scenarios", name) }

func TestScenarioFullStateManifoldVersusBlock(t *testing.T) {
	man := runJSON(t, "--scenario", scenarioPath("cloud-vehicle-fullstate.yaml"))
	blk := runJSON(t, "--scenario", scenarioPath("cloud-vehicle-fullstate.yaml"), "--adjacency", "block")
	for _, k := range requiredKeys {
		require.Contains(t, man, k)
	}
	require.Equal(t, "manifold", man["adjacency"])
	require.Equal(t, "block", blk["adjacency"])
	require.Equal(t, true, man["rank_ok"])
	require.Greater(t, man["sensitivity"].(float64), 9*blk["sensitivity"].(float64))
	wp := man["worst_pair"].(map[string]any)
	require.Len(t, wp["initial_state_diff"], 2)
	require.NotEmpty(t, wp["free_set"])
	require.LessOrEqual(t, man["trace_optimal"].(float64), man["trace_scalar"].(float64))
}

func TestScenarioConsensusAndSweep(t *testing.T) {
	cons, err := run(t, "--scenario", scenarioPath("consensus-gaussian.yaml"), "--json")
	require.NoError(t, err)
	var cs SweepResult
	require.NoError(t, json.Unmarshal([]byte(cons), &cs))
	require.Len(t, cs.Points, 3) // eps in {1, 0.1, 0.01}
	for _, pt := range cs.Points {
		require.InDelta(t, 1, pt.Sensitivity, 1e-12)
		kinv, err := privacy.KappaInverse(pt.Epsilon, 0.01)
		require.NoError(t, err)
		require.NotNil(t, pt.Sigma)
		require.InDelta(t, 1/kinv, *pt.Sigma, 1e-12) // eq. (30) with the exact kappa inverse
	}

	out, err := run(t, "--scenario", scenarioPath("cloud-vehicle-sweep.yaml"), "--json")
	require.NoError(t, err)
	var sw SweepResult
	require.NoError(t, json.Unmarshal([]byte(out), &sw))
	require.Len(t, sw.Points, 21) // 7 epsilons x 3 noise kinds
	// Human output names every point.
	txt, err := run(t, "--scenario", scenarioPath("cloud-vehicle-sweep.yaml"))
	require.NoError(t, err)
	require.Contains(t, txt, "iid-naive")
}

func ftoa(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// Flag values outside their documented ranges are usage errors that name the flag.
func TestFlagRangesAreUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--epsilon", "-1", "--delta", "0.01"}, "--epsilon -1"},
		{[]string{"--epsilon", "0", "--delta", "0.01"}, "--epsilon 0"},
		{[]string{"--epsilon", "NaN", "--delta", "0.01"}, "--epsilon NaN"},
		{[]string{"--epsilon", "1", "--delta", "1.5"}, "--delta 1.5"},
		{[]string{"--epsilon", "1", "--delta", "0.01", "--mu", "0"}, "--mu 0"},
		{[]string{"--epsilon", "1", "--delta", "0.01", "--sensitivity", "0"}, "--sensitivity 0"},
		{[]string{"--epsilon", "1", "--delta", "0.01", "--sensitivity", "+Inf"}, "--sensitivity +Inf"},
		{[]string{"--scenario", scenarioPath("cloud-vehicle.yaml"), "--budget", "-5"}, "--budget -5"},
	} {
		_, err := run(t, c.args...)
		require.True(t, errors.Is(err, cli.ErrUsage), "%v: %v", c.args, err)
		require.ErrorContains(t, err, c.want)
	}
}

// A scenario that sweeps the adjacency cannot be overridden by --adjacency (the labels would lie).
func TestAdjacencyOverrideOfAdjacencySweep(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(scenarioPath("cloud-vehicle-fullstate.yaml"))
	require.NoError(t, err)
	f := filepath.Join(dir, "sweep-adj.yaml")
	require.NoError(t, os.WriteFile(f, append(src, []byte("\nsweep:\n  param: adjacency\n  values: [manifold, block]\n")...), 0o644))
	_, err = run(t, "--scenario", f, "--adjacency", "block")
	require.True(t, errors.Is(err, cli.ErrUsage), "%v", err)
	require.ErrorContains(t, err, "sweeps the adjacency")
	out, err := run(t, "--scenario", f)
	require.NoError(t, err)
	require.Contains(t, out, "adjacency=manifold")
	require.Contains(t, out, "adjacency=block")
}

// iid-naive noise is flagged as unsound with the eps it really gives over T releases, and a
// sweep prints one row per point.
func TestSweepTableAndNaiveWarning(t *testing.T) {
	out, err := run(t, "--scenario", scenarioPath("cloud-vehicle-sweep.yaml"))
	require.NoError(t, err)
	require.Contains(t, out, "21 sweep points")
	require.Contains(t, out, "unsound: eps")
	require.Less(t, strings.Count(out, "\n"), 30)

	var sw SweepResult
	js, err := run(t, "--scenario", scenarioPath("cloud-vehicle-sweep.yaml"), "--json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(js), &sw))
	for _, p := range sw.Points {
		if p.Noise == "iid-naive" {
			require.Greater(t, p.NaiveEpsilonT, p.Epsilon)
			require.InDelta(t, 10, p.NaiveSensitivityT, 1e-9) // sqrt(T) for the position model
		} else {
			require.Zero(t, p.NaiveEpsilonT)
		}
	}
}

// Scenario warnings (0-based agent numbers, as x0 and agent.N) reach the output.
func TestScenarioWarningsShown(t *testing.T) {
	m := runJSON(t, "--scenario", scenarioPath("consensus-gaussian.yaml"))
	pts := m["points"].([]any)
	ws := pts[0].(map[string]any)["warnings"].([]any)
	require.NotEmpty(t, ws)
	require.Contains(t, ws[0].(string), "agents 1, 4, 6, 9")
	out, err := run(t, "--scenario", scenarioPath("consensus-gaussian.yaml"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(out, "warning:"), out)
}

// TestScenarioLaplaceScaleKey: a Laplace scenario's scale is b, not sigma, in every place the JSON
// gives it (the point, per_agent_*, other_adjacency), as in scalar mode; a Gaussian one keeps
// its documented "sigma".
func TestScenarioLaplaceScaleKey(t *testing.T) {
	m := runJSON(t, "--scenario", scenarioPath("consensus-laplace.yaml"))
	pts, ok := m["points"].([]any)
	if !ok {
		pts = []any{m}
	}
	for _, p := range pts {
		pt := p.(map[string]any)
		require.Equal(t, "laplace", pt["mechanism"])
		require.Contains(t, pt, "b")
		require.NotContains(t, pt, "sigma")
		require.NotContains(t, pt, "per_agent_sigma")
		require.Contains(t, pt, "per_agent_b")
		if o, ok := pt["other_adjacency"].(map[string]any); ok {
			require.Contains(t, o, "b")
			require.NotContains(t, o, "sigma")
		}
	}
	g := runJSON(t, "--scenario", scenarioPath("cloud-vehicle.yaml"))
	require.Contains(t, g, "sigma")
	require.NotContains(t, g, "b")
}

// TestScenarioFragile: the generic ill-conditioned 3-state plant of testdata is flagged fragile with
// its numbers, in the text and in --json; the shipped vehicle scenarios are not.
func TestScenarioFragile(t *testing.T) {
	path := filepath.Join("testdata", "fragile-3state.yaml")
	m := runJSON(t, "--scenario", path)
	require.Equal(t, true, m["fragile"])
	require.InDelta(t, 6.11e-8, m["sensitivity_min_det"].(float64), 0.01e-8)
	require.Greater(t, m["sensitivity_perturbation"].(float64), 10.0)
	require.EqualValues(t, 28, m["sensitivity_perturbations"])
	for _, w := range []string{"privacy.model", "privacy.adjacency", "steps", "< 1e-06", "> 10%"} {
		require.Contains(t, m["fragile_reason"], w)
	}
	out, err := run(t, "--scenario", path)
	require.NoError(t, err)
	require.Contains(t, out, "smallest kept |det D_dj| = 6.11e-08; sensitivity moves by up to 18")
	require.Contains(t, out, "% under 0.0001 relative changes of A, C (28 perturbed models)")
	require.Contains(t, out, "FRAGILE")

	for _, name := range []string{"cloud-vehicle.yaml", "cloud-vehicle-fullstate.yaml", "cloud-vehicle-lqr.yaml", "audit-vehicle-structured.yaml"} {
		m := runJSON(t, "--scenario", scenarioPath(name))
		require.Equal(t, false, m["fragile"], name)
		require.NotContains(t, m, "fragile_reason", name)
		require.Less(t, m["sensitivity_perturbation"].(float64), 0.02, name)
		require.GreaterOrEqual(t, m["sensitivity_min_det"].(float64), 0.099, name)
		out, err := run(t, "--scenario", scenarioPath(name))
		require.NoError(t, err)
		require.Contains(t, out, "conditioning")
		require.NotContains(t, out, "FRAGILE", name)
	}
}

// The JSON names the sampler and its grid (docs/math.md section 10): secure by default, with g
// the power of two 2^20 below the noise scale and no cost in (eps, delta); the float sampler is
// named as such and its guarantee void for the bits; a model the secure sampler cannot embed in
// the plant is refused with the reason and the way out.
func TestSamplerKeys(t *testing.T) {
	m := runJSON(t, "--epsilon", "1", "--delta", "0.01")
	require.Equal(t, "secure", m["sampler"])
	require.Equal(t, math.Ldexp(1, -20), m["granularity"]) // sigma = 1.8779
	s := runJSON(t, "--scenario", dpsimtest.Scenario("audit-vehicle-structured"))
	require.Equal(t, "secure", s["sampler"])
	require.Equal(t, math.Ldexp(1, -20), s["granularity"])
	info := s["sampler_info"].(map[string]any)
	require.Equal(t, 0.0, info["epsilon_cost"])
	require.Equal(t, 0.0, info["delta_cost"])
	require.Equal(t, []any{0.0}, info["embedding"])
	f := runJSON(t, "--scenario", dpsimtest.Scenario("audit-vehicle-float"))
	require.Equal(t, "float", f["sampler"])
	require.Equal(t, 0.0, f["granularity"])
	require.Equal(t, true, f["sampler_info"].(map[string]any)["guarantee_void"])

	dir := t.TempDir()
	doc, err := os.ReadFile(dpsimtest.Scenario("audit-vehicle-structured"))
	require.NoError(t, err)
	bad := strings.Replace(string(doc), "model: {A: 1, C: 1}", "model: {A: 0.5, C: 1}", 1)
	path := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte(bad), 0o600))
	_, err = run(t, "--scenario", path)
	require.ErrorContains(t, err, "privacy.sampler secure")
	require.ErrorContains(t, err, "not a set of the plant's state coordinates")
	require.ErrorContains(t, err, "privacy.sampler: float")
}
