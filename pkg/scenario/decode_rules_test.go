package scenario

import (
	"slices"
	"testing"
)

// A table decoded in an order other than the documented one lists its keys apart (the
// mapping's allowed keys): both must name the same keys, or a field would be accepted and
// then ignored (or decoded but refused as unknown).
func TestTablesCoverTheirAllowedKeys(t *testing.T) {
	for _, c := range []struct {
		name           string
		table, allowed []string
	}{
		{"controller", keysOf(controllerTable), controllerFields},
		{"privacy", keysOf(privacyTable), privacyFields},
		{"faults", keysOf(faultsTable), faultsFields},
		{"faults.links[]", keysOf(linkTable), linkFields},
		{"controller.reference.step", keysOf(stepTable), stepRefFields},
		{"lqr", keysOf(lqrTable), lqrFields},
		{"graph (named)", append([]string{"name", "edges"}, keysOf(namedGraphTable)...), graphFields},
		{"faults.*.resets[]", keysOf(pointTable), pointFields},
	} {
		a, b := slices.Sorted(slices.Values(c.table)), slices.Sorted(slices.Values(c.allowed))
		if !slices.Equal(a, b) {
			t.Errorf("%s: table keys %v, allowed keys %v", c.name, a, b)
		}
	}
}
