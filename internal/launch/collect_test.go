package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
)

// A snapshot reads what each trace file gained since the last read, as Poll would, and moves
// the offsets on to where each process said its next episode begins; past its limit it reads
// nothing (the group is then merged from the files).
func TestSnapshotReadsWhatPollWould(t *testing.T) {
	s, err := scenario.Load("../../scenarios/cloud-vehicle.yaml")
	require.NoError(t, err)
	p, err := plan.New(s, plan.Options{})
	require.NoError(t, err)
	dir := t.TempDir()
	sess := &Session{cfg: SessionConfig{Plan: p, Dir: dir, Seeds: sim.NewSeeds(1)}, procs: plannedProcs(p, 1)}
	col, err := sess.NewCollector(CollectOptions{})
	require.NoError(t, err)
	write := func(pr *Proc, text string) {
		f, err := os.OpenFile(filepath.Join(dir, contract.TraceFile(pr.Name)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		_, err = f.WriteString(text)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		st, err := os.Stat(f.Name())
		require.NoError(t, err)
		pr.traceNext.Store(st.Size()) // its ctl.done: the next episode begins at the end
	}
	for _, pr := range sess.procs {
		write(pr, strings.Repeat("x", 20))
	}
	_, ok := col.Snapshot(59)
	require.False(t, ok, "60 bytes in all, over the limit")
	for _, pr := range sess.procs {
		require.Zero(t, col.off[pr.Name], "nothing read: %s", pr.Name)
	}
	snap, ok := col.Snapshot(60)
	require.True(t, ok)
	require.Empty(t, snap.errs)
	for _, pr := range sess.procs {
		require.Equal(t, strings.Repeat("x", 20), string(snap.data[pr.Name]), pr.Name)
		require.Equal(t, int64(20), col.off[pr.Name], pr.Name)
	}
	plant := sess.procs[0]
	write(plant, "yyyyy")
	snap, ok = col.Snapshot(MaxSnapshotBytes)
	require.True(t, ok)
	require.Equal(t, "yyyyy", string(snap.data[plant.Name]), "only what the file gained")
	for _, pr := range sess.procs[1:] {
		require.Empty(t, snap.data[pr.Name], pr.Name)
	}
	// A file cut below where its process said its next episode begins is an error, not data.
	require.NoError(t, os.Truncate(filepath.Join(dir, contract.TraceFile(plant.Name)), 3))
	snap, ok = col.Snapshot(MaxSnapshotBytes)
	require.True(t, ok)
	require.Len(t, snap.errs, 1)
	require.ErrorContains(t, snap.errs[0], "the trace file has 3 bytes")
	require.Error(t, col.Merge(snap))
}
