package farm_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/internal/farm/kinds"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/bus"
)

// The durable farm's tests (queue.go): its chunks travel through a JetStream work queue.

// durableAudit is the coordinator of a durable farm (its journal in a temporary directory) and
// the in-process outcome of the audit it plays.
func durableAudit(t *testing.T, cfg farm.Config, trials int, seed uint64) (*fixture, *farm.Coordinator, *audit.GameReport) {
	t.Helper()
	f := load(t, "audit-vehicle-structured", true)
	cfg.Durable = filepath.Join(t.TempDir(), farm.JournalDir)
	c := start(t, f, cfg)
	want, err := audit.PlayFast(context.Background(), f.game, audit.FastOptions{Trials: trials, Seed: seed})
	require.NoError(t, err)
	return f, c, report(t, f.game, want)
}

// inProcess serves the coordinator's chunks from this process with the pool's i-th credentials
// and kinds ks until the returned stop is called (which closes its connection: the worker is
// gone, as killed) or the coordinator is over; beat is its heartbeat period.
func inProcess(t *testing.T, c *farm.Coordinator, i int, ks []farm.Kind) (id string, stop func()) {
	t.Helper()
	creds, err := bus.ReadCredentials(c.Report().CredentialsFiles[i])
	require.NoError(t, err)
	conn, err := bus.Connect(c.ServerURL(), "test-worker", bus.WithUser(creds.User, creds.Password), bus.WithReconnect(0, time.Millisecond))
	require.NoError(t, err)
	id = farm.IdentityOf(creds.User, "")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = farm.Serve(ctx, conn, farm.WorkerOptions{ID: id, Name: id, Threads: 1, Beat: 50 * time.Millisecond, Kinds: ks, Log: zerolog.Nop()})
	})
	var once sync.Once
	stop = func() { once.Do(func() { conn.Close(); cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return id, stop
}

// wrapped is a kind whose players play through play.
type wrapped struct {
	farm.Kind
	play func(ctx context.Context, pl farm.Player, lo, hi, threads int) ([]byte, error)
}

func (k wrapped) Prepare(j *farm.Job) (farm.Player, error) {
	pl, err := k.Kind.Prepare(j)
	if err != nil {
		return nil, err
	}
	return player2{pl, k.play}, nil
}

type player2 struct {
	farm.Player
	play func(ctx context.Context, pl farm.Player, lo, hi, threads int) ([]byte, error)
}

func (p player2) Play(ctx context.Context, lo, hi, threads int) ([]byte, error) {
	return p.play(ctx, p.Player, lo, hi, threads)
}

// Chunks queued while no worker is connected wait in the work queue: a worker that joins later
// plays them all, and the audit ends with the in-process outcome.
func TestQueueWaitsForWorkers(t *testing.T) {
	const trials, seed = 4 * 2600, 5 // 6 chunks
	f, c, want := durableAudit(t, farm.Config{VerifyShare: -1}, trials, seed)
	type result struct {
		o   *audit.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
		done <- result{o, err}
	}()
	require.Eventually(t, func() bool { return c.QueueDepth() == 6 }, time.Minute, 10*time.Millisecond, "the chunks were queued")
	select {
	case r := <-done:
		t.Fatalf("the audit ended without a worker: %v", r.err)
	default:
	}
	honest(t, c, 0)
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, want, report(t, f.game, r.o))
	rep := c.Report()
	require.Equal(t, []string{"w1"}, workerNames(rep))
	require.Equal(t, 6, rep.Workers[0].Answered)
	require.Zero(t, c.QueueDepth(), "the played chunks left the queue")
	require.Empty(t, rep.Degradations)
}

// A worker that stops mid-chunk (its connection gone, as killed: no more InProgress) loses its
// chunk to the work queue's redelivery after AckWait - short here, an option - and another
// worker plays it: the outcome is the in-process one, and the report names the lost worker.
func TestQueueRedeliversLostChunk(t *testing.T) {
	const trials, seed = 4 * 2600, 6
	f, c, want := durableAudit(t, farm.Config{VerifyShare: -1, AckWait: 300 * time.Millisecond}, trials, seed)
	playing := make(chan struct{})
	var once sync.Once
	stuck := wrapped{kinds.AuditKind, func(ctx context.Context, _ farm.Player, _, _, _ int) ([]byte, error) {
		once.Do(func() { close(playing) })
		<-ctx.Done() // hangs until it is stopped
		return nil, ctx.Err()
	}}
	lost, stop := inProcess(t, c, 0, []farm.Kind{stuck})
	done := make(chan error, 1)
	var got *audit.Outcome
	go func() {
		var err error
		got, err = kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
		done <- err
	}()
	<-playing
	require.Eventually(t, func() bool { // its heartbeat told the coordinator which chunk it holds
		for _, w := range c.Report().Workers {
			if w.Name == lost && w.Issued > 0 {
				return true
			}
		}
		return false
	}, time.Minute, 10*time.Millisecond)
	stop()
	honest(t, c, 1)
	require.NoError(t, <-done)
	require.Equal(t, want, report(t, f.game, got))
	rep := c.Report()
	require.Positive(t, rep.Reissued, "%+v", rep.Degradations)
	require.Equal(t, 1, rep.Lost)
	for _, d := range rep.Degradations {
		require.Equal(t, lost, d.Worker, d.Detail)
	}
	require.Contains(t, rep.Lines()[0], lost)
}

// A chunk the work queue delivered MaxDeliver times (1 here, an option) without an answer - its
// worker stopped mid-chunk - is delivered no more: the server's advisory has the coordinator
// play it, and the report counts and names it.
func TestQueueUndeliveredChunkPlayedByCoordinator(t *testing.T) {
	const trials, seed = 4 * 2600, 9
	f, c, want := durableAudit(t, farm.Config{VerifyShare: -1, AckWait: 300 * time.Millisecond, MaxDeliver: 1}, trials, seed)
	playing := make(chan struct{})
	var once sync.Once
	stuck := wrapped{kinds.AuditKind, func(ctx context.Context, _ farm.Player, _, _, _ int) ([]byte, error) {
		once.Do(func() { close(playing) })
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	_, stop := inProcess(t, c, 0, []farm.Kind{stuck})
	done := make(chan error, 1)
	var got *audit.Outcome
	go func() {
		var err error
		got, err = kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
		done <- err
	}()
	<-playing
	stop()
	honest(t, c, 1)
	require.NoError(t, <-done)
	require.Equal(t, want, report(t, f.game, got))
	rep := c.Report()
	// the chunk it played and the one it fetched ahead, if any
	require.Positive(t, rep.Undelivered, "%+v", rep.Degradations)
	require.Equal(t, rep.Undelivered, rep.Local, "the coordinator played the undelivered chunks")
	var named bool
	for _, d := range rep.Degradations {
		named = named || d.Kind == farm.KindUndelivered
	}
	require.True(t, named, "%+v", rep.Degradations)
	require.Contains(t, strings.Join(rep.Lines(), "\n"), "undelivered")
}

// A worker that forges its results, taking its chunks from the work queue, is caught by the
// second computation (every chunk checked here), quarantined and its chunks played again: the
// outcome is the in-process one.
func TestQueueCatchesForger(t *testing.T) {
	const trials, seed = 4 * 4000, 7
	f, c, want := durableAudit(t, farm.Config{VerifyShare: 1}, trials, seed)
	forged := make(chan struct{})
	var once sync.Once
	forger := wrapped{kinds.AuditKind, func(ctx context.Context, pl farm.Player, lo, hi, threads int) ([]byte, error) {
		res, err := pl.Play(ctx, lo, hi, threads)
		if err != nil {
			return nil, err
		}
		scores, err := kinds.DecodeScores(res)
		if err != nil {
			return nil, err
		}
		for i := range scores {
			scores[i] = 0 // hides what the game found
		}
		once.Do(func() { close(forged) })
		return kinds.EncodeScores(scores), nil
	}}
	id, _ := inProcess(t, c, 0, []farm.Kind{forger})
	done := make(chan error, 1)
	var got *audit.Outcome
	go func() {
		var err error
		got, err = kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
		done <- err
	}()
	<-forged // then an honest worker joins: it checks the forger's chunks
	honest(t, c, 1)
	require.NoError(t, <-done)
	require.Equal(t, want, report(t, f.game, got))
	rep := c.Report()
	require.Len(t, rep.Quarantined, 1, "%+v", rep.Degradations)
	require.Equal(t, id, rep.Quarantined[0].Worker)
	require.NotEmpty(t, rep.Quarantined[0].Chunks)
}

// A worker's account may pull chunks from the work queue and nothing more of JetStream: it
// cannot put a chunk, delete or purge one, take the stored answers, nor write the journal (the
// server refuses each: a permission violation of its account), and the queue is unchanged.
func TestQueueWorkerCannotWrite(t *testing.T) {
	const trials, seed = 4 * 2600, 8
	f, c, _ := durableAudit(t, farm.Config{VerifyShare: -1}, trials, seed)
	go func() { _, _ = kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil) }()
	require.Eventually(t, func() bool { return c.QueueDepth() == 6 }, time.Minute, 10*time.Millisecond)
	creds, err := bus.ReadCredentials(c.Report().CredentialsFiles[0])
	require.NoError(t, err)
	conn, err := bus.Connect(c.ServerURL(), "test-intruder", bus.WithUser(creds.User, creds.Password))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	refused := []string{
		farm.QueueSubject,
		"$JS.API.STREAM.PURGE." + farm.QueueStream,
		"$JS.API.STREAM.MSG.DELETE." + farm.QueueStream,
		"$JS.API.STREAM.DELETE." + farm.QueueStream,
		"$JS.API.CONSUMER.MSG.NEXT." + farm.AnswerStream + ".coordinator",
		"dpsim.journal.1.0",
	}
	for _, subject := range refused {
		require.NoError(t, conn.PublishRaw(subject, []byte(`{"seq":1}`)))
	}
	require.NoError(t, conn.Flush(2*time.Second))
	require.Eventually(t, func() bool {
		seen := map[string]bool{}
		for _, v := range c.Embedded().Violations() {
			if v.User == creds.User && v.Op == "publish" {
				seen[v.Subject] = true
			}
		}
		for _, s := range refused {
			if !seen[s] {
				return false
			}
		}
		return true
	}, time.Minute, 10*time.Millisecond, "%+v", c.Embedded().Violations())
	require.Equal(t, uint64(6), c.QueueDepth(), "the queue was changed")
}
