package vecsumcmd

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlanBoundReason: Theorem 4's bound applies only when ln(1/p) <= sum sigma^2 / (18 sigma_max^2).
// Where it does not, bound_* are null and bound_reason says why (they were null with no reason, issue
// 20); where it does, the bounds are numbers above the exact values and there is no reason. The table
// prints the bound or the reason too.
func TestPlanBoundReason(t *testing.T) {
	equal := strings.TrimSuffix(strings.Repeat("1,", 50), ",")
	cases := []struct {
		name, sigmas, n string
		applies         bool
	}{
		{"skewed sigmas", "4,1", "1000", false},
		{"many equal sigmas", equal, "10", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"plan", "--sigmas", c.sigmas, "--n", c.n, "--epsilon", "1", "--delta", "1e-6", "--clip-samples", "0"}
			out, _, err := run(t, append(args, "--json")...)
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &m))
			if c.applies {
				require.GreaterOrEqual(t, m["bound_clip_radius_scaled"], m["clip_radius_scaled"])
				require.GreaterOrEqual(t, m["bound_expected_error_scaled"], m["expected_error_scaled"])
				require.NotContains(t, m, "bound_reason")
			} else {
				require.Nil(t, m["bound_clip_radius_scaled"])
				require.Nil(t, m["bound_expected_error_scaled"])
				require.Contains(t, m["bound_reason"], "ln(1/p_C) = 6.908 > sum sigma^2 / (18 sigma_max^2) = 0.05903")
			}
			// without --clip-samples nothing was estimated: no null total_error keys without a reason
			require.NotContains(t, m, "total_error_scaled")
			table, _, err := run(t, args...)
			require.NoError(t, err)
			require.Contains(t, table, "Theorem 4 bound")
			if !c.applies {
				require.Contains(t, table, "Theorem 4 bound: not applicable. Lemma 4.2 / Theorem 4 need")
				require.Contains(t, table, "ln(1/p_C) = 6.908")
			}
		})
	}
}

// TestFigureNoNaN: without --clip-samples the clipping errors are not estimated; the CSV used to carry
// them as two NaN columns and --json failed ("unsupported value: NaN"). Now the columns are
// omitted (the output says why) and appear, numeric, only when estimated.
func TestFigureNoNaN(t *testing.T) {
	for _, samples := range []string{"0", "300"} {
		t.Run("clip-samples "+samples, func(t *testing.T) {
			dir := t.TempDir()
			out, _, err := run(t, "figure", "--out", dir, "--alphas", "3", "--d", "10", "--n", "100", "--clip-samples", samples,
				"--log-level", "error", "--json")
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &m), out)
			f, err := os.Open(filepath.Join(dir, "vecsum_gain.csv"))
			require.NoError(t, err)
			defer f.Close()
			recs, err := csv.NewReader(f).ReadAll()
			require.NoError(t, err)
			require.Len(t, recs, 4)
			for _, r := range recs {
				for _, v := range r {
					require.NotContains(t, []string{"NaN", "+Inf", "-Inf", ""}, v, "row %v", r)
				}
			}
			hasClip := strings.Contains(strings.Join(recs[0], ","), "clip_error_scaled_per_sigma_opt2")
			require.Equal(t, samples != "0", hasClip, "header %v", recs[0])
			if samples == "0" {
				require.Contains(t, m["csv_note"], "--clip-samples 0")
				table, _, err := run(t, "figure", "--out", dir, "--alphas", "3", "--d", "10", "--n", "100", "--log-level", "error")
				require.NoError(t, err)
				require.Contains(t, table, "clipping-error columns omitted")
			}
		})
	}
}
