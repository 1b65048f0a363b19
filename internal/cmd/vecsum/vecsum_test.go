package vecsumcmd

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/rng"
)

const td = "../../../pkg/vecsum/testdata/"

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestPlanJSON(t *testing.T) {
	out, _, err := run(t, "plan", "--sigmas", "10,3,1,0.3,0.1", "--n", "1000000", "--epsilon", "1", "--delta", "1e-6",
		"--clip-samples", "4000", "--json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	for _, k := range []string{"clip_radius_scaled", "clip_radius_unscaled", "expected_error_scaled", "expected_error_unscaled",
		"gain", "scaling", "noise_sigmas", "sigma_opt", "clip_error_scaled", "clip_error_unscaled"} {
		require.Contains(t, m, k)
	}
	g := m["gain"].(float64)
	require.InEpsilon(t, m["expected_error_unscaled"].(float64)/m["expected_error_scaled"].(float64), g, 1e-12)
	require.Greater(t, g, 1.0)
	require.Less(t, g, 5.0)
	require.Len(t, m["noise_sigmas"], 5)
	require.InDelta(t, 1e-6, m["clip_prob"].(float64), 1e-18)
	// the sigmas file form gives the same plan
	out2, _, err := run(t, "plan", "--sigmas", td+"sigmas_d3.txt", "--n", "1000", "--epsilon", "1", "--delta", "1e-6", "--json", "--clip-samples", "0")
	require.NoError(t, err)
	out3, _, err := run(t, "plan", "--sigmas", "2,0.5,0.05", "--n", "1000", "--epsilon", "1", "--delta", "1e-6", "--json", "--clip-samples", "0")
	require.NoError(t, err)
	require.JSONEq(t, out3, out2)
}

func TestPlanTable(t *testing.T) {
	out, _, err := run(t, "plan", "--sigmas", "4,1", "--n", "100", "--epsilon", "0.5", "--delta", "1e-5", "--clip-samples", "1000")
	require.NoError(t, err)
	require.Contains(t, out, "gain")
	require.Contains(t, out, "clip radius")
	require.Contains(t, out, "expected clipping error")
}

func TestRunNormalJSON(t *testing.T) {
	out, _, err := run(t, "run", "--input", td+"normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "normal",
		"--sigmas", td+"sigmas_d3.txt", "--mean", "5,-2,0.5", "--seed", "7", "--json")
	require.NoError(t, err)
	var r runJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Equal(t, 1000, r.N)
	require.Equal(t, uint64(7), r.Seed)
	require.Len(t, r.Sum, 3)
	// the private sum is near 1000 mu within 6 noise standard deviations (+ sampling error)
	mu := []float64{5, -2, 0.5}
	sg := []float64{2, 0.5, 0.05}
	for j := range mu {
		tol := 6 * math.Hypot(float64(r.NoiseSigmas[j]), sg[j]*math.Sqrt(1000))
		require.InDelta(t, 1000*mu[j], float64(r.Sum[j]), tol, "column %d", j)
	}
	require.LessOrEqual(t, r.ClippedRows, 10) // p_C = 1/1000: Poisson(1)
	// same seed, same output
	out2, _, err := run(t, "run", "--input", td+"normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "normal",
		"--sigmas", "2,0.5,0.05", "--mean", "5,-2,0.5", "--seed", "7", "--json")
	require.NoError(t, err)
	var r2 runJSON
	require.NoError(t, json.Unmarshal([]byte(out2), &r2))
	require.Equal(t, r.Sum, r2.Sum)
}

func TestRunPrivateMean(t *testing.T) {
	// n = 1000 is too small for a private mean at epsilon 1 (the error says so) ...
	_, _, err := run(t, "run", "--input", td+"normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "normal",
		"--sigmas", "2,0.5,0.05")
	require.ErrorContains(t, err, "pass the mean explicitly")
	require.NotErrorIs(t, err, cli.ErrUsage, "too few rows is a data problem (exit 1)")
	// ... n = 20000 is enough
	dir := t.TempDir()
	file := filepath.Join(dir, "big.csv")
	src := rng.New(5, rng.Label("cli-big"))
	var sb strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&sb, "%g,%g,%g\n", 5+2*src.NormFloat64(), -2+0.5*src.NormFloat64(), 0.5+0.05*src.NormFloat64())
	}
	require.NoError(t, os.WriteFile(file, []byte(sb.String()), 0o644))
	// A fixed seed: the assertions below are about one draw, so the draw must not vary.
	out, _, err := run(t, "run", "--input", file, "--epsilon", "2", "--delta", "1e-6", "--method", "normal",
		"--sigmas", "2,0.5,0.05", "--json", "--seed", "11")
	require.NoError(t, err)
	var r runJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.True(t, r.MeanPrivate)
	require.Equal(t, "flag", r.SeedSource)
	require.InDelta(t, 0.5, r.MeanEpsilon, 1e-12)
	require.InDelta(t, 1.5, r.SumEpsilon, 1e-12)
	require.InDelta(t, r.Epsilon, r.MeanEpsilon+r.SumEpsilon, 1e-12)
	for j, es := range r.EffectiveSigmas {
		s := float64(es)
		require.Greater(t, s, []float64{2, 0.5, 0.05}[j])
		require.InDelta(t, []float64{5, -2, 0.5}[j], float64(r.Mean[j]), 0.1*[]float64{2, 0.5, 0.05}[j]+5*(s-[]float64{2, 0.5, 0.05}[j]))
	}
	require.InDelta(t, 100000, float64(r.Sum[0]), 6*math.Hypot(float64(r.NoiseSigmas[0]), 2*math.Sqrt(20000)))

	// Without --seed the seed comes from crypto/rand and is reported, so the run can be repeated.
	out, _, err = run(t, "run", "--input", file, "--epsilon", "2", "--delta", "1e-6", "--method", "normal",
		"--sigmas", "2,0.5,0.05", "--mean", "5,-2,0.5", "--json")
	require.NoError(t, err)
	var r2 runJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r2))
	require.Equal(t, "crypto", r2.SeedSource)
}

func TestRunBoxMethods(t *testing.T) {
	for _, m := range []string{"gaussian", "elliptical"} {
		out, _, err := run(t, "run", "--input", td+"normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", m,
			"--bounds", "-5:15,-4:0,0:1", "--seed", "3", "--json")
		require.NoError(t, err, m)
		var r runJSON
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		require.Equal(t, []float64{-5, -4, 0}, r.Lower)
		require.Equal(t, []float64{15, 0, 1}, r.Upper)
		require.Greater(t, float64(r.ExpectedError), 0.0)
	}
	// one bound for all columns; human output names the header columns
	out, _, err := run(t, "run", "--input", td+"normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "gaussian",
		"--bounds", "3", "--seed", "3")
	require.NoError(t, err)
	require.Contains(t, out, "column 1 (income)")
	require.Contains(t, out, "NOT differentially private")
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	nanFile := filepath.Join(dir, "nan.csv")
	require.NoError(t, os.WriteFile(nanFile, []byte("1,2\n3,NaN\n"), 0o644))
	empty := filepath.Join(dir, "empty.csv")
	require.NoError(t, os.WriteFile(empty, []byte("# nothing\nx,y\n"), 0o644))
	cases := []struct {
		args  []string
		msg   string
		usage bool
	}{
		{[]string{"run", "--input", td + "malformed_columns.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "gaussian", "--bounds", "10"},
			"line 3 (data row 2): 2 columns, expected 3 like the header", false},
		{[]string{"run", "--input", td + "malformed_value.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "gaussian", "--bounds", "10"},
			`line 3 (data row 2), column 2 (b): "x5" is not a number`, false},
		{[]string{"run", "--input", nanFile, "--epsilon", "1", "--delta", "1e-6", "--method", "gaussian", "--bounds", "10"},
			`line 2 (data row 2), column 2: "NaN" is not a finite number`, false},
		{[]string{"run", "--input", empty, "--epsilon", "1", "--delta", "1e-6", "--method", "gaussian", "--bounds", "10"},
			"no data rows", false},
		{[]string{"run", "--input", filepath.Join(dir, "missing.csv"), "--epsilon", "1", "--delta", "1e-6", "--method", "gaussian", "--bounds", "1"},
			"no such file", false},
		{[]string{"run", "--input", td + "normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "laplace"},
			"method", true},
		{[]string{"run", "--input", td + "normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "gaussian", "--bounds", "1:2,3:4"},
			"--bounds: 2 items for 3 data columns", true},
		{[]string{"run", "--input", td + "normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "gaussian", "--bounds", "5:1"},
			"upper bound must exceed", true},
		{[]string{"run", "--input", td + "normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "normal", "--sigmas", "1,2"},
			"--sigmas: 2 values for 3 data columns", true},
		{[]string{"run", "--input", td + "normal_d3.csv", "--epsilon", "0", "--delta", "1e-6", "--method", "normal", "--sigmas", "1,2,3", "--mean", "0,0,0"},
			"epsilon = 0", true},
		{[]string{"run", "--input", td + "normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "normal", "--sigmas", "1,-2,3", "--mean", "0,0,0"},
			"--sigmas: vecsum: invalid input: sigma[1]", true},
		{[]string{"run", "--input", td + "normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "normal", "--sigmas", "1,2,3", "--seed", "x"},
			"--seed", true},
		{[]string{"plan", "--sigmas", "1,abc", "--n", "10", "--epsilon", "1", "--delta", "1e-6"}, "item 2", true},
		{[]string{"plan", "--sigmas", "1,2", "--n", "0", "--epsilon", "1", "--delta", "1e-6"}, "--n 0", true},
		{[]string{"plan", "--n", "10", "--epsilon", "1", "--delta", "1e-6"}, "--sigmas is required", true},
		{[]string{"plan", "--sigmas", "1,2", "--n", "10", "--epsilon", "1", "--delta", "2"}, "delta = 2", true},
		{[]string{"frobnicate"}, "unknown subcommand", true},
		{nil, "missing subcommand", true},
	}
	for _, c := range cases {
		_, _, err := run(t, c.args...)
		require.Error(t, err, "%v", c.args)
		require.Contains(t, err.Error(), c.msg, "%v", c.args)
		require.Equal(t, c.usage, errors.Is(err, cli.ErrUsage), "usage error for %v: %v", c.args, err)
	}
}

func TestHelp(t *testing.T) {
	for _, sub := range []string{"plan", "run", "figure"} {
		_, stderr, err := run(t, sub, "-h")
		require.ErrorIs(t, err, flag.ErrHelp)
		require.Contains(t, stderr, "Usage: dpsim vecsum "+sub)
		if sub == "figure" {
			require.Contains(t, stderr, "-out")
		} else {
			require.Contains(t, stderr, "-epsilon")
		}
	}
	_, stderr, err := run(t, "--help")
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, stderr, "Subcommands")
}

func TestFigure(t *testing.T) {
	dir := t.TempDir()
	out, _, err := run(t, "figure", "--out", dir, "--alphas", "5", "--d", "10,100", "--n", "100,1000", "--log-level", "error")
	require.NoError(t, err)
	require.Contains(t, out, "gain(alpha=0.01)")
	for _, f := range []string{"vecsum_gain.csv", "vecsum_gain.png", "vecsum_gain.svg"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		require.Greater(t, st.Size(), int64(100))
	}
	f, err := os.Open(filepath.Join(dir, "vecsum_gain.csv"))
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 1+2*2*5)
	require.Equal(t, "gain", recs[0][3])
	svg, err := os.ReadFile(filepath.Join(dir, "vecsum_gain.svg"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(svg), "<svg"))
	_, _, err = run(t, "figure", "--out", dir, "--d", "0")
	require.ErrorIs(t, err, cli.ErrUsage)
}
