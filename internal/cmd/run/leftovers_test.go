package run_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every process a run started, and every descendant, is gone when dpsim exits: a --role
// program that leaves a child in its process group, one that ignores SIGTERM and one that
// moved to a session of its own (setsid) are ended by the launcher's sweep and named.
func TestNoProcessOutlivesTheRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sweep reads /proc")
	}
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	script := filepath.Join(dir, "cloud.sh")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
(trap '' TERM; exec sleep 1000) &
echo "$!" >> `+pids+`
sleep 1000 &
echo "$!" >> `+pids+`
setsid sleep 1000 &
echo "$!" >> `+pids+`
exec `+dpsimBin+` cloud "$@"
`), 0o755))
	out := filepath.Join(dir, "out")
	code, _, stderr := runDpsim(t, 2*time.Minute, "run", scenarioPath("cloud-vehicle"), "--runs", "2", "--out", out,
		"--progress=false", "--role", "cloud.0=sh "+script)
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(pids)
	require.NoError(t, err)
	left := strings.Fields(string(data))
	require.Len(t, left, 3, "the script started its three children")
	for _, f := range left {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		require.False(t, running(pid), "pid %s outlived the run", f)
	}
	require.Contains(t, stderr, "outlived its role")
	var sum struct {
		Status    string `json:"status"`
		Leftovers []struct {
			PID     int    `json:"pid"`
			Command string `json:"command"`
			Of      string `json:"of"`
			Signal  string `json:"signal"`
		} `json:"leftover_processes"`
	}
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &sum))
	require.Len(t, sum.Leftovers, 3, "each is named")
	signals := map[string]int{}
	for _, l := range sum.Leftovers {
		require.Equal(t, "cloud-0", l.Of)
		require.Equal(t, "sleep", l.Command)
		require.Contains(t, left, strconv.Itoa(l.PID))
		signals[l.Signal]++
	}
	require.Equal(t, map[string]int{"SIGTERM": 2, "SIGKILL": 1}, signals, "the one ignoring SIGTERM needed SIGKILL")
	rep, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(rep), "outlived their role and were killed")
}

// running reports whether pid exists and has not ended (a zombie waits only for its parent).
func running(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(st, ')')
	return i < 0 || i+2 >= len(st) || st[i+2] != 'Z'
}
