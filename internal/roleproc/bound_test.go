package roleproc

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// --keep-episodes N: the trace keeps the records of the first N episodes plus the one in
// progress (each later episode's records replace the previous one's when it begins), the
// transcript and the fault log those of the first N only; each ctl.done says where the next
// episode's records begin, which is where the launcher reads from.
func TestKeepEpisodes(t *testing.T) {
	for _, tc := range []struct {
		keep  string
		trace []string // the trace file after each of the episodes 0..4
		next  []int64  // the offset each ctl.done reports
		kept  string   // the episodes in the transcript and the fault log
	}{
		{"-1", []string{"e0", "e0e1", "e0e1e2", "e0e1e2e3", "e0e1e2e3e4"}, []int64{3, 6, 9, 12, 15}, "01234"},
		{"0", []string{"e0", "e1", "e2", "e3", "e4"}, []int64{0, 0, 0, 0, 0}, ""},
		{"1", []string{"e0", "e0e1", "e0e2", "e0e3", "e0e4"}, []int64{3, 3, 3, 3, 3}, "0"},
		{"2", []string{"e0", "e0e1", "e0e1e2", "e0e1e3", "e0e1e4"}, []int64{3, 6, 6, 6, 6}, "01"},
		{"9", []string{"e0", "e0e1", "e0e1e2", "e0e1e2e3", "e0e1e2e3e4"}, []int64{3, 6, 9, 12, 15}, "01234"},
	} {
		t.Run(tc.keep, func(t *testing.T) {
			keep, err := trace.ParseEpisodes(tc.keep)
			require.NoError(t, err)
			dir := t.TempDir()
			proc := &process{cfg: &Config{Role: endpoint.Eavesdropper, Out: dir, Transcript: true, KeepEpisodes: keep}}
			ob := fault.NewOutbox(nil)
			r := &coreRunner{bound: newDiskBound(keep), tr: &natsTransport{pubs: map[endpoint.Endpoint]*pubStream{sim.PlantEndpoint: {ob: ob}}}}
			r.file, err = proc.openTrace()
			require.NoError(t, err)
			w := bufio.NewWriter(r.file)
			r.flush = w.Flush
			require.NoError(t, r.openFaultLog(proc))
			require.NoError(t, r.openTranscript(proc))
			for ep := range 5 {
				require.NoError(t, r.beginFiles())
				fmt.Fprintf(w, "e%d\n", ep)
				r.tap("dpsim.r1.plant.0.yhat", []byte(fmt.Sprintf(`{"ep":%d}`, ep)))
				ob.Log(&fault.Event{Link: "plant.0->cloud.0", Episode: ep, Drop: true})
				require.NoError(t, r.endFiles())
				require.Equal(t, tc.trace[ep], read(t, filepath.Join(dir, contract.TraceFile(proc.cfg.Name()))), "trace after episode %d", ep)
				require.Equal(t, tc.next[ep], r.traceNext(), "ctl.done of episode %d", ep)
			}
			require.NoError(t, r.waitSync())
			require.Equal(t, tc.kept, episodes(read(t, filepath.Join(dir, contract.TranscriptFile(proc.cfg.Name()))), `{"ep":`))
			require.Equal(t, tc.kept, episodes(read(t, filepath.Join(dir, contract.FaultsFile(proc.cfg.Name()))), `"episode":`))
		})
	}
}

// A process restarted from its checkpoint takes up the bound where it was.
func TestKeepEpisodesRestored(t *testing.T) {
	b := newDiskBound(trace.FirstEpisodes(2))
	b.begin()
	b.done(10)
	b.begin()
	b.done(20)
	at, cut := b.begin()
	require.Equal(t, [2]any{int64(20), true}, [2]any{at, cut})
	require.False(t, b.keeping, "episode 2 is past the kept ones")

	r := newDiskBound(trace.FirstEpisodes(2))
	r.restore(b.finished, b.keepEnd)
	require.Equal(t, b.keeping, r.keeping)
	rat, rcut := r.begin()
	require.Equal(t, [2]any{at, cut}, [2]any{rat, rcut}, "cut back where the killed process would have")
	require.Equal(t, int64(20), r.next())
	r.restore(1, -1)
	require.True(t, r.keeping, "the restored episode 1 is kept")
	r.done(25)
	require.Equal(t, int64(25), r.next())

	none := newDiskBound(trace.NoEpisodes)
	none.restore(3, 0)
	require.False(t, none.keeping)
	require.Equal(t, int64(0), none.next())
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.ReplaceAll(string(b), "\n", "")
}

// episodes lists the digits following each key in s.
func episodes(s, key string) string {
	var out strings.Builder
	for {
		i := strings.Index(s, key)
		if i < 0 {
			return out.String()
		}
		s = s[i+len(key):]
		out.WriteByte(s[0])
	}
}
