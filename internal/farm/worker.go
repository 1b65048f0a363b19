package farm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/pkg/bus"
)

// WorkerOptions configure Serve.
type WorkerOptions struct {
	// ID is the worker's identity, the last token of its subjects (IdentityOf: its account's on
	// the coordinator's embedded server, which refuses any other); default SanitizeID(Name).
	ID      string
	Name    string        // a label for the logs (the coordinator names a worker by its ID)
	Threads int           // goroutines playing a chunk (<= 0: GOMAXPROCS)
	Beat    time.Duration // heartbeat period (<= 0: DefaultBeat)
	// Kinds are the kinds of work the worker plays (a job of another kind is answered with an
	// error: the coordinator plays its chunks itself).
	Kinds []Kind
	Log   zerolog.Logger
}

// DefaultBeat is a worker's heartbeat period: well below DefaultSilence.
const DefaultBeat = 250 * time.Millisecond

// WorkerStats is what a worker did.
type WorkerStats struct {
	Chunks, Episodes int
	Refused          int // answers the coordinator did not fold (duplicate or invalid)
}

// worker is Serve's state.
type worker struct {
	c    *bus.Conn
	o    WorkerOptions
	mu   sync.Mutex
	held []assignment // fetched, not answered yet: named in every heartbeat
	jobs map[string]Player
	// puller takes the chunks of a durable farm's work queue (fetch's goroutine only).
	puller *bus.Puller
	st     WorkerStats // under mu
	// answering holds a token while an answer is in flight (capacity 1); answers counts them,
	// so that Serve returns only once each was acknowledged or given up.
	answering chan struct{}
	answers   sync.WaitGroup
	// logged is when progress was last logged (every ProgressEvery).
	logged time.Time
}

// ProgressEvery is how often a worker logs its progress (info level).
const ProgressEvery = 5 * time.Second

// Serve plays chunks for the coordinator on c until it says it is done (nil), ctx ends (nil: a
// worker is stopped that way, SIGTERM) or the connection closes for good (an error). It serves
// every job (point) of the coordinator meanwhile, and keeps one chunk fetched ahead while it
// plays another, so it never waits for the coordinator between chunks.
func Serve(ctx context.Context, c *bus.Conn, o WorkerOptions) (WorkerStats, error) {
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.Beat <= 0 {
		o.Beat = DefaultBeat
	}
	if o.ID == "" {
		o.ID = SanitizeID(o.Name)
	}
	if !ValidID(o.ID) {
		return WorkerStats{}, fmt.Errorf("farm: worker identity %q: want letters, digits, '-' and '_'", o.ID)
	}
	w := &worker{c: c, o: o, jobs: map[string]Player{}, logged: time.Now(), answering: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go w.beats(ctx)
	next := make(chan assignment) // unbuffered: one chunk playing, at most one fetched ahead
	go func() { cancel(w.fetch(ctx, next)) }()
	for {
		select {
		case <-ctx.Done():
			w.answers.Wait()
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.st, w.ended(context.Cause(ctx))
		case a := <-next:
			if err := w.playOne(ctx, a); err != nil {
				cancel(err)
			}
		}
	}
}

// ended maps why Serve stopped to its result: done (the coordinator said so) or stopped from
// outside are not errors.
func (w *worker) ended(cause error) error {
	if errors.Is(cause, errOver) || errors.Is(cause, context.Canceled) {
		return nil
	}
	return cause
}

var (
	errOver    = errors.New("farm: the coordinator is done")
	errJobOver = errors.New("farm: the job is over")
)

// fetch asks for chunks and hands them to Serve's loop until the coordinator is over (errOver)
// or ctx ends.
func (w *worker) fetch(ctx context.Context, next chan<- assignment) error {
	hi, err := Encode(hello{Worker: w.o.Name, Threads: w.o.Threads})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		data, err := w.c.Request(ctx, Subject(verbNext, w.o.ID), hi, 10*time.Second)
		if err != nil {
			if w.c.IsClosed() {
				return fmt.Errorf("farm: worker %s: the connection to the coordinator's server closed: %w", w.o.Name, err)
			}
			if errors.Is(err, bus.ErrNoResponders) { // no coordinator (yet): wait for one
				w.o.Log.Debug().Msg("no coordinator on the server yet")
				sleep(ctx, 500*time.Millisecond)
			}
			continue
		}
		var a assignment
		if err := Decode(data, &a); err != nil {
			return err
		}
		switch {
		case a.Over:
			return errOver
		case a.Wait:
			continue
		case a.Queue != "":
			if err := w.pull(ctx, a, next); err != nil {
				return err
			}
			continue
		}
		w.hold(a, true)
		select {
		case next <- a:
		case <-ctx.Done():
		}
	}
	return context.Cause(ctx)
}

// pull takes chunks from the durable farm's work queue q names and hands them to Serve's loop,
// until none comes for pullWait (then fetch asks the coordinator again: it may be over). A
// chunk this worker may not play (the check of its own result) goes back to the queue (Nak);
// one that does not decode is dropped (Term).
func (w *worker) pull(ctx context.Context, q assignment, next chan<- assignment) error {
	if w.puller == nil {
		p, err := w.c.Puller(ctx, q.Queue, q.Consumer)
		if err != nil {
			if w.c.IsClosed() {
				return err
			}
			w.o.Log.Debug().Err(err).Msg("the coordinator's work queue is not reachable (yet)")
			sleep(ctx, w.o.Beat)
			return nil
		}
		w.puller = p
	}
	for ctx.Err() == nil {
		d, err := w.puller.Next(pullWait)
		if err != nil {
			if w.c.IsClosed() {
				return fmt.Errorf("farm: worker %s: the connection to the coordinator's server closed: %w", w.o.Name, err)
			}
			w.o.Log.Debug().Err(err).Msg("no chunk from the work queue")
			sleep(ctx, w.o.Beat)
			return nil
		}
		if d == nil {
			return nil
		}
		var a assignment
		if err := Decode(d.Data, &a); err != nil {
			_ = d.Term("does not decode")
			continue
		}
		if slices.Contains(a.Not, w.o.ID) {
			_ = d.Nak(w.o.Beat)
			continue
		}
		a.delivery = d
		w.hold(a, true)
		select {
		case next <- a:
		case <-ctx.Done():
		}
	}
	return nil
}

// pullWait is how long a worker waits for a chunk of the work queue before it asks the
// coordinator whether it is over.
const pullWait = time.Second

// playOne plays assignment a and answers it. Only a failure to reach the coordinator is an error.
func (w *worker) playOne(ctx context.Context, a assignment) error {
	pl, err := w.job(ctx, a.Lease.Job)
	if errors.Is(err, errJobOver) { // it ended (failed, interrupted) since the chunk was issued
		w.hold(a, false)
		if a.delivery != nil { // or not begun yet by a coordinator started again: the coordinator drops a job's chunks when it is over
			_ = a.delivery.Nak(pullWait)
		}
		w.o.Log.Debug().Str("job", a.Lease.Job).Msg("the job is over (or not served yet): chunk skipped")
		return nil
	}
	if err != nil {
		w.hold(a, false)
		if a.delivery != nil {
			_ = a.delivery.Nak(0) // another worker may play it
		}
		return err
	}
	ans := answer{Worker: w.o.Name, Lease: a.Lease, Lo: a.Lo, Hi: a.Hi}
	start := time.Now()
	res, err := pl.Play(ctx, a.Lo, a.Hi, w.o.Threads)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		ans.Err = err.Error()
	} else {
		ans.Result = res
	}
	data, err := Encode(&ans)
	if err != nil {
		return err
	}
	if limit := w.c.MaxPayload(); int64(len(data)) > limit {
		ans = answer{Worker: w.o.Name, Lease: a.Lease, Lo: a.Lo, Hi: a.Hi,
			Err: fmt.Sprintf("the answer has %d bytes, more than the server's max payload %d: trace fewer episodes (--trace-episodes)", len(data), limit)}
		if data, err = Encode(&ans); err != nil {
			return err
		}
	}
	// The answer travels while the next chunk plays: waiting for the coordinator's
	// acknowledgement idled a worker for a round trip per chunk (a sixth of its time once a
	// chunk took a few milliseconds). One answer at a time is in flight; the lease is held
	// (named in the heartbeats) until it is acknowledged.
	w.answering <- struct{}{}
	w.answers.Add(1)
	go func() {
		defer func() { w.hold(a, false); <-w.answering; w.answers.Done() }()
		if a.delivery != nil {
			w.store(ctx, a, data, start)
			return
		}
		w.answer(ctx, a, data, start)
	}()
	return nil
}

// answer sends chunk a's encoded answer and counts what the coordinator made of it.
func (w *worker) answer(ctx context.Context, a assignment, data []byte, start time.Time) {
	resp, err := w.c.Request(ctx, Subject(verbAnswer, w.o.ID), data, 30*time.Second)
	var r reply
	if err == nil {
		err = Decode(resp, &r)
	}
	if err != nil {
		w.o.Log.Warn().Err(err).Int("chunk", a.Lease.Chunk).Msg("answer not acknowledged (the chunk will be re-issued)")
		return
	}
	if r.Status == "quarantined" {
		w.o.Log.Error().Int("chunk", a.Lease.Chunk).Msg("the coordinator quarantined this worker: its answers are ignored")
	}
	w.answered(a, r.Status, start)
}

// store stores chunk a's encoded answer in the durable farm's answer queue - trying again while
// the server is away (a coordinator started again brings it back) or the queue is full - and
// then acknowledges the chunk to the work queue. The coordinator judges the answer later: the
// worker hears no status.
func (w *worker) store(ctx context.Context, a assignment, data []byte, start time.Time) {
	for {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := w.c.Store(sctx, Subject(verbAnswer, w.o.ID), data)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil || w.c.IsClosed() {
			w.o.Log.Warn().Err(err).Int("chunk", a.Lease.Chunk).Msg("answer not stored (the chunk will be delivered again)")
			return
		}
		w.o.Log.Debug().Err(err).Int("chunk", a.Lease.Chunk).Msg("answer not stored yet: trying again")
		sleep(ctx, w.o.Beat)
	}
	if err := a.delivery.Ack(); err != nil {
		w.o.Log.Debug().Err(err).Int("chunk", a.Lease.Chunk).Msg("chunk not acknowledged (it will be delivered again; its answer is stored)")
	}
	w.answered(a, "stored", start)
}

// answered counts chunk a, answered with status, and logs the progress now and then.
func (w *worker) answered(a assignment, status string, start time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.st.Chunks++
	w.st.Episodes += a.Hi - a.Lo
	if status != "ok" && status != "stored" {
		w.st.Refused++
	}
	w.o.Log.Debug().Str("job", a.Lease.Job).Int("chunk", a.Lease.Chunk).Int("episodes", a.Hi-a.Lo).
		Dur("took", time.Since(start)).Str("status", status).Msg("chunk answered")
	if now := time.Now(); now.Sub(w.logged) >= ProgressEvery {
		w.logged = now
		w.o.Log.Info().Int("chunks", w.st.Chunks).Int("episodes", w.st.Episodes).Int("refused", w.st.Refused).Msg("progress")
	}
}

// job returns the resolved job id, fetching it from the coordinator the first time.
func (w *worker) job(ctx context.Context, id string) (Player, error) {
	if pl := w.jobs[id]; pl != nil {
		return pl, nil
	}
	data, err := w.c.Request(ctx, Subject(verbJob, w.o.ID), []byte(id), 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("farm: job %s: %w", id, err)
	}
	if len(data) == 0 {
		return nil, errJobOver
	}
	var j Job
	if err := Decode(data, &j); err != nil {
		return nil, err
	}
	pl, err := w.prepare(&j)
	if err != nil {
		return nil, fmt.Errorf("farm: job %s: %w", id, err)
	}
	if len(w.jobs) >= 4 { // a sweep's points come one after the other: keep the last few
		clear(w.jobs)
	}
	w.jobs[id] = pl
	w.o.Log.Info().Str("job", id).Str("kind", j.Kind).Str("scenario", j.Source).Int("point", j.Point).Msg("joined a job")
	return pl, nil
}

// prepare resolves job j with the worker's kind of its name.
func (w *worker) prepare(j *Job) (Player, error) {
	for _, k := range w.o.Kinds {
		if k.Name() == j.Kind {
			return k.Prepare(j)
		}
	}
	return nil, fmt.Errorf("unknown kind %q", j.Kind)
}

// hold adds (or removes) a from the chunks the heartbeats name.
func (w *worker) hold(a assignment, add bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if add {
		w.held = append(w.held, a)
		return
	}
	w.held = slices.DeleteFunc(w.held, func(h assignment) bool { return h.Lease == a.Lease })
}

// beats publishes a heartbeat every Beat until ctx ends; the chunks of a work queue are kept
// too (InProgress: their AckWait starts again).
func (w *worker) beats(ctx context.Context) {
	t := time.NewTicker(w.o.Beat)
	defer t.Stop()
	for {
		w.mu.Lock()
		b := beat{Worker: w.o.Name}
		var keep []*bus.Delivery
		for _, a := range w.held {
			b.Held = append(b.Held, a.Lease)
			if a.delivery != nil {
				keep = append(keep, a.delivery)
			}
		}
		w.mu.Unlock()
		for _, d := range keep {
			_ = d.InProgress()
		}
		if data, err := Encode(&b); err == nil {
			_ = w.c.PublishRaw(Subject(verbBeat, w.o.ID), data)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
