package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "summary.json")
	require.NoError(t, WriteFile(p, []byte("old\n"), 0o644))
	require.NoError(t, WriteFile(p, []byte("new\n"), 0o644))
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "new\n", string(got))
	st, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	require.Empty(t, left, "no temporary file is left behind")
}

// A write that fails midway - here the writer's error, as a full disk gives - leaves the
// previous file whole and no temporary file.
func TestWriteFailureKeepsPrevious(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "summary.json")
	require.NoError(t, WriteFile(p, []byte(`{"status":"ok"}`), 0o644))
	full := errors.New("no space left on device")
	err := Write(p, 0o644, func(w io.Writer) error {
		_, _ = w.Write([]byte(`{"sta`))
		return full
	})
	require.ErrorIs(t, err, full)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, `{"status":"ok"}`, string(got))
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	require.Empty(t, left)
}

// A directory that does not exist is an error naming the file.
func TestWriteToMissingDir(t *testing.T) {
	err := WriteFile(filepath.Join(t.TempDir(), "nope", "x.json"), []byte("x"), 0o644)
	require.Error(t, err)
	require.Contains(t, err.Error(), "x.json")
}
