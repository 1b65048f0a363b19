package rss

import (
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseVmHWM(t *testing.T) {
	status := "Name:\tdpsim\nVmPeak:\t  812345 kB\nVmHWM:\t   23456 kB\nVmRSS:\t   20000 kB\n"
	v, ok := parseVmHWM([]byte(status))
	require.True(t, ok)
	require.Equal(t, int64(23456*1024), v)
	for _, bad := range []string{"VmRSS: 1 kB\n", "VmHWM: x kB\n", "VmHWM: 12 MB\n", ""} {
		_, ok := parseVmHWM([]byte(bad))
		require.False(t, ok, "%q", bad)
	}
}

// The process's own peak RSS: on Linux from VmHWM (its own address space, which exec starts
// afresh), elsewhere from getrusage; plausible for this test process.
func TestPeakRSS(t *testing.T) {
	v, src := Peak()
	if runtime.GOOS == "linux" {
		require.Equal(t, VmHWM, src)
	} else if src == "" {
		t.Skip("no peak RSS on " + runtime.GOOS)
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	require.Greater(t, v, int64(1<<20), "at least a MiB")
	require.Less(t, v, int64(m.Sys)+int64(256<<20), "not more than the runtime mapped plus binary and stacks")
}

// Current reads a running process's resident set (this test process's, on Linux): between a
// MiB and its peak; a process that does not exist has none.
func TestCurrentRSS(t *testing.T) {
	v, ok := Current(os.Getpid())
	if runtime.GOOS != "linux" {
		require.False(t, ok)
		return
	}
	require.True(t, ok)
	peak, _ := Peak()
	require.Greater(t, v, int64(1<<20))
	require.LessOrEqual(t, v, peak)
	_, ok = Current(0)
	require.False(t, ok)
	_, ok = Current(1 << 30) // above any pid_max
	require.False(t, ok)
}
