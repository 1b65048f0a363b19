package sim

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
)

// crashRun runs one episode of p over the in-memory network with a driver whose OnCrash is
// onCrash, and returns every Ready's records and the links.
func crashRun(t *testing.T, p *plan.Plan, seed uint64, ep int, onCrash func(Core) error) ([]trace.ControlRecord, []trace.AgentRecord, []fault.LinkStats) {
	t.Helper()
	cores, err := NewCores(p, seed)
	require.NoError(t, err)
	inj, err := fault.New(&p.Scenario.Faults, fault.SeedOf(seed))
	require.NoError(t, err)
	net := NewNetwork(NewTopology(p, Blocks{}), cores, inj)
	var ctl []trace.ControlRecord
	var ag []trace.AgentRecord
	drv := NewDriver(cores, net, nil, func(_ Core, rd *Ready) error {
		for _, r := range rd.Control {
			r.X, r.Yhat, r.U, r.Xhat, r.EveX0 = clone(r.X), clone(r.Yhat), clone(r.U), clone(r.Xhat), clone(r.EveX0)
			ctl = append(ctl, r)
		}
		ag = append(ag, rd.Agent...)
		for i := range ag {
			if y := ag[i].Y; y != nil {
				v := *y
				ag[i].Y = &v
			}
		}
		return nil
	})
	drv.OnCrash = onCrash
	net.Begin(ep)
	require.NoError(t, drv.Episode(ep, nil, nil))
	net.End()
	var links [][]fault.LinkStats
	for _, c := range cores {
		links = append(links, c.LinkStats())
	}
	for _, np := range net.all {
		links = append(links, np.ob.Stats())
	}
	return ctl, ag, MergeLinkStats(links...)
}

// A core restored from its checkpoint - after a JSON round trip, into a core whose state was
// wiped by starting another episode - continues exactly as the core that never stopped: the
// checkpoint holds everything (state, inputs held, counters, the noise draw).
func TestCheckpointRestoresEverything(t *testing.T) {
	iid := func(s *scenario.Scenario) { s.Privacy.Noise = noise.IIDNaive }
	float := func(s *scenario.Scenario) { s.Privacy.Sampler = noise.SamplerFloat }
	for _, tc := range []struct {
		name, proc, variant string
		edit                func(*scenario.Scenario)
	}{
		{"faults-agent-crash", "agent.3", "", nil}, {"faults-agent-crash", "agent.0", "", nil},
		{"cloud-vehicle", "plant.0", "", nil}, {"cloud-vehicle", "cloud.0", "", nil},
		// the secure i.i.d. streams (the generator's state is in the checkpoint) and the float sampler
		{"cloud-vehicle", "plant.0", "iid", iid}, {"faults-agent-crash", "agent.3", "iid", iid},
		{"cloud-vehicle", "plant.0", "float", float}, {"faults-agent-crash", "agent.3", "float iid", func(s *scenario.Scenario) { iid(s); float(s) }},
	} {
		t.Run(tc.name+"/"+tc.proc+"/"+tc.variant, func(t *testing.T) {
			s := load(t, tc.name).Expand()[0].Clone()
			if tc.edit != nil {
				tc.edit(s)
			}
			s.Steps = 30
			s.Faults.Crashes = []scenario.Crash{{Proc: tc.proc, Episode: 1, Step: 10, Restart: 15, Noise: scenario.NoiseResume}}
			p := planOf(t, s)
			ctlA, agA, linksA := crashRun(t, p, 5, 1, nil)
			crashes := 0
			ctlB, agB, linksB := crashRun(t, p, 5, 1, func(c Core) error {
				crashes++
				require.Equal(t, tc.proc, c.Endpoint().String())
				cp, ok := c.(Checkpointer)
				require.True(t, ok)
				st := cp.Checkpoint()
				require.Equal(t, 10, st.Step)
				require.True(t, st.Crashed)
				data, err := json.Marshal(st)
				require.NoError(t, err)
				var back CoreState
				require.NoError(t, json.Unmarshal(data, &back))
				// wipe: another episode from another state, then restore
				require.NoError(t, c.Begin(7, nil))
				require.NoError(t, cp.Restore(&back))
				return nil
			})
			require.Equal(t, 1, crashes)
			require.Equal(t, ctlA, ctlB)
			require.Equal(t, agA, agB)
			require.Equal(t, linksA, linksB)
			// the down steps: records marked down, nothing released
			down := 0
			for _, r := range ctlA {
				if len(r.Down) > 0 {
					down++
					require.Nil(t, r.Yhat)
					require.Nil(t, r.U)
				}
			}
			for _, r := range agA {
				if r.Down {
					down++
					require.Nil(t, r.Y)
				}
			}
			require.Equal(t, 5, down, "steps 10..14 are down")
		})
	}
}

// The restarted agent continues with the checkpoint's draw, not the one its own seed would
// give: a core built with another seed and restored emits the same messages; with noise:
// redraw it emits others (a fresh eta), from the restart on.
func TestRestoreKeepsTheDraw(t *testing.T) {
	s := load(t, "faults-agent-crash").Expand()[0].Clone()
	p := planOf(t, s)
	_, agA, _ := crashRun(t, p, 5, 1, nil)
	var restored *AgentCore
	_, agB, _ := crashRun(t, p, 5, 1, func(c Core) error {
		other, err := NewAgentCore(p, 999, 0) // another seed: another eta
		require.NoError(t, err)
		require.NoError(t, other.Restore(c.(Checkpointer).Checkpoint()))
		restored = other
		return nil
	})
	require.Equal(t, agA, agB)
	// drive the restored core through its down steps: its first message equals the original's
	require.NoError(t, restored.Restart())
	rd := restored.Ready()
	require.Len(t, rd.Out, 1)
	require.Equal(t, 15, rd.Out[0].Step)
	var want float64
	for _, r := range agA {
		if r.Agent == 0 && r.Step == 15 {
			want = *r.Y
		}
	}
	require.Equal(t, want, rd.Out[0].Values[0])

	s2 := s.Clone()
	s2.Faults.Crashes[0].Noise = scenario.NoiseRedraw
	_, agR, _ := crashRun(t, planOf(t, s2), 5, 1, nil)
	for i := range agA {
		a, r := agA[i], agR[i]
		if a.Agent != 0 || a.Y == nil {
			continue
		}
		if a.Step < 10 {
			require.Equal(t, *a.Y, *r.Y, "before the crash: the same draw")
		} else if a.Step == 15 {
			require.NotEqual(t, *a.Y, *r.Y, "after a redraw: another draw")
		}
	}
}
