//go:build unix

package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// OpenNoFollow never opens through a link (nor a FIFO: it does not block on one), so the file
// the link points at keeps its bytes even when opened to truncate.
func TestOpenNoFollow(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(victim, link))
	_, err := OpenNoFollow(link, os.O_WRONLY|os.O_TRUNC, 0o600)
	require.ErrorContains(t, err, "symbolic link")
	got, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "keep", string(got))

	fifo := filepath.Join(dir, "fifo")
	if syscall.Mkfifo(fifo, 0o600) == nil {
		_, err = OpenNoFollow(fifo, os.O_RDONLY, 0)
		require.ErrorContains(t, err, "not a regular file")
	}
	f, err := OpenNoFollow(filepath.Join(dir, "new"), os.O_WRONLY|os.O_CREATE, 0o600)
	require.NoError(t, err)
	require.NoError(t, CheckPrivate(f))
	require.NoError(t, f.Chmod(0o640))
	require.ErrorContains(t, CheckPrivate(f), "want no access for group and others")
	require.NoError(t, f.Close())
}
