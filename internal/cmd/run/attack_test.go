package run_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/wire"
)

// securitySummary is the part of summary.json that says how a run was secured and which data
// messages came for a finished episode.
type securitySummary struct {
	Security *record.Security  `json:"security"`
	Stale    map[string]uint64 `json:"stale"`
}

func readSecurity(t *testing.T, dir string) securitySummary {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var s securitySummary
	require.NoError(t, json.Unmarshal(data, &s))
	return s
}

// forger is an attacker on a server without permissions: it watches the plant's genuine yhat
// of one episode and, at the moment its timing says, publishes a forged yhat for every step
// 1..T-1 of that episode, with the plant's name, unsigned.
type forger struct {
	run, subject string
	ep, steps    int
	// trigger is the genuine step whose arrival starts the forgery; spread publishes one forged
	// message every 300 us instead of a burst at once.
	trigger int
	spread  bool

	nc     *nats.Conn
	mu     sync.Mutex
	fired  bool
	sent   int
	done   chan struct{}
	errPub error
}

func startForger(t *testing.T, url string, f *forger) *forger {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name("test-forger"))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	f.nc, f.done = nc, make(chan struct{})
	_, err = nc.Subscribe(f.subject, func(m *nats.Msg) {
		var msg wire.Message
		if wire.Decode(m.Data, &msg) != nil || msg.Episode != f.ep || msg.Step != f.trigger || msg.Sender != "plant.0" {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.fired {
			return
		}
		f.fired = true
		go f.forge()
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	return f
}

// forge publishes the forged yhat(1..T-1): values far from any genuine one, each its own.
func (f *forger) forge() {
	defer close(f.done)
	for s := 1; s < f.steps; s++ {
		m := wire.Message{V: wire.Version, Run: f.run, Episode: f.ep, Step: s, Sender: "plant.0", SentUnixNano: time.Now().UnixNano(),
			Kind: endpoint.StreamYhat, Values: []float64{1e4 + float64(s)}}
		data, err := wire.Encode(nil, &m, wire.JSON)
		if err == nil {
			err = f.nc.Publish(f.subject, data)
		}
		if err != nil {
			f.errPub = err
			return
		}
		f.sent++
		if f.spread {
			// spread, yet done within the next episode: a receiver compares late copies with
			// the current and the previous episode's, and the run (3 episodes of 100 lockstep
			// steps, tens of milliseconds) must still be listening when the last one comes
			time.Sleep(100 * time.Microsecond)
		}
	}
	f.errPub = f.nc.Flush()
}

// The one-episode forged burst, on an external server without permissions (any
// client may publish as the plant), over several seeds and timings: before the genuine
// copies (a burst on step 0, or spread out), in the middle of the episode, and after its
// last step (the receivers may have finished the episode or begun the next one), also in the
// last episode (the copies still queued when the run stops are compared too). Unsigned
// (--no-sign) the run never ends ok: every forged value a receiver saw is a conflict - the
// cloud and the eavesdropper each saw T-1 - the run is degraded, and --strict fails it
// (exit 1). Signed, the default on an external server, every forged message is dropped as
// signature and the results are those of an undisturbed run (the fast engine's).
func TestForgedBurstNeverSilent(t *testing.T) {
	srv := server(t)
	const runs, attacked, steps = 3, 1, 100 // cloud-vehicle: T = 100
	type attack struct {
		name    string
		seed    int
		trigger int
		spread  bool
		mode    string // "no-sign", "strict" (and --no-sign) or "" (the default: signed)
		last    bool   // attack the last episode (the genuine copies come after every core finished)
	}
	cases := []attack{
		{"burst before", 11, 0, false, "no-sign", false},
		{"spread before", 12, 0, true, "no-sign", false},
		{"mid episode", 13, 50, false, "no-sign", false},
		{"after the last step", 14, steps - 1, false, "no-sign", false},
		{"last episode, after its last step", 19, steps - 1, false, "no-sign", true},
		{"last episode, burst before", 20, 0, false, "no-sign", true},
		{"burst, strict", 15, 0, false, "strict", false},
		{"after, strict", 16, steps - 1, false, "strict", false},
		{"burst, signed", 17, 0, false, "", false},
		{"spread after, signed", 18, 50, true, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := fmt.Sprintf("forge%d", tc.seed)
			subj, _ := wire.NewSubjects(run)
			ep := attacked
			if tc.last {
				ep = runs - 1
			}
			f := startForger(t, srv.URL(), &forger{run: run, subject: subj.PlantYhat(0), ep: ep, steps: steps, trigger: tc.trigger, spread: tc.spread})
			dir := t.TempDir()
			args := []string{"run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(), "--runs", fmt.Sprint(runs), "--seed", fmt.Sprint(tc.seed),
				"--out", dir, "--run-id", run, "--log-level", "error", "--inflight", "1"} // the forger aims at one episode's messages
			switch tc.mode {
			case "no-sign":
				args = append(args, "--no-sign")
			case "strict":
				args = append(args, "--no-sign", "--strict")
			}
			code, _, stderr := runDpsim(t, 40*time.Second, args...)
			select {
			case <-f.done:
			case <-time.After(5 * time.Second):
				t.Fatal("the forger never fired")
			}
			require.NoError(t, f.errPub)
			require.Equal(t, steps-1, f.sent)
			sum, sec := readSummary(t, dir), readSecurity(t, dir)
			var conflicts uint64
			for _, l := range sum.links(t) {
				conflicts += l.Conflicts
			}
			require.NotNil(t, sec.Security)
			require.Equal(t, "external", sec.Security.Server)
			require.False(t, sec.Security.Permissions, "an external server's permissions are unknown")
			require.Equal(t, tc.mode == "strict", sec.Security.Strict)
			if tc.mode == "" {
				require.Equal(t, 0, code, stderr)
				require.Equal(t, "ok", sum.Status)
				require.True(t, sec.Security.Signed && sec.Security.Authenticated, "%+v", sec.Security)
				require.Zero(t, conflicts)
				for _, p := range []string{"cloud-0", "eavesdropper-0"} {
					require.Equal(t, uint64(steps-1), sum.Invalid[p].ByReason["signature"], "%s: %+v", p, sum.Invalid[p])
					require.Equal(t, uint64(steps-1), sum.Invalid[p].Dropped, "%s: only the forged ones", p)
				}
				fdir := t.TempDir()
				code, _, stderr := runDpsim(t, 30*time.Second, "run", scenarioPath("cloud-vehicle"), "--engine", "fast", "--runs", fmt.Sprint(runs),
					"--seed", fmt.Sprint(tc.seed), "--out", fdir, "--log-level", "error")
				require.Equal(t, 0, code, stderr)
				require.JSONEq(t, string(readSummary(t, fdir).Metrics), string(sum.Metrics), "the results of an undisturbed run")
				return
			}
			require.False(t, sec.Security.Signed || sec.Security.Authenticated, "%+v", sec.Security)
			// One conflict per forged value a receiver saw (every message it received beyond
			// the genuine ones: the plant's yhat, and for the eavesdropper the cloud's u too).
			seen := sum.proc(t, "cloud-0").Invalid.Received - runs*steps
			seen += sum.proc(t, "eavesdropper-0").Invalid.Received - 2*runs*steps
			t.Logf("the receivers saw %d forged copies; stale %v", seen, sec.Stale)
			require.Equal(t, seen, conflicts, "links %+v", sum.links(t))
			if !(tc.last && tc.trigger > 0) {
				// The run went on (or the forgery came first): both receivers saw all of it.
				require.Equal(t, uint64(2*(steps-1)), seen)
			}
			if seen == 0 {
				return // forged after the receivers stopped listening: nothing reached them
			}
			require.NotEqual(t, "ok", sum.Status, "a forged burst never ends ok")
			if tc.mode == "strict" {
				require.Equal(t, 1, code, stderr)
				require.Equal(t, "failed", sum.Status)
				require.Contains(t, sum.Error, "conflicting message")
				return
			}
			require.Equal(t, 0, code, stderr)
			require.Equal(t, "degraded", sum.Status)
			require.Contains(t, strings.Join(sum.Degraded, "\n"), fmt.Sprintf("%d conflicting message(s)", seen))
			rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
			require.NoError(t, err)
			require.Contains(t, string(rep), "conflicting message")
		})
	}
}

// Every invalid message is counted once: k wrong-dimension messages on the plant's subject
// during a run are k drops at each receiver (the cloud, the eavesdropper), and every genuine
// message is accepted - runs x T yhat at the cloud.
func TestInvalidCountedOnce(t *testing.T) {
	srv := server(t)
	const run, runs, steps, k = "once", 2, 100, 7
	subj, _ := wire.NewSubjects(run)
	pub, err := nats.Connect(srv.URL(), nats.Name("test-attacker"))
	require.NoError(t, err)
	t.Cleanup(pub.Close)
	wrongDim, err := wire.EncodeJSON(nil, &wire.Message{V: wire.Version, Run: run, Episode: 0, Step: 3, Sender: "plant.0", Kind: endpoint.StreamYhat, Values: []float64{1, 2, 3}})
	require.NoError(t, err)
	var once sync.Once
	fired := make(chan struct{})
	sniff(t, srv.URL(), func(subject string, _ []byte) {
		if subject != subj.PlantYhat(0) {
			return
		}
		once.Do(func() {
			go func() {
				defer close(fired)
				for range k {
					_ = pub.Publish(subj.PlantYhat(0), wrongDim)
				}
				_ = pub.Flush()
			}()
		})
	})
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 40*time.Second, "run", scenarioPath("cloud-vehicle"), "--nats-url", srv.URL(), "--no-sign",
		"--runs", fmt.Sprint(runs), "--out", dir, "--run-id", run, "--log-level", "error", "--inflight", "1") // counts one message per episode and step
	<-fired
	require.Equal(t, 0, code, stderr)
	sum := readSummary(t, dir)
	require.Equal(t, "ok", sum.Status)
	for _, name := range []string{"cloud-0", "eavesdropper-0"} {
		c := sum.proc(t, name).Invalid
		require.Equal(t, uint64(k), c.Dropped, "%s: %+v", name, c)
		require.Equal(t, uint64(k), c.ByReason["dim"], "%s: %+v", name, c)
		require.Equal(t, c.Received-k, c.Accepted, name)
	}
	require.Equal(t, uint64(runs*steps), sum.proc(t, "cloud-0").Invalid.Accepted, "every genuine yhat was accepted")
	// The drops are attributed to the sender the subject names, and the k messages are k, not
	// one count per receiver.
	for _, name := range []string{"cloud-0", "eavesdropper-0"} {
		require.Equal(t, map[string]map[string]uint64{"plant.0": {"dim": k}}, sum.proc(t, name).Invalid.BySender, name)
	}
	var found bool
	for _, p := range sum.Problems {
		if p.Kind == "invalid-messages" {
			found = true
			require.Equal(t, "plant-0", p.Process)
			require.Equal(t, uint64(k), p.Count, "each message once, not once per receiver")
			require.False(t, p.Fatal)
			require.Contains(t, p.Detail, "dim 7")
			require.Contains(t, p.Detail, "unsigned")
		}
	}
	require.True(t, found, "problems: %+v", sum.Problems)
	require.Contains(t, stderr, "plant-0")
}

// Signing is on by default with an external server, off with the embedded one; --no-sign
// turns the default off; contradictions are usage errors (exit 2).
func TestSigningDefaults(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		args   []string
		code   int
		signed bool
		server string
	}{
		{[]string{"--nats-url", srv.URL()}, 0, true, "external"},
		{[]string{"--nats-url", srv.URL(), "--no-sign"}, 0, false, "external"},
		{nil, 0, false, "embedded"},
		{[]string{"--sign"}, 0, true, "embedded"},
		{[]string{"--nats-url", srv.URL(), "--sign", "--no-sign"}, 2, false, ""},
		{[]string{"--no-sign"}, 2, false, ""},
		{[]string{"--engine", "fast", "--sign"}, 2, false, ""},
		{[]string{"--engine", "fast", "--no-sign", "--nats-url", srv.URL()}, 2, false, ""},
	} {
		dir := t.TempDir()
		args := append([]string{"run", scenarioPath("cloud-vehicle"), "--runs", "1", "--out", dir, "--log-level", "error"}, tc.args...)
		code, _, stderr := runDpsim(t, 30*time.Second, args...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, stderr)
		if tc.code != 0 {
			require.Contains(t, stderr, "sign", "%v: the error names the flag", tc.args)
			continue
		}
		sec := readSecurity(t, dir).Security
		require.NotNil(t, sec, "%v", tc.args)
		require.Equal(t, tc.signed, sec.Signed, "%v", tc.args)
		require.Equal(t, tc.signed, sec.Authenticated, "%v", tc.args)
		require.Equal(t, tc.server, sec.Server, "%v", tc.args)
		require.Equal(t, tc.server == "embedded", sec.Permissions, "%v", tc.args)
		require.Equal(t, "off", sec.TLS)
		if tc.signed {
			require.Zero(t, readSummary(t, dir).Invalid["cloud-0"].Dropped, "%v: the genuine messages verify", tc.args)
		}
	}
}
