package farm_test

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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

// What a rogue worker does with the chunks it takes.
const (
	rogueHide   = "hide"   // answers zeros (an audit) or another seed's episodes (a run)
	rogueFrame  = "frame"  // answers scores chosen from the secret bits (the job's seed) to flip the verdict
	rogueHoard  = "hoard"  // holds its chunks, heartbeats, never answers
	rogueFail   = "fail"   // answers an error
	rogueImpost = "impost" // takes no chunk: answers chunks it does not hold, and tries to speak as another worker
	rogueNaN    = "nan"    // answers scores that are not numbers (they once reached json.Marshal)
)

// rogue is a worker with stolen credentials (the pool's first file, w1) that misbehaves as its
// mode says. took is closed once it has done something the coordinator must notice (taken a
// chunk; for rogueImpost: sent its forgeries).
type rogue struct {
	mode   string
	conn   *bus.Conn
	id     string
	took   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	held   []farm.Lease
	denied chan string
}

// For rogueImpost, victim is the worker it tries to speak for and chunks the job's chunks.
func startRogue(t *testing.T, c *farm.Coordinator, mode, victim string, chunks []farm.Span) *rogue {
	t.Helper()
	creds, err := bus.ReadCredentials(c.Report().CredentialsFiles[0])
	require.NoError(t, err)
	r := &rogue{mode: mode, id: farm.IdentityOf(creds.User, ""), took: make(chan struct{}), denied: make(chan string, 16)}
	r.conn, err = bus.Connect(c.ServerURL(), "rogue", bus.WithUser(creds.User, creds.Password), bus.WithReconnect(0, time.Millisecond),
		bus.WithEvents(func(ev bus.Event) {
			if ev.Kind == bus.EventError && ev.Err != nil {
				select {
				case r.denied <- ev.Err.Error():
				default:
				}
			}
		}))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); r.conn.Close(); wg.Wait() })
	wg.Go(func() { r.beats(ctx) })
	wg.Go(func() {
		if mode == rogueImpost {
			r.impost(ctx, c, victim, chunks)
			return
		}
		r.serve(ctx)
	})
	return r
}

// serve takes chunks and answers them as the mode says, until the coordinator is over, ctx ends
// or its account is revoked.
func (r *rogue) serve(ctx context.Context) {
	hi, _ := farm.Encode(farm.Hello{Worker: "rogue"})
	jobs := map[string]*player{}
	for ctx.Err() == nil && !r.conn.IsClosed() {
		data, err := r.conn.Request(ctx, farm.Subject(farm.VerbNext, r.id), hi, 3*time.Second)
		if err != nil {
			sleep(ctx, 20*time.Millisecond)
			continue
		}
		var a farm.Assignment
		if farm.Decode(data, &a) != nil || a.Over {
			return
		}
		if a.Wait {
			continue
		}
		r.mu.Lock()
		r.held = append(r.held, a.Lease)
		r.mu.Unlock()
		r.once.Do(func() { close(r.took) })
		if r.mode == rogueHoard {
			continue
		}
		pl := jobs[a.Lease.Job]
		if pl == nil {
			if pl = r.job(ctx, a.Lease.Job); pl == nil {
				continue
			}
			jobs[a.Lease.Job] = pl
		}
		ans := r.forge(ctx, pl, a)
		if data, err := farm.Encode(&ans); err == nil {
			_, _ = r.conn.Request(ctx, farm.Subject(farm.VerbAnswer, r.id), data, 3*time.Second)
		}
	}
}

// player is a job as the rogue resolves it: its plan, its parameters and, for an audit, its game.
type player struct {
	job   *farm.Job
	plan  *plan.Plan
	game  *audit.Game
	seed  uint64          // the audit's
	run   kinds.RunParams // the run's
	seeds sim.Seeds       // the seeds of the run, or the audit's game seed as Seeds.Run
}

// job fetches and resolves a job, as a worker does: the rogue learns the seed.
func (r *rogue) job(ctx context.Context, id string) *player {
	data, err := r.conn.Request(ctx, farm.Subject(farm.VerbJob, r.id), []byte(id), 3*time.Second)
	if err != nil || len(data) == 0 {
		return nil
	}
	var j farm.Job
	if farm.Decode(data, &j) != nil {
		return nil
	}
	pl := &player{job: &j}
	if pl.plan, err = kinds.Plan(&j); err != nil {
		return nil
	}
	switch j.Kind {
	case kinds.RunName:
		if farm.DecodeParams(j.Params, &pl.run) != nil {
			return nil
		}
		pl.seeds = pl.run.Seeds
	case kinds.AuditName:
		var ps kinds.AuditParams
		if farm.DecodeParams(j.Params, &ps) != nil {
			return nil
		}
		if pl.game, err = audit.NewGame(pl.plan, ps.Game); err != nil {
			return nil
		}
		pl.seeds = sim.NewSeeds(ps.Seed)
	default:
		return nil
	}
	return pl
}

// forge is the rogue's answer of chunk a.
func (r *rogue) forge(ctx context.Context, pl *player, a farm.Assignment) farm.Answer {
	ans := farm.Answer{Worker: "rogue", Lease: a.Lease, Lo: a.Lo, Hi: a.Hi}
	switch {
	case r.mode == rogueFail:
		ans.Err = "rogue: out of luck"
	case pl.job.Kind == kinds.RunName: // hide and frame alike: well-formed episodes of another seed
		ch, _ := engine.PlayChunk(ctx, pl.plan, sim.NewSeeds(pl.seeds.Run+1), a.Lo, a.Hi, pl.run.ChunkOptions(1))
		ans.Result, _ = kinds.EncodeChunk(ch)
	default:
		k := len(pl.game.ScoreNames())
		scores := make([]float64, (a.Hi-a.Lo)*k)
		if r.mode == rogueNaN {
			scores[len(scores)/2] = math.NaN()
		}
		if r.mode == rogueFrame { // a perfect distinguisher: the score says the secret bit
			for e := a.Lo; e < a.Hi; e++ {
				for s := range k {
					scores[(e-a.Lo)*k+s] = float64(2*audit.Bit(pl.seeds.Run, uint64(e))-1) * 1e3
				}
			}
		}
		ans.Result = kinds.EncodeScores(scores)
	}
	return ans
}

// impost answers every chunk of the coordinator's first job with zeros under its own name,
// without holding any, and tries the same under victim's name.
func (r *rogue) impost(ctx context.Context, c *farm.Coordinator, victim string, chunks []farm.Span) {
	job := c.Session() + "-1"
	for ctx.Err() == nil && !c.HasJob(job) {
		sleep(ctx, time.Millisecond)
	}
	pl := r.job(ctx, job)
	if pl == nil {
		return
	}
	for i, sp := range chunks {
		a := farm.Answer{Worker: victim, Lease: farm.Lease{Job: job, Chunk: i, Attempt: 1}, Lo: sp.Lo, Hi: sp.Hi}
		if pl.game != nil {
			a.Result = kinds.EncodeScores(make([]float64, (sp.Hi-sp.Lo)*len(pl.game.ScoreNames())))
		} else {
			ch, _ := engine.PlayChunk(ctx, pl.plan, sim.NewSeeds(pl.seeds.Run+1), sp.Lo, sp.Hi, engine.ChunkOptions{Workers: 1})
			a.Result, _ = kinds.EncodeChunk(ch)
		}
		data, _ := farm.Encode(&a)
		_, _ = r.conn.Request(ctx, farm.Subject(farm.VerbAnswer, r.id), data, 3*time.Second)
		_ = r.conn.PublishRaw(farm.Subject(farm.VerbAnswer, victim), data) // refused by the server
	}
	r.once.Do(func() { close(r.took) })
}

// beats heartbeats the chunks the rogue holds (a hoarder looks alive).
func (r *rogue) beats(ctx context.Context) {
	for ctx.Err() == nil {
		r.mu.Lock()
		b := farm.Beat{Worker: "rogue", Held: append([]farm.Lease(nil), r.held...)}
		r.mu.Unlock()
		if data, err := farm.Encode(&b); err == nil && !r.conn.IsClosed() {
			_ = r.conn.PublishRaw(farm.Subject(farm.VerbBeat, r.id), data)
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// honest starts an honest `dpsim worker` process with the pool's i-th credentials file.
func honest(t *testing.T, c *farm.Coordinator, i int) {
	t.Helper()
	w := exec.Command(bin, "worker", "--server", c.ServerURL(), "--creds", c.Report().CredentialsFiles[i], "--threads", "1", "--log-level", "error")
	w.Stderr = os.Stderr
	require.NoError(t, w.Start())
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
}

// rogueConfig is the coordinator's configuration against a rogue of mode: every chunk checked
// where the test needs the forgery caught for certain, and a short chunk bound against the
// hoarder (a flag's value: nothing here asserts a duration).
func rogueConfig(mode string) farm.Config {
	cfg := farm.Config{VerifyShare: 1, Silence: time.Second}
	switch mode {
	case rogueHoard:
		cfg.ChunkTimeout = 500 * time.Millisecond
	case rogueImpost, rogueFail, rogueNaN:
		cfg.VerifyShare = -1 // no check: the holder rule, the answers' validation and the coordinator's retry alone
	}
	return cfg
}

// requireNamed checks that the rogue is named in the report as its mode says, and never an
// honest worker as a liar.
func requireNamed(t *testing.T, rep *record.Dispatch, mode, id string) {
	t.Helper()
	kinds := map[string]int{}
	for _, d := range rep.Degradations {
		if d.Worker == id {
			kinds[d.Kind]++
		}
	}
	switch mode {
	case rogueHide, rogueFrame, rogueNaN:
		require.Len(t, rep.Quarantined, 1, "%+v", rep.Degradations)
		require.Equal(t, id, rep.Quarantined[0].Worker)
		require.NotEmpty(t, rep.Quarantined[0].Chunks)
		require.Equal(t, len(rep.Quarantined[0].Chunks), rep.Recomputed)
		require.Positive(t, kinds[farm.KindQuarantined])
	case rogueHoard:
		require.Positive(t, kinds[farm.KindOverdue], "%+v", rep.Degradations)
	case rogueFail:
		require.Positive(t, kinds[farm.KindFailed], "%+v", rep.Degradations)
		require.Positive(t, rep.Local)
	case rogueImpost:
		require.Positive(t, kinds[farm.KindForeign], "%+v", rep.Degradations)
		require.Empty(t, rep.Quarantined)
	}
	for _, q := range rep.Quarantined {
		require.Equal(t, id, q.Worker, "an honest worker quarantined: %s", q.Reason)
	}
	require.Contains(t, rep.Lines()[0], id)
}

// A rogue worker with stolen credentials that hides (zeros), frames (scores from the secret
// bits), hoards, fails or answers chunks it does not hold cannot change an audit: it ends with
// the in-process verdict and bounds, bit for bit, and the rogue is named in the dispatch (a
// forger quarantined and its chunks played again).
func TestRogueWorkerAudit(t *testing.T) {
	for _, tc := range []struct{ mode, scenario string }{
		{rogueHide, "audit-vehicle-iid-naive"},   // honestly a violation: zeros would hide it
		{rogueFrame, "audit-vehicle-structured"}, // honestly sound: the bits would frame it
		{rogueHoard, "audit-vehicle-structured"},
		{rogueFail, "audit-vehicle-structured"},
		{rogueImpost, "audit-vehicle-iid-naive"},
		{rogueNaN, "audit-vehicle-iid-naive"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			f := load(t, tc.scenario, true)
			const trials, seed = 3 * kinds.AuditChunk, 21 // 6 chunks
			want, err := audit.PlayFast(context.Background(), f.game, audit.FastOptions{Trials: trials, Seed: seed})
			require.NoError(t, err)
			c := start(t, f, rogueConfig(tc.mode))
			r := startRogue(t, c, tc.mode, "w2", farm.Spans(2*trials, kinds.AuditChunk))
			type result struct {
				o   *audit.Outcome
				err error
			}
			done := make(chan result, 1)
			go func() {
				o, err := kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
				done <- result{o, err}
			}()
			<-r.took // the rogue played its part before an honest worker joins
			honest(t, c, 1)
			res := <-done
			require.NoError(t, res.err)
			require.Equal(t, report(t, f.game, want), report(t, f.game, res.o))
			requireNamed(t, c.Report(), tc.mode, r.id)
			if tc.mode == rogueImpost {
				select {
				case msg := <-r.denied:
					require.Contains(t, msg, "ermission")
				case <-time.After(5 * time.Second):
					t.Fatal("the server let w1 publish as w2")
				}
			}
		})
	}
}

// The same rogues against a dispatched run (engine.Run's episodes): the Results and traces are
// engine.Run's, bit for bit, and the rogue is named. Here the honest worker may join first: the
// rogue's forgeries are then checked by it (a mismatch the coordinator settles).
func TestRogueWorkerRun(t *testing.T) {
	f := load(t, "faults-consensus-loss", false)
	seeds := sim.NewSeeds(7)
	opts := engine.Options{Runs: 60, KeepTraces: true, TraceEpisodes: trace.FirstEpisodes(2)}
	want, wantTr, err := engine.Run(context.Background(), f.plan, seeds, opts)
	require.NoError(t, err)
	for _, mode := range []string{rogueHide, rogueHoard, rogueFail, rogueImpost} {
		t.Run(mode, func(t *testing.T) {
			cfg := rogueConfig(mode)
			cfg.ChunkEpisodes = 10
			if mode == rogueHoard {
				cfg.ChunkTimeout = 0 // the bound derived from the honest worker's chunk times (at least 4 silences)
			}
			c := start(t, f, cfg)
			r := startRogue(t, c, mode, "w2", kinds.RunSpans(opts.Runs, cfg.ChunkEpisodes, true, opts.TraceEpisodes))
			if mode == rogueHide {
				honest(t, c, 1)
			}
			type result struct {
				res any
				tr  *trace.Traces
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, tr, err := kinds.Run(c, context.Background(), 0, f.plan, seeds, opts)
				done <- result{res, tr, err}
			}()
			<-r.took
			if mode != rogueHide {
				honest(t, c, 1)
			}
			got := <-done
			require.NoError(t, got.err)
			require.Equal(t, want, got.res)
			require.Equal(t, wantTr, got.tr)
			requireNamed(t, c.Report(), mode, r.id)
		})
	}
}

// With a share below 1, which chunks are checked is drawn anew by each coordinator (crypto/rand),
// not derived from the job: the same job (scenario, point, seed) played twice is checked on other
// chunks, and the result is the same either way.
func TestVerifyDrawUnpredictable(t *testing.T) {
	f := load(t, "audit-vehicle-structured", true)
	const trials, seed = 8 * kinds.AuditChunk, 5 // 16 chunks
	want, err := audit.PlayFast(context.Background(), f.game, audit.FastOptions{Trials: trials, Seed: seed})
	require.NoError(t, err)
	var draws [2][]bool
	for k := range draws {
		c := start(t, f, farm.Config{Spawn: 2, SpawnThreads: 1, VerifyShare: 0.5})
		draws[k] = make([]bool, 16)
		c.SetDrawn(func(_ string, chunk int, checked bool) { draws[k][chunk] = checked })
		got, err := kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
		require.NoError(t, err)
		require.Equal(t, report(t, f.game, want), report(t, f.game, got))
		rep := c.Report()
		require.Empty(t, rep.Quarantined)
		require.Zero(t, rep.Mismatches)
		c.Close()
	}
	// the chance that two fair draws of 16 chunks agree is 2^-16
	require.NotEqual(t, draws[0], draws[1], "the same chunks were checked twice: the draw looks derived from the job")
}

// Every chunk checked (--verify-share 1) by a second worker process: two honest workers always
// agree, bit for bit (an audit's scores, a run's episodes, link counters and traces, whichever
// process encoded them), so nobody is quarantined and the result is the in-process engine's.
func TestHonestWorkersAgree(t *testing.T) {
	t.Run("audit", func(t *testing.T) {
		f := load(t, "audit-vehicle-structured", true)
		const trials, seed = 2 * kinds.AuditChunk, 8
		want, err := audit.PlayFast(context.Background(), f.game, audit.FastOptions{Trials: trials, Seed: seed})
		require.NoError(t, err)
		c := start(t, f, farm.Config{Spawn: 2, SpawnThreads: 1, VerifyShare: 1})
		got, err := kinds.Audit(c, context.Background(), 0, f.game, audit.GameOptions{}, seed, trials, nil)
		require.NoError(t, err)
		require.Equal(t, report(t, f.game, want), report(t, f.game, got))
		rep := c.Report()
		require.Empty(t, rep.Quarantined, "%+v", rep.Degradations)
		require.Zero(t, rep.Mismatches)
		require.Equal(t, rep.Chunks, rep.Verified)
	})
	t.Run("run", func(t *testing.T) {
		f := load(t, "faults-consensus-loss", false)
		seeds, opts := sim.NewSeeds(3), engine.Options{Runs: 40, KeepTraces: true, TraceEpisodes: trace.FirstEpisodes(2)}
		want, wantTr, err := engine.Run(context.Background(), f.plan, seeds, opts)
		require.NoError(t, err)
		c := start(t, f, farm.Config{Spawn: 2, SpawnThreads: 1, VerifyShare: 1, ChunkEpisodes: 10})
		got, gotTr, err := kinds.Run(c, context.Background(), 0, f.plan, seeds, opts)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.Equal(t, wantTr, gotTr)
		rep := c.Report()
		require.Empty(t, rep.Quarantined, "%+v", rep.Degradations)
		require.Zero(t, rep.Mismatches)
		require.Equal(t, rep.Chunks, rep.Verified)
	})
}

// A chunk that fails at the coordinator too fails the job, naming the worker's error and the
// coordinator's (here every result is refused by the job's check, the coordinator's included, and
// the rogue answers errors): the job never ends with a result nobody could compute.
func TestChunkFailingEverywhereFailsJob(t *testing.T) {
	f := load(t, "audit-vehicle-structured", true)
	c := start(t, f, farm.Config{VerifyShare: -1})
	r := startRogue(t, c, rogueFail, "", nil)
	params, err := farm.EncodeParams(kinds.AuditParams{Seed: 3})
	require.NoError(t, err)
	_, err = c.Play(context.Background(), farm.Work{Kind: kinds.AuditKind, Params: params,
		Spans: farm.Spans(2*kinds.AuditChunk, kinds.AuditChunk), Judge: refuse{}})
	<-r.took
	require.ErrorContains(t, err, "fails at the coordinator too: refused by the test")
	require.ErrorContains(t, err, "worker w1: rogue: out of luck")
}

// refuse is a judge that refuses every result.
type refuse struct{}

func (refuse) Check(int, int, []byte) (any, error) { return nil, errors.New("refused by the test") }
func (refuse) Digest(any) []byte                   { return nil }
