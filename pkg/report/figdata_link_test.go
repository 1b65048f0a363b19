package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The figures' data folder is never written through a symbolic link: a link there is refused
// with an error naming it, and the folder it points at stays as it was.
func TestFigureDataRefusesLink(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "tracking-error.json"), []byte("theirs"), 0o644))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(dir, FigureDataDir)))
	err := writeFigureData(dir, nil, Input{})
	require.ErrorContains(t, err, "is a symbolic link")
	got, err := os.ReadFile(filepath.Join(elsewhere, "tracking-error.json"))
	require.NoError(t, err)
	require.Equal(t, "theirs", string(got))
}
