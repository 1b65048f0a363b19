package run_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// TestSummaryStatesWholeRun: summary.json's points carry the whole run's guarantee for the runs played
// (k episodes of one secret: sqrt(k) mu-GDP, epsilon_run at the scenario's delta), and report.md says it.
func TestSummaryStatesWholeRun(t *testing.T) {
	dir := t.TempDir()
	const runs = 16
	code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--engine", "fast",
		"--runs", fmt.Sprint(runs), "--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var sum struct {
		Points []struct {
			Guarantee    *privacy.RunGuarantee  `json:"guarantee"`
			DpEvent      *privacy.DpEventRecord `json:"dp_event"`
			DpEventCurve []privacy.EpsDelta     `json:"dp_event_curve"`
		} `json:"points"`
	}
	require.NoError(t, json.Unmarshal(data, &sum))
	require.Len(t, sum.Points, 1)
	g := sum.Points[0].Guarantee
	require.NotNil(t, g, string(data))
	require.Equal(t, runs, g.Episodes)
	require.Equal(t, privacy.ComposeGDP, g.Composition)
	y, err := privacy.KappaInverse(g.EpsilonEpisode, g.DeltaEpisode)
	require.NoError(t, err)
	require.InDelta(t, 1, g.MuEpisode/y, 1e-12, "tight calibration: exactly kappa^-1-GDP per episode")
	require.InDelta(t, 4*g.MuEpisode, g.MuRun, 1e-12)
	d := privacy.Phi(-g.EpsilonRun/g.MuRun+g.MuRun/2) - math.Exp(g.EpsilonRun)*privacy.Phi(-g.EpsilonRun/g.MuRun-g.MuRun/2)
	require.InDelta(t, 1, d/g.DeltaRun, 1e-9)
	// Beside the guarantee, the same run as accountants' events: k GaussianDpEvents of 1/mu_episode.
	ev := sum.Points[0].DpEvent
	require.NotNil(t, ev, string(data))
	require.Equal(t, "SelfComposedDpEvent", ev.Event.ClassName)
	require.Equal(t, runs, *ev.Event.Count)
	require.Equal(t, "GaussianDpEvent", ev.Event.Event.ClassName)
	require.InDelta(t, 1, *ev.Event.Event.NoiseMultiplier*g.MuEpisode, 1e-15)
	require.Contains(t, sum.Points[0].DpEventCurve, privacy.EpsDelta{Delta: g.DeltaRun, Epsilon: g.EpsilonRun})
	rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(rep), fmt.Sprintf("the %d episodes together: eps_run = ", runs)), "report.md states the whole run")
}
