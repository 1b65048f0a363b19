package trace

import (
	"errors"
	"fmt"

	"github.com/dpsim/dpsim/pkg/endpoint"
)

// Missing names a piece of a record that no role supplied.
type Missing struct {
	Episode int    `json:"episode"`
	Step    int    `json:"step"`
	Role    string `json:"role"`
	Agent   int    `json:"agent"` // the agent for Role "agent", else -1
}

func (m Missing) String() string {
	if m.Role == endpoint.Agent.String() {
		return fmt.Sprintf("episode %d step %d: agent %d", m.Episode, m.Step, m.Agent)
	}
	return fmt.Sprintf("episode %d step %d: %s", m.Episode, m.Step, m.Role)
}

// errMissing is wrapped by MissingError.
var errMissing = errors.New("missing record pieces")

// MissingError summarises a non-empty Missing list as an error (nil when none is missing).
func MissingError(ms []Missing) error { return MissingErrorN(ms, len(ms)) }

// MissingErrorN is MissingError for a list that holds the first pieces of total missing ones
// (a caller that keeps only the head of a long list).
func MissingErrorN(ms []Missing, total int) error {
	total = max(total, len(ms))
	if total == 0 {
		return nil
	}
	const show = 5
	parts := make([]string, 0, show)
	for i, m := range ms {
		if i == show {
			break
		}
		parts = append(parts, m.String())
	}
	more := ""
	if total > len(parts) {
		more = fmt.Sprintf(" and %d more", total-len(parts))
	}
	return fmt.Errorf("trace: %w: %v%s", errMissing, parts, more)
}
