package roleproc

import (
	"bytes"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
)

// The cloud and the eavesdropper never hold the private initial state.
func TestRedactPrivateState(t *testing.T) {
	for _, name := range []string{"cloud-vehicle", "consensus-gaussian"} {
		s, _, err := LoadPoint("../../scenarios/"+name+".yaml", 0)
		require.NoError(t, err)
		plan.KeepFor(endpoint.Cloud, 0, 0).Redact(s)
		xs := s.X0
		if s.Plant != nil {
			xs = s.Plant.X0
		}
		require.NotEmpty(t, xs, name)
		for _, v := range xs {
			require.True(t, math.IsNaN(v), name)
		}
	}
}

// A plan file that is not there yet is waited for (a role started before an attached launcher
// wrote it); its digest is what the process puts in its ctl.ready.
func TestLoadPlanFileWaits(t *testing.T) {
	_, p, err := LoadPoint(filepath.Join("..", "..", "scenarios", "cloud-vehicle.yaml"), 0)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, p.WriteFile(&buf, plan.KeepNothing))
	path := filepath.Join(t.TempDir(), "cloud-0.plan.json")

	_, _, err = LoadPlanFile(path, 0)
	require.ErrorContains(t, err, "--plan")
	require.ErrorIs(t, err, fs.ErrNotExist)

	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = os.WriteFile(path, buf.Bytes(), 0o600)
	}()
	start := time.Now()
	q, digest, err := LoadPlanFile(path, 10*time.Second)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.Equal(t, plan.FileDigest(buf.Bytes()), digest)
	require.Equal(t, p.Scale, q.Scale)
	require.True(t, math.IsNaN(q.Scenario.Plant.X0[0]), "the cloud's file holds no x(0)")

	require.NoError(t, os.WriteFile(path, []byte(`{"format":"`+plan.FileFormat+`"}`), 0o600))
	_, _, err = LoadPlanFile(path, 0)
	require.ErrorContains(t, err, "no scenario")
}
