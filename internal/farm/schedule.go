package farm

import (
	"errors"
	"fmt"
	"time"

	"github.com/dpsim/dpsim/pkg/bus"
)

// span is one chunk of a job: episodes (trials) lo..hi-1.
type span struct{ lo, hi int }

// fatal is an error of accept that ends the job (not the answer's fault: the trace sink failed).
type fatal struct{ err error }

func (f fatal) Error() string { return f.err.Error() }

// MaxInvalid is how many invalid answers one chunk may get before its job fails: an answer that
// never fits is a bug or a foreign worker, not bad luck.
const MaxInvalid = 5

// jobState is a job being played: its chunks, who holds them and what came back.
type jobState struct {
	job     *Job
	spans   []span
	accept  func(i int, a *answer) error // folds a valid answer of chunk i; an error: invalid answer
	done    []bool
	left    int
	attempt []int // issues of each chunk so far
	invalid []int
	holder  []string    // the worker holding the current issue of each chunk ("" none)
	expires []time.Time // when that issue lapses without a heartbeat
	err     error       // the job failed (an episode error, a chunk that never fits)
	finish  chan struct{}
}

func newJobState(j *Job, spans []span, accept func(int, *answer) error) *jobState {
	n := len(spans)
	return &jobState{job: j, spans: spans, accept: accept, done: make([]bool, n), left: n,
		attempt: make([]int, n), invalid: make([]int, n), holder: make([]string, n),
		expires: make([]time.Time, n), finish: make(chan struct{})}
}

// queued is a chunk waiting for a worker.
type queued struct {
	js *jobState
	i  int
}

// held is a worker's request for a chunk that waits for one.
type held struct {
	req   *bus.Request
	since time.Time
}

// scheduler is the coordinator's state, owned by its loop goroutine.
type scheduler struct {
	c       *Coordinator
	queue   []queued // chunks to issue, re-issued ones first
	waiting []held
	jobs    map[string]*jobState
	seen    map[string]time.Time // a worker's last heartbeat or request
	lost    map[string]bool
	ended   map[string]bool // jobs finished: a late answer of theirs is a duplicate
	over    bool
}

// loop runs the scheduler until the coordinator closes.
func (c *Coordinator) loop() {
	s := &scheduler{c: c, jobs: map[string]*jobState{}, seen: map[string]time.Time{}, lost: map[string]bool{}, ended: map[string]bool{}}
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

// submit queues the chunks of js.
func (s *scheduler) submit(js *jobState) {
	s.jobs[js.job.ID] = js
	for i := range js.spans {
		s.queue = append(s.queue, queued{js, i})
	}
	s.dispatch()
}

// next takes a worker's request for a chunk: answered at once when one is free, else held.
func (s *scheduler) next(req *bus.Request) {
	var h hello
	if err := decode(req.Data, &h); err != nil {
		s.c.log.Warn().Err(err).Msg("a malformed request for a chunk (ignored)")
		return
	}
	s.seen[h.Worker] = time.Now()
	if s.over {
		s.respond(req, assignment{Over: true})
		return
	}
	s.waiting = append(s.waiting, held{req, time.Now()})
	s.dispatch()
}

// dispatch issues queued chunks to held requests, oldest first.
func (s *scheduler) dispatch() {
	for len(s.queue) > 0 && len(s.waiting) > 0 {
		q := s.queue[0]
		s.queue = s.queue[1:]
		js := q.js
		if js.done[q.i] || js.err != nil {
			continue
		}
		h := s.waiting[0]
		s.waiting = s.waiting[1:]
		var who hello
		_ = decode(h.req.Data, &who) // decoded before it was held
		js.attempt[q.i]++
		js.holder[q.i], js.expires[q.i] = who.Worker, time.Now().Add(s.c.cfg.Silence)
		l := lease{Job: js.job.ID, Chunk: q.i, Attempt: js.attempt[q.i]}
		s.c.rep.issued(who.Worker)
		s.respond(h.req, assignment{Lease: l, Lo: js.spans[q.i].lo, Hi: js.spans[q.i].hi})
	}
}

// beat renews the leases a worker names.
func (s *scheduler) beat(b *beat) {
	now := time.Now()
	s.seen[b.Worker] = now
	for _, l := range b.Held {
		if js := s.jobs[l.Job]; js != nil && l.Chunk >= 0 && l.Chunk < len(js.spans) &&
			js.holder[l.Chunk] == b.Worker && js.attempt[l.Chunk] == l.Attempt {
			js.expires[l.Chunk] = now.Add(s.c.cfg.Silence)
		}
	}
}

// expire re-issues the chunks whose worker went silent, and tells the requests held too long
// to ask again (a worker's request must not time out while it waits).
func (s *scheduler) expire(now time.Time) {
	for _, js := range s.jobs {
		for i, who := range js.holder {
			if who == "" || js.done[i] || !now.After(js.expires[i]) {
				continue
			}
			js.holder[i] = ""
			s.queue = append([]queued{{js, i}}, s.queue...)
			s.c.rep.degrade(Degradation{Kind: KindReissued, Worker: who, Job: js.job.ID, Chunk: i,
				Detail: fmt.Sprintf("no heartbeat for %v: chunk %d (episodes %d..%d) re-issued", s.c.cfg.Silence, i, js.spans[i].lo, js.spans[i].hi-1)})
			if !s.lost[who] {
				s.lost[who] = true
				s.c.rep.degrade(Degradation{Kind: KindLost, Worker: who, Job: js.job.ID, Chunk: i,
					Detail: fmt.Sprintf("worker %s went silent while holding chunk %d", who, i)})
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

// abandoned fails the jobs when every local worker exited and no other worker was heard of for
// two silences: nobody is left to play them (a worker that cannot resolve a job exits, and says
// why in its log).
func (s *scheduler) abandoned(now time.Time) {
	if len(s.jobs) == 0 || !s.c.procs.exited() {
		return
	}
	for _, t := range s.seen {
		if now.Sub(t) < 2*s.c.cfg.Silence {
			return
		}
	}
	for _, js := range s.jobs {
		s.fail(js, fmt.Errorf("no worker left: the %d local worker(s) exited (see their log above) and no other worker is connected", len(s.c.procs.cmds)))
	}
}

// holdFor is how long a worker's request for a chunk is held before it is told to ask again.
const holdFor = 2 * time.Second

// answer takes a worker's answer: the first valid answer of a chunk is folded, a later one is
// a duplicate, one that does not fit is invalid (its chunk re-issued when that worker held it).
func (s *scheduler) answer(req *bus.Request) {
	var a answer
	if err := decode(req.Data, &a); err != nil {
		s.c.rep.degrade(Degradation{Kind: KindInvalid, Detail: "an answer that does not decode: " + err.Error()})
		s.ack(req, "invalid: "+err.Error())
		return
	}
	s.seen[a.Worker] = time.Now()
	js := s.jobs[a.Lease.Job]
	switch {
	case js == nil && s.ended[a.Lease.Job]:
		s.duplicate(req, &a)
	case js == nil || a.Lease.Chunk < 0 || a.Lease.Chunk >= len(js.spans):
		s.invalid(req, &a, nil, "no such job or chunk")
	case js.done[a.Lease.Chunk] || js.err != nil:
		s.duplicate(req, &a)
	case js.spans[a.Lease.Chunk] != span{a.Lo, a.Hi}:
		s.invalid(req, &a, js, fmt.Sprintf("episodes %d..%d, the chunk is %d..%d", a.Lo, a.Hi-1, js.spans[a.Lease.Chunk].lo, js.spans[a.Lease.Chunk].hi-1))
	case a.Err != "":
		s.fail(js, fmt.Errorf("chunk %d (episodes %d..%d) on worker %s: %s", a.Lease.Chunk, a.Lo, a.Hi-1, a.Worker, a.Err))
		s.ack(req, "ok")
	default:
		if err := js.accept(a.Lease.Chunk, &a); err != nil {
			var f fatal
			if errors.As(err, &f) {
				s.ack(req, "ok")
				s.fail(js, f.err)
				return
			}
			s.invalid(req, &a, js, err.Error())
			return
		}
		js.done[a.Lease.Chunk], js.holder[a.Lease.Chunk] = true, ""
		s.c.rep.answered(a.Worker, a.Hi-a.Lo)
		s.ack(req, "ok")
		if js.left--; js.left == 0 {
			s.end(js)
		}
	}
}

// duplicate counts an answer of a chunk already folded (its worker was thought lost, or the
// job is over).
func (s *scheduler) duplicate(req *bus.Request, a *answer) {
	s.c.rep.degrade(Degradation{Kind: KindDuplicate, Worker: a.Worker, Job: a.Lease.Job, Chunk: a.Lease.Chunk,
		Detail: fmt.Sprintf("a late answer of chunk %d (issue %d) ignored: the chunk was folded already", a.Lease.Chunk, a.Lease.Attempt)})
	s.ack(req, "duplicate")
}

// invalid counts an answer that does not fit; its chunk is re-issued when its sender held it
// (a foreign answer does not disturb the worker playing the chunk).
func (s *scheduler) invalid(req *bus.Request, a *answer, js *jobState, why string) {
	s.c.rep.degrade(Degradation{Kind: KindInvalid, Worker: a.Worker, Job: a.Lease.Job, Chunk: a.Lease.Chunk,
		Detail: fmt.Sprintf("answer of chunk %d refused: %s", a.Lease.Chunk, why)})
	s.ack(req, "invalid: "+why)
	if js == nil || js.holder[a.Lease.Chunk] != a.Worker || js.attempt[a.Lease.Chunk] != a.Lease.Attempt {
		return
	}
	js.holder[a.Lease.Chunk] = ""
	if js.invalid[a.Lease.Chunk]++; js.invalid[a.Lease.Chunk] >= MaxInvalid {
		s.fail(js, fmt.Errorf("chunk %d: %d invalid answers (the last from %s: %s)", a.Lease.Chunk, js.invalid[a.Lease.Chunk], a.Worker, why))
		return
	}
	s.queue = append([]queued{{js, a.Lease.Chunk}}, s.queue...)
	s.dispatch()
}

func (s *scheduler) fail(js *jobState, err error) {
	if js.err == nil {
		js.err = err
		s.end(js)
	}
}

func (s *scheduler) end(js *jobState) {
	delete(s.jobs, js.job.ID)
	s.ended[js.job.ID] = true
	s.c.retire(js.job.ID)
	close(js.finish)
}

func (s *scheduler) respond(req *bus.Request, a assignment) {
	data, err := encode(&a)
	if err == nil {
		err = req.Respond(data)
	}
	if err != nil {
		s.c.log.Warn().Err(err).Msg("could not answer a worker")
	}
}

func (s *scheduler) ack(req *bus.Request, status string) {
	if data, err := encode(&reply{Status: status}); err == nil {
		_ = req.Respond(data)
	}
}
