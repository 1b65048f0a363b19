package farm

import (
	"bytes"
	"encoding/gob"
	"fmt"

	"github.com/dpsim/dpsim/pkg/engine"
)

// The subjects of the protocol. Only the coordinator's account subscribes them; a worker's
// account may publish on them and read its own reply inboxes, nothing else.
const (
	subjectPrefix = "dpsim.farm."
	SubjectNext   = subjectPrefix + "next"   // worker -> coordinator: give me a chunk (held until one is free)
	SubjectJob    = subjectPrefix + "job"    // worker -> coordinator: the job a chunk belongs to
	SubjectBeat   = subjectPrefix + "beat"   // worker -> coordinator: I am alive and hold these chunks
	SubjectAnswer = subjectPrefix + "answer" // worker -> coordinator: a chunk's result
	inboxes       = "_INBOX.>"               // where requests are answered
)

// hello is what a worker asks SubjectNext with.
type hello struct {
	Worker  string
	Threads int
}

// assignment answers a hello: a chunk to play, or Wait (ask again), or Over (the coordinator is
// done: exit).
type assignment struct {
	Over, Wait bool
	Lease      lease
	Lo, Hi     int
}

// lease names one issue of a chunk: the job, the chunk's index and how many times it was issued
// before (an answer to an old issue is still a valid answer of the chunk).
type lease struct {
	Job            string
	Chunk, Attempt int
}

// beat is a worker's heartbeat.
type beat struct {
	Worker string
	Held   []lease
}

// answer is a worker's result for one chunk: the scores of an audit chunk (audit.PlayChunk) or
// an engine chunk (engine.PlayChunk); Err when the chunk cannot be played (an episode fails: the
// same on every host, so the job fails).
type answer struct {
	Worker string
	Lease  lease
	Lo, Hi int
	Err    string
	Scores []float64
	Run    *engine.Chunk
}

// reply is the coordinator's acknowledgement of an answer: "ok", "duplicate" or "invalid: ...".
type reply struct{ Status string }

func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, fmt.Errorf("farm: encode %T: %w", v, err)
	}
	return b.Bytes(), nil
}

func decode(data []byte, v any) error {
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		return fmt.Errorf("farm: decode %T: %w", v, err)
	}
	return nil
}
