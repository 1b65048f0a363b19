package run_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Cleaning and writing --out never follows a symbolic link: with OUT/procs and OUT/figures links
// to other folders holding files named like dpsim's (and OUT/summary.json a link to a file), a
// run removes the links themselves and writes its own folders and files; nothing the links
// pointed at is read, written or deleted.
func TestOutputLinksNotFollowed(t *testing.T) {
	root := t.TempDir()
	out, victim := filepath.Join(root, "out"), filepath.Join(root, "victim")
	require.NoError(t, os.MkdirAll(out, 0o755))
	files := map[string]string{
		"procs/plant-0.log":               "victim log",
		"procs/plant-0.trace.jsonl":       "victim trace",
		"procs/p00/cloud-0.result.json":   "victim result",
		"figures/tracking-error.json":     "victim figure",
		"figures/eavesdropper-error.json": "victim figure 2",
		"summary.json":                    "victim summary",
	}
	for name, body := range files {
		p := filepath.Join(victim, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	for _, name := range []string{"procs", "figures", "summary.json"} {
		require.NoError(t, os.Symlink(filepath.Join(victim, name), filepath.Join(out, name)))
	}
	code, _, stderr := runDpsim(t, 2*time.Minute, "run", scenarioPath("cloud-vehicle"), "--engine", "fast", "--runs", "3", "--out", out)
	require.Equal(t, 0, code, stderr)
	for name, body := range files {
		got, err := os.ReadFile(filepath.Join(victim, name))
		require.NoError(t, err, "%s outside OUT was deleted", name)
		require.Equal(t, body, string(got), "%s outside OUT was written", name)
	}
	for _, name := range []string{"figures", "summary.json"} {
		fi, err := os.Lstat(filepath.Join(out, name))
		require.NoError(t, err, "%s written in OUT", name)
		require.Zero(t, fi.Mode()&os.ModeSymlink, "%s is the run's own, not the link", name)
	}
	_, err := os.Lstat(filepath.Join(out, "procs"))
	require.True(t, os.IsNotExist(err), "the procs link is removed (the fast engine has no processes)")
}
