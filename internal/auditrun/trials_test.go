package auditrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// readEstimates keeps the final record of every episode and names what is wrong with a trace.
func TestReadEstimates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "eavesdropper-0.trace.jsonl")
	write := func(s string) { require.NoError(t, os.WriteFile(path, []byte(s), 0o644)) }
	write(`{"episode":1,"step":0}
{"episode":1,"step":1,"eve_x0":[3,4]}
{"episode":0,"step":0,"eve_x0":[9,9]}

{"episode":0,"step":1,"eve_x0":[1,2]}
`)
	est, err := readEstimates(dir, 2, 0, 2, 2, 2)
	require.NoError(t, err)
	require.Equal(t, [][]float64{{1, 2}, {3, 4}}, est)
	_, err = readEstimates(dir, 2, 0, 3, 3, 2)
	require.ErrorContains(t, err, "no final estimate for 1 episode(s), first 2")
	_, err = readEstimates(dir, 2, 0, 2, 2, 3)
	require.ErrorContains(t, err, "final estimate has 2 values, want 3")
	write("{\"episode\":5,\"step\":1,\"eve_x0\":[1,2]}\n")
	_, err = readEstimates(dir, 2, 0, 2, 2, 2)
	require.ErrorContains(t, err, "episode 5 out of range")
	write("not json\n")
	_, err = readEstimates(dir, 2, 0, 2, 2, 2)
	require.ErrorContains(t, err, ":1: ")
	_, err = readEstimates(t.TempDir(), 2, 0, 2, 2, 2)
	require.ErrorContains(t, err, "the eavesdropper's estimates")
}

// The wire engine does not inherit a fast-engine trial count by default (hours of processes).
func TestEffectiveTrials(t *testing.T) {
	spec := &scenario.AuditSpec{Trials: 1_000_000}
	for _, c := range []struct {
		engine string
		flag   int
		spec   *scenario.AuditSpec
		want   int
		capped bool
	}{
		{audit.EngineFast, 0, spec, 1_000_000, false},
		{audit.EngineWire, 0, spec, DefaultWireTrials, true},
		{audit.EngineWire, 5000, spec, 5000, false},
		{audit.EngineFast, 0, &scenario.AuditSpec{}, DefaultTrials, false},
		{audit.EngineWire, 0, &scenario.AuditSpec{Trials: 200}, 200, false},
	} {
		got, capped := EffectiveTrials(&Options{Engine: c.engine, Trials: c.flag}, c.spec)
		require.Equal(t, c.want, got, "%+v", c)
		require.Equal(t, c.capped, capped, "%+v", c)
	}
}
