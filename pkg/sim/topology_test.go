package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
)

// The cores' Senders are the inverse of the topology: every publisher's subscribers are
// exactly the cores that expect it, in the order of the run's cores (NewCoresInBlocks) - the
// order both transports draw link fates in.
func TestTopologyIsTheInverseOfSenders(t *testing.T) {
	_, ctl := loadPlan(t, "cloud-vehicle")
	cons := planOf(t, largeConsensus(t, 12, 10))
	tests := []struct {
		name string
		p    *plan.Plan
		hs   Blocks
	}{
		{"cloud control", ctl, Blocks{}},
		{"consensus", cons, Blocks{}},
		{"consensus, blocks of 4", cons, NewBlocks(cons, 4)},
		{"consensus, blocks of 5", cons, NewBlocks(cons, 5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cores, err := NewCoresInBlocks(tc.p, 1, tc.hs)
			require.NoError(t, err)
			topo := NewTopology(tc.p, tc.hs)
			for _, pub := range cores {
				var want []endpoint.Endpoint
				for _, c := range cores {
					for _, s := range c.Senders() {
						if s == pub.Endpoint() {
							want = append(want, c.Endpoint())
						}
					}
				}
				require.Equal(t, want, topo.Subscribers(pub.Endpoint()), "subscribers of %s", pub.Endpoint())
			}
		})
	}
}

func TestTopologySubscribers(t *testing.T) {
	_, ctl := loadPlan(t, "cloud-vehicle")
	topo := NewTopology(ctl, Blocks{})
	require.Equal(t, []endpoint.Endpoint{CloudEndpoint, EavesdropperEndpoint}, topo.Subscribers(PlantEndpoint))
	require.Equal(t, []endpoint.Endpoint{PlantEndpoint, EavesdropperEndpoint}, topo.Subscribers(CloudEndpoint))
	require.Nil(t, topo.Subscribers(EavesdropperEndpoint), "the eavesdropper only listens")
}
