package plan

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Each process keeps the private values it owns - the plant its x(0), an agent host its
// agents' x_i(0), both the seed - and Redact leaves it nothing else: the seed 0, every other
// initial state NaN.
func TestKeepForRedact(t *testing.T) {
	const N = math.MaxFloat64 // stands for NaN in the table
	for _, tc := range []struct {
		name        string
		role        endpoint.Role
		first, last int
		seed        uint64
		plantX0     []float64
		agentsX0    []float64
	}{
		{"plant", endpoint.Plant, 0, 0, 9, []float64{1, 2}, []float64{N, N, N, N}},
		{"cloud", endpoint.Cloud, 0, 0, 0, []float64{N, N}, []float64{N, N, N, N}},
		{"eavesdropper", endpoint.Eavesdropper, 0, 0, 0, []float64{N, N}, []float64{N, N, N, N}},
		{"agent 2", endpoint.Agent, 2, 2, 9, []float64{N, N}, []float64{N, N, 12, N}},
		{"agents 1..2", endpoint.Agent, 1, 2, 9, []float64{N, N}, []float64{N, 11, 12, N}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scenario.Scenario{Seed: 9, Plant: &scenario.PlantSpec{X0: []float64{1, 2}}, X0: []float64{10, 11, 12, 13}}
			KeepFor(tc.role, tc.first, tc.last).Redact(s)
			require.Equal(t, tc.seed, s.Seed)
			for _, c := range []struct{ got, want []float64 }{{s.Plant.X0, tc.plantX0}, {s.X0, tc.agentsX0}} {
				require.Len(t, c.got, len(c.want))
				for i, w := range c.want {
					if w == N {
						require.True(t, math.IsNaN(c.got[i]), "%v: value %d kept", c.got, i)
					} else {
						require.Equal(t, w, c.got[i])
					}
				}
			}
		})
	}
}
