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
