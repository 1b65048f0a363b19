package run_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// childrenOf returns the argv and environment of every dpsim role process of a run.
func childrenOf(t *testing.T, run string) (argv, env []string) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), run) || strings.Contains(string(cmd), "\x00run\x00") {
			continue // not of this run, or the launcher itself (its argv is what the user typed)
		}
		argv = append(argv, strings.ReplaceAll(string(cmd), "\x00", " "))
		if en, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil {
			env = append(env, strings.ReplaceAll(string(en), "\x00", "\n"))
		}
	}
	return argv, env
}

// grepTree fails if secret occurs in any file under dir.
func grepTree(t *testing.T, dir, secret string) {
	t.Helper()
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NotContains(t, string(data), secret, "the secret is in %s", path)
		n++
		return nil
	}))
	require.Positive(t, n)
}

// No secret in any output, log or argv: neither a password written in --nats-url for an
// external server, nor the per-process passwords of the embedded server (read here from a
// child's environment, where they are meant to be).
func TestNoSecretInOutputs(t *testing.T) {
	const secret = "S3cretPassw0rdOfTheTest"
	ext, err := bus.NewUser("tester", []string{">"}, []string{">"})
	require.NoError(t, err)
	ext.Password = secret
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{Users: []bus.User{ext}})
	require.NoError(t, err)
	defer srv.Shutdown()
	_, hostPort, _ := strings.Cut(srv.URL(), "://")
	url := "nats://tester:" + secret + "@" + hostPort

	for _, tc := range []struct {
		name string
		args []string
	}{{"external", []string{"--nats-url", url}}, {"embedded", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, run := t.TempDir(), "sec"+tc.name
			args := append([]string{"run", scenarioPath("cloud-vehicle"), "--runs", "150", "--out", dir, "--run-id", run}, tc.args...)
			l := start(t, args...)
			var argv, env []string
			deadline := time.Now().Add(20 * time.Second)
			for len(argv) < 3 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				argv, env = childrenOf(t, run)
			}
			code := l.wait(t, 90*time.Second)
			require.Equal(t, 0, code, l.stderr.String())
			require.Len(t, argv, 3, "plant, cloud and eavesdropper were running")
			secrets := []string{secret}
			if tc.name == "embedded" {
				secrets = nil
				for _, e := range env {
					for _, line := range strings.Split(e, "\n") {
						if v, ok := strings.CutPrefix(line, bus.EnvPassword+"="); ok {
							secrets = append(secrets, v)
						}
					}
				}
				require.Len(t, secrets, 3, "every child got its own password through its environment")
				require.NotEqual(t, secrets[0], secrets[1])
			}
			for _, s := range secrets {
				for _, a := range argv {
					require.NotContains(t, a, s, "a secret in a child's argv")
				}
				grepTree(t, dir, s)
				require.NotContains(t, l.stdout.String()+l.stderr.String(), s)
			}
			sum := readSummary(t, dir)
			require.Equal(t, "ok", sum.Status)
			if tc.name == "external" {
				require.Equal(t, srv.URL(), sum.NATSURL, "the address, without its credentials")
			}
		})
	}
}

// The forged-future-step attack, on an external server without permissions: a message with
// the plant's name and subject for a later step of the current episode, published before the
// genuine one, no longer corrupts a result silently - unsigned (--no-sign), the receivers count
// the conflict when the genuine copy arrives, the run ends degraded naming it, and --strict
// fails it; signed (--sign, the default on an external server) the forgery is dropped on
// arrival (no signature of the plant's key) and the run is ok.
func TestForgedFutureStepIsFlagged(t *testing.T) {
	srv := server(t)
	for _, mode := range []string{"", "strict", "sign"} {
		strict := mode == "strict"
		run := "forge" + mode
		subj, _ := wire.NewSubjects(run)
		attacker, err := nats.Connect(srv.URL(), nats.Name("test-forger"))
		require.NoError(t, err)
		forged := map[int]bool{}
		var mu sync.Mutex
		_, err = attacker.Subscribe(subj.PlantYhat(0), func(m *nats.Msg) {
			var msg wire.Message
			if wire.Decode(m.Data, &msg) != nil || msg.Step != 1 {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if forged[msg.Episode] {
				return
			}
			forged[msg.Episode] = true
			f := wire.Message{V: wire.Version, Run: run, Episode: msg.Episode, Step: 90, Sender: "plant.0", SentUnixNano: time.Now().UnixNano(),
				Kind: endpoint.StreamYhat, Values: []float64{1e6}}
			data, _ := wire.Encode(nil, &f, wire.JSON)
			_ = attacker.Publish(subj.PlantYhat(0), data)
		})
		require.NoError(t, err)
		require.NoError(t, attacker.Flush())
		dir := t.TempDir()
		args := []string{"run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(), "--runs", "5", "--out", dir, "--run-id", run, "--log-level", "warn"}
		if mode != "" {
			args = append(args, "--"+mode)
		}
		if mode != "sign" {
			args = append(args, "--no-sign")
		}
		code, _, stderr := runDpsim(t, 60*time.Second, args...)
		attacker.Close()
		sum := readSummary(t, dir)
		var conflicts uint64
		for _, l := range sum.links(t) {
			conflicts += l.Conflicts
		}
		if mode == "sign" {
			// Signed: the forged messages never get in - dropped as signature - and the run is
			// the genuine one.
			require.Equal(t, 0, code, stderr)
			require.Equal(t, "ok", sum.Status)
			require.Zero(t, conflicts)
			require.Positive(t, sum.Invalid["cloud-0"].ByReason["signature"], "%v", sum.Invalid)
			continue
		}
		require.Positive(t, conflicts, "the genuine copies after the forged ones are conflicts; invalid: %v", sum.Invalid)
		if strict {
			require.NotEqual(t, 0, code)
			require.Equal(t, "failed", sum.Status)
			require.Contains(t, sum.Error, "conflicting message")
		} else {
			require.Equal(t, 0, code, stderr)
			require.Equal(t, "degraded", sum.Status)
			require.Contains(t, strings.Join(sum.Degraded, "\n"), "conflicting message")
		}
	}
}

// A whole scenario over TLS (--tls auto: the embedded server requires TLS with a throwaway CA
// every process trusts) gives the fast engine's numbers; --tls is checked.
func TestScenarioOverTLS(t *testing.T) {
	dir, fdir := t.TempDir(), t.TempDir()
	code, _, stderr := runDpsim(t, 90*time.Second, "run", scenarioPath("consensus-gaussian"), "--runs", "4", "--tls", "auto", "--out", dir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runDpsim(t, 30*time.Second, "run", scenarioPath("consensus-gaussian"), "--runs", "4", "--engine", "fast", "--out", fdir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	sum := readSummary(t, dir)
	require.Equal(t, "ok", sum.Status)
	require.True(t, strings.HasPrefix(sum.NATSURL, "tls://"), sum.NATSURL)
	require.JSONEq(t, string(readSummary(t, fdir).Metrics), string(sum.Metrics))
	// an external server over TLS, trusted through --tls-ca
	files, err := bus.AutoTLS(t.TempDir())
	require.NoError(t, err)
	ext, err := bus.StartEmbedded(bus.EmbeddedOptions{TLS: files})
	require.NoError(t, err)
	defer ext.Shutdown()
	edir := t.TempDir()
	code, _, stderr = runDpsim(t, 90*time.Second, "run", scenarioPath("consensus-gaussian"), "--runs", "4", "--nats-url", ext.URL(),
		"--tls-ca", files.CA, "--out", edir, "--log-level", "warn")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, string(readSummary(t, fdir).Metrics), string(readSummary(t, edir).Metrics))
	for _, bad := range [][]string{{"--tls", "on"}, {"--tls", "auto", "--nats-url", "nats://127.0.0.1:1"}, {"--tls-ca", "/nonexistent.pem", "--nats-url", "nats://127.0.0.1:1"}} {
		code, _, stderr := runDpsim(t, 30*time.Second, append([]string{"run", scenarioPath("cloud-vehicle"), "--out", t.TempDir()}, bad...)...)
		require.Equal(t, 2, code, "%v: %s", bad, stderr)
	}
}

// A flood on a shared server: 200,000 messages on the plant's subject while a run goes on.
// Whatever the receivers' clients drop because they fell behind is counted per process
// (slow_consumer_dropped, messages) and named in the degraded status - never silent.
func TestFloodCountsSlowConsumers(t *testing.T) {
	srv := server(t)
	const run = "flood"
	subj, _ := wire.NewSubjects(run)
	dir := t.TempDir()
	l := start(t, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(), "--runs", "60", "--out", dir, "--run-id", run, "--log-level", "warn", "--timeout", "500ms")
	flooder, err := nats.Connect(srv.URL(), nats.Name("test-flooder"))
	require.NoError(t, err)
	defer flooder.Close()
	time.Sleep(700 * time.Millisecond) // the run is going
	junk := []byte(`{"v":1,"run":"flood","ep":0,"step":1,"from":"plant.0","sent":0,"kind":"yhat","vals":[1]}`)
	for i := 0; i < 200000; i++ {
		_ = flooder.Publish(subj.PlantYhat(0), junk)
	}
	_ = flooder.Flush()
	code := l.wait(t, 120*time.Second)
	sum := readSummary(t, dir)
	var dropped int
	for _, p := range sum.Processes {
		dropped += p.SlowConsumerDropped
	}
	t.Logf("exit %d, status %s, slow-consumer drops %d, degraded %v", code, sum.Status, dropped, sum.Degraded)
	if dropped == 0 {
		t.Skip("no client fell behind on this machine: nothing to count")
	}
	require.Contains(t, []string{"degraded", "failed"}, sum.Status)
	if sum.Status == "degraded" {
		require.Contains(t, strings.Join(sum.Degraded, "\n"), "slow consumers")
	} else {
		require.Contains(t, sum.Error, "slow consumers")
	}
}

// A forged ctl.stop "from the launcher" on a server that lets anyone publish stops a run -
// unless the run signs: with --sign the processes verify the launcher's signature on
// ctl.episode and ctl.stop, drop the forgery (counted) and the run completes.
func TestForgedStopRefusedWhenSigned(t *testing.T) {
	srv := server(t)
	const run = "forgestop"
	subj, _ := wire.NewSubjects(run)
	attacker, err := nats.Connect(srv.URL(), nats.Name("test-forger"))
	require.NoError(t, err)
	defer attacker.Close()
	var once sync.Once
	_, err = attacker.Subscribe(subj.PlantYhat(0), func(m *nats.Msg) {
		once.Do(func() {
			stop, _ := wire.Encode(nil, contract.StopMessage(run), wire.JSON)
			_ = attacker.Publish(subj.CtlStop(), stop)
			ep, _ := wire.Encode(nil, contract.EpisodeMessage(run, 77, false), wire.JSON)
			_ = attacker.Publish(subj.CtlEpisode(), ep)
		})
	})
	require.NoError(t, err)
	require.NoError(t, attacker.Flush())
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(), "--runs", "5",
		"--out", dir, "--run-id", run, "--log-level", "warn", "--sign")
	require.Equal(t, 0, code, stderr)
	sum := readSummary(t, dir)
	require.Equal(t, "ok", sum.Status)
	require.Equal(t, 5, sum.Points[0].Metrics.Runs)
	var refused uint64
	for _, p := range sum.Processes {
		refused += p.CtlInvalid.ByReason["signature"]
	}
	require.GreaterOrEqual(t, refused, uint64(3), "every process dropped the forged ctl.stop")
}

// Piped output gets plain progress lines (here only the last: the run is short), not silence;
// --progress=false silences them.
func TestPlainProgress(t *testing.T) {
	code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--runs", "3", "--engine", "fast", "--out", t.TempDir())
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "dpsim run: cloud-vehicle: 3/3 episodes (100%)")
	code, _, stderr = runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--runs", "3", "--engine", "fast", "--out", t.TempDir(), "--progress=false")
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stderr, "episodes (")
}

// An external server that cannot be reached is retried for --connect-retry, then the run fails
// with summary.json and report.md saying why.
func TestUnreachableServerReported(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 60*time.Second, "run", scenarioPath("cloud-vehicle"), "--nats-url", "nats://127.0.0.1:1",
		"--connect-retry", "1s", "--out", dir)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "gave up after")
	sum := readSummary(t, dir)
	require.Equal(t, "failed", sum.Status)
	require.Contains(t, sum.Error, "no servers available")
	rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(rep), "**Status: failed**")
	require.Contains(t, string(rep), "no servers available")
}
