package engine

import (
	"bytes"
	"context"
	"encoding/gob"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
)

// Chunks played apart, sent through gob (as a worker's answer travels) and folded in any order
// give Run's Results, link counters and traces bit for bit, for any chunk size and workers.
func TestChunksFoldToRun(t *testing.T) {
	cases := []struct {
		scenario      string
		runs, size, w int
		traced        int
	}{
		{"cloud-vehicle", 50, 7, 1, 5},
		{"cloud-vehicle", 50, 50, 3, -1},
		{"consensus-laplace", 40, 9, 2, 3},
		{"faults-consensus-loss", 30, 4, 2, 2},
		{"faults-vehicle-latency", 30, 11, 1, 4},
		{"faults-agent-crash", 20, 6, 2, 2},
		{"faults-partition", 20, 5, 2, 1},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			_, p := loadPlan(t, c.scenario)
			seeds := sim.NewSeeds(21)
			te := trace.FirstEpisodes(c.traced)
			want, wantTr, err := Run(context.Background(), p, seeds, Options{Runs: c.runs, KeepTraces: true, TraceEpisodes: te})
			require.NoError(t, err)

			var chunks []*Chunk
			for lo := 0; lo < c.runs; lo += c.size {
				ch, err := PlayChunk(context.Background(), p, seeds, lo, min(lo+c.size, c.runs),
					ChunkOptions{Workers: c.w, Traces: true, TraceEpisodes: te})
				require.NoError(t, err)
				chunks = append(chunks, viaGob(t, ch))
			}
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(chunks), func(i, j int) { chunks[i], chunks[j] = chunks[j], chunks[i] })
			f, err := NewFold(context.Background(), p, seeds, Options{Runs: c.runs, KeepTraces: true, TraceEpisodes: te})
			require.NoError(t, err)
			for _, ch := range chunks {
				eps, err := f.Decode(ch)
				require.NoError(t, err)
				require.NoError(t, f.Add(ch, eps))
			}
			got, gotTr, err := f.Finish(nil)
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.NotEmpty(t, got.Links)
			require.Equal(t, wantTr, gotTr)
		})
	}
}

// A chunk that does not fit the point is refused whole, and one folded twice too.
func TestFoldRefusesMisfits(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	seeds := sim.NewSeeds(3)
	ch, err := PlayChunk(context.Background(), p, seeds, 0, 4, ChunkOptions{Workers: 1})
	require.NoError(t, err)
	_, other := loadPlan(t, "consensus-laplace")
	otherCh, err := PlayChunk(context.Background(), other, seeds, 0, 4, ChunkOptions{Workers: 1})
	require.NoError(t, err)
	f, err := NewFold(context.Background(), p, seeds, Options{Runs: 8})
	require.NoError(t, err)
	shifted := *ch
	shifted.Lo, shifted.Hi = 4, 8
	for name, bad := range map[string]*Chunk{
		"beyond the runs":    {Lo: 6, Hi: 10, Episodes: ch.Episodes},
		"short":              {Lo: 0, Hi: 4, Episodes: ch.Episodes[:3]},
		"another plan":       otherCh,
		"episodes misplaced": &shifted,
		"garbage":            {Lo: 0, Hi: 1, Episodes: [][]byte{[]byte("not gob")}},
		"trace outside":      {Lo: 0, Hi: 4, Episodes: ch.Episodes, Traces: map[int]*trace.Traces{5: {}}},
	} {
		_, err := f.Decode(bad)
		require.Error(t, err, name)
	}
	eps, err := f.Decode(ch)
	require.NoError(t, err)
	require.NoError(t, f.Add(ch, eps))
	_, err = f.Decode(ch)
	require.ErrorContains(t, err, "already folded")
	res, _, err := f.Finish(context.Canceled)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 4, res.Runs)
}

func viaGob(t *testing.T, c *Chunk) *Chunk {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, gob.NewEncoder(&b).Encode(c))
	var out Chunk
	require.NoError(t, gob.NewDecoder(&b).Decode(&out))
	return &out
}
