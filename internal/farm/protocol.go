package farm

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dpsim/dpsim/pkg/bus"
)

// The subjects of the protocol: a worker publishes on dpsim.farm.<verb>.<id>, id its identity.
// On the embedded server each worker has its own account, allowed to publish on its own four
// subjects only (workerUser): the subject proves who sent a message, and a worker cannot speak
// for another. Only the coordinator's account subscribes them; a worker's may read its reply
// inboxes, nothing else. (The identity fields of the messages are labels only: the coordinator
// takes the sender from the subject.)
const (
	subjectPrefix = "dpsim.farm."
	verbNext      = "next"   // worker -> coordinator: give me a chunk (held until one is free)
	verbJob       = "job"    // worker -> coordinator: the job a chunk belongs to
	verbBeat      = "beat"   // worker -> coordinator: I am alive and hold these chunks
	verbAnswer    = "answer" // worker -> coordinator: a chunk's result
	inboxes       = "_INBOX.>"
)

// verbs are the protocol's subjects' verbs.
var verbs = []string{verbNext, verbJob, verbBeat, verbAnswer}

// Subject is the subject worker id publishes verb on.
func Subject(verb, id string) string { return subjectPrefix + verb + "." + id }

// sender is the identity of the worker that published on subject (its last token).
func sender(subject string) string {
	i := strings.LastIndexByte(subject, '.')
	return subject[i+1:]
}

// ValidID reports whether id can name a worker: one subject token of letters, digits, '-' and
// '_' (at most 64).
func ValidID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// SanitizeID makes name a valid identity (other characters become '_').
func SanitizeID(name string) string {
	b := []rune(name)
	for i, r := range b {
		if !ValidID(string(r)) {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	if len(b) == 0 {
		return "worker"
	}
	return string(b)
}

// hello is what a worker asks SubjectNext with.
type hello struct {
	Worker  string
	Threads int
}

// assignment answers a hello: a chunk to play, or Wait (ask again), or Over (the coordinator is
// done: exit), or Queue: take the chunks from the work queue Queue's consumer Consumer (a durable
// farm, queue.go). A chunk in the work queue is an assignment too, with the workers that may not
// play it (Not: the check of a worker's own result, a worker that failed or overran it).
type assignment struct {
	Over, Wait      bool
	Queue, Consumer string
	Lease           lease
	Lo, Hi          int
	Not             []string
	delivery        *bus.Delivery // the work queue's delivery of it (the worker's side)
}

// lease names one issue of a chunk: the job, the chunk's index and how many times it was issued
// before (an answer to an old issue is still a valid answer of the chunk). Token, in a work
// queue's chunk, proves that the coordinator issued it (queue.go): an answer must carry it.
type lease struct {
	Job            string
	Chunk, Attempt int
	Token          string
}

// beat is a worker's heartbeat.
type beat struct {
	Worker string
	Held   []lease
}

// answer is a worker's result for one chunk: the bytes its job's Kind played (Player.Play: an
// audit chunk's scores, a run chunk's episodes), or Err when the chunk cannot be played (the
// coordinator plays it itself then: an episode that fails there too fails the job).
type answer struct {
	Worker string
	Lease  lease
	Lo, Hi int
	Err    string
	Result []byte
	// checked is what the job's Judge made of Result (Judge.Check), kept for the fold and the
	// digest; digest is its canonical content's hash (compare). Not sent.
	checked any
	digest  []byte
	invalid string // why the answer was refused (take)
}

// reply is the coordinator's acknowledgement of an answer: "ok", "late" (the chunk was decided
// or re-issued meanwhile), "foreign" (the sender does not hold the chunk), "invalid: ...",
// "failed" (an error answer, retried elsewhere) or "quarantined".
type reply struct{ Status string }

// Encode is the protocol's encoding (gob) of v: the messages', and the one the kinds may use
// for their jobs' parameters and results.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, fmt.Errorf("farm: encode %T: %w", v, err)
	}
	return b.Bytes(), nil
}

// EncodeParams encodes a job's parameters (Work.Params) as JSON: the same value gives the same
// bytes in every process, which the durable farm's manifest hashes to recognise a job across
// coordinators. (gob would not do: its type ids are numbered in the order a process first
// meets the types, so the same value's bytes depend on what the process encoded before.)
func EncodeParams(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("farm: encode the parameters %T: %w", v, err)
	}
	return data, nil
}

// DecodeParams decodes a job's parameters, encoded by EncodeParams, into v (unknown fields
// refused).
func DecodeParams(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("farm: decode the parameters %T: %w", v, err)
	}
	return nil
}

// Decode decodes data, encoded by Encode, into v.
func Decode(data []byte, v any) error {
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		return fmt.Errorf("farm: decode %T: %w", v, err)
	}
	return nil
}
