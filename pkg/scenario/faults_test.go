package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const faultsBase = `name: f
kind: consensus
steps: 30
episodes: 10
graph: {name: ring, n: 6, weight: 0.25}
x0: [1, 2, 3, 4, 5, 6]
privacy: {mechanism: gaussian, epsilon: 1, delta: 0.01}
`

func TestFaultsDefaults(t *testing.T) {
	s, err := Parse([]byte(faultsBase), "f.yaml")
	require.NoError(t, err)
	assert.Equal(t, FaultsSpec{Missing: MissingSpec{Plant: PlantHold, Agent: AgentReuseLast}}, s.Faults)
	assert.False(t, s.Faults.Active())
}

func TestFaultsDecodeEveryField(t *testing.T) {
	src := faultsBase + `faults:
  missing: {agent: skip}
  links:
    - name: slow
      from: agent.2
      to: agent.*
      unit: ms
      delay: 3
      random_delay: {dist: normal, mean: 1, sd: 0.5}
      jitter: 0.25
      drop: 0.1
      duplicate: 0.02
      reorder: 0.03
      window: {from: 5, to: 20}
    - subject: agent.*.y
      to: eavesdropper.0
      random_delay: {dist: lognormal, mu: 0, sigma: 0.5}
      window: [0, 30]
    - {random_delay: {dist: uniform, min: 1, max: 2}}
`
	s, err := Parse([]byte(src), "f.yaml")
	require.NoError(t, err)
	want := FaultsSpec{
		Missing: MissingSpec{Plant: PlantHold, Agent: AgentSkip},
		Links: []LinkFault{
			{Name: "slow", From: "agent.2", To: "agent.*", Unit: UnitMS, Delay: 3,
				RandomDelay: &RandomDelay{Dist: DistNormal, Mean: 1, SD: 0.5}, Jitter: 0.25,
				Drop: 0.1, Duplicate: 0.02, Reorder: 0.03, Window: &StepWindow{From: 5, To: 20}},
			{Name: "link1", From: "*", To: "eavesdropper.0", Subject: "agent.*.y", Unit: UnitSteps,
				RandomDelay: &RandomDelay{Dist: DistLognormal, Mu: 0, Sigma: 0.5}, Window: &StepWindow{From: 0, To: 30}},
			{Name: "link2", From: "*", To: "*", Unit: UnitSteps, RandomDelay: &RandomDelay{Dist: DistUniform, Min: 1, Max: 2}},
		},
	}
	assert.Equal(t, want, s.Faults)
	assert.True(t, s.Faults.Active())
	require.Len(t, s.Warnings, 1, "an ms delay only acts in realtime over NATS")
	assert.Contains(t, s.Warnings[0], "realtime")
	c := s.Clone()
	c.Faults.Links[0].RandomDelay.SD = 9
	c.Faults.Links[0].Window.To = 9
	assert.Equal(t, 0.5, s.Faults.Links[0].RandomDelay.SD, "Clone copies the rules deeply")
	assert.Equal(t, 20, s.Faults.Links[0].Window.To)
}

// A sweep over faults.drop x faults.missing.agent expands to every point, each with its own
// copy of the rules.
func TestFaultSweepExpands(t *testing.T) {
	src := faultsBase + `faults:
  links:
    - {name: loss, from: "agent.*", drop: 0}
    - {name: eve, to: eavesdropper.0, delay: 1}
sweep:
  - {param: faults.drop, values: [0, 0.1, 0.3]}
  - {param: faults.missing.agent, values: [reuse-last, skip]}
`
	s, err := Parse([]byte(src), "f.yaml")
	require.NoError(t, err)
	pts := s.Expand()
	require.Len(t, pts, 6)
	var names []string
	for _, p := range pts {
		names = append(names, strings.TrimPrefix(p.Name, "f@"))
	}
	assert.Equal(t, []string{
		"faults.drop=0,faults.missing.agent=reuse-last", "faults.drop=0,faults.missing.agent=skip",
		"faults.drop=0.1,faults.missing.agent=reuse-last", "faults.drop=0.1,faults.missing.agent=skip",
		"faults.drop=0.3,faults.missing.agent=reuse-last", "faults.drop=0.3,faults.missing.agent=skip"}, names)
	assert.Equal(t, 0.3, pts[5].Faults.Links[0].Drop)
	assert.Equal(t, 0.3, pts[5].Faults.Links[1].Drop, "a swept value is set on every rule")
	assert.Equal(t, AgentSkip, pts[5].Faults.Missing.Agent)
	assert.Equal(t, 0.0, pts[0].Faults.Links[0].Drop, "points do not share their rules")
	assert.Equal(t, 0.0, s.Faults.Links[0].Drop, "the base scenario is unchanged")
	assert.Equal(t, 1.0, pts[3].Faults.Links[1].Delay)
}

// Every shipped fault scenario parses, and its sweep reaches the rules.
func TestShippedFaultScenarios(t *testing.T) {
	for _, name := range []string{"faults-vehicle-latency", "faults-vehicle-latency-realtime", "faults-consensus-loss"} {
		s, err := Load("../../scenarios/" + name + ".yaml")
		require.NoError(t, err, name)
		require.True(t, s.Faults.Active(), name)
		pts := s.Expand()
		require.Greater(t, len(pts), 1, name)
		last := pts[len(pts)-1]
		l := last.Faults.Links[0]
		assert.True(t, l.Delay > 0 || l.Drop > 0, "%s: the last point's rule is not idle", name)
	}
}

// Every key of the process, server and network faults decodes into its field.
func TestProcessFaultsDecode(t *testing.T) {
	src := faultsBase + `faults:
  crashes:
    - {proc: agent.1, episode: 2, step: 4, restart: 9}
    - {proc: agent.2, episode: all, step: 1, restart: 3, noise: redraw}
  partitions:
    - {name: cut, agents: [0, 1], window: [5, 8]}
  server_restarts:
    - {episode: 1, step: 7, down: 250ms}
    - {}
  proxies:
    - {proc: agent.0, latency: 20ms, jitter: 5ms, bandwidth: 100, resets: [{episode: 1, step: 3}]}
`
	s, err := Parse([]byte(src), "f.yaml")
	require.NoError(t, err)
	f := s.Faults
	require.Equal(t, []Crash{{Proc: "agent.1", Episode: 2, Step: 4, Restart: 9, Noise: NoiseResume},
		{Proc: "agent.2", Episode: EveryEpisode, Step: 1, Restart: 3, Noise: NoiseRedraw}}, f.Crashes)
	require.True(t, f.Crashes[1].Down(7, 2) && !f.Crashes[1].Down(7, 3) && !f.Crashes[0].Down(1, 5) && f.Crashes[0].Down(2, 8))
	require.Equal(t, []Partition{{Name: "cut", Side: []int{0, 1}, Window: StepWindow{From: 5, To: 8}}}, f.Partitions)
	require.Equal(t, []ServerRestart{{Episode: 1, Step: 7, Down: 250 * time.Millisecond}, {Down: time.Second}}, f.ServerRestarts)
	require.Equal(t, []Proxy{{Proc: "agent.0", Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Bandwidth: 100,
		Resets: []StepPoint{{Episode: 1, Step: 3}}}}, f.Proxies)
	require.True(t, f.Active(), "a partition is a link fault")
	require.Same(t, &f.Crashes[1], f.CrashOf("agent.2", 12))
	require.Nil(t, f.CrashOf("agent.1", 1))
	c := f.Clone()
	c.Partitions[0].Side[0] = 9
	c.Proxies[0].Resets[0].Step = 99
	require.Equal(t, 0, s.Faults.Partitions[0].Side[0], "Clone copies deeply")
	require.Equal(t, 3, s.Faults.Proxies[0].Resets[0].Step)
}
