package kinds

import (
	"bytes"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// paramsChild is the environment variable that makes TestParamsSameInEveryProcess print the
// parameters' bytes as a child process: "warm" after gob-encoding types of its own first.
const paramsChild = "DPSIM_TEST_PARAMS_CHILD"

// gobWarm are types a process may gob-encode before a job's parameters (a worker's hello, a
// chunk): they take gob's first type ids.
type gobWarm struct {
	A, B int
	C    string
	D    []float64
}

// printParams writes the hex of both kinds' parameters as EncodeParams encodes them.
func printParams(w io.Writer) error {
	a, err := farm.EncodeParams(AuditParams{Seed: 21, Game: audit.GameOptions{Pair: &scenario.AuditPair{X0: []float64{1, 0.1}, X0Prime: []float64{1.5, -0.2}}, EpisodesPerTrial: 3}})
	if err != nil {
		return err
	}
	r, err := farm.EncodeParams(RunParams{Seeds: sim.NewSeeds(7), Traces: true, TraceEpisodes: 100, AgentsPerBlock: 4})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s %s\n", hex.EncodeToString(a), hex.EncodeToString(r))
	return err
}

// A job's parameters are the same bytes in every process, whatever it encoded before (the
// durable farm's manifest hashes them: a restarted coordinator recognises its jobs by them),
// and decode back to the value. Two child processes, one of which gob-encodes types of its own
// first (which moves gob's type ids, so gob bytes would differ), print the same bytes.
func TestParamsSameInEveryProcess(t *testing.T) {
	if mode := os.Getenv(paramsChild); mode != "" {
		if mode == "warm" {
			require.NoError(t, gob.NewEncoder(io.Discard).Encode(gobWarm{A: 1, C: "x", D: []float64{2}}))
			require.NoError(t, gob.NewEncoder(io.Discard).Encode(map[string][]int{"a": {1}}))
		}
		require.NoError(t, printParams(os.Stdout))
		return
	}
	out := map[string]string{}
	for _, mode := range []string{"cold", "warm"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestParamsSameInEveryProcess$")
		cmd.Env = append(os.Environ(), paramsChild+"="+mode)
		b, err := cmd.Output()
		require.NoError(t, err, "%s", b)
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				out[mode] = line
			}
		}
		require.NotEmpty(t, out[mode], "%s: %s", mode, b)
	}
	require.Equal(t, out["cold"], out["warm"], "the parameters' bytes depend on the process")

	// and they decode back, exactly; an unknown field is refused
	var b bytes.Buffer
	require.NoError(t, printParams(&b))
	raw, err := hex.DecodeString(strings.Fields(b.String())[0])
	require.NoError(t, err)
	var ap AuditParams
	require.NoError(t, farm.DecodeParams(raw, &ap))
	require.Equal(t, uint64(21), ap.Seed)
	require.Equal(t, []float64{1.5, -0.2}, ap.Game.Pair.X0Prime)
	require.Error(t, farm.DecodeParams([]byte(`{"Seed":1,"Extra":2}`), &ap))
}
