package farm

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/record"
)

// Span is one chunk of a job: episodes (trials) Lo..Hi-1.
type Span struct{ Lo, Hi int }

// MaxHeld is how many chunks a worker may hold unanswered (one playing, one fetched ahead, one
// answer in flight): a worker that asks for more waits, so one that hoards holds this many.
const MaxHeld = 3

// MaxFailures is how many error answers a worker may give (chunks the coordinator then played
// without error) before it is quarantined: results are deterministic, so a worker that keeps
// failing where the coordinator does not is broken or lying.
const MaxFailures = 3

// issue is one hand-out of a chunk to a worker.
type issue struct {
	worker  string
	start   time.Time
	expires time.Time // when it lapses without a heartbeat (it lapses whatever the heartbeats after chunkBound)
	// seq is its message in the chunk queue (a durable farm, queue.go; 0: a core NATS lease).
	// Its worker is "" until one took it (its heartbeat or its answer says so); the queue
	// delivers it again when its worker goes silent, so it does not lapse on silence here.
	seq uint64
}

// chunkState is one chunk of a job as the scheduler tracks it. Its result is decided (final)
// when its first valid answer was not drawn for a check, when a second computation by another
// worker agreed with it bit for bit, or when the coordinator played it itself.
type chunkState struct {
	Span
	issues   map[int]*issue  // the open issues by attempt
	attempts int             // issues so far
	ever     map[string]bool // workers it was ever issued to (their late answers are not foreign)
	exclude  map[string]bool // workers that may not take it again (overdue, failed)
	result   *answer         // the first valid answer, or the coordinator's
	by       string          // who computed result
	pending  bool            // result waits for its check
	final    bool
	verified bool      // two computations agreed on result
	local    bool      // the coordinator plays it (settle)
	queued   bool      // waits in the queue
	restored bool      // decided by an earlier coordinator: read back from the journal (durable.go)
	since    time.Time // queued since
	held     inbound   // the stored first answer, acknowledged once the chunk is decided (queue.go)
	// answered are the issues whose answer was taken: the work queue delivers at least once, so
	// a chunk may come back twice from one issue (queue.go).
	answered map[int]bool
}

// jobState is a job being played: its chunks and what came back.
type jobState struct {
	job      *Job
	chunks   []*chunkState
	kind     Kind
	judge    Judge          // an answer that may be folded (shape, finiteness): check
	progress func(done int) // episodes decided so far (may go back when a liar is caught)
	left     int            // chunks not decided
	done     int
	results  []*answer // the decided results in chunk order, set when the job ends
	err      error     // the job failed (a chunk failing at the coordinator too, no worker left)
	finish   chan struct{}
	// the coordinator's own player of the job (settle), resolved once
	localOnce sync.Once
	localPl   Player
	localErr  error
}

func newJobState(j *Job, w Work) *jobState {
	js := &jobState{job: j, kind: w.Kind, judge: w.Judge, progress: w.Progress, left: len(w.Spans), finish: make(chan struct{})}
	for _, sp := range w.Spans {
		js.chunks = append(js.chunks, &chunkState{Span: sp, issues: map[int]*issue{}, ever: map[string]bool{}, exclude: map[string]bool{}})
	}
	return js
}

// check has the job's judge validate answer a, keeping what it made of it for the fold.
func (js *jobState) check(a *answer) error {
	var err error
	a.checked, err = js.judge.Check(a.Lo, a.Hi, a.Result)
	return err
}

// queued is a chunk waiting for a worker.
type queued struct {
	js *jobState
	i  int
}

// held is a worker's request for a chunk that waits for one.
type held struct {
	req    *bus.Request
	worker string
	since  time.Time
}

// scheduler is the coordinator's state, owned by its loop goroutine.
type scheduler struct {
	c           *Coordinator
	queue       []queued // chunks to issue, re-issued ones first (stale entries are skipped)
	waiting     []held
	jobs        map[string]*jobState
	seen        map[string]time.Time // a worker's last message
	lost        map[string]bool
	ended       map[string]bool                // jobs finished: a late answer of theirs is a duplicate
	holding     map[string]map[lease]bool      // the leases a worker was issued and did not answer
	quarantined map[string]string              // worker -> why
	failures    map[string]int                 // error answers by worker
	unchecked   map[string]int                 // results of a worker kept unchecked in ended jobs
	times       []time.Duration                // recent chunk times (issue to answer), for chunkBound
	draw        func(js *jobState, i int) bool // whether chunk i's first answer is checked
	over        bool
	bySeq       map[uint64]queueRef // the open issues in the chunk queue (queue.go)
	restored    map[string]bool     // jobs with chunks restored from the journal
}

// loop runs the scheduler until the coordinator closes.
func (c *Coordinator) loop() {
	s := &scheduler{c: c, jobs: map[string]*jobState{}, seen: map[string]time.Time{}, lost: map[string]bool{}, ended: map[string]bool{},
		holding: map[string]map[lease]bool{}, quarantined: map[string]string{}, failures: map[string]int{}, unchecked: map[string]int{}, bySeq: map[uint64]queueRef{}, restored: map[string]bool{}}
	s.draw = func(js *jobState, i int) bool {
		v := c.cfg.VerifyShare > 0 && secretCoin() < c.cfg.VerifyShare
		if c.drawn != nil {
			c.drawn(js.job.ID, i, v)
		}
		return v
	}
	tick := time.NewTicker(max(c.cfg.Silence/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case ev := <-c.events:
			ev(s)
		case now := <-tick.C:
			s.expire(now)
		case <-c.closing:
			s.over = true
			for _, h := range s.waiting {
				s.respond(h.req, assignment{Over: true})
			}
			close(c.closed)
			return
		}
	}
}

// secretCoin is uniform in [0, 1), from crypto/rand: which chunks are checked is known to the
// coordinator only (never derived from the job's seed, which every worker holds).
func secretCoin() float64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0 // no randomness: check the chunk
	}
	return float64(binary.LittleEndian.Uint64(b[:])>>11) / (1 << 53)
}

// submit queues the chunks of js.
func (s *scheduler) submit(js *jobState) {
	s.jobs[js.job.ID] = js
	if js.done > 0 { // chunks restored from the journal
		s.restored[js.job.ID] = true
		if js.progress != nil {
			js.progress(js.done)
		}
	}
	if s.c.wq != nil {
		s.adopt(js)
	}
	if js.left == 0 {
		s.end(js)
		return
	}
	for i, cs := range js.chunks {
		if cs.final || len(cs.issues) > 0 {
			continue
		}
		cs.queued, cs.since = true, time.Now()
		s.queue = append(s.queue, queued{js, i})
	}
	s.dispatch()
}

// enqueue queues chunk i ahead of the others (its computation again, or its check when its
// result is pending) unless it is decided, played by the coordinator or queued already.
func (s *scheduler) enqueue(js *jobState, i int) {
	cs := js.chunks[i]
	if cs.final || cs.local || cs.queued || js.err != nil {
		return
	}
	cs.queued, cs.since = true, time.Now()
	s.queue = append([]queued{{js, i}}, s.queue...)
}

// requeueIdle queues chunk i when nobody holds an issue of it.
func (s *scheduler) requeueIdle(js *jobState, i int) {
	if len(js.chunks[i].issues) == 0 {
		s.enqueue(js, i)
	}
}

// next takes a worker's request for a chunk: answered at once when one is free, else held.
func (s *scheduler) next(req *bus.Request) {
	w := sender(req.Subject)
	s.seen[w] = time.Now()
	if s.over || s.quarantined[w] != "" {
		s.respond(req, assignment{Over: true})
		return
	}
	if s.c.wq != nil { // a durable farm: the chunks are in the work queue
		s.respond(req, assignment{Queue: queueStream, Consumer: queueConsumer})
		return
	}
	s.waiting = append(s.waiting, held{req, w, time.Now()})
	s.dispatch()
}

// dispatch issues queued chunks to held requests, oldest first: a worker gets a chunk it may
// take (not one it is excluded from, not the check of its own result) while it holds fewer
// than MaxHeld.
func (s *scheduler) dispatch() {
	s.queue = slices.DeleteFunc(s.queue, func(q queued) bool { return !q.js.chunks[q.i].queued || q.js.err != nil })
	if s.c.wq != nil {
		s.put()
		return
	}
	keep := s.waiting[:0]
	for _, h := range s.waiting {
		if !s.assign(h) {
			keep = append(keep, h)
		}
	}
	s.waiting = keep
}

// assign issues a chunk to held request h if one fits; false: h keeps waiting.
func (s *scheduler) assign(h held) bool {
	w := h.worker
	if s.quarantined[w] != "" {
		s.respond(h.req, assignment{Over: true})
		return true
	}
	if len(s.holding[w]) >= MaxHeld {
		return false
	}
	for k, q := range s.queue {
		cs := q.js.chunks[q.i]
		if !cs.queued || cs.exclude[w] || (cs.pending && cs.by == w) {
			continue
		}
		s.queue = slices.Delete(s.queue, k, k+1)
		s.issue(q.js, q.i, h)
		return true
	}
	return false
}

// issue hands chunk i to the worker of request h.
func (s *scheduler) issue(js *jobState, i int, h held) {
	cs, now := js.chunks[i], time.Now()
	cs.queued = false
	cs.attempts++
	cs.issues[cs.attempts] = &issue{worker: h.worker, start: now, expires: now.Add(s.c.cfg.Silence)}
	cs.ever[h.worker] = true
	l := lease{Job: js.job.ID, Chunk: i, Attempt: cs.attempts}
	if s.holding[h.worker] == nil {
		s.holding[h.worker] = map[lease]bool{}
	}
	s.holding[h.worker][l] = true
	s.c.rep.issued(h.worker)
	s.respond(h.req, assignment{Lease: l, Lo: cs.Lo, Hi: cs.Hi})
}

// chunkBound is how long a worker may hold a chunk: Config.ChunkTimeout, else ten times the
// median chunk time observed (at least four silences; twenty before any chunk came back, when
// the first chunks also wait for the job to be resolved). It applies to the chunks held already
// too: a hoarder that took the first chunks loses them once the others' times are known.
func (s *scheduler) chunkBound() time.Duration {
	if s.c.cfg.ChunkTimeout > 0 {
		return s.c.cfg.ChunkTimeout
	}
	if len(s.times) == 0 {
		return 20 * s.c.cfg.Silence
	}
	t := slices.Clone(s.times)
	slices.Sort(t)
	return max(4*s.c.cfg.Silence, 10*t[len(t)/2])
}

// observe records a chunk's time (the last 64 count).
func (s *scheduler) observe(d time.Duration) {
	if s.times = append(s.times, d); len(s.times) > 64 {
		s.times = s.times[1:]
	}
}

// beat renews the issues a worker names (in the chunk queue: binds those it took to it).
func (s *scheduler) beat(w string, b *beat) {
	if s.quarantined[w] != "" {
		return
	}
	now := time.Now()
	s.seen[w] = now
	for _, l := range b.Held {
		if js := s.jobs[l.Job]; js != nil && l.Chunk >= 0 && l.Chunk < len(js.chunks) {
			cs := js.chunks[l.Chunk]
			is := cs.issues[l.Attempt]
			switch {
			case is == nil:
			case is.worker == w:
				is.expires = now.Add(s.c.cfg.Silence)
			case is.seq != 0 && s.c.wq.valid(l, cs.Lo, cs.Hi):
				s.bind(w, js, l, is, now)
			}
		}
	}
}

// bind binds chunk queue issue is of chunk cs (lease l) to worker w, which took it (the queue
// delivered it to w: first, or again after the worker before went silent).
func (s *scheduler) bind(w string, js *jobState, l lease, is *issue, now time.Time) {
	cs := js.chunks[l.Chunk]
	if was := is.worker; was != "" { // the queue took it back from was: silent past AckWait
		s.release(was, l)
		s.c.rep.degrade(record.Degradation{Kind: KindReissued, Worker: was, Job: js.job.ID, Chunk: l.Chunk,
			Detail: fmt.Sprintf("no heartbeat (InProgress) for AckWait %v: chunk %d (episodes %d..%d) delivered again by the work queue, to %s", s.c.cfg.AckWait, l.Chunk, cs.Lo, cs.Hi-1, w)})
		if !s.lost[was] {
			s.lost[was] = true
			s.c.rep.degrade(record.Degradation{Kind: KindLost, Worker: was, Job: js.job.ID, Chunk: l.Chunk,
				Detail: fmt.Sprintf("worker %s went silent while holding chunk %d", was, l.Chunk)})
		}
	}
	is.worker, is.start = w, now
	cs.ever[w] = true
	if s.holding[w] == nil {
		s.holding[w] = map[lease]bool{}
	}
	l.Token = ""
	s.holding[w][l] = true
	s.c.rep.issued(w)
}

// release forgets that worker w holds lease l.
func (s *scheduler) release(w string, l lease) { l.Token = ""; delete(s.holding[w], l) }

// expire takes back the chunks whose worker went silent (their lease released: the worker is
// gone) or held them past chunkBound (the worker keeps them counted against MaxHeld until it
// answers: a hoarder gets nothing more), has the coordinator play the chunks no permitted
// worker took for a silence, and tells the requests held too long to ask again.
func (s *scheduler) expire(now time.Time) {
	bound := s.chunkBound()
	for _, js := range s.jobs {
		for i, cs := range js.chunks {
			s.lapse(js, i, now, bound)
			if (cs.queued || unclaimed(cs)) && (cs.pending || len(cs.exclude) > 0) && now.Sub(cs.since) > s.c.cfg.Silence {
				s.settle(js, i, s.claims(cs, "", nil))
			}
		}
	}
	s.abandoned(now)
	keep := s.waiting[:0]
	for _, h := range s.waiting {
		if now.Sub(h.since) > holdFor {
			s.respond(h.req, assignment{Wait: true})
			continue
		}
		keep = append(keep, h)
	}
	s.waiting = keep
	s.dispatch()
}

// lapse ends the issues of chunk i that went silent or are held longer than bound.
func (s *scheduler) lapse(js *jobState, i int, now time.Time, bound time.Duration) {
	cs := js.chunks[i]
	if cs.final { // its other copies' answers will be late; their workers keep the leases till then
		return
	}
	for at, is := range cs.issues {
		silent, overdue := is.seq == 0 && now.After(is.expires), is.worker != "" && now.Sub(is.start) > bound
		untaken := is.seq != 0 && is.worker == "" && now.Sub(is.start) > bound && s.alive("")
		if !silent && !overdue && !untaken {
			continue
		}
		s.closeIssue(cs, at, true)
		d := record.Degradation{Worker: is.worker, Job: js.job.ID, Chunk: i}
		if untaken { // its message in the work queue was lost (taken and dropped by a worker)
			d.Kind, d.Detail = KindReissued, fmt.Sprintf("chunk %d (episodes %d..%d) not taken from the work queue for %v while workers were alive: queued again", i, cs.Lo, cs.Hi-1, bound.Round(time.Millisecond))
			s.c.rep.degrade(d)
			s.requeueIdle(js, i)
			continue
		}
		if silent {
			s.release(is.worker, lease{Job: js.job.ID, Chunk: i, Attempt: at})
			d.Kind, d.Detail = KindReissued, fmt.Sprintf("no heartbeat for %v: chunk %d (episodes %d..%d) re-issued", s.c.cfg.Silence, i, cs.Lo, cs.Hi-1)
		} else {
			cs.exclude[is.worker] = true
			d.Kind, d.Detail = KindOverdue, fmt.Sprintf("held chunk %d (episodes %d..%d) for %v without answering (bound %v): re-issued to another", i, cs.Lo, cs.Hi-1, now.Sub(is.start).Round(time.Millisecond), bound.Round(time.Millisecond))
		}
		s.c.rep.degrade(d)
		if silent && !s.lost[is.worker] {
			s.lost[is.worker] = true
			s.c.rep.degrade(record.Degradation{Kind: KindLost, Worker: is.worker, Job: js.job.ID, Chunk: i,
				Detail: fmt.Sprintf("worker %s went silent while holding chunk %d", is.worker, i)})
		}
		s.requeueIdle(js, i)
	}
}

// abandoned fails the jobs when every local worker exited or was quarantined and no other
// worker was heard of for two silences: nobody is left to play them (a worker that cannot
// resolve a job exits, and says why in its log).
func (s *scheduler) abandoned(now time.Time) {
	if len(s.jobs) == 0 || !s.c.procs.gone(func(i int) bool { return s.quarantined[localName(i)] != "" }) {
		return
	}
	for w, t := range s.seen {
		if s.quarantined[w] == "" && now.Sub(t) < 2*s.c.cfg.Silence {
			return
		}
	}
	why := fmt.Sprintf("no worker left: the %d local worker(s) exited (see their log above)", len(s.c.procs.cmds))
	if len(s.quarantined) > 0 {
		why = fmt.Sprintf("no worker left: the %d local worker(s) exited or were quarantined (%s)", len(s.c.procs.cmds), s.quarantineList())
	}
	for _, js := range s.jobs {
		s.fail(js, fmt.Errorf("%s and no other worker is connected", why))
	}
}

// holdFor is how long a worker's request for a chunk is held before it is told to ask again.
const holdFor = 2 * time.Second

func (s *scheduler) fail(js *jobState, err error) {
	if js.err == nil {
		js.err = err
		s.end(js)
	}
}

// end finishes js: its decided results are kept in chunk order for the fold, and the leases
// of its chunks are released (a hoarder's too: the next job starts afresh).
func (s *scheduler) end(js *jobState) {
	js.results = make([]*answer, len(js.chunks))
	for i, cs := range js.chunks {
		if cs.final {
			js.results[i] = cs.result
			if !cs.verified && !cs.restored && js.err == nil {
				s.unchecked[cs.by]++
			}
		}
		cs.queued = false
		s.unhold(cs)
		for at := range cs.issues {
			if cs.issues[at].seq != 0 { // nobody should play it now
				s.closeIssue(cs, at, true)
			}
		}
	}
	for _, ls := range s.holding {
		for l := range ls {
			if l.Job == js.job.ID {
				delete(ls, l)
			}
		}
	}
	delete(s.jobs, js.job.ID)
	s.ended[js.job.ID] = true
	s.c.retire(js.job.ID)
	close(js.finish)
	s.dispatch()
}

func (s *scheduler) respond(req *bus.Request, a assignment) {
	data, err := Encode(&a)
	if err == nil {
		err = req.Respond(data)
	}
	if err != nil {
		s.c.log.Warn().Err(err).Msg("could not answer a worker")
	}
}

// unhold acknowledges chunk cs's stored first answer (its chunk decided, or its result thrown
// away).
func (s *scheduler) unhold(cs *chunkState) {
	if cs.held != nil {
		cs.held.reply("ok")
		cs.held = nil
	}
}
