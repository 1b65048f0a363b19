package run_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/launch"
)

// readSecrets reads summary.json's secrets.
func readSecrets(t *testing.T, dir string) launch.SecretFiles {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var s struct {
		Secrets *launch.SecretFiles `json:"secrets"`
	}
	require.NoError(t, json.Unmarshal(data, &s))
	require.NotNil(t, s.Secrets, "summary.json has no secrets")
	return *s.Secrets
}

// The plant's plan file (its x(0) and the run seed) is removed when the run ends - completed or
// interrupted - unless --keep-secrets; summary.json says which. The cloud's and the
// eavesdropper's plan files hold no secret and stay.
func TestSecretFilesRemovedAtTheEnd(t *testing.T) {
	plantPlan := filepath.Join("procs", "plant-0.plan.json")
	t.Run("completed", func(t *testing.T) {
		dir := t.TempDir()
		code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--runs", "3", "--out", dir, "--log-level", "warn")
		require.Equal(t, 0, code, stderr)
		require.NoFileExists(t, filepath.Join(dir, plantPlan))
		require.FileExists(t, filepath.Join(dir, "procs", "cloud-0.plan.json"))
		require.Equal(t, launch.SecretFiles{Kept: false, Removed: 1, Files: []string{plantPlan}}, readSecrets(t, dir))
	})
	t.Run("kept", func(t *testing.T) {
		dir := t.TempDir()
		code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--runs", "3", "--out", dir, "--log-level", "warn", "--keep-secrets")
		require.Equal(t, 0, code, stderr)
		require.FileExists(t, filepath.Join(dir, plantPlan))
		require.Equal(t, launch.SecretFiles{Kept: true, Removed: 0, Files: []string{plantPlan}}, readSecrets(t, dir))
	})
	t.Run("interrupted", func(t *testing.T) {
		srv := server(t)
		on, reached, _ := watch(2, "plant.0")
		sniff(t, srv.URL(), on)
		dir := t.TempDir()
		l := start(t, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(), "--no-sign", "--runs", "100000", "--out", dir, "--log-level", "warn")
		select {
		case <-reached:
		case <-time.After(30 * time.Second):
			_ = l.cmd.Process.Kill()
			t.Fatalf("the run never reached episode 2: %s", l.stderr.String())
		}
		require.FileExists(t, filepath.Join(dir, plantPlan), "the plan file is there while the run goes on")
		require.NoError(t, l.cmd.Process.Signal(os.Interrupt))
		require.Equal(t, 1, l.wait(t, 30*time.Second), l.stderr.String())
		require.Equal(t, "interrupted", readSummary(t, dir).Status)
		require.NoFileExists(t, filepath.Join(dir, plantPlan))
		require.Equal(t, launch.SecretFiles{Kept: false, Removed: 1, Files: []string{plantPlan}}, readSecrets(t, dir))
	})
}
