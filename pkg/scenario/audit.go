package scenario

import (
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"

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

var (
	auditFields     = []string{"trials", "adjacency", "confidence", "pair"}
	auditPairFields = []string{"x0", "x0prime"}
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

// audit decodes audit: {trials, adjacency, confidence, pair: {x0, x0prime}}. dim is the length
// a pair's vectors must have (n_x of the plant or the number of nodes; 0 when unknown because
// that section is broken, then the lengths are only checked against each other) and what names
// it.
func (d *decoder) audit(n *yaml.Node, dim int, what string) *AuditSpec {
	f := d.mapping(n, "audit", auditFields...)
	if f == nil {
		return nil
	}
	a := &AuditSpec{}
	if tn := f.get("trials"); tn != nil {
		a.Trials, _ = d.intIn(tn, "audit.trials", MinAuditTrials, MaxAuditTrials, " (trials per value of the secret bit)")
	}
	if an := f.get("adjacency"); an != nil {
		if v, ok := d.str(an, "audit.adjacency"); ok {
			adj, err := privacy.ParseAdjacency(v)
			if err != nil {
				d.add(an, "audit.adjacency", "%v", err)
			} else {
				a.Adjacency = adj
			}
		}
	}
	if cn := f.get("confidence"); cn != nil {
		if v, ok := d.float(cn, "audit.confidence"); ok {
			if v <= 0 || v >= 1 {
				d.add(cn, "audit.confidence", "%s out of range: the confidence level must lie in (0, 1), e.g. 0.95", strconv.FormatFloat(v, 'g', -1, 64))
			} else {
				a.Confidence = v
			}
		}
	}
	if pn := f.get("pair"); pn != nil {
		a.Pair = d.auditPair(pn, dim, what)
	}
	return a
}

func (d *decoder) auditPair(n *yaml.Node, dim int, what string) *AuditPair {
	f := d.mapping(n, "audit.pair", auditPairFields...)
	if f == nil {
		return nil
	}
	p := &AuditPair{}
	good := true
	for _, key := range auditPairFields {
		vn := f.get(key)
		if vn == nil {
			d.missing(f, key, "the pair needs both x0 and x0prime ("+what+")")
			good = false
			continue
		}
		v, ok := d.vector(vn, f.sub(key))
		if !ok {
			good = false
			continue
		}
		if dim > 0 && len(v) != dim {
			d.add(vn, f.sub(key), "%d entries, want %d (%s)", len(v), dim, what)
			good = false
			continue
		}
		if key == "x0" {
			p.X0 = v
		} else {
			p.X0Prime = v
		}
	}
	if good && len(p.X0) != len(p.X0Prime) {
		d.add(f.get("x0prime"), "audit.pair.x0prime", "%d entries, audit.pair.x0 has %d: both states must have the same length", len(p.X0Prime), len(p.X0))
		good = false
	}
	if !good {
		return nil
	}
	return p
}
