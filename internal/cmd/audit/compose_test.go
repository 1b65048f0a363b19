package auditcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
)

// --episodes-per-trial K: the JSON keeps epsilon_claimed per episode, adds episodes_per_trial and
// the composed claim epsilon_claimed_run, and the verdict, judged against the latter, says so and
// says what the per-episode claim would (a violation at K = 4: 2000 trials per side put
// eps_lb_gdp near 1.6, above eps = 1 and below eps_run = 2.52).
//
// The real-valued mechanism's composition (--precision=false): the float sampler's bits, which
// the precision score reads, would read violation whatever K.
func TestEpisodesPerTrialJSON(t *testing.T) {
	stdout, _, err := runIn(t, scenarioPath("audit-vehicle-composition"), "--episodes-per-trial", "4", "--trials", "2000", "--json", "--seed", "3", "--precision=false")
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &raw))
	for _, k := range []string{"episodes_per_trial", "epsilon_claimed", "epsilon_claimed_run", "verdict", "verdict_episode"} {
		require.Contains(t, raw, k)
	}
	r := decodeReport(t, stdout)
	require.Equal(t, 4, r.EpisodesPerTrial)
	require.Equal(t, 16000, r.Episodes)
	require.Equal(t, 1.0, r.EpsilonClaimed)
	require.InDelta(t, 2.5228, r.EpsilonClaimedRun, 1e-4)
	require.Equal(t, audit.Consistent, r.Verdict)
	require.Equal(t, audit.Violation, r.VerdictEpisode)
	require.Greater(t, r.EpsilonLBGDP, 1.0)
	require.Less(t, r.EpsilonLBGDP, r.EpsilonClaimedRun)

	table, _, err := runIn(t, scenarioPath("audit-vehicle-composition"), "--episodes-per-trial", "4", "--trials", "2000", "--seed", "3", "--precision=false")
	require.NoError(t, err)
	require.Contains(t, table, "judged against the composed claim eps_run = 2.523 for the 4 episodes of a trial")
	require.Contains(t, table, "against the per-episode claim eps = 1 the same bounds say VIOLATION")
	require.Contains(t, table, "composition k = 4")
}

// --episodes-per-trial 1 is the audit without the flag, number for number.
func TestEpisodesPerTrialOneIsDefault(t *testing.T) {
	a, _, err := runIn(t, scenarioPath("audit-vehicle-composition"), "--trials", "1000", "--json", "--seed", "5")
	require.NoError(t, err)
	b, _, err := runIn(t, scenarioPath("audit-vehicle-composition"), "--episodes-per-trial", "1", "--trials", "1000", "--json", "--seed", "5", "--workers", "1")
	require.NoError(t, err)
	ra, rb := decodeReport(t, a), decodeReport(t, b)
	ra.ElapsedSec, ra.EpisodesPerSec, rb.ElapsedSec, rb.EpisodesPerSec = 0, 0, 0, 0
	require.Equal(t, ra, rb)
	require.Equal(t, 1, rb.EpisodesPerTrial)
	require.Equal(t, rb.EpsilonClaimed, rb.EpsilonClaimedRun)
	require.Empty(t, rb.VerdictEpisode)
}

// --episodes-per-trial-sweep audits every k as a sweep point and draws the composition figure.
func TestEpisodesPerTrialSweep(t *testing.T) {
	dir := t.TempDir()
	stdout, _, err := runIn(t, scenarioPath("audit-vehicle-composition"), "--episodes-per-trial-sweep", "1,4", "--trials", "300", "--json", "--seed", "2", "--out", dir)
	require.NoError(t, err)
	var o Output
	require.NoError(t, json.Unmarshal([]byte(stdout), &o))
	require.Len(t, o.Points, 2)
	require.Equal(t, "audit-vehicle-composition@k=4", o.Points[1].Scenario)
	require.Equal(t, []int{1, 4}, []int{o.Points[0].EpisodesPerTrial, o.Points[1].EpisodesPerTrial})
	for _, f := range []string{"composition.png", "composition.svg", "audit-p01.json"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
}

func TestEpisodesPerTrialUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--episodes-per-trial", "0"},
		{"--episodes-per-trial", "2", "--engine", "wire"},
		{"--episodes-per-trial-sweep", "1,4", "--engine", "wire"},
		{"--episodes-per-trial-sweep", "1,x"},
		{"--episodes-per-trial-sweep", "2,2"},
		{"--episodes-per-trial", "2", "--episodes-per-trial-sweep", "1,2"},
	} {
		_, _, err := runIn(t, append([]string{scenarioPath("audit-vehicle-composition")}, args...)...)
		require.ErrorIs(t, err, cli.ErrUsage, "%v", args)
	}
}
