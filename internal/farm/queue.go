package farm

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/record"
)

// The durable farm's transport (Config.Durable): the chunks and the answers travel through two
// JetStream work queues of the embedded server, stored beside the journal, instead of core NATS
// requests - the same scheduler issues, checks and folds them (schedule.go, answer.go).
//
//   - The chunk queue (queueStream, WorkQueuePolicy) holds the issues the scheduler put there,
//     queueWindow at most (the rest waits in the scheduler's own queue, so memory and the stream
//     stay bounded whatever the job's size). Every worker pulls from its one durable consumer
//     (queueConsumer): a free worker takes one chunk, keeps it with InProgress on every heartbeat
//     while it plays, and acknowledges it once its answer is stored. A chunk taken by a worker
//     that dies is delivered again after AckWait (Config.AckWait); one delivered MaxDeliver
//     times (Config.MaxDeliver) without an answer is played by the coordinator (KindUndelivered).
//     A worker Naks a chunk it may not play (assignment.Not), or of a job the coordinator does
//     not serve (over: the coordinator drops such chunks; or not begun yet), and Terms one that
//     does not decode. A chunk nobody took for the chunk bound while workers were alive (its
//     message gone) is queued again.
//   - The answer queue (answerStream) captures what the workers publish on their own answer
//     subjects (dpsim.farm.answer.<id>: the subject still names the sender). The coordinator
//     consumes it and acknowledges an answer once it is done with it: refused, or its chunk
//     decided and journaled - a first answer drawn for a check stays in the stream until the
//     check decides. Answers stored while the coordinator was down are taken by the next one.
//
// A chunk in the queue carries a token, an HMAC (SHA-256) of its issue - job, chunk, attempt,
// range - under a key kept in the journal's directory (mode 0600): an answer counts only with
// the token of an issue, so a worker cannot answer a chunk it never took, and a coordinator
// started again on the directory recognises the issues of the one before (their chunks still in
// the queue, or their answers in the answer queue). Job ids stay the same across those
// coordinators (manifest.Session), so both are taken as they are: nothing is lost, and an answer
// of a chunk decided already (journaled, then the coordinator died before acknowledging it) is
// dropped without being counted.
//
// A worker's account may pull from the chunk queue's consumer and acknowledge its deliveries
// (bus.PullAPI), and publish on its own four subjects: it cannot put, delete or purge a chunk,
// nor read the answers, nor write the journal.

const (
	queueStream    = "DPSIM_FARM_QUEUE"
	queueSubject   = "dpsim.queue.chunk"
	queueConsumer  = "workers"
	answerStream   = "DPSIM_FARM_ANSWERS"
	answerConsumer = "coordinator"
	keyName        = "queue.key"
	// queueWindow is how many issues the coordinator keeps in the chunk queue: a few per worker
	// (each takes one and fetches one ahead), few enough that a check put there waits behind few
	// chunks (the queue is first in, first out).
	queueWindow = 16
	// answerWindow bounds the answers stored and not yet acknowledged (a first answer waiting
	// for its check stays): a worker whose answer the full queue refuses tries again.
	answerWindow = 4 * queueWindow
	// chunkBound is a queued chunk's bytes at most (an assignment: a lease, a range, a few names).
	chunkBound = 4 << 10
	// answerHold is how long a stored answer of a job not begun yet (a coordinator started again
	// on the journal meets answers of the job it is about to play) waits to be delivered again.
	answerHold = 100 * time.Millisecond
)

// DefaultMaxDeliver is Config.MaxDeliver's default: a chunk delivered this many times without
// an answer (its workers died, or each may not play it) is played by the coordinator. A check
// that only the worker it checks takes, and hands back (Nak, after a heartbeat), is played by
// the coordinator after a silence anyway (as with core NATS: scheduler.expire), before that.
const DefaultMaxDeliver = 20

// queue is the coordinator's side of the two work queues.
type queue struct {
	chunks, answers *bus.WorkQueue
	key             []byte
	stop            func() // stops consuming the answers
	// spent is the time the scheduler's loop waited for the chunk queue to store an issue, over
	// puts issues (the loop's goroutine only; the benchmark reads them when no job runs).
	spent time.Duration
	puts  int
	// survivors are the issues a coordinator before put in the chunk queue that are still there,
	// by job: the scheduler adopts them when it begins the job (submit).
	survivors map[string][]survivor
}

// survivor is an issue found in the chunk queue at start.
type survivor struct {
	seq uint64
	a   assignment
}

// openQueue opens the work queues on conn (the journal's JetStream) and reads back the issues
// still in the chunk queue; ackWait and maxDeliver configure the workers' consumer.
func openQueue(ctx context.Context, conn *bus.Conn, dir string, ackWait time.Duration, maxDeliver int) (*queue, error) {
	key, err := queueKey(dir)
	if err != nil {
		return nil, err
	}
	q := &queue{key: key, survivors: map[string][]survivor{}}
	q.chunks, err = conn.WorkQueue(ctx, bus.WorkQueueOptions{Stream: queueStream, Subjects: []string{queueSubject},
		MaxMsgs: 2 * queueWindow, MaxBytes: 2 * queueWindow * chunkBound, MaxMsgSize: chunkBound,
		Consumer: queueConsumer, AckWait: ackWait, MaxDeliver: maxDeliver, MaxAckPending: 2 * queueWindow})
	if err != nil {
		return nil, fmt.Errorf("farm: --dispatch-durable: %w", err)
	}
	// The coordinator's consumer starts afresh: the answers a coordinator before took and did
	// not acknowledge are delivered again at once. It never expects one back otherwise (it keeps
	// a first answer unacknowledged until its check), hence the long AckWait.
	q.answers, err = conn.WorkQueue(ctx, bus.WorkQueueOptions{Stream: answerStream, Subjects: []string{Subject(verbAnswer, "*")},
		MaxMsgs: answerWindow, MaxBytes: answerWindow * recordBound, MaxMsgSize: recordBound,
		Consumer: answerConsumer, AckWait: time.Hour, MaxDeliver: -1, MaxAckPending: answerWindow, Fresh: true})
	if err != nil {
		return nil, fmt.Errorf("farm: --dispatch-durable: %w", err)
	}
	msgs, err := q.chunks.Messages(ctx)
	if err != nil {
		return nil, fmt.Errorf("farm: --dispatch-durable: %w", err)
	}
	for _, m := range msgs {
		var a assignment
		if Decode(m.Data, &a) != nil || !q.valid(a.Lease, a.Lo, a.Hi) {
			_ = q.chunks.Delete(ctx, m.Seq)
			continue
		}
		q.survivors[a.Lease.Job] = append(q.survivors[a.Lease.Job], survivor{m.Seq, a})
	}
	return q, nil
}

// queueKey reads the tokens' key from dir, or makes one (32 random bytes, mode 0600).
func queueKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, keyName)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		key, err := hex.DecodeString(string(data))
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("farm: --dispatch-durable: %s: not a key (remove it to start afresh)", path)
		}
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("farm: --dispatch-durable: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("farm: --dispatch-durable: key: %w", err)
	}
	if err := atomicfile.WriteFile(path, []byte(hex.EncodeToString(key)), 0o600); err != nil {
		return nil, fmt.Errorf("farm: --dispatch-durable: key: %w", err)
	}
	return key, nil
}

// token is the proof of issue of chunk l (episodes lo..hi-1).
func (q *queue) token(l lease, lo, hi int) string {
	m := hmac.New(sha256.New, q.key)
	fmt.Fprintf(m, "%s %d %d %d %d", l.Job, l.Chunk, l.Attempt, lo, hi)
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// valid reports whether l's token is the one of its issue.
func (q *queue) valid(l lease, lo, hi int) bool {
	return hmac.Equal([]byte(l.Token), []byte(q.token(l, lo, hi)))
}

// put queues issue a (its token set here) and returns its sequence in the chunk queue.
func (q *queue) put(a assignment) (uint64, error) {
	a.Lease.Token = q.token(a.Lease, a.Lo, a.Hi)
	data, err := Encode(&a)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), journalTimeout)
	defer cancel()
	start := time.Now()
	defer func() { q.spent += time.Since(start); q.puts++ }()
	return q.chunks.Put(ctx, queueSubject, data)
}

// drop removes issue seq from the chunk queue (decided or taken back: nobody should play it).
func (q *queue) drop(seq uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), journalTimeout)
	defer cancel()
	return q.chunks.Delete(ctx, seq)
}

// consume hands every stored answer to the scheduler, and the server's advisories of chunks
// delivered MaxDeliver times.
func (c *Coordinator) consume() error {
	stop, err := c.wq.answers.Consume(func(d *bus.Delivery) { c.do(func(s *scheduler) { s.answer(storedAnswer{d}) }) })
	if err != nil {
		return fmt.Errorf("farm: --dispatch-durable: %w", err)
	}
	c.wq.stop = stop
	sub, err := c.conn.Serve(bus.MaxDeliveries(queueStream, queueConsumer), "", func(r *bus.Request) {
		if seq, n, err := bus.MaxDelivered(r.Data); err == nil {
			c.do(func(s *scheduler) { s.undelivered(seq, n) })
		}
	})
	if err != nil {
		return err
	}
	c.subs = append(c.subs, sub)
	return nil
}

// inbound is a worker's message as the scheduler takes it: a core NATS request it answers with
// a status, or a stored answer of the answer queue that it acknowledges once done with it.
type inbound interface {
	subject() string
	payload() []byte
	reply(status string)
	// stored reports whether the message stays in a stream until replied: a first answer
	// drawn for a check is then replied once its chunk is decided.
	stored() bool
	// later hands the message back to be taken again soon (an answer of a job not begun yet).
	later()
}

// request is a core NATS request.
type request struct{ *bus.Request }

func (r request) subject() string { return r.Subject }
func (r request) payload() []byte { return r.Data }
func (r request) stored() bool    { return false }
func (r request) later()          { r.reply("wait") }
func (r request) reply(status string) {
	if data, err := Encode(&reply{Status: status}); err == nil {
		_ = r.Respond(data)
	}
}

// storedAnswer is an answer of the answer queue: replying acknowledges it (removes it).
type storedAnswer struct{ d *bus.Delivery }

func (a storedAnswer) subject() string { return a.d.Subject }
func (a storedAnswer) payload() []byte { return a.d.Data }
func (a storedAnswer) stored() bool    { return true }
func (a storedAnswer) later()          { _ = a.d.Nak(answerHold) }
func (a storedAnswer) reply(string)    { _ = a.d.Ack() }

// queueRef locates an issue in the chunk queue.
type queueRef struct {
	js    *jobState
	i, at int
}

// put hands queued chunks to the chunk queue while it holds fewer than queueWindow issues of
// the scheduler (the others wait in s.queue, re-issues and checks first; one the queue refuses
// waits for the next tick).
func (s *scheduler) put() {
	for len(s.queue) > 0 && len(s.bySeq) < queueWindow {
		q := s.queue[0]
		cs := q.js.chunks[q.i]
		at := cs.attempts + 1
		a := assignment{Lease: lease{Job: q.js.job.ID, Chunk: q.i, Attempt: at}, Lo: cs.Lo, Hi: cs.Hi, Not: sortedKeys(cs.exclude)}
		if cs.pending {
			a.Not = append(a.Not, cs.by)
		}
		seq, err := s.c.wq.put(a)
		if err != nil {
			s.c.log.Warn().Err(err).Msg("could not queue a chunk (tried again shortly)")
			return
		}
		s.queue = s.queue[1:]
		cs.queued, cs.attempts, cs.since = false, at, time.Now()
		s.open(q.js, q.i, at, seq)
	}
}

// open records issue at of chunk i, message seq of the chunk queue, taken by nobody yet.
func (s *scheduler) open(js *jobState, i, at int, seq uint64) {
	js.chunks[i].issues[at] = &issue{seq: seq, start: time.Now()}
	s.bySeq[seq] = queueRef{js: js, i: i, at: at}
}

// adopt takes over the issues of js that a coordinator before left in the chunk queue (a
// decided chunk's are dropped): they are neither queued nor put again.
func (s *scheduler) adopt(js *jobState) {
	for _, sv := range s.c.wq.survivors[js.job.ID] {
		i := sv.a.Lease.Chunk
		if i < 0 || i >= len(js.chunks) || js.chunks[i].final || js.chunks[i].Span != (Span{sv.a.Lo, sv.a.Hi}) {
			_ = s.c.wq.drop(sv.seq)
			continue
		}
		cs := js.chunks[i]
		cs.attempts, cs.since = max(cs.attempts, sv.a.Lease.Attempt), time.Now()
		s.open(js, i, sv.a.Lease.Attempt, sv.seq)
	}
	delete(s.c.wq.survivors, js.job.ID)
}

// closeIssue ends issue at of chunk cs; drop: remove its message from the chunk queue too (it
// was not answered: nobody should play it any more).
func (s *scheduler) closeIssue(cs *chunkState, at int, drop bool) {
	is := cs.issues[at]
	if is == nil {
		return
	}
	delete(cs.issues, at)
	if is.seq == 0 {
		return
	}
	delete(s.bySeq, is.seq)
	if drop {
		if err := s.c.wq.drop(is.seq); err != nil {
			s.c.log.Warn().Err(err).Msg("could not drop a chunk from the queue (a worker may play it for nothing)")
		}
	}
}

// undelivered takes the server's word that chunk queue message seq was delivered n times
// without an answer (MaxDeliver): the coordinator plays its chunk.
func (s *scheduler) undelivered(seq, n uint64) {
	ref, ok := s.bySeq[seq]
	if !ok {
		_ = s.c.wq.drop(seq)
		return
	}
	cs := ref.js.chunks[ref.i]
	who := cs.issues[ref.at].worker
	s.closeIssue(cs, ref.at, true)
	s.c.rep.degrade(record.Degradation{Kind: KindUndelivered, Worker: who, Job: ref.js.job.ID, Chunk: ref.i,
		Detail: fmt.Sprintf("chunk %d (episodes %d..%d) delivered %d times by the work queue without an answer (MaxDeliver): the coordinator plays it", ref.i, cs.Lo, cs.Hi-1, n)})
	if !cs.final {
		s.settle(ref.js, ref.i, s.claims(cs, "", nil))
	}
}

// unclaimed reports whether chunk cs has issues in the chunk queue and no worker took one.
func unclaimed(cs *chunkState) bool {
	for _, is := range cs.issues {
		if is.seq == 0 || is.worker != "" {
			return false
		}
	}
	return len(cs.issues) > 0
}
