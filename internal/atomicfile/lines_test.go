package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A file of lines that ends mid-line (a write that failed part-way) is cut back to its last
// whole line; one that ends with a newline is left alone.
func TestCutPartialLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"a\nb\n", "a\nb\n"},
		{"a\nb\n{\"ep", "a\nb\n"},
		{"{\"partial", ""},
	} {
		path := filepath.Join(t.TempDir(), "t.jsonl")
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		require.NoError(t, err)
		_, err = io.WriteString(f, tc.in)
		require.NoError(t, err)
		require.NoError(t, CutPartialLine(f))
		pos, err := f.Seek(0, io.SeekCurrent)
		require.NoError(t, err)
		require.Equal(t, int64(len(tc.want)), pos, "the position follows the cut")
		_, err = io.WriteString(f, "next\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, tc.want+"next\n", string(got), "%q", tc.in)
	}
}

// A write that the disk cuts short (here the file size limit, RLIMIT_FSIZE, in a child
// process: a full disk behaves alike) fails with its error, and the file ends with its last
// whole line, not a truncated one.
func TestLineFileWriteCutShort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RLIMIT_FSIZE")
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if os.Getenv("LINEFILE_CHILD") != "" {
		signal.Ignore(syscall.SIGXFSZ) // the write fails with EFBIG instead
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 100, Max: 100}))
		f, err := os.OpenFile(os.Getenv("LINEFILE_CHILD"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		require.NoError(t, err)
		w := bufio.NewWriterSize(LineFile{f}, 64) // flushes in chunks that end mid-line
		var werr error
		for i := 0; i < 20 && werr == nil; i++ {
			_, werr = fmt.Fprintf(w, "{\"episode\": %d, \"pad\": \"xxxxxx\"}\n", i)
		}
		if werr == nil {
			werr = w.Flush()
		}
		require.Error(t, werr, "the limit cut a write short")
		require.NoError(t, f.Close())
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLineFileWriteCutShort$")
	cmd.Env = append(os.Environ(), "LINEFILE_CHILD="+path)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotEmpty(t, data)
	require.LessOrEqual(t, len(data), 100)
	require.Equal(t, byte('\n'), data[len(data)-1], "no truncated last line: %q", data)
}
