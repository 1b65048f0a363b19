package live

import (
	"fmt"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// MaxReplaySteps bounds the work of replaying one episode's link fates (links times steps):
// past it the live link counters are not replayed (the final ones still come at the point's
// end).
const MaxReplaySteps = 1 << 20

// LinkReplay replays the injector side of a point's links while it runs: every link's fate is
// a pure function of the run's fault seed, the rule, the link, the episode and the step
// (fault.Link.Decide), so the launcher can count, episode by episode as they complete, what
// the processes' publishers do - sent, dropped, duplicated, delayed, reordered, expired -
// with the same outboxes they build (sim.NewPublisherOutbox over sim.Topology). The receive
// side (delivered, late, gaps, lost, conflicts) depends on timing and is known only from the
// processes' results at the point's end. A publisher down in a crash releases nothing at its
// down steps: with faults.crashes the replayed counts are those of a run without the crash.
type LinkReplay struct {
	steps int
	seed  uint64
	topo  sim.Topology
	pubs  []endpoint.Endpoint
	obs   []*fault.Outbox
	next  int // the next episode to replay
	done  int // episodes replayed
}

// NewLinkReplay returns the replay of plan p's links with the run's fault seed, its agents
// published by processes of perProcess agents (sim.NewBlocks); nil when the point has no link
// (or replaying an episode would cost more than MaxReplaySteps).
func NewLinkReplay(p *plan.Plan, faultSeed uint64, perProcess int) (*LinkReplay, error) {
	if p == nil || p.Scenario == nil {
		return nil, nil
	}
	inj, err := fault.New(&p.Scenario.Faults, faultSeed)
	if err != nil {
		return nil, fmt.Errorf("live view: the links' faults: %w", err)
	}
	hs := sim.NewBlocks(p, perProcess)
	topo := sim.NewTopology(p, hs)
	var pubs []endpoint.Endpoint
	switch {
	case p.Scenario.Kind == scenario.CloudControl:
		pubs = []endpoint.Endpoint{sim.PlantEndpoint, sim.CloudEndpoint}
	case hs.Batched():
		pubs = hs.Endpoints()
	case p.Graph != nil:
		for i := 0; i < p.Graph.N; i++ {
			pubs = append(pubs, sim.AgentEndpoint(i))
		}
	}
	r := &LinkReplay{steps: p.Steps, seed: faultSeed, topo: topo, pubs: pubs}
	links := 0
	for _, from := range pubs {
		subs := topo.Subscribers(from)
		links += len(subs)
		r.obs = append(r.obs, sim.NewPublisherOutbox(inj, from, subs))
	}
	if links == 0 || links*p.Steps > MaxReplaySteps {
		return nil, nil
	}
	return r, nil
}

// SetFaults replaces the faults the links follow from the next episode replayed: a point's
// faults as changed live (launch.Interventions.Faults, where a changed rule keeps its old form
// until the change's episode and step, so the episodes already replayed keep their fates).
// The counters go on.
func (r *LinkReplay) SetFaults(f *scenario.FaultsSpec) error {
	inj, err := fault.New(f, r.seed)
	if err != nil {
		return fmt.Errorf("live view: the links' faults: %w", err)
	}
	for i, from := range r.pubs {
		subs := r.topo.Subscribers(from)
		links := make([]*fault.Link, len(subs))
		for k, to := range subs {
			links[k] = inj.Link(from.String(), to.String(), sim.DataSubject(from))
		}
		if err := r.obs[i].SetLinks(links); err != nil {
			return fmt.Errorf("live view: %w", err)
		}
	}
	return nil
}

// Replay counts the episodes from the next one not replayed up to episode last (inclusive).
func (r *LinkReplay) Replay(last int) {
	noop := func(*fault.Delivery) {}
	for ; r.next <= last; r.next++ {
		for _, ob := range r.obs {
			ob.Begin(r.next)
			for t := 0; t < r.steps; t++ {
				ob.Release(t, nil, noop)
			}
			ob.End()
		}
		r.done++
	}
}

// Skip starts the replay at episode ep (a resumed point: the episodes before were played by
// an earlier run).
func (r *LinkReplay) Skip(ep int) { r.next = max(r.next, ep) }

// Episodes is how many episodes were replayed.
func (r *LinkReplay) Episodes() int { return r.done }

// Stats returns the replayed counters per link (copies).
func (r *LinkReplay) Stats() []fault.LinkStats {
	lists := make([][]fault.LinkStats, len(r.obs))
	for i, ob := range r.obs {
		lists[i] = ob.Stats()
	}
	return sim.MergeLinkStats(lists...)
}
