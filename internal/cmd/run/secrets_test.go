package run_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/record"
)

// readSecrets reads summary.json's secrets.
func readSecrets(t *testing.T, dir string) record.SecretFiles {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var s struct {
		Secrets *record.SecretFiles `json:"secrets"`
	}
	require.NoError(t, json.Unmarshal(data, &s))
	require.NotNil(t, s.Secrets, "summary.json has no secrets")
	return *s.Secrets
}

// The plant's plan file (its x(0) and the run seed) is removed when the run ends - completed or
// interrupted - unless --keep-secrets; summary.json says which. The cloud's and the
// eavesdropper's plan files hold no secret and stay.
func TestSecretFilesRemovedAtTheEnd(t *testing.T) {
	plantPlan := filepath.Join("procs", "plant-0.plan.json")
	t.Run("completed", func(t *testing.T) {
		dir := t.TempDir()
		code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--runs", "3", "--out", dir, "--log-level", "warn")
		require.Equal(t, 0, code, stderr)
		require.NoFileExists(t, filepath.Join(dir, plantPlan))
		require.FileExists(t, filepath.Join(dir, "procs", "cloud-0.plan.json"))
		require.Equal(t, record.SecretFiles{Kept: false, Removed: 1, Files: []string{plantPlan}}, readSecrets(t, dir))
	})
	t.Run("kept", func(t *testing.T) {
		dir := t.TempDir()
		code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--runs", "3", "--out", dir, "--log-level", "warn", "--keep-secrets")
		require.Equal(t, 0, code, stderr)
		require.FileExists(t, filepath.Join(dir, plantPlan))
		require.Equal(t, record.SecretFiles{Kept: true, Removed: 0, Files: []string{plantPlan}}, readSecrets(t, dir))
	})
	t.Run("interrupted", func(t *testing.T) {
		srv := server(t)
		on, reached, _ := watch(2, "plant.0")
		sniff(t, srv.URL(), on)
		dir := t.TempDir()
		l := start(t, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(), "--no-sign", "--runs", "100000", "--out", dir, "--log-level", "warn")
		select {
		case <-reached:
		case <-time.After(30 * time.Second):
			_ = l.cmd.Process.Kill()
			t.Fatalf("the run never reached episode 2: %s", l.stderr.String())
		}
		require.FileExists(t, filepath.Join(dir, plantPlan), "the plan file is there while the run goes on")
		require.NoError(t, l.cmd.Process.Signal(os.Interrupt))
		require.Equal(t, 1, l.wait(t, 30*time.Second), l.stderr.String())
		require.Equal(t, "interrupted", readSummary(t, dir).Status)
		require.NoFileExists(t, filepath.Join(dir, plantPlan))
		require.Equal(t, record.SecretFiles{Kept: false, Removed: 1, Files: []string{plantPlan}}, readSecrets(t, dir))
	})
}

// The run seed of the no-secret test: distinctive, so that finding its digits means finding it.
const secretSeed = "7318029946511"

// child is a role process of a run as the test saw it: its command line and, where the test
// could read it, its environment.
type child struct {
	argv []string
	env  []string
}

// childProcs reads the command line and environment of every running child of pid from /proc.
func childProcs(pid int) map[int]child {
	out := map[int]child{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cpid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ')'
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, err1 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		environ, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err1 != nil || err2 != nil || len(cmdline) == 0 {
			continue
		}
		out[cpid] = child{argv: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"),
			env: strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")}
	}
	return out
}

// envSecrets returns the secret values an environment hands a process: its NATS password,
// signing seed and curve seed (the environment is their designed channel).
func envSecrets(env []string) []string {
	var out []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if v != "" && (k == bus.EnvPassword || k == bus.EnvSignSeed || k == bus.EnvX0Seed) {
			out = append(out, v)
		}
	}
	return out
}

// requireNoSecret fails when text holds one of secrets.
func requireNoSecret(t *testing.T, where string, text []byte, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if bytes.Contains(text, []byte(s)) {
			t.Errorf("%s holds the secret %q", where, s)
		}
	}
}

// requireOutputsClean checks every file under dir (what the run left) for the secrets; the run
// seed may be in summary.json only - the one place designed to hold it ("without --seed, seed
// from crypto/rand and record it": the README; summary.json is how a run is reproduced) - and no
// file designed to hold a secret (plan files of the plant and agents, credentials files,
// checkpoints) may be left: they go when the run ends (no --keep-secrets).
func requireOutputsClean(t *testing.T, dir string, secrets []string) {
	t.Helper()
	files := 0
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		rel, _ := filepath.Rel(dir, path)
		require.False(t, launch.IsSecretFile(d.Name()), "%s holds secrets and outlived the run", rel)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		if rel == "summary.json" {
			requireNoSecret(t, rel, data, secrets[1:]) // secrets[0] is the run seed
			return nil
		}
		requireNoSecret(t, rel, data, secrets)
		return nil
	}))
	require.Greater(t, files, 5)
}

// No secret on any command line, nor anywhere the run writes: neither the run seed nor any
// NATS password (nor signing or curve seed) is in a child's argv (read from /proc while the run
// goes on), the launcher's stdout or stderr, the children's logs or any file under OUT - but
// summary.json's seed, by design. The children's environment is where their secrets are meant
// to be, so it is where the test finds them.
func TestNoSecretOnAnyCommandLine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the children's command lines from /proc")
	}
	dir := t.TempDir()
	l := start(t, "run", scenarioPath("cloud-vehicle"), "--seed", secretSeed, "--sign", "--runs", "20", "--inflight", "1", "--out", dir,
		"--log-level", "debug")
	seen := map[int]child{}
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < 3 && time.Now().Before(deadline) {
		for pid, c := range childProcs(l.cmd.Process.Pid) {
			if len(c.argv) > 1 && slices.Contains([]string{"plant", "cloud", "eavesdropper"}, c.argv[1]) {
				seen[pid] = c
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	require.Equal(t, 0, l.wait(t, 60*time.Second), l.stderr.String())
	require.Len(t, seen, 3, "the three role processes, seen while they ran")
	secrets := []string{secretSeed}
	passwords := 0
	for _, c := range seen {
		for _, kv := range c.env {
			if strings.HasPrefix(kv, bus.EnvPassword+"=") {
				passwords++
			}
		}
		secrets = append(secrets, envSecrets(c.env)...)
	}
	require.Equal(t, 3, passwords, "every child got its password through its environment")
	for _, c := range seen {
		requireNoSecret(t, "the argv of "+c.argv[1], []byte(strings.Join(c.argv, " ")), secrets)
	}
	requireNoSecret(t, "the launcher's stdout", l.stdout.Bytes(), secrets)
	requireNoSecret(t, "the launcher's stderr", l.stderr.Bytes(), secrets)
	requireOutputsClean(t, dir, secrets)
}

// The same with --attach: the processes the test starts from commands.sh (exactly their command
// lines) get their secrets from the credentials files only, which are gone at the end; neither
// commands.sh, nor their output, nor any file under OUT holds a secret.
func TestNoSecretOnAnyCommandLineAttach(t *testing.T) {
	dir := t.TempDir()
	l := start(t, "run", scenarioPath("cloud-vehicle"), "--attach", "--attach-timeout", "60s", "--seed", secretSeed, "--sign", "--runs", "5",
		"--out", dir, "--log-level", "debug")
	commands := filepath.Join(dir, "procs", launch.AttachDir, launch.CommandsFile)
	require.Eventually(t, func() bool { _, err := os.Stat(commands); return err == nil }, 30*time.Second, 10*time.Millisecond, "commands.sh")
	script, err := os.ReadFile(commands)
	require.NoError(t, err)
	secrets := []string{secretSeed}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(script))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), " &")
		if line == "" || strings.HasPrefix(line, "#") || line == "wait" {
			continue
		}
		lines = append(lines, line)
		fields := strings.Fields(line)
		i := slices.Index(fields, "--credentials")
		require.Positive(t, i, "%s: no --credentials", line)
		c, err := bus.ReadCredentials(fields[i+1])
		require.NoError(t, err)
		require.NotEmpty(t, c.Password, "%s: no password", line)
		for _, s := range []string{c.Password, c.SignSeed, c.X0Seed} {
			if s != "" {
				secrets = append(secrets, s)
			}
		}
	}
	require.Len(t, lines, 3)
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for _, line := range lines {
		cmd := exec.Command("sh", "-c", line)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		procs, outs = append(procs, cmd), append(outs, &out)
	}
	require.Equal(t, 0, l.wait(t, 60*time.Second), l.stderr.String())
	for i, cmd := range procs {
		require.NoError(t, cmd.Wait(), outs[i].String())
		requireNoSecret(t, "the output of "+lines[i], outs[i].Bytes(), secrets)
		requireNoSecret(t, "the command line "+lines[i], []byte(lines[i]), secrets)
	}
	requireNoSecret(t, "the launcher's stdout", l.stdout.Bytes(), secrets)
	requireNoSecret(t, "the launcher's stderr", l.stderr.Bytes(), secrets)
	requireOutputsClean(t, dir, secrets)
	require.FileExists(t, commands, "commands.sh, the record of how the roles were started, stays")
}
