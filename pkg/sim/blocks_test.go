package sim

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/trace"
)

// Link faults act per agent link, crashes per agent process: such plans are not batched.
func TestHostsNotBatchedUnderFaults(t *testing.T) {
	s := largeConsensus(t, 12, 10)
	require.True(t, NewBlocks(planOf(t, s), 4).Batched())
	require.False(t, NewBlocks(planOf(t, s), 1).Batched())

	lossy := largeConsensus(t, 12, 10)
	lossy.Faults.Links = []scenario.LinkFault{{Name: "loss", Drop: 0.1}}
	require.False(t, NewBlocks(planOf(t, lossy), 4).Batched())

	_, ctl := loadPlan(t, "cloud-vehicle")
	require.False(t, NewBlocks(ctl, 4).Batched())
}

// dropTransport is the in-memory network losing the deliveries of the given senders at one
// step, except to the cores in keep (their block: agents of one block exchange values in
// memory): the other cores complete that step by their missing-input rule (Tick).
type dropTransport struct {
	*Network
	step   int
	from   func(endpoint.Endpoint) bool
	except []endpoint.Endpoint // every core but those kept
}

func (d *dropTransport) Recv(dl time.Time) (*Msg, error) {
	for {
		m, err := d.Network.Recv(dl)
		if err != nil || m.Step != d.step || !d.from(m.From) {
			return m, err
		}
		if m.From.Role == endpoint.Agent && m.ToAll {
			m.Except = d.except // only its block hears it
			return m, nil
		}
	}
}

// runDropped runs one episode of p with the cores of hs, losing at step 5 the outputs of agents
// 4..7 to everyone but themselves (in blocks of 4: the message of block 4..7), and returns its records sorted and the
// missing-input count.
func runDropped(t *testing.T, p *plan.Plan, hs Blocks) ([]trace.AgentRecord, []trace.ConsensusRecord, int) {
	t.Helper()
	cores, err := NewCoresInBlocks(p, 3, hs)
	require.NoError(t, err)
	lost := func(e endpoint.Endpoint) bool {
		switch e.Role {
		case endpoint.Agent:
			return e.ID >= 4 && e.ID < 8
		case endpoint.Block:
			return e.ID == 4 // the block 4..7
		}
		return false
	}
	tr := &dropTransport{Network: NewNetwork(NewTopology(p, hs), cores, nil), step: 5, from: lost}
	for _, c := range cores {
		if e := c.Endpoint(); !(e.Role == endpoint.Agent && lost(e)) {
			tr.except = append(tr.except, e)
		}
	}
	var agents []trace.AgentRecord
	var eve []trace.ConsensusRecord
	missing := 0
	d := NewDriver(cores, tr, nil, func(c Core, rd *Ready) error {
		var blocks []trace.AgentRecord
		for i := range rd.Blocks {
			blocks = rd.Blocks[i].AppendAgents(blocks)
		}
		for _, r := range append(slices.Clone(rd.Agent), blocks...) { // Y points into the core's arena, reused after Ready
			if r.Y != nil {
				y := *r.Y
				r.Y = &y
			}
			agents = append(agents, r)
		}
		for _, r := range rd.Consensus {
			r.EveX0 = slices.Clone(r.EveX0)
			eve = append(eve, r)
		}
		missing += rd.Missing
		return nil
	})
	tr.Begin(0)
	require.NoError(t, d.Episode(0, nil, nil))
	slices.SortFunc(agents, func(a, b trace.AgentRecord) int {
		return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.Agent, b.Agent))
	})
	slices.SortFunc(eve, func(a, b trace.ConsensusRecord) int { return cmp.Compare(a.Step, b.Step) })
	return agents, eve, missing
}

// A block's message missing is missing for each agent it carries: both missing-input rules give
// what the agents' own cores give when each of their messages is lost, counted per agent.
func TestHostsMissingInputPerAgent(t *testing.T) {
	for _, rule := range []scenario.AgentMissing{scenario.AgentReuseLast, scenario.AgentSkip} {
		t.Run(string(rule), func(t *testing.T) {
			s := largeConsensus(t, 12, 10)
			s.Faults.Missing.Agent = rule
			p := planOf(t, s)
			wantA, wantE, wantMissing := runDropped(t, p, Blocks{Size: 1})
			gotA, gotE, gotMissing := runDropped(t, p, NewBlocks(p, 4))
			require.Positive(t, wantMissing)
			require.Equal(t, wantMissing, gotMissing)
			require.Equal(t, wantA, gotA)
			require.Equal(t, wantE, gotE)
			require.Equal(t, 4, gotE[5].EveMissing) // the eavesdropper missed 4 agents' y(5)
		})
	}
}

// A block's message must carry every one of its agents: another length is dropped (counted),
// never read out of range.
func TestBlockCoreRejectsWrongLength(t *testing.T) {
	p := planOf(t, largeConsensus(t, 12, 10))
	hs := NewBlocks(p, 4)
	hc, err := NewBlockCore(p, 1, hs, 0)
	require.NoError(t, err)
	require.NotEmpty(t, hc.Senders())
	require.NoError(t, hc.Begin(0, nil))
	from := hc.Senders()[0]
	for _, vals := range [][]float64{{1}, make([]float64, 5), nil} {
		require.NoError(t, hc.Deliver(&Msg{From: from, ToAll: true, Episode: 0, Step: 0, At: 0, Values: vals}))
	}
	require.EqualValues(t, 3, hc.Unexpected())
	require.Zero(t, hc.LinkStats()[0].Delivered)

	_, err = NewBlockCore(p, 1, hs, 2) // not the start of a block
	require.ErrorContains(t, err, "multiple of 4")
	_, err = NewBlockCore(p, 1, Blocks{Size: 1}, 0)
	require.Error(t, err)
}
