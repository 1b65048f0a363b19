package roleproc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

var dpsimBin string

func TestMain(m *testing.M) { os.Exit(dpsimtest.Main(m, &dpsimBin)) }

// doneSeen is one ctl.done a test launcher heard.
type doneSeen struct {
	ep   int
	next int64
}

// play is what a test launcher plays: its processes (their role and flags), their extra
// environment by role, and the private x(0) of each episode (nil: the scenario's).
type play struct {
	procs [][]string
	env   map[string][]string
	x0    func(ep int) []float64
	sign  string // the launcher's signing seed ("": it does not sign)
	// after, if set, hears of each group once every process reported it done, with the
	// ctl.done heard so far
	after func(g [2]int, dones map[string][]doneSeen)
}

// playGroups runs real role processes against a real embedded server, plays the groups of
// episodes ([first, count]; count 1 as the single ctl.episode) as a launcher does - the next
// group once every process reported the last one done - stops them, and returns each
// process's ctl.done in the order they came.
func playGroups(t *testing.T, srv *bus.Embedded, run, dir string, pl play, groups [][2]int) map[string][]doneSeen {
	procs := pl.procs
	t.Helper()
	subj, err := wire.NewSubjects(run)
	require.NoError(t, err)
	var opts []bus.Option
	if pl.sign != "" {
		opts = append(opts, bus.WithSigner(pl.sign))
	}
	c, err := bus.Connect(srv.URL(), "test-launcher", opts...)
	require.NoError(t, err)
	defer c.Close()
	var mu sync.Mutex
	ready, dones := map[string]bool{}, map[string][]doneSeen{}
	o := bus.CtlOptions{Expect: wire.Expect{Run: run, Episode: wire.AnyEpisode}}
	_, err = c.SubscribeCtl(subj.AllCtlWord(wire.CtlReady), o, func(_ string, m *wire.Message) {
		mu.Lock()
		ready[m.Sender] = true
		mu.Unlock()
	})
	require.NoError(t, err)
	_, err = c.SubscribeCtl(subj.AllCtlWord(wire.CtlDone), o, func(_ string, m *wire.Message) {
		d, err := contract.ParseDone(m)
		if err == nil {
			mu.Lock()
			dones[m.Sender] = append(dones[m.Sender], doneSeen{m.Episode, d.TraceNext})
			mu.Unlock()
		}
	})
	require.NoError(t, err)
	require.NoError(t, c.Flush(time.Second))
	// the private x(0)s are sealed to the plant (the only process here that receives one)
	sealer, plantKey := curveKey(t), curveKey(t)
	to := []contract.X0Recipient{{Endpoint: endpoint.Endpoint{Role: endpoint.Plant}, Last: 1, Public: plantKey.Public}}
	var cmds []*exec.Cmd
	for _, a := range procs {
		a = append(a, "--nats-url", srv.URL(), "--run", run, "--out", dir, "--timeout", "10s", "--idle-timeout", "30s", "--fault-seed", "99", "--parent-pid", strconv.Itoa(os.Getpid()))
		cmd := exec.Command(dpsimBin, a...)
		cmd.Env = append(os.Environ(), pl.env[a[0]]...)
		if a[0] == "plant" {
			cmd.Env = append(cmd.Env, plantKey.Env(sealer.Public)...)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			if t.Failed() {
				t.Logf("%v:\n%s", a[0], stderr.String())
			}
		})
		cmds = append(cmds, cmd)
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			require.False(t, time.Now().After(deadline), "timed out waiting for %s", what)
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitUntil("ctl.ready", func() bool { return len(ready) == len(procs) })
	played := 0
	for _, g := range groups {
		private := pl.x0 != nil
		m := contract.EpisodeMessage(run, g[0], private)
		if g[1] > 1 {
			m = contract.EpisodesMessage(run, g[0], g[1], private)
		}
		require.NoError(t, c.Publish(subj.CtlEpisode(), m))
		for ep := g[0]; private && ep < g[0]+g[1]; ep++ {
			x0, err := contract.X0Message(run, ep, pl.x0(ep), sealer, to)
			require.NoError(t, err)
			require.NoError(t, c.Publish(subj.ChallengerX0(), x0))
		}
		played += g[1]
		waitUntil(fmt.Sprintf("ctl.done of episodes up to %d", g[0]+g[1]-1), func() bool {
			for name := range ready {
				if len(dones[name]) < played {
					return false
				}
			}
			return true
		})
		if pl.after != nil {
			mu.Lock()
			pl.after(g, dones)
			mu.Unlock()
		}
	}
	require.NoError(t, c.Publish(subj.CtlStop(), contract.StopMessage(run)))
	require.NoError(t, c.Flush(time.Second))
	for _, cmd := range cmds {
		require.NoError(t, cmd.Wait())
	}
	mu.Lock()
	defer mu.Unlock()
	return dones
}

// Real role processes over a real server run a group of episodes in flight (ctl.episodes)
// exactly as they run the same episodes one by one: every process's trace file is the same,
// byte for byte, and its ctl.done come one per episode, in episode order, with the same
// trace offsets - with clear links (the plant's and the cloud's messages coalesced), with a
// delayed link (the cloud falls back to one message per episode), in the binary encoding,
// and for a process hosting many agents under message loss.
func TestGroupEqualsEpisodesOneByOne(t *testing.T) {
	vehicle := func(scn string, point int, extra ...string) play {
		common := append([]string{"--scenario", dpsimtest.Scenario(scn), "--point", strconv.Itoa(point)}, extra...)
		return play{procs: [][]string{append([]string{"plant"}, common...), append([]string{"cloud"}, common...), append([]string{"eavesdropper"}, common...)}}
	}
	consensus := func(scn string, point int) play {
		common := []string{"--scenario", dpsimtest.Scenario(scn), "--point", strconv.Itoa(point)}
		return play{procs: [][]string{append([]string{"agent", "--agents", "0..9"}, common...), append([]string{"eavesdropper"}, common...)}}
	}
	hosts := func(scn string) play {
		common := []string{"--scenario", dpsimtest.Scenario(scn), "--batch", "5"}
		return play{procs: [][]string{append([]string{"agent", "--agents", "0..4"}, common...), append([]string{"agent", "--agents", "5..9"}, common...),
			append([]string{"eavesdropper"}, common...)}}
	}
	signed, private := vehicle("cloud-vehicle", 0, "--sign-keys", signingKeys(t)), vehicle("cloud-vehicle", 0)
	signed.env, signed.sign = signingEnv, signingEnv["launcher"][0][len(bus.EnvSignSeed)+1:]
	private.x0 = func(ep int) []float64 { return []float64{float64(ep) / 10, -0.5} }
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	singles := [][2]int{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}}
	groups := [][2]int{{0, 3}, {3, 1}, {4, 2}}
	for _, tc := range []struct {
		name string
		play play
		// the data messages of each stream the eavesdropper heard: one by one, and at least and
		// at most in groups (where the run of episodes a message carries depends on timing)
		messages map[string][3]int
	}{
		{"clear links", vehicle("cloud-vehicle", 0), map[string][3]int{"yhat": {600, 300, 300}, "u": {600, 300, 300}}},
		{"a delayed link, binary", vehicle("faults-vehicle-latency", 3, "--encoding", "binary"), map[string][3]int{"yhat": {600, 300, 599}, "u": {1200, 1200, 1200}}},
		{"agents under loss", consensus("faults-consensus-loss", 2), nil},
		{"agent hosts, clear links", hosts("consensus-gaussian"), map[string][3]int{"y": {360, 180, 180}}},
		{"signed", signed, map[string][3]int{"yhat": {600, 300, 300}, "u": {600, 300, 300}}},
		{"private x(0)s", private, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := func(dir, suffix string) map[string][]byte {
				out := map[string][]byte{}
				names, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
				require.NoError(t, err)
				for _, n := range names {
					out[filepath.Base(n)], err = os.ReadFile(n)
					require.NoError(t, err)
				}
				return out
			}
			oneDir, groupDir := t.TempDir(), t.TempDir()
			one := playGroups(t, srv, "one", oneDir, tc.play, singles)
			grouped := playGroups(t, srv, "grp", groupDir, tc.play, groups)
			require.Len(t, grouped, len(tc.play.procs))
			for name, ds := range grouped {
				var eps []int
				for _, d := range ds {
					eps = append(eps, d.ep)
				}
				require.Equal(t, []int{0, 1, 2, 3, 4, 5}, eps, "%s: ctl.done in episode order", name)
				require.Equal(t, one[name], ds, "%s: the same trace offsets", name)
			}
			if tc.messages != nil {
				one := streamMessages(t, filepath.Join(oneDir, contract.TranscriptFile("eavesdropper-0")))
				grouped := streamMessages(t, filepath.Join(groupDir, contract.TranscriptFile("eavesdropper-0")))
				require.Len(t, grouped, len(tc.messages))
				for s, want := range tc.messages {
					require.Equal(t, want[0], one[s], "%s one by one", s)
					require.True(t, grouped[s] >= want[1] && grouped[s] <= want[2], "%s in groups: %d messages, want %d..%d", s, grouped[s], want[1], want[2])
				}
			}
			if tc.play.x0 != nil { // the plant started each episode from its private x(0)
				f, err := os.Open(filepath.Join(groupDir, contract.TraceFile("plant-0")))
				require.NoError(t, err)
				recs, err := trace.Read[trace.ControlRecord](f)
				require.NoError(t, err)
				require.NoError(t, f.Close())
				require.NotEmpty(t, recs)
				for _, r := range recs {
					if r.Step == 0 {
						require.Equal(t, tc.play.x0(r.Episode), r.X, "x(0) of episode %d", r.Episode)
					}
				}
			}
			want, got := files(oneDir, contract.TraceFile("")), files(groupDir, contract.TraceFile(""))
			require.Len(t, got, len(tc.play.procs))
			for name, b := range want {
				require.NotEmpty(t, b, name)
				require.True(t, bytes.Equal(b, got[name]), "%s differs", name)
			}
			want, got = files(oneDir, contract.FaultsFile("")), files(groupDir, contract.FaultsFile(""))
			require.Len(t, got, len(want))
			for name, b := range want {
				require.True(t, bytes.Equal(b, got[name]), "%s differs", name)
			}
			for name := range files(oneDir, contract.ResultFile("")) {
				require.Equal(t, counts(t, filepath.Join(oneDir, name)), counts(t, filepath.Join(groupDir, name)), name)
			}
		})
	}
}

// streamMessages counts the data messages of each stream in an eavesdropper's transcript.
func streamMessages(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]int{}
	dec := json.NewDecoder(f)
	for dec.More() {
		var line transcriptLine
		require.NoError(t, dec.Decode(&line))
		if s, err := wire.ParseSubject(line.Subject); err == nil && !s.IsCtl() {
			out[line.Subject[strings.LastIndexByte(line.Subject, '.')+1:]]++
		}
	}
	return out
}

// counts are what a process result counts, apart from timing (stale copies: those that came
// after their episode ended, a timing effect even one episode at a time).
func counts(t *testing.T, path string) contract.ProcessResult {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var r contract.ProcessResult
	require.NoError(t, json.Unmarshal(b, &r))
	require.Equal(t, contract.StatusOK, r.Status)
	return contract.ProcessResult{Episodes: r.Episodes, Steps: r.Steps, Records: r.Records, Unexpected: r.Unexpected, Links: r.Links,
		Invalid: wire.CountersSnapshot{Dropped: r.Invalid.Dropped}}
}

func curveKey(t *testing.T) bus.CurveKey {
	t.Helper()
	k, err := bus.NewCurveKey()
	require.NoError(t, err)
	return k
}

// signingEnv gives the plant, the cloud and the launcher their signing seeds (signingKeys).
var signingEnv = map[string][]string{}

// signingKeys makes the plant's, the cloud's and the launcher's signing keys and returns the
// file of their public keys (--sign-keys).
func signingKeys(t *testing.T) string {
	t.Helper()
	pub := map[string]string{}
	for _, who := range []string{"plant", "cloud", "launcher"} {
		k, err := bus.NewSigningKey()
		require.NoError(t, err)
		pub[who+".0"] = k.Public
		signingEnv[who] = []string{bus.EnvSignSeed + "=" + k.Seed}
	}
	data, err := json.Marshal(pub)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "public-keys.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// With --keep-episodes, a group's records are where the launcher reads them: right after the
// group, the trace from the previous group's last trace offset to its end holds the group's
// episodes, in order, whole; the file is cut back only when the next group begins.
func TestGroupKeepEpisodes(t *testing.T) {
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	dir := t.TempDir()
	common := []string{"--scenario", dpsimtest.Scenario("cloud-vehicle"), "--keep-episodes", "1"}
	from := int64(0)
	pl := play{procs: [][]string{append([]string{"plant"}, common...), append([]string{"cloud"}, common...), append([]string{"eavesdropper"}, common...)},
		after: func(g [2]int, dones map[string][]doneSeen) {
			f, err := os.Open(filepath.Join(dir, contract.TraceFile("plant-0")))
			require.NoError(t, err)
			defer f.Close()
			_, err = f.Seek(from, io.SeekStart)
			require.NoError(t, err)
			recs, err := trace.Read[trace.ControlRecord](f)
			require.NoError(t, err)
			perEp := map[int]int{}
			var order []int
			for _, r := range recs {
				if perEp[r.Episode]++; perEp[r.Episode] == 1 {
					order = append(order, r.Episode)
				}
			}
			var want []int
			for ep := g[0]; ep < g[0]+g[1]; ep++ {
				want = append(want, ep)
				require.Equal(t, 101, perEp[ep], "episode %d whole: x(0..T)", ep)
			}
			require.Equal(t, want, order, "the records read after %v", g)
			ds := dones["plant.0"]
			from = ds[len(ds)-1].next
		}}
	playGroups(t, srv, "keep", dir, pl, [][2]int{{0, 3}, {3, 1}, {4, 2}, {6, 3}})
}
