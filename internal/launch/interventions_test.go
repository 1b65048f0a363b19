package launch

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/scenario"
)

const ivScenario = `name: iv
kind: consensus
steps: 20
episodes: 10
graph: {name: paper10, weight: 0.25}
x0: [10, 100, 20, -30, -20, -60, 70, 0, 80, -20]
privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, noise: structured}
faults:
  links:
    - {name: base, from: agent.5, drop: 0.2}
`

// commitAt applies the pending changes at episode ep as startGroup does, without a session.
func commitAt(t *testing.T, iv *Interventions, ep int) {
	t.Helper()
	iv.mu.Lock()
	defer iv.mu.Unlock()
	for _, c := range iv.pending {
		require.NoError(t, applyChange(&iv.cur, c, scenario.StepPoint{Episode: ep}))
		c.Applied, c.Episode = true, ep
	}
	_, err := checkFaults(iv.cfg.Scenario, iv.cur.faults)
	require.NoError(t, err)
	iv.pending, iv.next = nil, ep+1
}

func TestInterventionsRecord(t *testing.T) {
	s, err := scenario.Parse([]byte(ivScenario), "iv.yaml")
	require.NoError(t, err)
	life := func(from, until int) *scenario.Lifetime {
		l := &scenario.Lifetime{}
		if from >= 0 {
			l.From = &scenario.StepPoint{Episode: from}
		}
		if until >= 0 {
			l.Until = &scenario.StepPoint{Episode: until}
		}
		return l
	}
	type rule struct {
		name string
		drop float64
		life *scenario.Lifetime
	}
	cases := []struct {
		name  string
		steps func(t *testing.T, iv *Interventions)
		want  []rule
	}{
		{"add", func(t *testing.T, iv *Interventions) {
			_, err := iv.AddLink(map[string]any{"name": "cut", "from": "agent.1", "drop": 1.0})
			require.NoError(t, err)
			commitAt(t, iv, 3)
		}, []rule{{"base", 0.2, nil}, {"cut", 1, life(3, -1)}}},
		{"change the scenario's rule", func(t *testing.T, iv *Interventions) {
			_, err := iv.ChangeLink("base", map[string]any{"from": "agent.5", "drop": 0.6})
			require.NoError(t, err)
			commitAt(t, iv, 2)
		}, []rule{{"base", 0.2, life(-1, 2)}, {"base.v2", 0.6, life(2, -1)}}},
		{"changed twice before it applies: the last one", func(t *testing.T, iv *Interventions) {
			_, err := iv.ChangeLink("base", map[string]any{"from": "agent.5", "drop": 0.6})
			require.NoError(t, err)
			_, err = iv.ChangeLink("base", map[string]any{"from": "agent.5", "drop": 0.7})
			require.NoError(t, err)
			commitAt(t, iv, 2)
		}, []rule{{"base", 0.2, life(-1, 2)}, {"base.v2", 0.7, life(2, -1)}}},
		{"changed at two boundaries", func(t *testing.T, iv *Interventions) {
			_, err := iv.ChangeLink("base", map[string]any{"from": "agent.5", "drop": 0.6})
			require.NoError(t, err)
			commitAt(t, iv, 2)
			_, err = iv.ChangeLink("base", map[string]any{"from": "agent.5", "drop": 0.7})
			require.NoError(t, err)
			commitAt(t, iv, 5)
		}, []rule{{"base", 0.2, life(-1, 2)}, {"base.v2", 0.6, life(2, 5)}, {"base.v3", 0.7, life(5, -1)}}},
		{"added and removed before it applies: gone", func(t *testing.T, iv *Interventions) {
			_, err := iv.AddLink(map[string]any{"name": "cut", "drop": 1.0})
			require.NoError(t, err)
			_, err = iv.RemoveLink("cut")
			require.NoError(t, err)
			commitAt(t, iv, 4)
		}, []rule{{"base", 0.2, nil}}},
		{"removed", func(t *testing.T, iv *Interventions) {
			_, err := iv.RemoveLink("base")
			require.NoError(t, err)
			commitAt(t, iv, 1)
			_, err = iv.RemoveLink("base")
			var r *Refusal
			require.True(t, errors.As(err, &r))
			require.Equal(t, RefusedNotFound, r.Kind, "a removed rule cannot be removed again")
		}, []rule{{"base", 0.2, life(-1, 1)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			iv := NewInterventions(InterventionsConfig{Scenario: s, Runs: 10})
			c.steps(t, iv)
			var got []rule
			for _, l := range iv.Faults().Links {
				got = append(got, rule{l.Name, l.Drop, l.Active})
			}
			require.Equal(t, c.want, got)
		})
	}
}

func TestInterventionsRefusals(t *testing.T) {
	s, err := scenario.Parse([]byte(ivScenario), "iv.yaml")
	require.NoError(t, err)
	iv := NewInterventions(InterventionsConfig{Scenario: s, Runs: 10})
	cases := []struct {
		name  string
		do    func() error
		kind  RefusalKind // the live view answers invalid 400, not-found 404, conflict 409
		field string
	}{
		{"bad probability", func() error { _, err := iv.AddLink(map[string]any{"drop": 2.0}); return err }, RefusedInvalid, "faults.links[1].drop"},
		{"unknown field", func() error { _, err := iv.AddLink(map[string]any{"loss": 0.5}); return err }, RefusedInvalid, "faults.links[1].loss"},
		{"a lifetime given", func() error {
			_, err := iv.AddLink(map[string]any{"drop": 0.5, "active": map[string]any{}})
			return err
		}, RefusedInvalid, "active"},
		{"renamed by a change", func() error { _, err := iv.ChangeLink("base", map[string]any{"name": "x", "drop": 0.5}); return err }, RefusedInvalid, "name"},
		{"no such rule", func() error { _, err := iv.ChangeLink("nosuch", map[string]any{"drop": 0.5}); return err }, RefusedNotFound, "name"},
		{"no such process", func() error { _, err := iv.Crash("agent.10", nil); return err }, RefusedInvalid, "faults.crashes[0].proc"},
		{"the eavesdropper", func() error { _, err := iv.Crash("eavesdropper-0", nil); return err }, RefusedInvalid, "faults.crashes[0].proc"},
		{"restart before the crash", func() error {
			_, err := iv.Crash("agent-1", map[string]any{"step": 9.0, "restart": 3.0})
			return err
		}, RefusedInvalid, "faults.crashes[0].restart"},
		{"partition of every agent", func() error {
			_, err := iv.AddPartition(map[string]any{"agents": []any{0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0}})
			return err
		}, RefusedInvalid, "faults.partitions[0].agents"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r *Refusal
			require.True(t, errors.As(c.do(), &r))
			require.Equal(t, c.kind, r.Kind, r.Error())
			require.Equal(t, c.field, r.Field, r.Error())
		})
	}
	require.Empty(t, iv.List(), "nothing refused is recorded")
	off := NewInterventions(InterventionsConfig{Scenario: s, Runs: 10, Refuse: "a sweep"})
	_, err = off.AddLink(map[string]any{"drop": 0.5})
	var r *Refusal
	require.True(t, errors.As(err, &r))
	require.Equal(t, RefusedConflict, r.Kind)
}
