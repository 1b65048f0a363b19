package scenario

import (
	"slices"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// Bounds of the audit section.
const (
	// MinAuditTrials is the fewest trials per value of the secret bit an audit accepts: the
	// statistics split the trials in two halves and need both bits in each.
	MinAuditTrials = 10
	// MaxAuditTrials bounds the trials per value of the secret bit.
	MaxAuditTrials = 1_000_000_000
)

// AuditSpec is the optional audit section: defaults for `dpsim audit` (docs/math.md
// section 6). Command-line flags override it.
type AuditSpec struct {
	// Trials per value of the secret bit (N runs on x and N on x'); 0 = not set.
	Trials int `json:"trials,omitempty"`
	// Adjacency to audit; "" = the adjacency the noise is calibrated for (privacy.adjacency).
	Adjacency privacy.Adjacency `json:"adjacency,omitempty"`
	// Confidence is the joint level of the reported bounds, in (0, 1); 0 = not set (0.95).
	Confidence float64 `json:"confidence,omitempty"`
	// Pair overrides the default adjacent pair (the worst pair of the sensitivity); nil = not set.
	Pair *AuditPair `json:"pair,omitempty"`
}

// AuditPair is an explicit adjacent pair: the initial states the challenger chooses between.
// Cloud control: the plant's x(0) (n_x values); consensus: every agent's x_i(0) (N values).
// X0 = X0Prime is allowed: a mechanism with no dependence on the secret, which audits the
// auditor itself (its bounds must stay at 0 within their confidence).
type AuditPair struct {
	X0      []float64 `json:"x0"`
	X0Prime []float64 `json:"x0prime"`
}

func (a *AuditSpec) clone() *AuditSpec {
	if a == nil {
		return nil
	}
	c := *a
	if a.Pair != nil {
		c.Pair = &AuditPair{X0: slices.Clone(a.Pair.X0), X0Prime: slices.Clone(a.Pair.X0Prime)}
	}
	return &c
}
