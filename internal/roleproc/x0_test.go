package roleproc

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/dpsimtest"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// An agent host opens its own box of the challenger's x0 message: its agents' x_i(0) in place,
// NaN for every other agent's (which it never learns). A box it cannot open - no curve key, a
// key it was not sealed to, not sealed by the launcher - is refused as sealed.
func TestOpenX0AgentHost(t *testing.T) {
	_, p := dpsimtest.LoadPlan(t, "consensus-gaussian")
	n := p.Graph.N
	require.GreaterOrEqual(t, n, 4)
	launcher, mine, other := curveKey(t), curveKey(t), curveKey(t)
	x0 := make([]float64, n)
	for i := range x0 {
		x0[i] = 0.5 + float64(i)
	}
	host := endpoint.Endpoint{Role: endpoint.Agent, ID: 2}
	to := []contract.X0Recipient{{Endpoint: endpoint.Endpoint{Role: endpoint.Agent}, First: 0, Last: 1, Public: other.Public},
		{Endpoint: host, First: 2, Last: 3, Public: mine.Public}}
	m, err := contract.X0Message("r1", 3, x0, launcher, to)
	require.NoError(t, err)
	proc := func(seed, sender string) *process {
		return &process{cfg: &Config{Role: endpoint.Agent, ID: 2, LastAgent: 3, Secrets: Secrets{X0Seed: seed, X0Sender: sender}}, plan: p}
	}
	got, err := proc(mine.Seed, launcher.Public).openX0(m, nil)
	require.NoError(t, err)
	require.Len(t, got, n)
	for i, v := range got {
		if i == 2 || i == 3 {
			require.Equal(t, x0[i], v)
		} else {
			require.True(t, math.IsNaN(v), "agent %d's x(0) reached host 2: %v", i, v)
		}
	}
	for name, pr := range map[string]*process{
		"no curve key":               proc("", ""),
		"another process's key":      proc(other.Seed, launcher.Public),
		"not sealed by the launcher": proc(mine.Seed, other.Public),
	} {
		_, err := pr.openX0(m, nil)
		require.Error(t, err, name)
		require.Equal(t, wire.ReasonSealed, wire.ReasonOf(err), "%s: %v", name, err)
	}
}
