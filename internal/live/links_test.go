package live

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// The replayed link counters of a lossy consensus point are, episode by episode, the injector
// side of what the engine counted (the fast engine, bit-identical with the NATS processes):
// sent, dropped, duplicated, delayed, reordered and expired per link. The hub shows them while
// the point runs, and beside the final counters until the next point begins.
func TestLinkReplayAgreesWithTheEngine(t *testing.T) {
	s, err := scenario.Load("../../scenarios/faults-consensus-loss.yaml")
	require.NoError(t, err)
	points := s.Expand()
	point := points[len(points)-1] // the lossiest
	require.Positive(t, point.Faults.Links[0].Drop)
	p, err := plan.New(point, plan.Options{})
	require.NoError(t, err)
	seeds := sim.NewSeeds(point.Seed)
	const runs = 7
	res, _, err := engine.Run(context.Background(), p, seeds, engine.Options{Runs: runs})
	require.NoError(t, err)

	r, err := NewLinkReplay(p, seeds.Fault, 0)
	require.NoError(t, err)
	require.NotNil(t, r)
	h := NewHub(Info{Kind: "consensus", Runs: runs, Points: []PointInfo{{Name: point.Name, Steps: p.Steps}}}, time.Now())
	h.BeginPoint(0)
	h.SetLinks(0, r)
	h.Progress(3)
	st, err := h.State()
	require.NoError(t, err)
	require.Len(t, st.LiveLinks, len(res.Links))
	require.Equal(t, 3, st.LiveLinks[0].Episodes)
	h.Progress(runs - 3)
	st, err = h.State()
	require.NoError(t, err)
	var dropped uint64
	for i, want := range res.Links {
		got := st.LiveLinks[i]
		require.Equal(t, want.Link, got.Link)
		require.Equal(t, runs, got.Episodes)
		require.Equal(t, []uint64{want.Sent, want.Dropped, want.Duplicated, want.Delayed, want.Reordered, want.Expired},
			[]uint64{got.Sent, got.Dropped, got.Duplicated, got.Delayed, got.Reordered, got.Expired}, want.Link)
		dropped += got.Dropped
	}
	require.Positive(t, dropped)
	h.PointDone(0, runs, res.Links)
	h.Progress(1) // nothing more is replayed once the point is done
	st, err = h.State()
	require.NoError(t, err)
	require.Len(t, st.Links, len(res.Links))
	require.Len(t, st.LiveLinks, len(res.Links), "kept beside the final ones until the next point")
	require.Equal(t, runs, st.LiveLinks[0].Episodes)
	h.SetLinks(1, nil)
	st, err = h.State()
	require.NoError(t, err)
	require.Empty(t, st.LiveLinks)
}

// Faults changed live (interventions) apply from the next episode replayed: with the loss rule
// removed after 3 episodes, the drops stop and the messages are still counted.
func TestLinkReplayFollowsChangedFaults(t *testing.T) {
	s, err := scenario.Load("../../scenarios/faults-consensus-loss.yaml")
	require.NoError(t, err)
	points := s.Expand()
	point := points[len(points)-1]
	p, err := plan.New(point, plan.Options{})
	require.NoError(t, err)
	h := NewHub(Info{Kind: "consensus", Runs: 10, Points: []PointInfo{{Name: point.Name, Steps: p.Steps}}}, time.Now())
	r, err := NewLinkReplay(p, sim.NewSeeds(point.Seed).Fault, 0)
	require.NoError(t, err)
	h.BeginPoint(0)
	h.SetLinks(0, r)
	h.Progress(3)
	before, err := h.State()
	require.NoError(t, err)
	require.NoError(t, h.LinkFaults(0, scenario.FaultsSpec{}))
	require.NoError(t, h.LinkFaults(1, scenario.FaultsSpec{}), "another point's: ignored")
	h.Progress(2)
	after, err := h.State()
	require.NoError(t, err)
	var dropped uint64
	for i, b := range before.LiveLinks {
		a := after.LiveLinks[i]
		require.Equal(t, b.Dropped, a.Dropped, a.Link)
		require.Equal(t, b.Sent*5/3, a.Sent, a.Link)
		dropped += a.Dropped
	}
	require.Positive(t, dropped)
}
