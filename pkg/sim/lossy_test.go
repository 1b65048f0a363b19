package sim

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
)

// passTransport is the in-memory network behind a transport of another type: the driver then
// has no route bits of its own and finds a broadcast's gaps from Except and Msg.skip.
type passTransport struct{ *Network }

func (p passTransport) Recv(dl time.Time) (*Msg, error) { return p.Network.Recv(dl) }

// Under loss, a driver over the in-memory network behind another transport gives what a
// driver over the network itself gives - every record, missing count and link counter - for a
// drop-only rule (the network's lossy path) and for a rule that also duplicates (the general
// path, its gaps filed with its broadcasts).
func TestWrappedNetworkLossy(t *testing.T) {
	for _, rule := range []scenario.LinkFault{{Drop: 0.2}, {Drop: 0.2, Duplicate: 0.1}} {
		s := load(t, "consensus-gaussian").Expand()[0].Clone()
		s.Faults.Links = []scenario.LinkFault{rule}
		p := planOf(t, s)
		play := func(wrap bool) ([]trace.AgentRecord, []trace.ConsensusRecord, int, []fault.LinkStats) {
			cores, err := NewCores(p, 3)
			require.NoError(t, err)
			inj, err := fault.New(&s.Faults, 11)
			require.NoError(t, err)
			net := NewNetwork(NewTopology(p, Blocks{}), cores, inj)
			var tr Transport = net
			if wrap {
				tr = passTransport{net}
			}
			var agents []trace.AgentRecord
			var eve []trace.ConsensusRecord
			missing := 0
			d := NewDriver(cores, tr, nil, func(c Core, rd *Ready) error {
				for _, r := range rd.Agent {
					r.Y = nil // points into the core's arena
					agents = append(agents, r)
				}
				for _, r := range rd.Consensus {
					r.EveX0 = slices.Clone(r.EveX0)
					eve = append(eve, r)
				}
				missing += rd.Missing
				return nil
			})
			for ep := range 3 {
				net.Begin(ep)
				require.NoError(t, d.Episode(ep, nil, nil))
				net.End()
			}
			slices.SortStableFunc(agents, func(a, b trace.AgentRecord) int {
				return cmp.Or(cmp.Compare(a.Episode, b.Episode), cmp.Compare(a.Step, b.Step), cmp.Compare(a.Agent, b.Agent))
			})
			return agents, eve, missing, net.LinkStats(cores)
		}
		a1, e1, m1, l1 := play(false)
		a2, e2, m2, l2 := play(true)
		require.Positive(t, m1, "%+v: inputs were lost", rule)
		assert.Equal(t, a1, a2, "%+v", rule)
		assert.Equal(t, e1, e2, "%+v", rule)
		assert.Equal(t, m1, m2, "%+v", rule)
		assert.Equal(t, l1, l2, "%+v", rule)
	}
}
