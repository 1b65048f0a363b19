package workercmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/sim"
)

// The farm's messages as docs/farm.md describes them (gob matches fields by name): the rogue
// below speaks the protocol from the outside, as any program with a stolen credentials file can.
type (
	lease struct {
		Job            string
		Chunk, Attempt int
	}
	assignment struct {
		Over, Wait bool
		Lease      lease
		Lo, Hi     int
	}
	hello  struct{ Worker string }
	answer struct {
		Worker string
		Lease  lease
		Lo, Hi int
		Scores []float64
		Run    *engine.Chunk
	}
)

func gobOf(t *testing.T, v any) []byte {
	var b bytes.Buffer
	require.NoError(t, gob.NewEncoder(&b).Encode(v))
	return b.Bytes()
}

// coordinator starts `dpsim args...` (a coordinator with --dispatch and no worker of its own) and
// returns its server's URL, read from the join command it logs, and a function that waits for
// its exit and returns its stdout.
func coordinator(t *testing.T, args ...string) (string, func() []byte) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	urls := make(chan string, 1)
	var logged bytes.Buffer
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		re := regexp.MustCompile(`--server (nats://[^\s"\\]+)`)
		for sc.Scan() {
			mu.Lock()
			logged.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(60 * time.Second):
		t.Fatal("the coordinator never logged its join command")
	}
	return url, func() []byte {
		err := cmd.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.NoError(t, err, logged.String())
		return out.Bytes()
	}
}

// rogue is a rogue worker on the coordinator at url with the stolen file creds: it takes chunks and
// answers each with forge(assignment) until its account is revoked or ctx ends; took is closed
// on its first answer.
func rogue(t *testing.T, url, creds string, forge func(assignment) answer) (took <-chan struct{}) {
	t.Helper()
	c, err := bus.ReadCredentials(creds)
	require.NoError(t, err)
	id := c.User[len("dpsim-farm-worker-"):]
	conn, err := bus.Connect(url, "rogue", bus.WithUser(c.User, c.Password), bus.WithReconnect(0, time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); conn.Close(); wg.Wait() })
	wg.Go(func() {
		var once sync.Once
		for ctx.Err() == nil && !conn.IsClosed() {
			data, err := conn.Request(ctx, "dpsim.farm.next."+id, gobOf(t, hello{Worker: "rogue"}), 3*time.Second)
			var a assignment
			if err != nil || gob.NewDecoder(bytes.NewReader(data)).Decode(&a) != nil || a.Wait {
				continue
			}
			if a.Over {
				return
			}
			_, _ = conn.Request(ctx, "dpsim.farm.answer."+id, gobOf(t, forge(a)), 3*time.Second)
			once.Do(func() { close(ch) })
		}
	})
	return ch
}

// honestWorker starts `dpsim worker` with the credentials file creds.
func honestWorker(t *testing.T, url, creds string) {
	w := exec.Command(bin, "worker", "--server", url, "--creds", creds, "--log-level", "error")
	w.Stderr = os.Stderr
	require.NoError(t, w.Start())
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
}

// `dpsim audit --dispatch` with a rogue that answers every chunk it takes with zeros (it would
// turn the naive vehicle's violation into "consistent"): the output is the in-process audit's -
// verdict, bounds, counts - and its dispatch names the rogue, quarantined.
func TestAuditDispatchRogueQuarantined(t *testing.T) {
	sc := dpsimtest.Scenario("audit-vehicle-iid-naive")
	args := []string{"audit", sc, "--trials", "12288", "--seed", "12", "--json", "--progress=false"} // 6 chunks
	want := decoded(t, dpsim(t, append(args, "--log-level", "error")...), "elapsed_sec", "episodes_per_sec")
	require.Equal(t, "violation", want["verdict"])
	out := t.TempDir()
	url, wait := coordinator(t, append(args, "--dispatch", "--verify-share", "1", "--out", out, "--log-level", "info")...)
	took := rogue(t, url, filepath.Join(out, "workers", "w1.creds"), func(a assignment) answer {
		return answer{Lease: a.Lease, Lo: a.Lo, Hi: a.Hi, Scores: make([]float64, 2*(a.Hi-a.Lo))}
	})
	<-took
	honestWorker(t, url, filepath.Join(out, "workers", "w2.creds"))
	got := decoded(t, wait(), "elapsed_sec", "episodes_per_sec")
	d := got["dispatch"].(map[string]any)
	q := d["quarantined"].([]any)
	require.Len(t, q, 1, "%v", d["degradations"])
	require.Equal(t, "w1", q[0].(map[string]any)["worker"])
	for _, f := range []string{"audit.json", "report.md"} {
		data, err := os.ReadFile(filepath.Join(out, f))
		require.NoError(t, err)
		require.Contains(t, string(data), "worker w1 QUARANTINED", f)
	}
	for _, k := range []string{"dispatch", "notes"} { // the notes name the quarantine
		delete(got, k)
		delete(want, k)
	}
	require.Equal(t, want, got)
}

// `dpsim run --engine fast --dispatch` with a rogue that answers well-formed episodes of another
// seed: summary.json's metrics are the in-process run's, the run is "degraded", and its dispatch
// names the rogue, quarantined.
func TestRunDispatchRogueQuarantined(t *testing.T) {
	name := "faults-vehicle-latency"
	sc := dpsimtest.Scenario(name)
	_, p := dpsimtest.LoadPlan(t, name)
	summary := func(dir string) map[string]any {
		data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		require.NoError(t, err)
		return decoded(t, data)
	}
	args := func(out string) []string {
		return []string{"run", sc, "--engine", "fast", "--runs", "40", "--seed", "8", "--out", out, "--progress=false"}
	}
	a, b := t.TempDir(), t.TempDir()
	dpsim(t, append(args(a), "--log-level", "error")...)
	url, wait := coordinator(t, append(args(b), "--dispatch", "--verify-share", "1", "--log-level", "info")...)
	took := rogue(t, url, filepath.Join(b, "workers", "w1.creds"), func(as assignment) answer {
		c, err := engine.PlayChunk(context.Background(), p, sim.NewSeeds(9), as.Lo, as.Hi, engine.ChunkOptions{Workers: 1})
		require.NoError(t, err)
		return answer{Lease: as.Lease, Lo: as.Lo, Hi: as.Hi, Run: c}
	})
	<-took
	honestWorker(t, url, filepath.Join(b, "workers", "w2.creds"))
	wait()
	want, got := summary(a), summary(b)
	require.Equal(t, want["metrics"], got["metrics"])
	require.Equal(t, "degraded", got["status"])
	d := got["dispatch"].(map[string]any)
	q := d["quarantined"].([]any)
	require.Len(t, q, 1, "%v", d["degradations"])
	require.Equal(t, "w1", q[0].(map[string]any)["worker"])
	require.Contains(t, got["degraded"].([]any)[0], "worker w1 QUARANTINED")
}
