package farm

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/trace"
)

// The chunks cover every episode once, in order; a kept traced episode is a chunk of its own.
func TestRunSpans(t *testing.T) {
	for _, c := range []struct {
		name       string
		runs, size int
		traces     bool
		traced     trace.Episodes
		want       []span
	}{
		{"no traces", 10, 4, false, trace.AllEpisodes, []span{{0, 4}, {4, 8}, {8, 10}}},
		{"first 2 traced", 10, 4, true, trace.FirstEpisodes(2), []span{{0, 1}, {1, 2}, {2, 6}, {6, 10}}},
		{"all traced", 3, 4, true, trace.AllEpisodes, []span{{0, 1}, {1, 2}, {2, 3}}},
		{"none traced", 5, 5, true, trace.NoEpisodes, []span{{0, 5}}},
		{"more traced than runs", 2, 4, true, trace.FirstEpisodes(9), []span{{0, 1}, {1, 2}}},
	} {
		require.Equal(t, c.want, runSpans(c.runs, c.size, c.traces, c.traced), c.name)
	}
	require.Equal(t, []span{{0, 1024}, {1024, 1500}}, spans(1500, 1024))
}
