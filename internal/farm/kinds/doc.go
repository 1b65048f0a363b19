// Package kinds is the work the worker farm (internal/farm) plays, plugged into it as
// farm.Kind: a point's episodes of the fast engine (the run kind: pkg/engine's chunks,
// engine.PlayChunk, folded by engine.Fold; Run) and the distinguishing game of pkg/audit (the
// audit kind: audit.PlayChunk's scores folded into the game's outcome; Audit). The farm itself
// knows neither: it hands out chunks, checks their answers with the job's farm.Judge, verifies,
// quarantines and attributes; this package says what a chunk is, how it is checked, compared and
// folded. `dpsim worker` plays All.
package kinds

import (
	"fmt"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// The kinds' names (farm.Job.Kind).
const (
	AuditName = "audit" // the distinguishing game of pkg/audit (audit.PlayChunk)
	RunName   = "run"   // the fast engine's episodes (engine.PlayChunk)
)

// All are the kinds a worker plays.
func All() []farm.Kind { return []farm.Kind{RunKind, AuditKind} }

// Plan resolves the point of job j: its scenario parsed as the coordinator read it, the point's
// plan built as the command built it.
func Plan(j *farm.Job) (*plan.Plan, error) {
	s, err := scenario.Parse(j.Scenario, j.Source)
	if err != nil {
		return nil, err
	}
	points := s.Expand()
	if j.Point < 0 || j.Point >= len(points) {
		return nil, fmt.Errorf("farm: job %s: point %d of %d", j.ID, j.Point, len(points))
	}
	return plan.New(points[j.Point], plan.Options{})
}
