package plan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

func newPlan(t *testing.T, name string) *plan.Plan {
	t.Helper()
	s, err := scenario.Load(filepath.Join("..", "..", "scenarios", name))
	require.NoError(t, err)
	p, err := plan.New(s.Expand()[0], plan.Options{})
	require.NoError(t, err)
	return p
}

func roundTrip(t *testing.T, p *plan.Plan, keep plan.Keep) (*plan.Plan, string) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, p.WriteFile(&buf, keep))
	text := buf.String()
	q, err := plan.ReadFile(&buf)
	require.NoError(t, err)
	return q, text
}

// A plan read back from its file runs exactly as the plan New computed: the same noise, gains,
// graph and rate, so the fast engine's results are bit for bit the same.
func TestPlanFileRunsLikeNew(t *testing.T) {
	for _, name := range []string{"cloud-vehicle.yaml", "cloud-vehicle-lqr.yaml", "consensus-gaussian.yaml", "consensus-laplace.yaml", "faults-agent-crash.yaml"} {
		t.Run(name, func(t *testing.T) {
			p := newPlan(t, name)
			all := plan.Keep{Seed: true, PlantX0: true, First: 0, Last: -1}
			if p.Graph != nil {
				all.Last = p.Graph.N - 1
			}
			q, _ := roundTrip(t, p, all)
			require.Equal(t, p.Scale, q.Scale)
			require.Equal(t, p.KappaInv, q.KappaInv)
			require.Equal(t, p.Alpha, q.Alpha)
			require.Equal(t, p.NoiseVariance(), q.NoiseVariance())
			require.Equal(t, p.RankErr == nil, q.RankErr == nil)
			require.Equal(t, p.Scenario.Seed, q.Scenario.Seed)
			if p.Graph != nil {
				require.Equal(t, p.Graph.Edges, q.Graph.Edges)
				require.Equal(t, p.Scenario.X0, q.Scenario.X0)
			} else {
				require.Equal(t, p.K.RawMatrix().Data, q.K.RawMatrix().Data)
				require.Equal(t, p.L.RawMatrix().Data, q.L.RawMatrix().Data)
			}
			opts := engine.Options{Runs: 6, KeepTraces: true}
			want, wantTr, err := engine.Run(context.Background(), p, sim.NewSeeds(3), opts)
			require.NoError(t, err)
			got, gotTr, err := engine.Run(context.Background(), q, sim.NewSeeds(3), opts)
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.Equal(t, wantTr, gotTr)
		})
	}
}

// A process's file holds only its own private values: the others read back as NaN (initial
// states) or 0 (the seed), and are absent from the file's text.
func TestPlanFileKeepsOnlyItsSlice(t *testing.T) {
	p := newPlan(t, "consensus-gaussian.yaml")
	n := p.Graph.N
	q, text := roundTrip(t, p, plan.Keep{Seed: true, First: 2, Last: 4})
	require.Equal(t, p.Scenario.Seed, q.Scenario.Seed)
	for i := 0; i < n; i++ {
		if i >= 2 && i <= 4 {
			require.Equal(t, p.Scenario.X0[i], q.Scenario.X0[i], "agent %d", i)
		} else {
			require.True(t, math.IsNaN(q.Scenario.X0[i]), "agent %d: %v", i, q.Scenario.X0[i])
		}
	}
	require.Equal(t, p.Scenario.X0, newPlan(t, "consensus-gaussian.yaml").Scenario.X0, "the plan written from is untouched")

	q, _ = roundTrip(t, p, plan.KeepNothing)
	require.Zero(t, q.Scenario.Seed)
	for i, x := range q.Scenario.X0 {
		require.True(t, math.IsNaN(x), "agent %d", i)
	}

	c := newPlan(t, "cloud-vehicle.yaml")
	q, text = roundTrip(t, c, plan.KeepNothing)
	require.Len(t, q.Scenario.Plant.X0, c.System.Nx())
	for _, x := range q.Scenario.Plant.X0 {
		require.True(t, math.IsNaN(x))
	}
	require.NotContains(t, text, "plant_x0")
	q, _ = roundTrip(t, c, plan.Keep{PlantX0: true, Last: -1})
	want := c.Scenario.Plant.X0
	if want == nil {
		want = make([]float64, c.System.Nx())
	}
	require.Equal(t, want, q.Scenario.Plant.X0)
}

// A damaged or foreign file is an error that says what is wrong.
func TestPlanFileRejects(t *testing.T) {
	p := newPlan(t, "cloud-vehicle.yaml")
	var buf bytes.Buffer
	require.NoError(t, p.WriteFile(&buf, plan.KeepNothing))
	good := buf.String()
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "EOF"},
		{"truncated", good[:len(good)/2], "unexpected EOF"},
		{"format", strings.Replace(good, plan.FileFormat, "dpsim-plan/0", 1), `format "dpsim-plan/0"`},
		{"unknown key", strings.Replace(good, `{"format"`, `{"nope":1,"format"`, 1), "unknown field"},
		{"noise matrix", strings.Replace(good, `"noise_matrix":[[`, `"noise_matrix":[[1],[`, 1), "noise_matrix"},
		{"scale", strings.Replace(good, `"scale":`, `"scale":-`, 1), "scale -"},
		// the plan's own gains, after the scenario (whose controller has a "k" too)
		{"gains", good[:strings.LastIndex(good, `"k":[[`)] + strings.Replace(good[strings.LastIndex(good, `"k":[[`):], `"k":[[`, `"k":[[1,`, 1), "k: row 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := plan.ReadFile(strings.NewReader(tc.text))
			require.ErrorContains(t, err, "plan file")
			require.ErrorContains(t, err, tc.want)
		})
	}
	g := newPlan(t, "consensus-gaussian.yaml")
	buf.Reset()
	require.NoError(t, g.WriteFile(&buf, plan.Keep{First: 0, Last: 1}))
	bad := strings.Replace(buf.String(), `"agents_x0":{"first":0`, `"agents_x0":{"first":9`, 1)
	_, err := plan.ReadFile(strings.NewReader(bad))
	require.ErrorContains(t, err, "agents_x0: agents 9..10 outside")
	require.Error(t, g.WriteFile(&buf, plan.Keep{First: 0, Last: g.Graph.N}))
}

// consensusYAML is a consensus scenario of n agents on a random 4-regular graph (graph seed gs).
func consensusYAML(n int, gs uint64) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "name: c%d\nkind: consensus\nsteps: 200\nepisodes: 1\nseed: 5\ngraph: {name: random-regular, n: %d, degree: 4, seed: %d}\nx0: [", n, n, gs)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, i%7)
	}
	b.WriteString("]\nprivacy: {mechanism: gaussian, epsilon: 1, delta: 0.01, mu: 1}\n")
	return []byte(b.String())
}

// What a role process pays to get its plan at 1,000 agents: resolving the scenario (parse,
// graph check with its dense spectrum, plan.New) against reading the launcher's plan file. A
// new graph every iteration, as in a fresh process (the rate is memoised per graph).
func BenchmarkRolePlan1000(b *testing.B) {
	const n = 1000
	b.Run("scenario", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s, err := scenario.Parse(consensusYAML(n, uint64(i+1)), "bench.yaml")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := plan.New(s, plan.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("file", func(b *testing.B) {
		s, err := scenario.Parse(consensusYAML(n, 1), "bench.yaml")
		if err != nil {
			b.Fatal(err)
		}
		p, err := plan.New(s, plan.Options{})
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := p.WriteFile(&buf, plan.Keep{Seed: true, First: 0, Last: 249}); err != nil {
			b.Fatal(err)
		}
		data := buf.Bytes()
		b.SetBytes(int64(len(data)))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := plan.ReadFile(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A consensus plan file carries its graph resolved - random-regular's drawn edges included -
// so an outside agent need not rebuild it; an edited edge is refused.
func TestPlanFileCarriesEdges(t *testing.T) {
	s, err := scenario.Parse(consensusYAML(20, 3), "rr.yaml")
	require.NoError(t, err)
	p, err := plan.New(s, plan.Options{})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, p.WriteFile(&buf, plan.KeepNothing))
	var f struct {
		Edges []scenario.Edge `json:"edges"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &f))
	require.Len(t, f.Edges, len(p.Graph.Edges))
	require.Len(t, f.Edges, 20*4/2, "a 4-regular graph of 20 nodes")
	for i, e := range p.Graph.Edges {
		require.Equal(t, scenario.Edge{I: e.I, J: e.J, W: e.W}, f.Edges[i])
	}
	q, err := plan.ReadFile(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, p.Graph.Edges, q.Graph.Edges)
	e0 := fmt.Sprintf(`"edges":[{"i":%d,"j":%d,`, f.Edges[0].I, f.Edges[0].J)
	require.Contains(t, buf.String(), e0)
	bad := strings.Replace(buf.String(), e0, fmt.Sprintf(`"edges":[{"i":%d,"j":%d,`, f.Edges[0].I, (f.Edges[0].J+1)%20), 1)
	_, err = plan.ReadFile(strings.NewReader(bad))
	require.ErrorContains(t, err, "edges[0]")
}
