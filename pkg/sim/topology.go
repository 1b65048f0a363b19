package sim

import (
	"slices"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
)

// Topology is who hears whom in a run of a plan, its consensus agents in the blocks of Hosts:
// for every publisher, its subscribers in the order its outbox delivers to them. It is the one
// derivation for both transports - the in-memory Network and a NATS process's publishers -
// which must agree: the fate of a message on a faulty link is drawn per subscriber in this
// order, so the fast engine and NATS are bit-identical only with the same lists. The cores'
// Senders are its inverse: core c expects a delivery from publisher e exactly when c is among
// Subscribers(e), and the subscribers come in the order of the run's cores (NewCoresInBlocks).
type Topology struct {
	plan  *plan.Plan
	hosts Blocks
}

// NewTopology returns the topology of a run of p whose agents publish in the blocks of hs
// (the zero Hosts: one AgentCore per agent, as NewCores).
func NewTopology(p *plan.Plan, hs Blocks) Topology { return Topology{plan: p, hosts: hs} }

// Subscribers lists the endpoints that receive publisher from's stream, in delivery order:
// plant.0 -> cloud.0, eavesdropper.0; cloud.0 -> plant.0, eavesdropper.0; agent i -> its
// neighbours (ascending; the graph is undirected), then eavesdropper.0; the block host.lo ->
// the blocks holding a neighbour of one of its agents (ascending), then eavesdropper.0. The
// eavesdropper publishes nothing (nil).
func (t Topology) Subscribers(from endpoint.Endpoint) []endpoint.Endpoint {
	switch from.Role {
	case endpoint.Plant:
		return []endpoint.Endpoint{CloudEndpoint, EavesdropperEndpoint}
	case endpoint.Cloud:
		return []endpoint.Endpoint{PlantEndpoint, EavesdropperEndpoint}
	case endpoint.Agent:
		var out []endpoint.Endpoint
		for _, e := range t.plan.Graph.Neighbors(from.ID) {
			out = append(out, AgentEndpoint(e.J))
		}
		return append(out, EavesdropperEndpoint)
	case endpoint.Block:
		return append(t.hosts.neighbourBlocks(t.plan, from.ID), EavesdropperEndpoint)
	}
	return nil
}

// neighbourBlocks lists the blocks other than the one starting at lo that hold a neighbour
// of one of its agents, ascending: the senders of that block's BlockCore, and (the graph being
// undirected) the blocks its message goes to.
func (h Blocks) neighbourBlocks(p *plan.Plan, lo int) []endpoint.Endpoint {
	var out []endpoint.Endpoint
	lo, hi := h.Block(lo)
	for i := lo; i < hi; i++ {
		for _, e := range p.Graph.Neighbors(i) {
			if f := h.First(e.J); f != lo && !slices.Contains(out, BlockEndpoint(f)) {
				out = append(out, BlockEndpoint(f))
			}
		}
	}
	slices.SortFunc(out, func(a, b endpoint.Endpoint) int { return a.ID - b.ID })
	return out
}
