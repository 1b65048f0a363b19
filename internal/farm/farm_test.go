package farm_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/farm/kinds"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// bin is the dpsim binary the tests spawn as `dpsim worker` (built once).
var bin string

func TestMain(m *testing.M) { os.Exit(dpsimtest.Main(m, &bin)) }

// fixture is a scenario's first point as a coordinator and the in-process engines see it.
type fixture struct {
	yaml, source string
	plan         *plan.Plan
	game         *audit.Game
}

func load(t testing.TB, name string, game bool) *fixture {
	t.Helper()
	f := &fixture{source: dpsimtest.Scenario(name)}
	data, err := os.ReadFile(f.source)
	require.NoError(t, err)
	f.yaml = string(data)
	_, f.plan = dpsimtest.LoadPlan(t, name)
	if game {
		f.game, err = audit.NewGame(f.plan, audit.GameOptions{})
		require.NoError(t, err)
	}
	return f
}

func start(t *testing.T, f *fixture, cfg farm.Config) *farm.Coordinator {
	t.Helper()
	cfg.Scenario, cfg.Source, cfg.Exe, cfg.Dir, cfg.Log = []byte(f.yaml), f.source, bin, t.TempDir(), zerolog.Nop()
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	c, err := farm.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// report is the game's analysis with the time taken set aside (it is the only field that may
// differ between engines).
func report(t *testing.T, g *audit.Game, o *audit.Outcome) *audit.GameReport {
	t.Helper()
	o.Elapsed = time.Second
	r, err := g.Analyze(o, audit.ReportOptions{})
	require.NoError(t, err)
	return r
}

// The audit dispatched to 1, 2 or 3 worker processes is the in-process fast engine's, bit for bit:
// verdict, bounds, counts.
func TestAuditWorkersEqualFastEngine(t *testing.T) {
	f := load(t, "audit-vehicle-structured", true)
	const trials, seed = 4 * 2600, 9 // 6 chunks of kinds.AuditChunk
	want, err := audit.PlayFast(context.Background(), f.game, audit.FastOptions{Trials: trials, Seed: seed})
	require.NoError(t, err)
	wantRep := report(t, f.game, want)
	for _, n := range []int{1, 2, 3} {
		c := start(t, f, farm.Config{Spawn: n, SpawnThreads: 1})
		got, err := kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
		require.NoError(t, err, "%d workers", n)
		require.Equal(t, wantRep, report(t, f.game, got), "%d workers", n)
		rep := c.Report()
		require.Equal(t, 6, rep.Chunks)
		require.Zero(t, rep.Reissued+rep.Invalid+rep.Lost)
		require.FileExists(t, rep.Credentials)
		st, err := os.Stat(rep.Credentials)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
		require.NotContains(t, c.WorkerCommand, "PASSWORD")
		c.Close()
	}
}

// engine.Run's episodes dispatched to two workers: the same Results (link counters included) and
// traces, here for a scenario with link faults and its sink fed in episode order.
func TestRunWorkersEqualFastEngine(t *testing.T) {
	for _, name := range []string{"cloud-vehicle", "faults-consensus-loss"} {
		t.Run(name, func(t *testing.T) {
			f := load(t, name, false)
			seeds := sim.NewSeeds(5)
			opts := engine.Options{Runs: 60, KeepTraces: true, TraceEpisodes: trace.FirstEpisodes(3)}
			want, wantTr, err := engine.Run(context.Background(), f.plan, seeds, opts)
			require.NoError(t, err)
			c := start(t, f, farm.Config{Spawn: 2, SpawnThreads: 1, ChunkEpisodes: 7})
			var sunk []int
			opts.TraceSink = func(tr *trace.Traces) error {
				if len(tr.Control) > 0 {
					sunk = append(sunk, tr.Control[0].Episode)
				} else {
					sunk = append(sunk, tr.Consensus[0].Episode)
				}
				return nil
			}
			got, gotTr, err := kinds.Run(c, context.Background(), 0, f.plan, seeds, opts)
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.Equal(t, wantTr, gotTr)
			require.Equal(t, []int{0, 1, 2}, sunk)
			// two workers were started; which of them plays the chunks depends on which asks
			// first - on a busy machine one can take them all - but together they played every
			// episode once, and the chunks drawn for a check (a tenth, by chance) once more
			// unless the coordinator checked them
			rep := c.Report()
			require.Equal(t, 2, rep.Spawned)
			require.NotEmpty(t, rep.Workers)
			require.LessOrEqual(t, len(rep.Workers), 2)
			episodes := 0
			for _, w := range rep.Workers {
				episodes += w.Episodes
			}
			require.GreaterOrEqual(t, episodes, opts.Runs)
			require.Equal(t, len(kinds.RunSpans(opts.Runs, 7, true, opts.TraceEpisodes)), rep.Chunks)
			require.Empty(t, rep.Quarantined)
		})
	}
}

// A worker killed (SIGKILL) while it holds chunks: they are re-issued after its silence, the audit
// and the run complete with the in-process result, and the report names the worker.
func TestKilledWorkerChunkReissued(t *testing.T) {
	t.Run("audit", func(t *testing.T) {
		f := load(t, "audit-vehicle-structured", true)
		const trials, seed = 4 * 4000, 3
		want, err := audit.PlayFast(context.Background(), f.game, audit.FastOptions{Trials: trials, Seed: seed})
		require.NoError(t, err)
		c := start(t, f, farm.Config{Spawn: 2, SpawnThreads: 1, Silence: 1500 * time.Millisecond})
		killed := killWhenHolding(t, c)
		got, err := kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
		require.NoError(t, err)
		<-killed
		require.Equal(t, report(t, f.game, want), report(t, f.game, got))
		requireBlamed(t, c.Report())
	})
	t.Run("run", func(t *testing.T) {
		f := load(t, "faults-consensus-loss", false)
		seeds, opts := sim.NewSeeds(6), engine.Options{Runs: 400, KeepTraces: true, TraceEpisodes: trace.FirstEpisodes(2)}
		want, wantTr, err := engine.Run(context.Background(), f.plan, seeds, opts)
		require.NoError(t, err)
		c := start(t, f, farm.Config{Spawn: 2, SpawnThreads: 1, Silence: 1500 * time.Millisecond, ChunkEpisodes: 40})
		killed := killWhenHolding(t, c)
		got, gotTr, err := kinds.Run(c, context.Background(), 0, f.plan, seeds, opts)
		require.NoError(t, err)
		<-killed
		require.Equal(t, want, got)
		require.Equal(t, wantTr, gotTr)
		requireBlamed(t, c.Report())
	})
}

// killWhenHolding kills worker local-0 (SIGKILL) as soon as it holds two chunks it has not
// answered (one playing, one fetched ahead: at least one is surely lost with it).
func killWhenHolding(t *testing.T, c *farm.Coordinator) <-chan struct{} {
	victim := c.Spawned()[0]
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			for _, w := range c.Report().Workers {
				if w.Name == "local-0" && w.Issued >= w.Answered+2 {
					_ = syscall.Kill(victim, syscall.SIGKILL)
					return
				}
			}
		}
		t.Error("local-0 never held two chunks")
	}()
	return killed
}

// requireBlamed checks that the dispatch re-issued chunks of local-0, lost it, and blames it alone.
func requireBlamed(t *testing.T, rep *record.Dispatch) {
	t.Helper()
	require.GreaterOrEqual(t, rep.Reissued, 1)
	require.Equal(t, 1, rep.Lost)
	for _, d := range rep.Degradations {
		require.Equal(t, "local-0", d.Worker, d.Detail)
	}
	require.Contains(t, rep.Lines()[0], "local-0")
}

// Answers of chunks their sender does not hold (another range, the wrong number of scores, an
// unknown job or chunk - here from a worker with stolen credentials that took no chunk) are
// refused as foreign and counted against it, garbage is invalid, and neither changes anything;
// an answer after the job is over is late.
func TestForgedAnswersRefused(t *testing.T) {
	f := load(t, "audit-vehicle-structured", true)
	const trials, seed = 4 * 1500, 4 // 3 chunks of kinds.AuditChunk
	want, err := audit.PlayFast(context.Background(), f.game, audit.FastOptions{Trials: trials, Seed: seed})
	require.NoError(t, err)
	c := start(t, f, farm.Config{VerifyShare: -1}) // no check: the holder rule alone keeps the forgeries out
	type result struct {
		o   *audit.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
		done <- result{o, err}
	}()
	job := c.Session() + "-1"
	require.Eventually(t, func() bool { return c.HasJob(job) }, 5*time.Second, time.Millisecond)

	conn, id := workerConn(t, c, 0)
	k := len(f.game.ScoreNames())
	forged := []farm.Answer{
		{Lease: farm.Lease{Job: job, Chunk: 0, Attempt: 1}, Lo: 0, Hi: kinds.AuditChunk, Result: kinds.EncodeScores(make([]float64, kinds.AuditChunk*k))},   // the right shape, not held
		{Lease: farm.Lease{Job: job, Chunk: 0}, Lo: 0, Hi: 10, Result: kinds.EncodeScores(make([]float64, 10*k))},                                           // not the chunk's range
		{Lease: farm.Lease{Job: job, Chunk: 1, Attempt: 1}, Lo: kinds.AuditChunk, Hi: 2 * kinds.AuditChunk, Result: kinds.EncodeScores(make([]float64, 5))}, // too few scores
		{Lease: farm.Lease{Job: "no-such-job", Chunk: 0}, Lo: 0, Hi: kinds.AuditChunk, Result: kinds.EncodeScores(make([]float64, 3))},                      // unknown job
		{Lease: farm.Lease{Job: job, Chunk: 9}, Lo: 0, Hi: kinds.AuditChunk},                                                                                // no such chunk
	}
	for _, a := range forged {
		require.Equal(t, "foreign", ask(t, conn, id, encodeT(t, &a)))
	}
	require.Contains(t, ask(t, conn, id, []byte("not gob at all")), "invalid")

	creds := c.Report().CredentialsFiles[1]
	w := exec.Command(bin, "worker", "--server", c.ServerURL(), "--creds", creds, "--name", "honest", "--log-level", "error")
	w.Stderr = os.Stderr
	require.NoError(t, w.Start())
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, report(t, f.game, want), report(t, f.game, r.o))

	late := farm.Answer{Lease: farm.Lease{Job: job, Chunk: 0}, Lo: 0, Hi: kinds.AuditChunk, Result: kinds.EncodeScores(make([]float64, kinds.AuditChunk*k))}
	require.Equal(t, "late", ask(t, conn, id, encodeT(t, &late)))
	rep := c.Report()
	require.Equal(t, 5, rep.Foreign)
	require.Equal(t, 1, rep.Invalid)
	require.Equal(t, 1, rep.Duplicates)
	require.Zero(t, rep.Reissued)
	require.Equal(t, 3, rep.Chunks)
	for _, d := range rep.Degradations {
		require.Equal(t, "w1", d.Worker, d.Detail)
	}
	require.Equal(t, []string{"w2"}, workerNames(rep))
	c.Close()
	require.NoError(t, w.Wait(), "the worker exits 0 when the coordinator is done")
}

// workerNames are the names of the workers that were issued chunks.
func workerNames(rep *record.Dispatch) []string {
	var names []string
	for _, w := range rep.Workers {
		names = append(names, w.Name)
	}
	return names
}

// workerConn connects to c's server with the i-th credentials file of its pool, and returns the
// identity the file carries.
func workerConn(t *testing.T, c *farm.Coordinator, i int) (*bus.Conn, string) {
	t.Helper()
	creds, err := bus.ReadCredentials(c.Report().CredentialsFiles[i])
	require.NoError(t, err)
	conn, err := bus.Connect(c.ServerURL(), "test-forger", bus.WithUser(creds.User, creds.Password))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	return conn, farm.IdentityOf(creds.User, "")
}

func ask(t *testing.T, conn *bus.Conn, id string, data []byte) string {
	t.Helper()
	resp, err := conn.Request(context.Background(), farm.Subject(farm.VerbAnswer, id), data, 5*time.Second)
	require.NoError(t, err)
	var r farm.Reply
	require.NoError(t, farm.Decode(resp, &r))
	return r.Status
}

func encodeT(t *testing.T, v any) []byte {
	t.Helper()
	data, err := farm.Encode(v)
	require.NoError(t, err)
	return data
}

// Without the credentials the coordinator's server refuses a client, and a worker's account may
// not read the protocol's subjects (another worker's answers), nor speak as another worker.
func TestServerAdmitsWorkersOnly(t *testing.T) {
	f := load(t, "audit-vehicle-structured", true)
	c := start(t, f, farm.Config{})
	_, err := bus.Connect(c.ServerURL(), "anonymous")
	require.Error(t, err)
	creds, err := bus.ReadCredentials(c.Report().Credentials)
	require.NoError(t, err)
	denied := make(chan string, 8)
	conn, err := bus.Connect(c.ServerURL(), "test-snoop", bus.WithUser(creds.User, creds.Password), bus.WithEvents(func(ev bus.Event) {
		if ev.Kind == bus.EventError && ev.Err != nil {
			denied <- ev.Err.Error()
		}
	}))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Serve(farm.Subject(farm.VerbAnswer, "*"), "", func(*bus.Request) {})
	require.NoError(t, err) // the server refuses asynchronously
	select {
	case msg := <-denied:
		require.Contains(t, strings.ToLower(msg), "permission")
	case <-time.After(3 * time.Second):
		t.Fatal("a worker's account could subscribe the answers")
	}
	// nor publish under another worker's name (w2's answers, as w1)
	require.NoError(t, conn.PublishRaw(farm.Subject(farm.VerbAnswer, "w2"), []byte("x")))
	select {
	case msg := <-denied:
		require.Contains(t, strings.ToLower(msg), "permission")
	case <-time.After(3 * time.Second):
		t.Fatal("worker w1 could publish as w2")
	}
}

// When every local worker exits (here: a binary that is no dpsim) and no other worker is
// connected, the job fails with the reason instead of waiting for ever.
func TestNoWorkerLeftFails(t *testing.T) {
	f := load(t, "audit-vehicle-structured", true)
	cfg := farm.Config{Spawn: 1, Silence: 200 * time.Millisecond}
	cfg.Scenario, cfg.Source, cfg.Exe, cfg.Dir, cfg.Log = []byte(f.yaml), f.source, "/bin/false", t.TempDir(), zerolog.Nop()
	c, err := farm.Start(context.Background(), cfg)
	require.NoError(t, err)
	defer c.Close()
	_, err = kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, 1, 1000, nil)
	require.ErrorContains(t, err, "no worker left")
}

// With an external server (--nats-url) the coordinator and its workers meet there: the same
// outcome, and the credentials file holds the URL's account (none here).
func TestExternalServer(t *testing.T) {
	ext, err := bus.StartEmbedded(bus.EmbeddedOptions{})
	require.NoError(t, err)
	defer ext.Shutdown()
	f := load(t, "audit-vehicle-structured", true)
	const trials, seed = 1200, 5
	want, err := audit.PlayFast(context.Background(), f.game, audit.FastOptions{Trials: trials, Seed: seed})
	require.NoError(t, err)
	c := start(t, f, farm.Config{URL: ext.URL(), Spawn: 1})
	require.Nil(t, c.Embedded())
	require.Contains(t, c.WorkerCommand, ext.URL())
	got, err := kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
	require.NoError(t, err)
	require.Equal(t, report(t, f.game, want), report(t, f.game, got))
	c.Close() // while the server is up: the worker hears that the coordinator is done
}
