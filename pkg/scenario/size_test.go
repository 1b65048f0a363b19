package scenario

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hugeScenario writes a consensus scenario of about size bytes (a ring of 10 nodes with an
// x0 far too long) and returns its path.
func hugeScenario(t *testing.T, size int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("name: huge\nkind: consensus\nsteps: 30\nepisodes: 1\ngraph: {name: ring, n: 10}\n")
	b.WriteString("privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, mu: 1}\nx0: [")
	for b.Len() < size {
		b.WriteString("123.5, ")
	}
	b.WriteString("0]\n")
	path := filepath.Join(t.TempDir(), "huge.yaml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// TestLoadRefusesLargeFileCheaply: a scenario file above MaxFileSize is refused before it is
// read or decoded (a 14.9 MB file took 1.5 GB and 50 s just to be rejected), with an error
// naming its size and the bound.
func TestLoadRefusesLargeFileCheaply(t *testing.T) {
	for _, size := range []int{1<<20 + 100, 4 << 20, 15 << 20} { // 15 MiB: a newcomer's file that once took 1.5 GB to reject
		path := hugeScenario(t, size)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Load(path)
		runtime.ReadMemStats(&after)
		require.Error(t, err)
		require.ErrorContains(t, err, "more than the 1048576 bytes (1 MiB) a scenario may have")
		require.ErrorContains(t, err, path)
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<10), "size %d: allocated while refusing", size)
	}
	data, err := os.ReadFile(hugeScenario(t, MaxFileSize+1))
	require.NoError(t, err)
	_, err = Parse(data, "in-memory.yaml")
	require.ErrorContains(t, err, "scenario in-memory.yaml: the file has")
	require.ErrorContains(t, err, "(1 MiB)")
}

// TestLoadAcceptsLargeGraphWithinBound: a ring of 10^5 nodes given with its x0 fits the bound.
func TestLoadAcceptsLargeGraphWithinBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: ring\nkind: consensus\nsteps: 30\nepisodes: 1\ngraph: {name: ring, n: 100000, weight: 0.25}\n")
	b.WriteString("privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, mu: 1}\nx0: [")
	for i := 0; i < 100_000; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("1.5")
	}
	b.WriteString("]\n")
	require.Less(t, b.Len(), MaxFileSize)
	path := filepath.Join(t.TempDir(), "ring.yaml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	s, err := Load(path)
	require.NoError(t, err)
	require.Len(t, s.X0, 100_000)
}
