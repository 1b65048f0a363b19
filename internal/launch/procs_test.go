package launch

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

func TestPlannedProcs(t *testing.T) {
	s, err := scenario.Load("../../scenarios/consensus-gaussian.yaml")
	require.NoError(t, err)
	p, err := plan.New(s.Expand()[0], plan.Options{})
	require.NoError(t, err)
	n := p.Graph.N
	for _, per := range []int{1, 3, n, n + 5} {
		procs := plannedProcs(p, per)
		want := (n+per-1)/per + 1
		require.Len(t, procs, want, "per %d", per)
		covered := 0
		for i, pr := range procs[:len(procs)-1] {
			require.Equal(t, endpoint.Agent, pr.Role)
			require.Equal(t, covered, pr.ID, "host %d starts where the previous ended", i)
			covered = pr.LastAgent + 1
		}
		require.Equal(t, n, covered, "every agent hosted exactly once")
		require.Equal(t, endpoint.Eavesdropper, procs[len(procs)-1].Role)
	}
	s, err = scenario.Load("../../scenarios/cloud-vehicle.yaml")
	require.NoError(t, err)
	p, err = plan.New(s, plan.Options{})
	require.NoError(t, err)
	var names []string
	for _, pr := range plannedProcs(p, 1) {
		names = append(names, pr.Name)
	}
	require.Equal(t, []string{"plant-0", "cloud-0", "eavesdropper-0"}, names)
}

func TestLastLogError(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/x.log"
	require.NoError(t, writeFile(path, `{"level":"info","message":"ready"}
{"level":"error","error":"boom","message":"exit"}
`))
	require.Contains(t, lastLogError(path), "boom")
	require.NoError(t, writeFile(path, `{"level":"info","message":"ready"}
dpsim plant: episode 3: bus: timeout
`))
	require.Equal(t, "dpsim plant: episode 3: bus: timeout", lastLogError(path))
	require.Equal(t, "", lastLogError(dir+"/missing.log"))
	// Node.js prints its version after the stack trace: the error line is the one quoted
	require.NoError(t, writeFile(path, "/opt/cloud.js:12\n    throw new Error(`x`);\n    ^\n\nError: cannot connect to NATS: ECONNREFUSED\n    at connect (/opt/cloud.js:12:11)\n\nNode.js v20.20.2\n"))
	require.Equal(t, "Error: cannot connect to NATS: ECONNREFUSED", lastLogError(path))
	require.NoError(t, writeFile(path, "Traceback (most recent call last):\n  File \"cloud.py\", line 3, in <module>\nValueError: bad plan\n"))
	require.Equal(t, "ValueError: bad plan", lastLogError(path))
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
