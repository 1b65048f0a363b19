package scenario

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
)

// Every kind has its row in KindTable, once, in the order of Kinds, and the rows are
// consistent: valid roles in the order of endpoint.Roles with the eavesdropper, a
// faults.missing key with its sweep parameter, and required and forbidden sections that are
// top-level keys.
func TestKindTable(t *testing.T) {
	every := []Kind{CloudControl, Consensus} // the Kind constants
	require.Equal(t, every, Kinds)
	require.Len(t, KindTable, len(every))
	tops := keysOf(topTable)
	for i, k := range every {
		ki, ok := k.Info()
		require.True(t, ok, k)
		require.Equal(t, KindTable[i], ki, k)
		parsed, err := ParseKind(string(k))
		require.NoError(t, err)
		require.Equal(t, k, parsed)

		require.True(t, slices.IsSorted(ki.Roles), "%s: roles %v not in the order of endpoint.Roles", k, ki.Roles)
		require.Contains(t, ki.Roles, endpoint.Eavesdropper, k)
		for _, r := range ki.Roles {
			require.True(t, r.Valid() && r.Info().Process, "%s: role %v is not a role process", k, r)
		}
		require.True(t, isFaultParam(SweepParam("faults.missing."+ki.Missing)), "%s: faults.missing.%s is no sweep parameter", k, ki.Missing)
		require.Contains(t, keysOf(missingTable), ki.Missing, k)
		own, ok := kindOfMissing(ki.Missing)
		require.True(t, ok && own.Kind == k, "%s: faults.missing.%s belongs to %s", k, ki.Missing, own.Kind)

		require.NotEmpty(t, ki.Requires, k)
		require.NotEmpty(t, ki.Forbids, k)
		for _, r := range append(slices.Clone(ki.Requires), ki.Forbids...) {
			require.Contains(t, tops, r[0], k)
			require.NotEmpty(t, r[1], k)
		}
	}
	_, ok := Kind("nope").Info()
	require.False(t, ok)
}

// The kind facts of the table, as the decoder reports them: one scenario per fact, with the
// message the decoder gave when they were spelled as switches.
func TestKindFacts(t *testing.T) {
	vehicle := `name: v
kind: cloud-control
steps: 10
episodes: 2
plant: {A: 1, B: 1, C: 1, x0: 0}
controller: {K: 0.5, L: 0.5}
privacy: {epsilon: 1, delta: 0.01}
`
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"agent rule in cloud control", vehicle + "faults: {missing: {agent: skip}}\n",
			"faults.missing.agent: only for kind consensus (this scenario is cloud-control) (line 8)"},
		{"plant rule in consensus", faultsBase + "faults: {missing: {plant: zero}}\n",
			"faults.missing.plant: only for kind cloud-control (this scenario is consensus) (line 8)"},
		{"agent rule swept in cloud control", vehicle + "faults: {links: [{name: l, from: plant.0, to: cloud.0, drop: 0.1}]}\nsweep: {param: faults.missing.agent, values: [skip]}\n",
			"sweep.param: faults.missing.agent is only for kind consensus (line 9)"},
		{"plant rule swept in consensus", faultsBase + "sweep: {param: faults.missing.plant, values: [zero]}\n",
			"sweep.param: faults.missing.plant is only for kind cloud-control (line 8)"},
		{"partition in cloud control", vehicle + "faults: {partitions: [{name: p, agents: [0]}]}\n",
			"faults.partitions[0]: partitions cut consensus agents apart; this scenario is cloud-control (use faults.links with drop: 1) (line 8)"},
		{"agent link in cloud control", vehicle + "faults: {links: [{name: l, from: agent.0, to: cloud.0, drop: 0.1}]}\n",
			`faults.links[0].from: "agent.0": role "agent" is not allowed in a cloud-control scenario (allowed: plant, cloud) (line 8)`},
		{"plant link in consensus", faultsBase + "faults: {links: [{name: l, from: agent.0, to: plant.0, drop: 0.1}]}\n",
			`faults.links[0].to: "plant.0": role "plant" is not allowed in a consensus scenario (allowed: agent, eavesdropper) (line 8)`},
		{"eavesdropper publishing", faultsBase + "faults: {links: [{name: l, from: eavesdropper.0, to: agent.0, drop: 0.1}]}\n",
			`faults.links[0].from: "eavesdropper.0": role "eavesdropper" is not allowed: the eavesdropper only listens, it publishes nothing (allowed: agent) (line 8)`},
		{"second cloud", vehicle + "faults: {links: [{name: l, from: cloud.1, to: plant.0, drop: 0.1}]}\n",
			`faults.links[0].from: "cloud.1": a run has one cloud, id 0 (line 8)`},
		{"agent past the graph", faultsBase + "faults: {links: [{name: l, from: agent.6, to: agent.0, drop: 0.1}]}\n",
			`faults.links[0].from: "agent.6": the graph has 6 nodes (agents 0..5) (line 8)`},
		{"graph in cloud control", vehicle + "graph: {name: ring, n: 3}\n",
			"graph: only for kind consensus (this scenario is cloud-control) (line 8)"},
		{"controller in consensus", faultsBase + "controller: {K: 0.5, L: 0.5}\n",
			"controller: only for kind cloud-control (consensus agents follow eq. 25) (line 8)"},
		{"consensus without x0", strings.Replace(faultsBase, "x0: [1, 2, 3, 4, 5, 6]\n", "", 1),
			"x0: missing: kind consensus requires x0, one initial value per node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "k.yaml")
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
