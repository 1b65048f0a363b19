package view_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

var dpsimBin string

func TestMain(m *testing.M) { os.Exit(dpsimtest.Main(m, &dpsimBin)) }

// The finished runs the tests view, each made once per test binary by the real dpsim run.
var runs = map[string][]string{
	"cloud":     {"cloud-vehicle", "--engine", "fast", "--runs", "20"},
	"consensus": {"consensus-laplace", "--engine", "fast", "--runs", "20"},
	"sweep":     {"cloud-vehicle-sweep", "--engine", "fast", "--runs", "8"},
	"faults":    {"faults-agent-crash", "--runs", "6"}, // over NATS: a process killed and restarted (the timeline)
	"untraced":  {"cloud-vehicle", "--engine", "fast", "--runs", "5", "--trace-episodes", "0"},
}

var (
	runsMu   sync.Mutex
	runsDone = map[string]string{}
	runsRoot string
)

// finishedRun returns the --out directory of the run name (runs), running dpsim the first time.
func finishedRun(t *testing.T, name string) string {
	t.Helper()
	runsMu.Lock()
	defer runsMu.Unlock()
	if dir, ok := runsDone[name]; ok {
		return dir
	}
	if runsRoot == "" {
		var err error
		runsRoot, err = os.MkdirTemp("", "dpsim-view-test-")
		require.NoError(t, err)
	}
	a := runs[name]
	dir := filepath.Join(runsRoot, name)
	args := append([]string{"run", dpsimtest.Scenario(a[0]), "--out", dir, "--seed", "5", "--progress=false"}, a[1:]...)
	cmd := exec.Command(dpsimBin, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.Env = append(os.Environ(), "NATS_URL=")
	require.NoError(t, cmd.Run(), "dpsim %v:\n%s", args, stderr.String())
	runsDone[name] = dir
	return dir
}

// copyRun copies the run name into a fresh directory that a test may break.
func copyRun(t *testing.T, name string) string {
	t.Helper()
	src := finishedRun(t, name)
	dst := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}
