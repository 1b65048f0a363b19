package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The paper's vehicle and its constant position offset are recognised on the shipped scenarios:
// the position-private vehicle is both, the full-state vehicle is the vehicle without a constant
// offset (its private model is the plant, A_m != I), and consensus is a constant offset but no
// vehicle.
func TestShapes(t *testing.T) {
	for _, c := range []struct {
		scenario        string
		vehicle, offset bool
	}{
		{"cloud-vehicle.yaml", true, true},
		{"cloud-vehicle-fullstate.yaml", true, false},
		{"consensus-gaussian.yaml", false, true},
	} {
		p, err := New(load(t, c.scenario), Options{})
		require.NoError(t, err, c.scenario)
		require.Equal(t, c.vehicle, p.PaperVehicle(), "%s: the paper's vehicle", c.scenario)
		require.Equal(t, c.offset, p.ConstantOffset(), "%s: a constant offset", c.scenario)
	}
	var none *Plan
	require.False(t, none.PaperVehicle())
	require.False(t, none.ConstantOffset())
}
