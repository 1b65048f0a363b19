package farm

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dpsim/dpsim/pkg/record"
)

// answer takes a worker's answer. Its sender is the subject's identity (the server lets a worker
// publish under its own only). An answer counts only when it answers an open issue its sender
// holds: any other is foreign (never held) or late (held once), counted and attributed, never
// folded. An answer of an open issue is checked (take). From the chunk queue (a durable farm)
// an answer must carry its issue's token (queue.go): then it counts from whichever worker the
// queue delivered the chunk to.
func (s *scheduler) answer(req inbound) {
	w := sender(req.subject())
	var a answer
	if err := Decode(req.payload(), &a); err != nil {
		s.refuse(req, record.Degradation{Kind: KindInvalid, Worker: w, Chunk: -1, Detail: "an answer that does not decode: " + err.Error()}, "invalid: "+err.Error())
		return
	}
	a.Worker = w
	l := a.Lease
	if why := s.quarantined[w]; why != "" {
		s.refuse(req, record.Degradation{Kind: KindForeign, Worker: w, Job: l.Job, Chunk: l.Chunk, Detail: fmt.Sprintf("answer of chunk %d of a quarantined worker ignored", l.Chunk)}, "quarantined")
		return
	}
	s.seen[w] = time.Now()
	if s.c.wq != nil {
		s.answerQueued(req, &a)
		return
	}
	js := s.jobs[l.Job]
	switch {
	case js == nil && s.ended[l.Job]:
		s.late(req, &a)
		return
	case js == nil || l.Chunk < 0 || l.Chunk >= len(js.chunks):
		s.foreign(req, &a)
		return
	}
	cs := js.chunks[l.Chunk]
	is := cs.issues[l.Attempt]
	if is == nil || is.worker != w {
		if cs.ever[w] {
			s.late(req, &a)
		} else {
			s.foreign(req, &a)
		}
		return
	}
	s.closeIssue(cs, l.Attempt, false)
	s.release(w, l)
	s.take(req, js, l.Chunk, &a, is)
}

// answerQueued takes an answer of a chunk of the chunk queue: it needs its issue's token. An
// answer of a chunk decided by a coordinator before (journaled, the answer not acknowledged
// then) is dropped uncounted; one of a job not begun yet waits for it.
func (s *scheduler) answerQueued(req inbound, a *answer) {
	w, l := a.Worker, a.Lease
	if !s.c.wq.valid(l, a.Lo, a.Hi) {
		s.foreign(req, a)
		return
	}
	js := s.jobs[l.Job]
	switch {
	case js == nil && s.ended[l.Job]:
		if s.restored[l.Job] {
			req.reply("late")
			return
		}
		s.late(req, a)
		return
	case js == nil:
		req.later()
		return
	case l.Chunk < 0 || l.Chunk >= len(js.chunks):
		s.foreign(req, a)
		return
	}
	cs := js.chunks[l.Chunk]
	if cs.restored || cs.answered[l.Attempt] { // decided before the restart, or delivered twice
		req.reply("late")
		return
	}
	is := cs.issues[l.Attempt]
	switch {
	case is == nil && cs.exclude[w]:
		s.late(req, a) // an issue taken back from w (overdue, failed)
		return
	case is == nil: // an issue closed meanwhile (take judges it), or of a coordinator before
		is = &issue{}
	}
	if is.worker != w {
		s.bind(w, js, l, is, time.Now())
	}
	s.closeIssue(cs, l.Attempt, false)
	s.release(w, l)
	s.take(req, js, l.Chunk, a, is)
}

// refuse counts d and acknowledges with status.
func (s *scheduler) refuse(req inbound, d record.Degradation, status string) {
	s.c.rep.degrade(d)
	req.reply(status)
}

// foreign refuses an answer of a chunk its sender never held.
func (s *scheduler) foreign(req inbound, a *answer) {
	s.refuse(req, record.Degradation{Kind: KindForeign, Worker: a.Worker, Job: a.Lease.Job, Chunk: a.Lease.Chunk,
		Detail: fmt.Sprintf("answer of chunk %d (issue %d) refused: the sender does not hold it", a.Lease.Chunk, a.Lease.Attempt)}, "foreign")
}

// late refuses an answer of a chunk its sender held once (it was decided, re-issued after the
// sender's silence or deadline, or its job is over) and releases the lease.
func (s *scheduler) late(req inbound, a *answer) {
	s.release(a.Worker, a.Lease)
	s.refuse(req, record.Degradation{Kind: KindDuplicate, Worker: a.Worker, Job: a.Lease.Job, Chunk: a.Lease.Chunk,
		Detail: fmt.Sprintf("a late answer of chunk %d (issue %d) ignored: the chunk was decided or re-issued meanwhile", a.Lease.Chunk, a.Lease.Attempt)}, "late")
	s.dispatch()
}

// take checks an answer of an open issue of chunk i: an error answer or one that does not fit
// has the coordinator play the chunk (settle: it decides, and a worker whose answer differs
// from its own is quarantined); a valid first answer becomes the chunk's result, decided at once
// unless the secret draw picks it for a check by another worker; a valid second answer decides
// the chunk when it agrees bit for bit, else the coordinator settles it.
func (s *scheduler) take(req inbound, js *jobState, i int, a *answer, is *issue) {
	cs := js.chunks[i]
	if cs.final || cs.local || (cs.pending && cs.by == a.Worker) {
		s.late(req, a)
		s.requeueIdle(js, i) // the check of its own result, taken from the queue: another must play it
		return
	}
	defer s.dispatch()
	if a.Err != "" {
		s.failed(req, js, i, a)
		return
	}
	why := ""
	if cs.Span != (Span{a.Lo, a.Hi}) {
		why = fmt.Sprintf("episodes %d..%d, the chunk is %d..%d", a.Lo, a.Hi-1, cs.Lo, cs.Hi-1)
	} else if err := js.check(a); err != nil {
		why = err.Error()
	}
	if why != "" {
		a.invalid = why
		s.refuse(req, record.Degradation{Kind: KindInvalid, Worker: a.Worker, Job: js.job.ID, Chunk: i, Detail: fmt.Sprintf("answer of chunk %d refused: %s", i, why)}, "invalid: "+why)
		s.settle(js, i, s.claims(cs, a.Worker, a))
		return
	}
	s.c.rep.answered(a.Worker, a.Hi-a.Lo)
	if cs.answered == nil {
		cs.answered = map[int]bool{}
	}
	cs.answered[a.Lease.Attempt] = true
	defer func() { req.reply("ok") }() // once decided (a stored answer: journaled first), unless held
	switch {
	case cs.result == nil:
		if !is.start.IsZero() {
			s.observe(time.Since(is.start))
		}
		cs.result, cs.by = a, a.Worker
		if s.draw(js, i) {
			cs.pending = true
			if req.stored() { // kept in the answer queue until its check decides
				cs.held, req = req, nopReply{}
			}
			s.check(js, i)
			return
		}
		s.decide(js, i, false)
	case js.same(a, cs.result):
		cs.verified = true
		s.decide(js, i, false)
	default:
		s.c.rep.degrade(record.Degradation{Kind: KindMismatch, Workers: []string{cs.by, a.Worker}, Job: js.job.ID, Chunk: i,
			Detail: fmt.Sprintf("chunk %d: the results of %s and %s differ: the coordinator plays it to decide", i, cs.by, a.Worker)})
		s.settle(js, i, s.claims(cs, a.Worker, a))
	}
}

// failed takes an error answer: counted against its worker (quarantined after MaxFailures), and
// the coordinator plays the chunk - when it fails there too, the job fails with the error.
func (s *scheduler) failed(req inbound, js *jobState, i int, a *answer) {
	cs := js.chunks[i]
	cs.exclude[a.Worker] = true
	s.refuse(req, record.Degradation{Kind: KindFailed, Worker: a.Worker, Job: js.job.ID, Chunk: i,
		Detail: fmt.Sprintf("chunk %d (episodes %d..%d) failed: %s (the coordinator plays it)", i, a.Lo, a.Hi-1, a.Err)}, "failed")
	if s.failures[a.Worker]++; s.failures[a.Worker] >= MaxFailures {
		s.quarantine(a.Worker, fmt.Sprintf("%d error answers (the last: %s)", s.failures[a.Worker], a.Err))
	}
	if !cs.local && !cs.final {
		s.settle(js, i, s.claims(cs, a.Worker, a))
	}
}

// check has chunk i's pending result computed again by another worker (queued; the coordinator
// plays it when no other worker is alive, or none took it for a silence: expire).
func (s *scheduler) check(js *jobState, i int) {
	cs := js.chunks[i]
	if !s.alive(cs.by) {
		s.settle(js, i, s.claims(cs, "", nil))
		return
	}
	s.enqueue(js, i)
}

// alive reports whether a worker other than except, not quarantined, waits for a chunk or was
// heard of within a silence.
func (s *scheduler) alive(except string) bool {
	for _, h := range s.waiting {
		if h.worker != except && s.quarantined[h.worker] == "" {
			return true
		}
	}
	for w, t := range s.seen {
		if w != except && s.quarantined[w] == "" && time.Since(t) < s.c.cfg.Silence {
			return true
		}
	}
	return false
}

// claims are the answers of chunk cs that the coordinator's own result will judge: its pending
// result, and a (from w) when set.
func (s *scheduler) claims(cs *chunkState, w string, a *answer) map[string]*answer {
	m := map[string]*answer{}
	if cs.result != nil && cs.by != coordinatorName {
		m[cs.by] = cs.result
	}
	if a != nil {
		m[w] = a
	}
	return m
}

// decide makes chunk i's result final (local: the coordinator's).
func (s *scheduler) decide(js *jobState, i int, local bool) {
	cs := js.chunks[i]
	if d := s.c.dur; d != nil { // journaled before it counts
		if err := d.append(js.job.seq, i, cs); err != nil {
			s.fail(js, err)
			return
		}
	}
	cs.final, cs.pending, cs.queued = true, false, false
	s.unhold(cs)
	for at := range cs.issues {
		if cs.issues[at].seq != 0 { // its other copies in the chunk queue: nobody should play them
			s.closeIssue(cs, at, true)
		}
	}
	js.left--
	js.done += cs.Hi - cs.Lo
	s.c.rep.decided(cs.verified, local)
	if js.progress != nil {
		js.progress(js.done)
	}
	if js.left == 0 {
		s.end(js)
	}
}

// settle has the coordinator play chunk i (in its own goroutine, one chunk at a time) and
// judge claims by it (settled).
func (s *scheduler) settle(js *jobState, i int, claims map[string]*answer) {
	cs := js.chunks[i]
	if cs.local || cs.final {
		return
	}
	cs.local, cs.queued = true, false
	go func() {
		res, err := s.c.compute(js, cs.Span)
		s.c.do(func(s *scheduler) { s.settled(js, i, claims, res, err) })
	}()
}

// settled takes the coordinator's own result of chunk i: every claim that differs from it
// (an error answer aside: failed counts those) quarantines its worker, and the coordinator's
// result decides the chunk. When the coordinator cannot play the chunk either, the job fails.
func (s *scheduler) settled(js *jobState, i int, claims map[string]*answer, res *answer, err error) {
	cs := js.chunks[i]
	if js.err != nil || s.jobs[js.job.ID] != js {
		cs.local = false
		return
	}
	if err == nil {
		err = js.check(res)
	}
	if err != nil {
		cs.local = false
		s.fail(js, fmt.Errorf("chunk %d (episodes %d..%d) fails at the coordinator too: %w%s", i, cs.Lo, cs.Hi-1, err, claimText(claims)))
		return
	}
	for _, w := range sortedKeys(claims) {
		a := claims[w]
		switch {
		case a.Err != "" || (a.invalid == "" && js.same(a, res)):
			continue
		case a.invalid != "":
			s.quarantine(w, fmt.Sprintf("its answer of chunk %d (episodes %d..%d) of job %s was invalid (%s) where the coordinator's is valid", i, cs.Lo, cs.Hi-1, js.job.ID, a.invalid))
		default:
			s.quarantine(w, fmt.Sprintf("its result of chunk %d (episodes %d..%d) of job %s differs from the coordinator's", i, cs.Lo, cs.Hi-1, js.job.ID))
		}
		s.c.rep.recomputed(w, record.ChunkRef{Job: js.job.ID, Chunk: i}, false, false) // the coordinator's result replaces it
	}
	cs.local = false
	if s.jobs[js.job.ID] != js || cs.final { // a quarantine ended the job
		return
	}
	cs.result, cs.by, cs.verified = res, coordinatorName, true
	for at := range cs.issues { // other copies in flight are late now
		s.closeIssue(cs, at, true)
	}
	s.decide(js, i, true)
	s.dispatch()
}

// quarantine stops trusting worker w for the rest of the session: its account is revoked, its
// requests and answers are refused, the chunks it holds are re-issued and every result of the
// open jobs it computed is thrown away and played again (only a check by someone else would
// have vouched for one, and w's word counts for nothing now).
func (s *scheduler) quarantine(w, why string) {
	if w == coordinatorName || s.quarantined[w] != "" {
		return
	}
	s.quarantined[w] = why
	s.c.ban(w)
	s.c.log.Warn().Str("worker", w).Str("reason", why).Msg("worker quarantined: its answers are ignored and its chunks played again")
	s.c.rep.quarantine(record.Quarantine{Worker: w, Reason: why, Chunks: []record.ChunkRef{}, Earlier: s.unchecked[w]})
	s.c.rep.degrade(record.Degradation{Kind: KindQuarantined, Worker: w, Chunk: -1, Detail: "quarantined: " + why})
	delete(s.holding, w)
	for _, js := range s.jobs {
		for i, cs := range js.chunks {
			for at, is := range cs.issues {
				if is.worker == w {
					s.closeIssue(cs, at, true)
				}
			}
			if cs.by == w && !cs.local {
				s.forget(js, i, w)
			}
			s.requeueIdle(js, i)
		}
	}
	s.dispatch()
}

// forget throws away chunk i's result computed by quarantined worker w.
func (s *scheduler) forget(js *jobState, i int, w string) {
	cs := js.chunks[i]
	s.c.rep.recomputed(w, record.ChunkRef{Job: js.job.ID, Chunk: i}, cs.final, cs.verified)
	if cs.final {
		if d := s.c.dur; d != nil {
			if err := d.retract(js.job.seq, i); err != nil {
				s.fail(js, err)
				return
			}
		}
		cs.final = false
		js.left++
		js.done -= cs.Hi - cs.Lo
	}
	s.unhold(cs)
	cs.result, cs.by, cs.pending, cs.verified = nil, "", false, false
}

// quarantineList names the quarantined workers and why.
func (s *scheduler) quarantineList() string {
	var out []string
	for _, w := range sortedKeys(s.quarantined) {
		out = append(out, w+": "+s.quarantined[w])
	}
	return strings.Join(out, "; ")
}

// claimText names the workers' error answers among claims, for a job's error.
func claimText(claims map[string]*answer) string {
	var out []string
	for _, w := range sortedKeys(claims) {
		if e := claims[w].Err; e != "" {
			out = append(out, fmt.Sprintf("worker %s: %s", w, e))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// same reports whether two valid answers hold the same result (their digests, computed once
// and only for the answers compared: most are never).
func (js *jobState) same(a, b *answer) bool {
	for _, x := range []*answer{a, b} {
		if x.digest == nil {
			x.digest = js.digest(x)
		}
	}
	return bytes.Equal(a.digest, b.digest)
}

// digest is a hash of an answer's range and its result in the canonical form of the job's
// judge (Judge.Digest: a run chunk's gob bytes, say, differ between processes): two computations
// of a chunk agree when their digests are equal.
func (js *jobState) digest(a *answer) []byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d %d\n", a.Lo, a.Hi)
	h.Write(js.judge.Digest(a.checked))
	return h.Sum(nil)
}

// nopReply stands for a reply made elsewhere (a stored answer held by its chunk).
type nopReply struct{}

func (nopReply) subject() string { return "" }
func (nopReply) payload() []byte { return nil }
func (nopReply) reply(string)    {}
func (nopReply) stored() bool    { return false }
func (nopReply) later()          {}
