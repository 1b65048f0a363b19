package plan_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Calibrate reports the plan's own design, the whole run of the scenario's runs (no --episodes,
// no privacy.episodes) and the other adjacency for comparison.
func TestCalibrate(t *testing.T) {
	s, err := scenario.Load(filepath.Join("..", "..", "scenarios", "cloud-vehicle.yaml"))
	require.NoError(t, err)
	pt := s.Expand()[0]
	p, err := plan.New(pt, plan.Options{})
	require.NoError(t, err)
	r, err := plan.Calibrate(pt, plan.Options{}, 0)
	require.NoError(t, err)
	require.Equal(t, p.Sensitivity.Value, r.Sensitivity)
	require.Equal(t, p.Adjacency, r.Adjacency)
	require.Equal(t, p.RankErr == nil, r.RankOK)
	require.Equal(t, "episodes", r.EpisodesFrom)
	require.NotEqual(t, noise.None, p.Noise, "the scenario has noise: a whole run and a comparison")
	require.Equal(t, pt.Runs, r.Episodes)
	require.NotNil(t, r.WorstPair)
	require.NotNil(t, r.OtherAdjacency)
	require.NotEqual(t, r.Adjacency, r.OtherAdjacency.Adjacency)
	sigma, b := privacy.ScaleKeys(p.Mechanism, p.Scale)
	require.Equal(t, sigma, r.Sigma)
	require.Equal(t, b, r.B)
	r, err = plan.Calibrate(pt, plan.Options{Adjacency: privacy.Block}, 3)
	require.NoError(t, err)
	require.Equal(t, privacy.Block, r.Adjacency)
	require.Equal(t, "--episodes", r.EpisodesFrom)
}
