package contract

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

func curveKey(t *testing.T) bus.CurveKey {
	t.Helper()
	k, err := bus.NewCurveKey()
	require.NoError(t, err)
	return k
}

func requireSealed(t *testing.T, err error, reason wire.Reason) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, reason, wire.ReasonOf(err), "%v", err)
}

// A box sealed to one process opens with that process's key only: another host of the same
// message opens its own box and never the other's values, a key that was not sealed to (another
// process's, or the same process of another run) cannot open it, nor can a box sealed by
// anyone but the launcher, and a box moved to another episode or run is refused.
func TestX0SealedToItsOwner(t *testing.T) {
	launcher, h0, h3, stranger := curveKey(t), curveKey(t), curveKey(t), curveKey(t)
	host0, host3 := endpoint.Endpoint{Role: endpoint.Agent, ID: 0}, endpoint.Endpoint{Role: endpoint.Agent, ID: 3}
	x0 := []float64{0.25, -1.5, 3.375, 7.125, 1e-300}
	to := []X0Recipient{{Endpoint: host0, First: 0, Last: 2, Public: h0.Public}, {Endpoint: host3, First: 3, Last: 4, Public: h3.Public}}
	m, err := X0Message("r1", 5, x0, launcher, to)
	require.NoError(t, err)
	require.Equal(t, wire.CtlX0, m.Kind)
	for _, v := range m.Values {
		for _, s := range x0 {
			require.NotEqual(t, s, v, "a value of x(0) in the clear")
		}
	}
	require.NoError(t, wire.Validate(m, wire.Expect{Run: "r1", Episode: 5, Kind: wire.CtlX0, Sender: wire.LauncherSender}))

	got, err := OpenX0(m, host0, h0, launcher.Public)
	require.NoError(t, err)
	require.Equal(t, x0[:3], got)
	got, err = OpenX0(m, host3, h3, launcher.Public)
	require.NoError(t, err)
	require.Equal(t, x0[3:], got)

	// host 3's box with host 0's key (a process that reads another's box) or a stranger's
	_, err = OpenX0(m, host3, h0, launcher.Public)
	requireSealed(t, err, wire.ReasonSealed)
	_, err = OpenX0(m, host0, stranger, launcher.Public)
	requireSealed(t, err, wire.ReasonSealed)
	// not sealed by the launcher: the stranger seals to host 0 (it knows the public key)
	forged, err := X0Message("r1", 5, x0, stranger, to)
	require.NoError(t, err)
	_, err = OpenX0(forged, host0, h0, launcher.Public)
	requireSealed(t, err, wire.ReasonSealed)
	// moved: the box of episode 5 in a message of episode 6, or of another run
	moved := *m
	moved.Episode = 6
	_, err = OpenX0(&moved, host0, h0, launcher.Public)
	requireSealed(t, err, wire.ReasonSealed)
	moved = *m
	moved.Run = "r2"
	_, err = OpenX0(&moved, host0, h0, launcher.Public)
	requireSealed(t, err, wire.ReasonSealed)
	// altered: one bit of the ciphertext
	altered := *m
	altered.Values = append([]float64(nil), m.Values...)
	altered.Values[5]++
	_, err = OpenX0(&altered, host0, h0, launcher.Public)
	requireSealed(t, err, wire.ReasonSealed)
	// no box for host 6; malformed records
	_, err = OpenX0(m, endpoint.Endpoint{Role: endpoint.Agent, ID: 6}, h0, launcher.Public)
	requireSealed(t, err, wire.ReasonDim)
	for _, vals := range [][]float64{nil, {0}, {0, 0}, {0, 1e9, 1}, {0, 12, 1}, {0, 6, -1}, {0, 6, 1 << 50}, {0, 6.5, 1}} {
		_, err = OpenX0(&wire.Message{Run: "r1", Episode: 5, Values: vals}, host0, h0, launcher.Public)
		requireSealed(t, err, wire.ReasonDim)
	}
	// the plant's part must lie inside x(0)
	_, err = X0Message("r1", 5, x0[:2], launcher, to)
	require.Error(t, err)
}
