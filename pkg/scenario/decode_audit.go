package scenario

import (
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// auditTable is audit: {trials, adjacency, confidence, pair: {x0, x0prime}}.
var auditTable = []field[auditDoc]{
	{key: "trials", set: to(intRange(MinAuditTrials, MaxAuditTrials, " (trials per value of the secret bit)"),
		func(t *auditDoc) *int { return &t.a.Trials })},
	{key: "adjacency", set: to(parsed(privacy.ParseAdjacency), func(t *auditDoc) *privacy.Adjacency { return &t.a.Adjacency })},
	{key: "confidence", set: func(d *decoder, t *auditDoc, n *yaml.Node, path string) bool {
		v, ok := d.float(n, path)
		if !ok {
			return false
		}
		if v <= 0 || v >= 1 {
			d.add(n, path, "%s out of range: the confidence level must lie in (0, 1), e.g. 0.95", strconv.FormatFloat(v, 'g', -1, 64))
			return false
		}
		t.a.Confidence = v
		return true
	}},
	{key: "pair", set: func(d *decoder, t *auditDoc, n *yaml.Node, path string) bool {
		t.a.Pair = d.auditPair(n, t)
		return true
	}},
}

// auditDoc is the audit section while it is decoded. dim is the length a pair's vectors must
// have (n_x of the plant or the number of nodes; 0 when unknown because that section is broken,
// then the lengths are only checked against each other) and what names it.
type auditDoc struct {
	a    *AuditSpec
	pair *AuditPair
	dim  int
	what string
}

// audit decodes the audit section (auditTable).
func (d *decoder) audit(n *yaml.Node, dim int, what string) *AuditSpec {
	t := &auditDoc{a: &AuditSpec{}, dim: dim, what: what}
	if f, _ := section(d, n, "audit", t, auditTable); f == nil {
		return nil
	}
	return t.a
}

var auditPairTable = []field[auditDoc]{
	{key: "x0", set: func(d *decoder, t *auditDoc, n *yaml.Node, path string) bool {
		return t.pairState(d, &t.pair.X0, n, path)
	}, absent: pairMissing("x0")},
	{key: "x0prime", set: func(d *decoder, t *auditDoc, n *yaml.Node, path string) bool {
		return t.pairState(d, &t.pair.X0Prime, n, path)
	}, absent: pairMissing("x0prime")},
}

func pairMissing(key string) func(*decoder, *auditDoc, *fields) bool {
	return func(d *decoder, t *auditDoc, f *fields) bool {
		d.missing(f, key, "the pair needs both x0 and x0prime ("+t.what+")")
		return false
	}
}

// pairState decodes one state of the pair, of length t.dim when known.
func (t *auditDoc) pairState(d *decoder, into *[]float64, n *yaml.Node, path string) bool {
	v, ok := d.vector(n, path)
	if !ok {
		return false
	}
	if t.dim > 0 && len(v) != t.dim {
		d.add(n, path, "%d entries, want %d (%s)", len(v), t.dim, t.what)
		return false
	}
	*into = v
	return true
}

func (d *decoder) auditPair(n *yaml.Node, t *auditDoc) *AuditPair {
	t.pair = &AuditPair{}
	f, good := section(d, n, "audit.pair", t, auditPairTable)
	if f == nil {
		return nil
	}
	p := t.pair
	if good && len(p.X0) != len(p.X0Prime) {
		d.add(f.get("x0prime"), "audit.pair.x0prime", "%d entries, audit.pair.x0 has %d: both states must have the same length", len(p.X0Prime), len(p.X0))
		good = false
	}
	if !good {
		return nil
	}
	return p
}
