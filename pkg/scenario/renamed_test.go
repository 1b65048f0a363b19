package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The top-level key episodes was named runs. A file that still says runs parses to the same
// scenario as with episodes, plus one warning that names the new key: every shipped scenario,
// rewritten to the old key, says so.
func TestRunsIsTheOldNameOfEpisodes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	key := regexp.MustCompile(`(?m)^episodes:`)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Len(t, key.FindAllIndex(data, -1), 1, "a shipped scenario gives episodes, once")
			want, err := Parse(data, path)
			require.NoError(t, err)
			got, err := Parse(key.ReplaceAll(data, []byte("runs:")), path)
			require.NoError(t, err)
			renamed := func(w string) bool { return strings.Contains(w, "is the old name of episodes") }
			require.Equal(t, 1, len(slices.DeleteFunc(slices.Clone(got.Warnings), func(w string) bool { return !renamed(w) })), "%q", got.Warnings)
			if got.Warnings = slices.DeleteFunc(got.Warnings, renamed); len(got.Warnings) == 0 {
				got.Warnings = nil
			}
			require.Equal(t, want, got)
		})
	}
}

// The warning for the old key names its line and the key to write instead; both keys at once
// are an error that names both and their lines.
func TestRunsAndEpisodes(t *testing.T) {
	const doc = "name: t\nkind: cloud-control\nsteps: 10\n%s\nplant: {A: 1, B: 1, C: 1}\ncontroller: {K: 0.5, L: 0.5}\nprivacy: {epsilon: 1, delta: 0.01}\n"
	s, err := Parse([]byte(strings.Replace(doc, "%s", "runs: 7", 1)), "t.yaml")
	require.NoError(t, err)
	require.Equal(t, 7, s.Runs)
	require.Equal(t, []string{"runs (line 4) is the old name of episodes and is read as episodes: rename it to episodes"}, s.Warnings)

	s, err = Parse([]byte(strings.Replace(doc, "%s", "episodes: 7", 1)), "t.yaml")
	require.NoError(t, err)
	require.Equal(t, 7, s.Runs)
	require.Empty(t, s.Warnings)

	_, err = Parse([]byte(strings.Replace(doc, "%s", "episodes: 7\nruns: 7", 1)), "t.yaml")
	require.EqualError(t, err, "scenario t.yaml: runs: both episodes (line 4) and its old name runs are given: keep episodes and remove runs (line 5)")

	_, err = Parse([]byte(strings.Replace(doc, "%s", "runs: 0", 1)), "t.yaml")
	require.ErrorContains(t, err, "runs: 0 must be >= 1 (Monte Carlo episodes) (line 4)")

	_, err = Parse([]byte(strings.Replace(doc, "%s", "", 1)), "t.yaml")
	require.ErrorContains(t, err, "episodes: missing: the number of Monte Carlo episodes, an integer >= 1")
}
