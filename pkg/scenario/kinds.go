package scenario

import "github.com/dpsim/dpsim/pkg/endpoint"

// KindInfo is what the decoder (and the packages above it) need to know about a scenario kind
// as data: one row of KindTable. A new kind adds its constant and its row; TestKindTable
// checks that every kind has one and that the rows are consistent.
type KindInfo struct {
	Kind Kind
	// Roles are the roles of a run of the kind, in the order of endpoint.Roles: the roles a
	// link fault may name (as the publisher: those with a data stream).
	Roles []endpoint.Role
	// Missing is the key of faults.missing whose rule the kind's receivers apply (and the
	// sweep parameter faults.missing.<Missing>); the other kinds' keys are refused.
	Missing string
	// Partitions reports whether faults.partitions applies (it cuts agents apart).
	Partitions bool
	// Requires lists the top-level sections the kind requires, with the help of their
	// "missing: ..." message; Forbids the sections it refuses, with why.
	Requires, Forbids [][2]string
}

// KindTable lists every scenario kind, in the order of Kinds.
var KindTable = []KindInfo{
	{
		Kind:    CloudControl,
		Roles:   []endpoint.Role{endpoint.Plant, endpoint.Cloud, endpoint.Eavesdropper},
		Missing: "plant",
		Requires: [][2]string{
			{"plant", "kind cloud-control requires plant: {A, B, C, x0}"},
			{"controller", "kind cloud-control requires controller: {K, L, reference} or {lqr, observer, reference}"},
		},
		Forbids: [][2]string{
			{"graph", "only for kind consensus (this scenario is cloud-control)"},
			{"x0", "only for kind consensus (a cloud-control plant's initial state is plant.x0)"},
		},
	},
	{
		Kind:       Consensus,
		Roles:      []endpoint.Role{endpoint.Agent, endpoint.Eavesdropper},
		Missing:    "agent",
		Partitions: true,
		Requires: [][2]string{
			{"graph", "kind consensus requires graph: a named graph {name: paper10, ...} or an edge list {n, edges}"},
			{"x0", "kind consensus requires x0, one initial value per node"},
		},
		Forbids: [][2]string{
			{"plant", "only for kind cloud-control (consensus agents follow eq. 25)"},
			{"controller", "only for kind cloud-control (consensus agents follow eq. 25)"},
		},
	},
}

// Kinds lists the accepted scenario kinds (the kinds of KindTable).
var Kinds = func() []Kind {
	out := make([]Kind, len(KindTable))
	for i, ki := range KindTable {
		out[i] = ki.Kind
	}
	return out
}()

// Info returns k's row of KindTable; false for a kind that is not one of Kinds.
func (k Kind) Info() (KindInfo, bool) {
	for _, ki := range KindTable {
		if ki.Kind == k {
			return ki, true
		}
	}
	return KindInfo{}, false
}

// kindOfMissing returns the row of the kind whose faults.missing key is key.
func kindOfMissing(key string) (KindInfo, bool) {
	for _, ki := range KindTable {
		if ki.Missing == key {
			return ki, true
		}
	}
	return KindInfo{}, false
}

// kindRoles lists the names of the roles of kind (of every kind when kind is not one of
// Kinds), in the order of endpoint.Roles; only the publishers (roles with a data stream) when
// publisher is set.
func kindRoles(kind Kind, publisher bool) []string {
	var out []string
	for _, ri := range endpoint.Roles {
		if publisher && ri.Stream == "" {
			continue
		}
		for _, ki := range KindTable {
			if (ki.Kind == kind || !kind.known()) && containsRole(ki.Roles, ri.Role) {
				out = append(out, ri.Name)
				break
			}
		}
	}
	return out
}

// known reports whether k is one of Kinds.
func (k Kind) known() bool {
	_, ok := k.Info()
	return ok
}

func containsRole(rs []endpoint.Role, r endpoint.Role) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}
