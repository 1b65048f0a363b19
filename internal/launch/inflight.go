package launch

import (
	"fmt"

	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// DefaultInflight is the default group size of a lockstep run (dpsim run --inflight, dpsim
// audit --engine wire --inflight): the episodes kept in flight at once over the same processes.
// A lockstep step of a group costs a round trip over the server whatever K is, so the per-step
// messaging is shared by the K episodes until the step's arithmetic and the larger messages
// dominate. Measured on 2 cores (load 3, alternated): the vehicle's whole dpsim run (500
// episodes) 0.50-0.53 s at K = 128 against 0.62-0.66 s at K = 32; the 21-point sweep
// (cloud-vehicle-sweep.yaml) 8.0 s against 10.5 s, K = 256 8.1 s. (On 2 loaded cores two sessions
// before, inside episodes against K = 1: K = 16 10.5-12.7x, K = 32 17.7-23.2x, K = 64 14.9-26.1x.)
const DefaultInflight = 128

// DefaultInflightFor is the default group size of plan p's processes when each hosts up to
// agentsPerProcess consensus agents: DefaultInflight / the cores a process hosts, at least 1.
// A host already sends one message per step for all its agents, so its messages carry
// DefaultInflight cores' outputs (where the gain of the vehicle's flattened) with fewer
// episodes in flight, and its memory - one set of cores per episode in flight - stays that of
// about DefaultInflight cores (measured: a ring of 10,000 agents in hosts of 1,000 gained
// nothing from 32 in flight, at 11x the memory).
func DefaultInflightFor(p *plan.Plan, agentsPerProcess int) int {
	cores := 1
	if p.Scenario.Kind == scenario.Consensus && p.Graph != nil {
		cores = min(max(agentsPerProcess, 1), p.Graph.N)
	}
	return max(1, DefaultInflight/cores)
}

// Why an episode runs in a group of its own: a fault the launcher acts on at a step of that
// episode (a checkpoint holds one episode's cores; a server restart or proxy reset is
// triggered by the step of one episode on the bus).
const (
	AloneCrash         = "crash"          // faults.crashes (also episode: all)
	AloneServerRestart = "server_restart" // faults.server_restarts
	AloneProxy         = "proxy"          // a faults.proxies reset
)

// Group is a run of Count consecutive episodes First..First+Count-1 played at once (one
// ctl.episodes; Count 1: the single ctl.episode). Alone says why an episode was kept in a
// group of its own ("": it was not).
type Group struct {
	First, Count int
	Alone        string
}

// Last is the group's last episode.
func (g Group) Last() int { return g.First + g.Count - 1 }

// String names the group's episodes: "episode 4" or "episodes 4..19".
func (g Group) String() string {
	if g.Count == 1 {
		return fmt.Sprintf("episode %d", g.First)
	}
	return fmt.Sprintf("episodes %d..%d", g.First, g.Last())
}

// NextGroup is the group that starts at episode first, among the episodes first..end-1 (end >
// first) of a point whose faults are f, with at most k episodes in flight (k < 1: 1): up to k
// consecutive episodes, except that an episode in which f schedules a process crash, a server
// restart or a proxy reset runs alone, and no group reaches past end (a point's last episode;
// a resumed point starts its groups at its first episode, so no group spans a resume).
func NextGroup(f *scenario.FaultsSpec, first, end, k int) Group {
	if why := aloneReason(f, first); why != "" {
		return Group{First: first, Count: 1, Alone: why}
	}
	n := 1
	for n < k && first+n < end && aloneReason(f, first+n) == "" {
		n++
	}
	return Group{First: first, Count: n}
}

// aloneReason says why episode ep must run alone under the faults f ("": it need not).
func aloneReason(f *scenario.FaultsSpec, ep int) string {
	if f == nil {
		return ""
	}
	for i := range f.Crashes {
		if f.Crashes[i].In(ep) {
			return AloneCrash
		}
	}
	for _, r := range f.ServerRestarts {
		if r.Episode == ep {
			return AloneServerRestart
		}
	}
	for _, x := range f.Proxies {
		for _, at := range x.Resets {
			if at.Episode == ep {
				return AloneProxy
			}
		}
	}
	return ""
}

// countGroup counts the played group g in c.
func countGroup(c *record.InflightCounts, g Group) {
	c.Groups++
	c.Largest = max(c.Largest, g.Count)
	switch g.Alone {
	case AloneCrash:
		c.Alone.Crash++
	case AloneServerRestart:
		c.Alone.ServerRestart++
	case AloneProxy:
		c.Alone.Proxy++
	}
}
