package farm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
)

// compute plays span sp of job js at the coordinator - the tie-breaker of a mismatch, the retry
// of a failed chunk, the check no other worker could do - one chunk at a time, with every core
// (results do not depend on the threads). The job is resolved from its own description, as a
// worker resolves it.
func (c *Coordinator) compute(js *jobState, sp Span) (*answer, error) {
	select {
	case c.local <- struct{}{}:
	case <-c.closed:
		return nil, errors.New("farm: the coordinator closed")
	}
	defer func() { <-c.local }()
	js.localOnce.Do(func() { js.localPl, js.localErr = js.kind.Prepare(js.job) })
	if js.localErr != nil {
		return nil, fmt.Errorf("resolve the job: %w", js.localErr)
	}
	res, err := js.localPl.Play(context.Background(), sp.Lo, sp.Hi, runtime.GOMAXPROCS(0))
	if err != nil {
		return nil, err
	}
	return &answer{Worker: coordinatorName, Lo: sp.Lo, Hi: sp.Hi, Result: res}, nil
}

// localName is the identity of the i-th spawned worker.
func localName(i int) string { return fmt.Sprintf("local-%d", i) }
