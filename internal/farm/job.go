package farm

import (
	"context"
	"errors"
)

// Job is everything a worker needs to play any chunk of one point: the scenario file as the
// coordinator read it (so the worker resolves the point exactly as the coordinator did, on any
// host), the point, and its kind's parameters (seed, options). It travels to authenticated
// workers only, never on argv or in a log.
type Job struct {
	ID       string
	Kind     string // the Kind's Name
	Scenario []byte // the scenario's YAML
	Source   string // its name in messages (the path on the coordinator's host)
	Point    int    // the index in Expand()
	Params   []byte // the kind's parameters (Work.Params), EncodeParams: the same bytes in every process
	seq      int    // the job's number in the coordinator's session (1, 2, ...): its key in the journal
}

// Kind is one kind of work the farm plays: the farm knows nothing of what a chunk is beyond its
// range and the bytes of its result. A worker (and the coordinator, when it plays a chunk itself)
// prepares a job of the kind once and plays its chunks; the coordinator judges the results with
// the Judge of the job's Work and folds them itself (Coordinator.Play returns them in chunk
// order). Results must be deterministic functions of (job, chunk), whatever the threads, the
// process or the host: that is what the verification compares.
type Kind interface {
	// Name names the kind in the jobs (Job.Kind); one token, the same on every host.
	Name() string
	// Prepare resolves job j (its Scenario, Point and Params) for playing its chunks.
	Prepare(j *Job) (Player, error)
}

// Player plays the chunks of one prepared job.
type Player interface {
	// Play plays episodes (trials) lo..hi-1 on threads goroutines and returns the chunk's
	// result, encoded (it travels in the answer and must fit in one NATS message).
	Play(ctx context.Context, lo, hi, threads int) ([]byte, error)
}

// Judge is the coordinator's side of one job: it validates a chunk's result before it counts
// and says when two computations of a chunk agree. Both are called from the scheduler's
// goroutine, one at a time.
type Judge interface {
	// Check validates the result of chunk lo..hi-1 (a worker's or the coordinator's own: shape,
	// range, finiteness) and returns it decoded for the fold (Result.Checked) and Digest; an
	// error refuses the answer as invalid.
	Check(lo, hi int, result []byte) (checked any, err error)
	// Digest is the canonical content of a checked result (what Check returned): two
	// computations of a chunk agree, bit for bit, when their digests are equal.
	Digest(checked any) []byte
}

// Work is one job as the coordinator plays it (Play).
type Work struct {
	Kind   Kind   // the kind; the coordinator prepares the job with it when it plays a chunk itself
	Point  int    // the point, its index in the scenario's Expand()
	Params []byte // the kind's parameters, sent to the workers in the job
	Spans  []Span // the chunks, in order: every episode once
	Judge  Judge
	// Progress, when set, hears the episodes decided so far (they may go back when a liar is
	// caught and its chunks are played again).
	Progress func(done int)
}

// Result is a decided chunk's result: its range, its bytes and what the Judge made of them.
type Result struct {
	Span
	Data    []byte
	Checked any
}

// Spans cuts 0..total-1 into chunks of size.
func Spans(total, size int) []Span {
	var out []Span
	for lo := 0; lo < total; lo += size {
		out = append(out, Span{lo, min(lo+size, total)})
	}
	return out
}

// Play runs the chunks of w through the workers until every one is decided, the job fails or
// ctx ends, and returns the decided results in chunk order (nil: undecided) for the caller to
// fold: nothing is folded before the job is over, so that a worker caught lying late has none of
// its results in the fold, and the fold's order does not depend on the workers. When the job
// fails, the chunks decided until then are returned with the error.
func (c *Coordinator) Play(ctx context.Context, w Work) ([]*Result, error) {
	if w.Kind == nil || w.Judge == nil {
		return nil, errors.New("farm: a job without a kind or a judge")
	}
	j := c.newJob(w.Kind.Name(), w.Point)
	j.Params = w.Params
	answers, err := c.play(ctx, j, w)
	var out []*Result
	if answers != nil {
		out = make([]*Result, len(answers))
		for i, a := range answers {
			if a != nil {
				out[i] = &Result{Span: Span{a.Lo, a.Hi}, Data: a.Result, Checked: a.checked}
			}
		}
	}
	return out, err
}
