package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// busRun runs s with Options.Bus on workers goroutines and returns the Results and every
// publication (values copied), episode by episode as handed on.
func busRun(t *testing.T, s *scenario.Scenario, workers int) (*metrics.Results, []int, []sim.Publication) {
	t.Helper()
	var eps []int
	var pubs []sim.Publication
	res, _, err := Run(context.Background(), planOf(t, s), sim.NewSeeds(11), Options{Workers: workers, Bus: func(ep int, ps []sim.Publication) error {
		eps = append(eps, ep)
		for _, p := range ps {
			require.Equal(t, ep, p.Episode)
			p.Values, p.Except = append([]float64(nil), p.Values...), append([]endpoint.Endpoint(nil), p.Except...)
			pubs = append(pubs, p)
		}
		return nil
	}})
	require.NoError(t, err)
	return res, eps, pubs
}

// Tapping the network's publications changes no number (every release then takes the
// outbox's general path, the NATS publishers' one): the Results equal a run without the tap,
// with and without faults; the publications come episode after episode in order, whatever
// the workers, and are the same for 1 and 3 workers. Without faults every publisher puts out
// one message per step; with losses there are gap notices, without values.
func TestBusPublications(t *testing.T) {
	for _, c := range []struct {
		name  string
		s     *scenario.Scenario
		clean bool
	}{
		{"cloud-vehicle", withFaults(t, "cloud-vehicle", 6), true},
		{"consensus", withFaults(t, "consensus-gaussian", 5), true},
		{"vehicle-faults", withFaults(t, "cloud-vehicle", 6, scenario.LinkFault{Drop: 0.2}, scenario.LinkFault{Duplicate: 0.1}, scenario.LinkFault{Delay: 2}), false},
		{"consensus-loss", withFaults(t, "consensus-gaussian", 5, scenario.LinkFault{Drop: 0.3}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, _, err := Run(context.Background(), planOf(t, c.s), sim.NewSeeds(11), Options{Workers: 2})
			require.NoError(t, err)
			res, eps, pubs := busRun(t, c.s, 3)
			require.Equal(t, want, res, "the tap changes no number")
			require.Equal(t, []int{0, 1, 2, 3, 4, 5}[:c.s.Runs], eps, "episode order")
			res1, _, pubs1 := busRun(t, c.s, 1)
			require.Equal(t, want, res1)
			require.Equal(t, pubs1, pubs, "the same publications whatever the workers")

			p := planOf(t, c.s)
			perPub := map[endpoint.Endpoint]int{}
			gaps, late := 0, 0
			last := map[endpoint.Endpoint]int{}
			for i, pb := range pubs {
				require.NotEqual(t, endpoint.Eavesdropper, pb.From.Role, "the eavesdropper only listens")
				require.GreaterOrEqual(t, pb.Release, pb.Step, "a copy goes out at or after its step")
				if pb.Release > pb.Step {
					late++
				}
				if i > 0 && pubs[i-1].Episode == pb.Episode && pubs[i-1].From == pb.From {
					require.GreaterOrEqual(t, pb.Release, last[pb.From], "a publisher's releases in step order")
				}
				last[pb.From] = pb.Release
				if pb.Gap {
					gaps++
					require.Nil(t, pb.Values)
				} else {
					require.NotEmpty(t, pb.Values)
				}
				perPub[pb.From]++
			}
			require.NotEmpty(t, perPub)
			if c.clean {
				require.Zero(t, gaps)
				require.Zero(t, late)
				for from, n := range perPub {
					require.Equal(t, c.s.Runs*p.Steps, n, "%s: one message per step", from)
				}
			} else {
				require.Positive(t, gaps, "lost messages give gap notices")
				if c.s.Kind == scenario.CloudControl {
					require.Positive(t, late, "delayed copies go out at a later release")
				}
			}
		})
	}
}

// An error of Options.Bus stops the run and is returned.
func TestBusError(t *testing.T) {
	s := withFaults(t, "cloud-vehicle", 20)
	_, _, err := Run(context.Background(), planOf(t, s), sim.NewSeeds(1), Options{Workers: 2, Bus: func(ep int, _ []sim.Publication) error {
		if ep == 3 {
			return context.Canceled
		}
		return nil
	}})
	require.ErrorContains(t, err, "bus")
	require.ErrorIs(t, err, context.Canceled)
}
