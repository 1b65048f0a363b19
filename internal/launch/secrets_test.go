package launch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/record"
)

// The files holding secrets are the plant's and the agents' plan files, checkpoints and attach
// credentials files, in the process directory and its point directories; RemoveSecrets removes
// them (or with keep lists them) and nothing else.
func TestRemoveSecrets(t *testing.T) {
	secret := []string{"procs/plant-0.plan.json", "procs/p01/agent-3.plan.json", "procs/p01/agents-0-4.plan.json",
		"procs/agent-2.checkpoint.json", "procs/attach/plant-0.env"}
	other := []string{"procs/cloud-0.plan.json", "procs/eavesdropper-0.plan.json", "procs/plant-0.trace.jsonl",
		"procs/plant-0.log", "procs/attach/commands.sh", "procs/public-keys.json", "summary.json"}
	for _, keep := range []bool{true, false} {
		out := t.TempDir()
		for _, f := range append(append([]string{}, secret...), other...) {
			require.NoError(t, os.MkdirAll(filepath.Join(out, filepath.Dir(f)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(out, f), []byte("x"), 0o600))
		}
		var s record.SecretFiles
		require.NoError(t, RemoveSecrets(&s, out, filepath.Join(out, "procs"), keep))
		require.Equal(t, keep, s.Kept)
		require.ElementsMatch(t, secret, s.Files)
		want := len(secret)
		if keep {
			want = 0
		}
		require.Equal(t, want, s.Removed)
		for _, f := range secret {
			_, err := os.Stat(filepath.Join(out, f))
			require.Equal(t, keep, err == nil, "%s (keep %v)", f, keep)
		}
		for _, f := range other {
			require.FileExists(t, filepath.Join(out, f))
		}
	}
	var s record.SecretFiles
	require.NoError(t, RemoveSecrets(&s, t.TempDir(), filepath.Join(t.TempDir(), "none"), false), "no process directory: nothing to do")
}
