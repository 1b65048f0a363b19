package auditcmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/audit"
)

// verdictComparison matches one comparison of a verdict as the reports state it.
var verdictComparison = regexp.MustCompile(`(eps_lb_cp|eps_lb_gdp|eps_lb_fdp) = (\S+) (<=|>) eps = (\S+): (consistent|violation)`)

// requireVerdictWords holds the comparisons stated in text to the report r of audit.json: the
// numbers are r's, the operator holds between them and gives the result word, and the
// verdict is violation exactly when some comparison is.
func requireVerdictWords(t *testing.T, where, text string, r *audit.GameReport) {
	t.Helper()
	m := verdictComparison.FindAllStringSubmatch(text, -1)
	want := 1
	if r.Mechanism == "gaussian" {
		want = 3
	}
	require.Len(t, m, want, "%s: one comparison per bound:\n%s", where, text)
	bounds := map[string]float64{"eps_lb_cp": r.EpsilonLBCP, "eps_lb_gdp": r.EpsilonLBGDP, "eps_lb_fdp": r.EpsilonLBFDP}
	violation := false
	for _, s := range m {
		v, err := strconv.ParseFloat(s[2], 64)
		require.NoError(t, err)
		th, err := strconv.ParseFloat(s[4], 64)
		require.NoError(t, err)
		require.InDelta(t, bounds[s[1]], v, 1e-3*(1+v), "%s: %q states the report's %s", where, s[0], s[1])
		require.Equal(t, r.EpsilonClaimed, th, "%s: %q compares with the claimed eps", where, s[0])
		if s[3] == ">" {
			require.Greater(t, v, th, "%s: %q", where, s[0])
			require.Equal(t, audit.Violation, s[5], "%s: %q", where, s[0])
			violation = true
		} else {
			require.LessOrEqual(t, v, th, "%s: %q", where, s[0])
			require.Equal(t, audit.Consistent, s[5], "%s: %q", where, s[0])
		}
	}
	require.Equal(t, r.Verdict == audit.Violation, violation, "%s: verdict %s", where, r.Verdict)
}

// The printed verdict line and report.md state the comparisons the verdict is decided on, with
// the numbers of audit.json: for a Gaussian claim (both bounds), a pure-eps claim (the
// Clopper-Pearson bound only, the other shown as n/a), and a violation that rests on the
// Gaussian-DP bound alone (said so, with its assumption).
func TestPrintedVerdictWords(t *testing.T) {
	for _, c := range []struct {
		scenario, seed, trials string
		wantGDPOnly            bool
	}{
		{"audit-vehicle-structured", "401", "5000", false},
		{"audit-consensus-laplace", "405", "3000", false},
		// seed 97, 5000 trials: eps_lb_cp 0.93 <= 1 < eps_lb_gdp 1.08
		{"faults-agent-crash-redraw", "97", "5000", true},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			dir := t.TempDir()
			stdout, _, err := runIn(t, scenarioPath(c.scenario), "--trials", c.trials, "--seed", c.seed, "--out", dir)
			require.NoError(t, err)
			js, err := os.ReadFile(filepath.Join(dir, "audit.json"))
			require.NoError(t, err)
			r := decodeReport(t, string(js))
			md, err := os.ReadFile(filepath.Join(dir, "report.md"))
			require.NoError(t, err)

			var line string
			for _, l := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(l, "verdict ") {
					line = l
				}
			}
			require.NotEmpty(t, line, stdout)
			require.Contains(t, line, strings.ToUpper(r.Verdict)+":")
			requireVerdictWords(t, "printed verdict", line, r)
			verdictPart := string(md)[:strings.Index(string(md), "| | |")]
			requireVerdictWords(t, "report.md", verdictPart, r)
			require.Equal(t, c.wantGDPOnly, strings.Contains(line, "rests on the Gaussian-DP bounds alone"), line)
			require.Equal(t, c.wantGDPOnly, strings.Contains(string(md), "rests on the Gaussian-DP bounds alone"))
			if r.Mechanism == "gaussian" {
				require.Contains(t, stdout, "mu_claimed")
				require.Contains(t, string(md), "mu_claimed = ")
				require.Contains(t, string(md), "mu_gdp = ")
			} else {
				require.Contains(t, string(md), "| n/a | n/a |")
			}
			if c.wantGDPOnly {
				require.Contains(t, string(md), "noise: redraw", "the theory row's scope is said")
			}
		})
	}
}

// A sweep point's report says at which level its bounds hold and how that gives the sweep's.
func TestSweepPointLevelStated(t *testing.T) {
	dir := t.TempDir()
	stdout, _, err := runIn(t, scenarioPath("audit-vehicle-block-vs-manifold"), "--trials", "1000", "--seed", "403", "--out", dir)
	require.NoError(t, err)
	// the printed table ends with the sweep's verdict at the sweep's level, not only the points'
	require.Regexp(t, `\nsweep +VIOLATION at 1 of 2 points: audit-vehicle-block-vs-manifold@adjacency=block \(joint confidence 0\.95 over the points\)\n`, stdout)
	md, err := os.ReadFile(filepath.Join(dir, "report-p01.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "**Verdict: consistent** at joint confidence 0.975")
	require.Contains(t, string(md), "sweep point 1 of 2: its bounds hold jointly at 0.975, so that those of all 2 points hold jointly at 0.95 (Bonferroni)")
}
