package launch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// --role values: ENDPOINT=COMMAND, once per process, for a process the plan has and the
// scenario does not crash.
func TestPrograms(t *testing.T) {
	s, err := scenario.Load("../../scenarios/cloud-vehicle.yaml")
	require.NoError(t, err)
	p, err := plan.New(s, plan.Options{})
	require.NoError(t, err)
	progs := Programs{}
	require.NoError(t, progs.ParseProgram("cloud.0=node my-cloud.js --fast"))
	require.Equal(t, "node my-cloud.js --fast", progs["cloud.0"])
	for v, want := range map[string]string{
		"cloud.0":       "want ENDPOINT=COMMAND",
		"=node x":       "want ENDPOINT=COMMAND",
		"plant.0=":      "an empty command",
		"cloud.0=other": "given twice",
	} {
		require.ErrorContains(t, progs.ParseProgram(v), want, v)
	}
	require.NoError(t, progs.Check(p, 1))
	bad := Programs{"cloud.1": "x", "agent.0": "y"}
	require.EqualError(t, bad.Check(p, 1), "--role agent.0, cloud.1: no such process in scenario cloud-vehicle (its processes: plant.0, cloud.0, eavesdropper.0)")
	s.Faults.Crashes = []scenario.Crash{{Proc: "cloud.0", Step: 3, Restart: 5}}
	require.ErrorContains(t, progs.Check(p, 1), "faults.crashes")

	cmd := progs.command("/bin/dpsim", "cloud.0", []string{"cloud", "--run", "r 1"})
	require.Equal(t, []string{"/bin/sh", "-c", `node my-cloud.js --fast "$@"`, "sh", "--run", "r 1"}, cmd.Args, "the launcher's arguments as they are")
	require.Equal(t, []string{"/bin/dpsim", "plant", "--run", "r"}, progs.command("/bin/dpsim", "plant.0", []string{"plant", "--run", "r"}).Args)
}
