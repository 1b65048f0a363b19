package scenario

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/privacy"
)

const auditVehicle = `
name: audit-test
kind: cloud-control
steps: 100
episodes: 10
plant:
  A: [[1, 0.1], [0, 1]]
  B: [[0.005], [0.1]]
  C: [[1, 0]]
controller:
  K: [3.4240, 4.3095]
  L: [0.8266, 0.6973]
privacy:
  epsilon: 1
  delta: 0.01
  adjacency: block
sweep: {param: adjacency, values: [block, manifold]}
`

func TestAuditSection(t *testing.T) {
	cases := []struct {
		name  string
		audit string
		want  *AuditSpec
	}{
		{"absent", "", nil},
		{"empty mapping", "audit: {}\n", &AuditSpec{}},
		{"every field", "audit:\n  trials: 1e6\n  adjacency: manifold\n  confidence: 0.99\n  pair: {x0: [0, 0], x0prime: [1, 0]}\n",
			&AuditSpec{Trials: 1_000_000, Adjacency: privacy.Manifold, Confidence: 0.99,
				Pair: &AuditPair{X0: []float64{0, 0}, X0Prime: []float64{1, 0}}}},
		{"null pair (x0 = x0prime)", "audit:\n  pair: {x0: [2, 0], x0prime: [2, 0]}\n",
			&AuditSpec{Pair: &AuditPair{X0: []float64{2, 0}, X0Prime: []float64{2, 0}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(auditVehicle+c.audit), "audit-test.yaml")
			require.NoError(t, err)
			require.Equal(t, c.want, s.Audit)
			// every sweep point carries its own deep copy of the section
			pts := s.Expand()
			require.Len(t, pts, 2)
			for _, p := range pts {
				require.Equal(t, c.want, p.Audit)
				if p.Audit != nil && p.Audit.Pair != nil {
					p.Audit.Pair.X0[0] = 99
					require.NotEqual(t, 99.0, s.Audit.Pair.X0[0])
				}
			}
			require.Equal(t, privacy.Block, pts[0].Privacy.Adjacency)
			require.Equal(t, privacy.Manifold, pts[1].Privacy.Adjacency)
		})
	}
}
