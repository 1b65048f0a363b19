package run_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/launch"
)

// secretProbe has an x(0) and a seed found nowhere else, so that a file holding them is found
// by its bytes.
const secretProbe = `name: secret-probe
kind: cloud-control
steps: 20
episodes: 3
seed: 918273645546372
plant: {A: [[1, 0.1], [0, 1]], B: [[0.005], [0.1]], C: [[1, 0]], x0: [0.123456789, -7.654321]}
controller: {K: [3.4240, 4.3095], L: [0.8266, 0.6973], reference: tanh, xhat0: [0, 0]}
privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, noise: structured, model: {A: 1, C: 1}}
`

// checkOutputModes walks out: every file in launch.SecretOutputs is 0600 (0644 when shared,
// except those private always), every other 0644, the processes' and figures' folders 0700
// (0755 shared); and the table is right: a file holding the seed or x(0) that it does not list
// fails.
func checkOutputModes(t *testing.T, out string, share bool) (files int) {
	t.Helper()
	always := map[string]bool{}
	for _, s := range launch.SecretOutputs() {
		if s.Always {
			always[s.Pattern] = true
		}
	}
	require.NoError(t, filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(out, p)
		fi, err := d.Info()
		require.NoError(t, err)
		if d.IsDir() {
			if strings.HasPrefix(rel, "procs") || rel == "figures" {
				want := os.FileMode(0o700)
				if share {
					want = 0o755
				}
				require.Equal(t, want, fi.Mode().Perm(), "folder %s", rel)
			}
			return nil
		}
		files++
		secret := launch.IsSecretOutput(rel)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, v := range []string{"918273645546372", "0.123456789", "7.654321"} {
			if strings.Contains(string(data), v) {
				require.True(t, secret, "%s holds %s but is not in launch.SecretOutputs", rel, v)
			}
		}
		want := os.FileMode(0o644)
		if secret && (!share || strings.HasSuffix(rel, ".plan.json") || strings.HasSuffix(rel, ".checkpoint.json") || strings.Contains(rel, "attach/")) {
			want = 0o600
		}
		require.Equal(t, want, fi.Mode().Perm(), "%s (secret: %v, shared: %v)", rel, secret, share)
		return nil
	}))
	return files
}

// TestSecretOutputModes: a run's (NATS engine, the plan files kept) and an audit's
// (wire engine) outputs holding x(0), the seed or the true states (--parquet's tables too) are 0600 in folders 0700,
// and 0644 / 0755 with --share-outputs.
func TestSecretOutputModes(t *testing.T) {
	path := writeScenario(t, secretProbe)
	for _, share := range []bool{false, true} {
		extra := []string{}
		if share {
			extra = append(extra, "--share-outputs")
		}
		out := t.TempDir()
		code, _, stderr := runDpsim(t, 120*time.Second, append([]string{"run", path, "--out", out, "--log-level", "warn", "--keep-secrets", "--parquet"}, extra...)...)
		require.Equal(t, 0, code, stderr)
		require.Greater(t, checkOutputModes(t, out, share), 10)
		_, err := os.Stat(filepath.Join(out, "procs", "plant-0.plan.json"))
		require.NoError(t, err, "--keep-secrets kept the plant's plan file (x(0), the seed)")
		for _, f := range []string{"episodes.parquet", "trace.parquet"} {
			_, err = os.Stat(filepath.Join(out, f))
			require.NoError(t, err)
		}

		out = t.TempDir()
		code, _, stderr = runDpsim(t, 120*time.Second, append([]string{"audit", path, "--trials", "10", "--engine", "wire", "--out", out, "--log-level", "warn", "--keep-secrets", "--parquet"}, extra...)...)
		require.Equal(t, 0, code, stderr)
		require.Greater(t, checkOutputModes(t, out, share), 5)
		for _, f := range []string{"audit.json", "scores.parquet"} {
			_, err = os.Stat(filepath.Join(out, f))
			require.NoError(t, err)
		}
	}
}
