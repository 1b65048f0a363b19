package vecsumcmd

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
)

// TestRunJSONOutlier: one outlier row near 1e160 makes the squared clipping error overflow float64. The
// JSON must still be written (it failed with "json: unsupported value: +Inf"): the value is null and
// non_finite says which key and why, while the private sum stays a number. The normal
// method clips the outlier like any other row (it refused it: "squared norm overflows").
func TestRunJSONOutlier(t *testing.T) {
	p := filepath.Join(t.TempDir(), "outlier.csv")
	require.NoError(t, os.WriteFile(p, []byte("1,2\n3,4\n1e160,5\n2,2\n"), 0o644))
	for _, method := range [][]string{{"gaussian", "--bounds", "10"}, {"elliptical", "--bounds", "10"},
		{"normal", "--sigmas", "1,1", "--mean", "0,0"}} {
		t.Run(method[0], func(t *testing.T) {
			args := append([]string{"run", "--input", p, "--epsilon", "1", "--delta", "1e-6", "--seed", "1", "--json", "--method"}, method...)
			out, _, err := run(t, args...)
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &m), out)
			require.Contains(t, m, "clip_error")
			require.Nil(t, m["clip_error"], "an overflowing value is null")
			nf, ok := m["non_finite"].(map[string]any)
			require.True(t, ok, "non_finite explains the null: %s", out)
			require.Contains(t, nf["clip_error"], "+Inf")
			require.Len(t, nf, 1, "only clip_error overflows: %v", nf)
			require.GreaterOrEqual(t, m["clipped_rows"], 1.0)
			for _, v := range m["sum"].([]any) {
				require.IsType(t, 0.0, v, "the private sum is finite")
			}
		})
	}
	// a finite run has no non_finite key
	out, _, err := run(t, "run", "--input", td+"normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--method", "gaussian",
		"--bounds", "20", "--seed", "1", "--json")
	require.NoError(t, err)
	require.NotContains(t, out, "non_finite")
}

// TestRunExitCodes: a data problem is a failure (exit 1), only a bad command line is a usage error
// (exit 2). Too few rows for a private mean used to exit 2.
func TestRunExitCodes(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		msg   string
		usage bool
	}{
		{"private mean on tiny input", []string{"--method", "normal", "--sigmas", "2,0.5,0.05"}, "pass the mean explicitly", false},
		{"mean fraction", []string{"--method", "normal", "--sigmas", "2,0.5,0.05", "--mean-fraction", "1"}, "--mean-fraction 1", true},
		{"negative clip probability", []string{"--method", "normal", "--sigmas", "2,0.5,0.05", "--mean", "0,0,0", "--clip-prob", "-0.1"}, "--clip-prob -0.1", true},
		{"sigma not positive", []string{"--method", "normal", "--sigmas", "2,0,1", "--mean", "0,0,0"}, "--sigmas", true},
		{"bounds with normal", []string{"--method", "normal", "--sigmas", "1,1,1", "--bounds", "3"}, "--bounds applies", true},
		{"delta", []string{"--method", "gaussian", "--bounds", "3", "--delta", "1"}, "delta = 1", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "--input", td + "normal_d3.csv", "--epsilon", "1", "--delta", "1e-6", "--seed", "1"}, c.args...)
			_, _, err := run(t, args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.msg)
			require.Equal(t, c.usage, errors.Is(err, cli.ErrUsage), "usage error: %v", err)
		})
	}
}
