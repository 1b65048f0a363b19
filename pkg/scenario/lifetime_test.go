package scenario

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLifetimeContains(t *testing.T) {
	pt := func(e, s int) *StepPoint { return &StepPoint{Episode: e, Step: s} }
	cases := []struct {
		name  string
		l     *Lifetime
		ep, t int
		want  bool
	}{
		{"nil is always", nil, 7, 3, true},
		{"open both ends", &Lifetime{}, 0, 0, true},
		{"before from (episode)", &Lifetime{From: pt(2, 0)}, 1, 29, false},
		{"at from", &Lifetime{From: pt(2, 0)}, 2, 0, true},
		{"before from (step)", &Lifetime{From: pt(2, 10)}, 2, 9, false},
		{"at mid-episode from", &Lifetime{From: pt(2, 10)}, 2, 10, true},
		{"later episode, early step", &Lifetime{From: pt(2, 10)}, 3, 0, true},
		{"before until", &Lifetime{Until: pt(5, 0)}, 4, 29, true},
		{"at until (excluded)", &Lifetime{Until: pt(5, 0)}, 5, 0, false},
		{"after until", &Lifetime{Until: pt(5, 0)}, 6, 0, false},
		{"inside both", &Lifetime{From: pt(1, 5), Until: pt(1, 8)}, 1, 7, true},
		{"past both", &Lifetime{From: pt(1, 5), Until: pt(1, 8)}, 1, 8, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.l.Contains(c.ep, c.t))
		})
	}
}

func TestLifetimeDecode(t *testing.T) {
	cases := []struct {
		name, faults string
		want         *Lifetime
		problem      string // a field path the error names ("" = valid)
	}{
		{"from only", `links: [{name: a, drop: 0.5, active: {from: {episode: 2, step: 0}}}]`,
			&Lifetime{From: &StepPoint{Episode: 2}}, ""},
		{"both", `links: [{name: a, drop: 0.5, active: {from: {episode: 1, step: 3}, until: {episode: 4}}}]`,
			&Lifetime{From: &StepPoint{Episode: 1, Step: 3}, Until: &StepPoint{Episode: 4}}, ""},
		{"until before from", `links: [{name: a, drop: 0.5, active: {from: {episode: 4}, until: {episode: 1}}}]`,
			nil, "faults.links[0].active"},
		{"empty lifetime", `links: [{name: a, drop: 0.5, active: {from: {episode: 4}, until: {episode: 4}}}]`,
			nil, "faults.links[0].active"},
		{"step past the episode", `links: [{name: a, drop: 0.5, active: {from: {episode: 0, step: 30}}}]`,
			nil, "faults.links[0].active.from.step"},
		{"unknown field", `links: [{name: a, drop: 0.5, active: {since: {episode: 0}}}]`,
			nil, "faults.links[0].active.since"},
		{"partition", `partitions: [{agents: [0, 1], window: [0, 30], active: {until: {episode: 3, step: 0}}}]`,
			&Lifetime{Until: &StepPoint{Episode: 3}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(faultsBase+"faults:\n  "+c.faults+"\n"), "f.yaml")
			if c.problem != "" {
				var ve *ValidationError
				require.True(t, errors.As(err, &ve), "want a validation error, got %v", err)
				assert.Contains(t, err.Error(), c.problem+":")
				return
			}
			require.NoError(t, err)
			got := (*Lifetime)(nil)
			if len(s.Faults.Links) > 0 {
				got = s.Faults.Links[0].Active
			} else {
				got = s.Faults.Partitions[0].Active
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// MarshalFaults writes what DecodeFaults and a scenario file read back as the same spec.
func TestMarshalFaultsRoundTrip(t *testing.T) {
	src := faultsBase + `faults:
  missing: {agent: skip}
  links:
    - {name: a, from: agent.1, to: agent.2, drop: 0.1234567890123, delay: 1.5, window: [2, 9]}
    - {name: b, subject: agent.*.y, random_delay: {dist: uniform, min: 0, max: 2}, active: {from: {episode: 1, step: 0}, until: {episode: 3, step: 4}}}
    - {name: c, unit: ms, jitter: 3, random_delay: {dist: exponential, mean: 0.7}}
  crashes:
    - {proc: agent.3, episode: 2, step: 5, restart: 9}
    - {proc: agent.4, episode: all, step: 1, restart: 2, noise: redraw}
  partitions:
    - {name: halves, agents: [0, 1, 2], window: [3, 20], active: {from: {episode: 4, step: 0}}}
  server_restarts: [{episode: 1, step: 5, down: 250ms}]
  proxies: [{proc: agent.0, latency: 20ms, jitter: 5ms, resets: [{episode: 1, step: 3}]}]
`
	s, err := Parse([]byte(src), "f.yaml")
	require.NoError(t, err)
	out, err := MarshalFaults(s.Faults)
	require.NoError(t, err)
	back, err := DecodeFaults(s, out, "faults.applied.yaml")
	require.NoError(t, err, "%s", out)
	assert.Equal(t, s.Faults, back)
	again, err := Parse(append([]byte(faultsBase), out...), "replay.yaml")
	require.NoError(t, err)
	assert.Equal(t, s.Faults, again.Faults)
	assert.Equal(t, 250*time.Millisecond, back.ServerRestarts[0].Down)
}

func TestDecodeFaultsNamesTheField(t *testing.T) {
	s, err := Parse([]byte(faultsBase), "f.yaml")
	require.NoError(t, err)
	_, err = DecodeFaults(s, []byte(`{"faults": {"links": [{"name": "x", "drop": 1.5}]}}`), "POST /api/faults/links")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "faults.links[0].drop: 1.5 is not a probability")
	_, err = DecodeFaults(s, []byte(`{"faults": {"crashes": [{"proc": "agent.9", "episode": 1, "step": 2, "restart": 4}]}}`), "crash")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "faults.crashes[0].proc")
}
