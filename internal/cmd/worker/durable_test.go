package workercmd

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/internal/farm"
)

// A durable farm's coordinator killed with SIGKILL once some chunk results are journaled takes
// its spawned workers with it; the same command run again restores the journaled chunks, plays
// the rest, and writes the audit.json of an uninterrupted in-process audit of the same seed;
// a command with another seed is refused on that journal. A worker started by hand (w1.creds)
// keeps running across the restart: it reconnects to the new coordinator's server (the same
// --worker-listen address, the same credentials) and keeps serving the work queue - after the
// restart it is the only worker.
func TestDurableAuditResumesAfterKill(t *testing.T) {
	sc := dpsimtest.Scenario("audit-vehicle-structured")
	const trials = "400000" // 196 chunks of farm's audit chunk: seconds of two workers
	base := []string{"audit", sc, "--trials", trials, "--json", "--progress=false", "--log-level", "error"}
	ref := t.TempDir()
	dpsim(t, append(base, "--seed", "21", "--out", ref)...)
	want := auditJSON(t, ref)

	out := t.TempDir()
	listen := freeAddr(t)
	farmArgs := append(base, "--seed", "21", "--out", out, "--dispatch", "--dispatch-durable", "--worker-listen", listen)
	cmd := exec.Command(bin, append(farmArgs, "--spawn-workers", "2")...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	store := filepath.Join(out, farm.JournalDir)
	creds := filepath.Join(out, farm.WorkersDir, "w1.creds")
	require.Eventually(t, func() bool { _, err := os.Stat(creds); return err == nil }, time.Minute, 10*time.Millisecond)
	hand := exec.Command(bin, "worker", "--server", "nats://"+listen, "--creds", creds, "--threads", "1", "--connect-retry", "2m", "--log-level", "error")
	var handErr bytes.Buffer
	hand.Stderr = &handErr
	require.NoError(t, hand.Start())
	handExited := make(chan error, 1)
	go func() { handExited <- hand.Wait() }()
	t.Cleanup(func() { _ = hand.Process.Kill() })
	workers := journaled(t, store, cmd.Process.Pid, exited, &errb)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-exited
	for _, pid := range workers { // the kernel kills them with their coordinator
		require.Eventually(t, func() bool { return !alive(pid) }, 20*time.Second, 20*time.Millisecond, "spawned worker %d outlived its coordinator", pid)
	}

	code, _, stderr := run(append(base, "--seed", "22", "--out", out, "--dispatch", "--spawn-workers", "2", "--dispatch-durable")...)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "written by another command")

	dpsim(t, farmArgs...) // no spawned worker: the one started by hand plays the rest
	require.NoError(t, <-handExited, "the worker started by hand ends when the coordinator is over\n%s", handErr.String())
	got := auditJSON(t, out)
	d, ok := got["dispatch"].(map[string]any)
	require.True(t, ok, "the output has the dispatch")
	restored, chunks := d["restored_chunks"].(float64), d["chunks"].(float64)
	t.Logf("restarted: %v chunks restored from the journal, %v played", restored, chunks)
	// w1 played (the spawned workers of the first coordinator may be there too: their answers
	// stored before the kill were taken by the second)
	var w1 map[string]any
	for _, w := range d["workers"].([]any) {
		if m, _ := w.(map[string]any); m["name"] == "w1" {
			w1 = m
		}
	}
	require.NotNil(t, w1, "%v", d["workers"])
	require.Positive(t, w1["chunks_answered"], "the worker started by hand served the restarted coordinator")
	require.Greater(t, restored, 0.0, "chunks were restored from the journal")
	require.Greater(t, chunks, 0.0, "the rest was played")
	require.EqualValues(t, 196, restored+chunks)
	require.Equal(t, store, d["journal"])
	for _, m := range []map[string]any{want, got} {
		for _, k := range []string{"elapsed_sec", "episodes_per_sec", "dispatch"} {
			delete(m, k)
		}
	}
	require.Equal(t, want, got)
	st, err := os.Stat(store)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
}

// freeAddr is a loopback address with a port free now (for a server started again on it).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// auditJSON is dir/audit.json decoded.
func auditJSON(t *testing.T, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "audit.json"))
	require.NoError(t, err)
	return decoded(t, data)
}

// journaled waits until the journal's store under dir holds some records (its message blocks
// more than ten chunks' scores) and returns the coordinator's children then (its spawned
// workers); it fails the test when the coordinator exits first.
func journaled(t *testing.T, dir string, pid int, exited <-chan error, stderr *bytes.Buffer) []int {
	t.Helper()
	const chunkBytes = 8 * 4096 // one audit chunk's scores
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("the coordinator exited (%v) before it was killed: too few trials?\n%s", err, stderr.String())
		default:
		}
		blocks, _ := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams", "*", "msgs", "*.blk"))
		size := int64(0)
		for _, b := range blocks {
			if st, err := os.Stat(b); err == nil {
				size += st.Size()
			}
		}
		if size > 10*chunkBytes {
			kids := children(pid)
			require.Len(t, kids, 2, "the coordinator's spawned workers")
			return kids
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no chunk journaled under %s within 2 minutes\n%s", dir, stderr.String())
	return nil
}

// children are the processes whose parent is pid (from /proc).
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(p); ok && ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

// parentOf is process pid's parent, from /proc/pid/stat.
func parentOf(pid int) (int, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// run runs the binary and returns its exit code and outputs.
func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		return -1, out.String(), err.Error()
	}
	return 0, out.String(), errb.String()
}
