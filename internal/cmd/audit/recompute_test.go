package auditcmd

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

// TestRecomputeBoundsScript: a second tool recomputes an audit's bounds from its --write-scores
// file and its audit.json (docs/math.md section 6.5). scripts/recompute-bounds - plain Python, no
// code of dpsim - redoes the split by the trial-number hash, the counts of the chosen tests on the
// bounding half, the Clopper-Pearson bounds at the stated level, eps_lb_cp and (Gaussian) mu_gdp and
// eps_lb_gdp, and must agree with dpsim's within 1e-6 relative, for a Gaussian audit and a Laplace
// one; and it must notice a bound of audit.json moved by 1e-5.
func TestRecomputeBoundsScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3 for scripts/recompute-bounds")
	}
	script := filepath.Join(dpsimtest.Root(), "scripts", "recompute-bounds")
	for _, c := range []struct{ scenario, mechanism string }{
		{"audit-vehicle-structured", "gaussian"},
		{"audit-consensus-laplace", "laplace"},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			dir := t.TempDir()
			out, scores := filepath.Join(dir, "out"), filepath.Join(dir, "scores.csv")
			_, _, err := runIn(t, scenarioPath(c.scenario), "--trials", "3000", "--seed", "7", "--out", out, "--write-scores", scores)
			require.NoError(t, err)
			report := filepath.Join(out, "audit.json")
			var rep struct {
				Mechanism string `json:"mechanism"`
			}
			data, err := os.ReadFile(report)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &rep))
			require.Equal(t, c.mechanism, rep.Mechanism)

			got, err := exec.Command(py, script, scores, report).CombinedOutput()
			require.NoError(t, err, "%s", got)
			require.Contains(t, string(got), "all figures agree")
			require.Contains(t, string(got), "eps_lb_cp ")
			if c.mechanism == "gaussian" {
				require.Contains(t, string(got), "eps_lb_gdp ")
			}
			t.Logf("%s", got)

			// A bound moved by 1e-5 relative is caught (exit status 1).
			var m map[string]any
			require.NoError(t, json.Unmarshal(data, &m))
			res := m["scores"].([]any)[0].(map[string]any)["result"].(map[string]any)
			res["epsilon_lb_cp"] = res["epsilon_lb_cp"].(float64) * (1 + 1e-5)
			moved, err := json.Marshal(m)
			require.NoError(t, err)
			bad := filepath.Join(dir, "moved.json")
			require.NoError(t, os.WriteFile(bad, moved, 0o600))
			got, err = exec.Command(py, script, scores, bad).CombinedOutput()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "%v: %s", err, got)
			require.Equal(t, 1, exit.ExitCode(), "%s", got)
			require.Contains(t, string(got), "DIFFERS")
		})
	}
}
