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
func (c *Coordinator) compute(js *jobState, sp span) (*answer, error) {
	select {
	case c.local <- struct{}{}:
	case <-c.closed:
		return nil, errors.New("farm: the coordinator closed")
	}
	defer func() { <-c.local }()
	js.localOnce.Do(func() { js.localPl, js.localErr = js.job.resolve() })
	if js.localErr != nil {
		return nil, fmt.Errorf("resolve the job: %w", js.localErr)
	}
	a := &answer{Worker: coordinatorName, Lo: sp.lo, Hi: sp.hi}
	if err := js.localPl.play(context.Background(), sp.lo, sp.hi, runtime.GOMAXPROCS(0), a); err != nil {
		return nil, err
	}
	return a, nil
}

// localName is the identity of the i-th spawned worker.
func localName(i int) string { return fmt.Sprintf("local-%d", i) }
