package run_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsim/dpsim/internal/runner"
	"github.com/stretchr/testify/require"
)

// killedFastRun starts the fast engine on resumeSweep with args into a new OUT and kills the
// launcher once point 0 completed: OUT holds a resume state with one point done.
func killedFastRun(t *testing.T, args ...string) string {
	dir := t.TempDir()
	l := start(t, append(args, "--out", dir)...)
	var state struct {
		Done []json.RawMessage `json:"done"`
	}
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(dir, runner.ResumeFile))
		return err == nil && json.Unmarshal(data, &state) == nil && len(state.Done) == 1
	}, 120*time.Second, 5*time.Millisecond, "point 0 never completed: %s", l.stderr.String())
	require.NoError(t, l.cmd.Process.Kill())
	_ = l.wait(t, 10*time.Second)
	return dir
}

// resignResume writes state as dir's resume.json, signed with dir's resume.key the way the
// file documents it (HMAC-SHA256 of the bytes before the last member, "digest"): what someone
// who can read the key could do.
func resignResume(t *testing.T, dir string, state map[string]any) {
	t.Helper()
	key, err := os.ReadFile(filepath.Join(dir, runner.ResumeKeyFile))
	require.NoError(t, err)
	delete(state, "digest")
	data, err := json.Marshal(state)
	require.NoError(t, err)
	body := data[:len(data)-1]
	m := hmac.New(sha256.New, key)
	m.Write(body)
	out := append(append([]byte{}, body...), `,"digest":"hmac-sha256:`+hex.EncodeToString(m.Sum(nil))+`"}`...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, runner.ResumeFile), out, 0o600))
}

// readState returns dir's resume.json as a generic object (numbers kept exact).
func readState(t *testing.T, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, runner.ResumeFile))
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var st map[string]any
	require.NoError(t, dec.Decode(&st))
	return st
}

// copyDir copies the regular files of src (one level, and procs/) into a new directory.
func copyDir(t *testing.T, parent, src string) string {
	t.Helper()
	dst, err := os.MkdirTemp(parent, "out-")
	require.NoError(t, err)
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		fi, err := e.Info()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), data, fi.Mode().Perm()))
	}
	return dst
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestResumeRefusesTamperedState: resume.json is input from whoever can write OUT.
// Every way of putting a command or a path in it - a flag that is a command (--role, --attach,
// a hook-like or unknown flag), a path flag (--out, TLS files, the scenario), a file name with a
// separator, "..", absolute or a link - is refused with exit 2 and an error naming the field,
// even when the file is re-signed with its key; nothing runs (no marker file) and nothing
// outside OUT is read, written, cut or removed (the victim's bytes and mtime stay). An edit not
// re-signed, a missing digest, a planted key and a trace whose bytes are not the recorded ones
// are refused too; the untouched state still resumes to the results of an uninterrupted run.
func TestResumeRefusesTamperedState(t *testing.T) {
	path := writeScenario(t, resumeSweep)
	args := []string{"run", path, "--engine", "fast", "--runs", "3000", "--trace-episodes", "5", "--log-level", "warn"}
	root := t.TempDir()
	victim := filepath.Join(root, "victim.txt")
	require.NoError(t, os.WriteFile(victim, []byte("the victim's own bytes\n"), 0o644))
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	require.NoError(t, os.Chtimes(victim, old, old))
	marker := filepath.Join(root, "PWNED")
	inject := "touch " + marker + "; exec dpsim cloud"

	dir := killedFastRun(t, args...)
	// a point in progress with a trace: what a NATS run killed inside point 1 records
	traceBytes := []byte(`{"episode":0}` + "\n")
	current := func(name string) map[string]any {
		return map[string]any{"point": 1, "episodes": 1, "metrics_sha256": strings.Repeat("a", 64),
			"trace_file": name, "trace_offset": len(traceBytes), "trace_sha256": sha256Hex(traceBytes)}
	}
	setFlag := func(name, v string) func(*testing.T, map[string]any, string) {
		return func(_ *testing.T, st map[string]any, _ string) { st["flags"].(map[string]any)[name] = v }
	}
	process := func(field, v string) func(*testing.T, map[string]any, string) {
		return func(_ *testing.T, st map[string]any, _ string) {
			p := map[string]any{"role": "cloud", "id": 0, "name": "cloud.0", "point": 0}
			p[field] = v
			st["done"].([]any)[0].(map[string]any)["processes"] = []any{p}
		}
	}
	for _, tc := range []struct {
		name   string
		edit   func(t *testing.T, st map[string]any, out string)
		field  string // what the error names
		resign bool
		extra  []string // more arguments of the resumption
	}{
		{"role command", setFlag("role", "cloud.0="+inject), "flags.role", true, nil},
		{"attach", setFlag("attach", "true"), "flags.attach", true, nil},
		{"unknown hook-like flag", setFlag("exec-hook", inject), "flags.exec-hook", true, nil},
		{"out path", setFlag("out", root), "flags.out", true, nil},
		{"resume path", setFlag("resume", root), "flags.resume", true, nil},
		{"tls file", setFlag("tls-ca", victim), "flags.tls-ca", true, nil},
		{"nats url", setFlag("nats-url", "nats://evil:4222"), "flags.nats-url", true, nil},
		{"spawned workers", setFlag("spawn-workers", "4"), "flags.spawn-workers", true, nil},
		{"command in a value", setFlag("engine", "fast;"+inject), "flags.engine", true, nil},
		{"path in a value", setFlag("encoding", "../victim.txt"), "flags.encoding", true, nil},
		{"seed as a flag", setFlag("seed", "1"), "flags.seed", true, nil},
		{"scenario path", func(_ *testing.T, st map[string]any, _ string) { st["scenario_file"] = victim }, `"scenario_file"`, true, nil},
		{"unknown member", func(_ *testing.T, st map[string]any, _ string) { st["exec"] = inject }, `"exec"`, true, nil},
		{"role digest", func(_ *testing.T, st map[string]any, _ string) {
			st["given_sha256"].(map[string]any)["role"] = sha256Hex([]byte("role\x00cloud.0=" + inject + "\n"))
		}, "--role is not the run's", true, nil},
		{"role given now", func(*testing.T, map[string]any, string) {}, "--role is not the run's", false, []string{"--role", "cloud.0=" + inject}},
		{"program of a done process", process("program", inject), "done[0].processes[0].program", true, nil},
		{"log file of a done process", process("log_file", "../victim.txt"), "done[0].processes[0].log_file", true, nil},
		{"done trace dotdot", func(_ *testing.T, st map[string]any, _ string) {
			st["done"].([]any)[0].(map[string]any)["traces"] = []any{"../victim.txt"}
		}, "done[0].traces[0]", true, nil},
		{"trace dotdot", func(_ *testing.T, st map[string]any, _ string) { st["current"] = current("../victim.txt") }, "current.trace_file", true, nil},
		{"trace absolute", func(_ *testing.T, st map[string]any, _ string) { st["current"] = current(victim) }, "current.trace_file", true, nil},
		{"trace of another point", func(t *testing.T, st map[string]any, out string) {
			require.NoError(t, os.WriteFile(filepath.Join(out, "trace-p02.jsonl"), traceBytes, 0o600))
			st["current"] = current("trace-p02.jsonl")
		}, "current.trace_file", true, nil},
		{"trace symlink", func(t *testing.T, st map[string]any, out string) {
			_ = os.Remove(filepath.Join(out, "trace-p01.jsonl")) // there if the kill came after point 1 started
			require.NoError(t, os.Symlink(victim, filepath.Join(out, "trace-p01.jsonl")))
			c := current("trace-p01.jsonl")
			victimBytes, _ := os.ReadFile(victim)
			c["trace_offset"], c["trace_sha256"] = 5, sha256Hex(victimBytes[:5])
			st["current"] = c
		}, "symbolic link", true, nil},
		{"trace edited", func(t *testing.T, st map[string]any, out string) {
			require.NoError(t, os.WriteFile(filepath.Join(out, "trace-p01.jsonl"), []byte(`{"episode":9}`+"\n"), 0o600))
			st["current"] = current("trace-p01.jsonl")
		}, "current.trace_sha256", true, nil},
		{"value edited, not re-signed", func(_ *testing.T, st map[string]any, _ string) {
			st["flags"].(map[string]any)["runs"] = "3001"
		}, "does not match its digest", false, nil},
		{"digest removed", func(_ *testing.T, st map[string]any, _ string) {}, "has no digest", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := copyDir(t, root, dir)
			st := readState(t, out)
			tc.edit(t, st, out)
			switch {
			case tc.resign:
				resignResume(t, out, st)
			case tc.name == "digest removed":
				delete(st, "digest")
				data, err := json.Marshal(st)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(out, runner.ResumeFile), data, 0o600))
			case tc.extra == nil:
				delete(st, "digest")
				data, err := os.ReadFile(filepath.Join(out, runner.ResumeFile))
				require.NoError(t, err)
				edited := bytes.Replace(data, []byte(`"runs":"3000"`), []byte(`"runs":"3001"`), 1)
				require.NotEqual(t, data, edited)
				require.NoError(t, os.WriteFile(filepath.Join(out, runner.ResumeFile), edited, 0o600))
			}
			code, _, stderr := runDpsim(t, 60*time.Second, append([]string{"run", path, "--resume", out}, tc.extra...)...)
			require.Equal(t, 2, code, stderr)
			require.Contains(t, stderr, tc.field)
			_, err := os.Stat(marker)
			require.ErrorIs(t, err, os.ErrNotExist, "nothing was executed")
			got, err := os.ReadFile(victim)
			require.NoError(t, err)
			require.Equal(t, "the victim's own bytes\n", string(got), "the file outside OUT is untouched")
			fi, err := os.Stat(victim)
			require.NoError(t, err)
			require.True(t, fi.ModTime().Equal(old), "the file outside OUT was not written: mtime %v", fi.ModTime())
			entries, err := os.ReadDir(root)
			require.NoError(t, err)
			for _, e := range entries {
				require.True(t, e.Name() == "victim.txt" || strings.HasPrefix(e.Name(), "out-"), "nothing new outside OUT: %s", e.Name())
			}
		})
	}

	// The key: planted by someone else (readable by others) or a link, the state is refused.
	t.Run("key readable by others", func(t *testing.T) {
		out := copyDir(t, root, dir)
		require.NoError(t, os.Chmod(filepath.Join(out, runner.ResumeKeyFile), 0o644))
		code, _, stderr := runDpsim(t, 60*time.Second, "run", path, "--resume", out)
		require.Equal(t, 2, code, stderr)
		require.Contains(t, stderr, "want no access for group and others")
	})
	t.Run("key link", func(t *testing.T) {
		out := copyDir(t, root, dir)
		key := filepath.Join(out, runner.ResumeKeyFile)
		require.NoError(t, os.Rename(key, filepath.Join(root, "key")))
		require.NoError(t, os.Symlink(filepath.Join(root, "key"), key))
		code, _, stderr := runDpsim(t, 60*time.Second, "run", path, "--resume", out)
		require.Equal(t, 2, code, stderr)
		require.Contains(t, stderr, "symbolic link")
		require.NoError(t, os.Remove(filepath.Join(root, "key")))
	})

	// The untouched state resumes, with an uninterrupted run's results, and leaves no state.
	ref := t.TempDir()
	code, _, stderr := runDpsim(t, 180*time.Second, append(args, "--out", ref)...)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runDpsim(t, 180*time.Second, "run", path, "--resume", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	got := readSummary(t, dir)
	require.Equal(t, "ok", got.Status, got.Error)
	require.JSONEq(t, string(readSummary(t, ref).Metrics), string(got.Metrics))
	for _, f := range []string{runner.ResumeFile, runner.ResumeKeyFile} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.ErrorIs(t, err, os.ErrNotExist, "%s removed by the completed run", f)
	}
}
