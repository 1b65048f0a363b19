package kinds

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/farm"
	"github.com/dpsim/dpsim/pkg/trace"
)

// The chunks cover every episode once, in order; a kept traced episode is a chunk of its own.
func TestRunSpans(t *testing.T) {
	for _, c := range []struct {
		name       string
		runs, size int
		traces     bool
		traced     trace.Episodes
		want       []farm.Span
	}{
		{"no traces", 10, 4, false, trace.AllEpisodes, []farm.Span{{Lo: 0, Hi: 4}, {Lo: 4, Hi: 8}, {Lo: 8, Hi: 10}}},
		{"first 2 traced", 10, 4, true, trace.FirstEpisodes(2), []farm.Span{{Lo: 0, Hi: 1}, {Lo: 1, Hi: 2}, {Lo: 2, Hi: 6}, {Lo: 6, Hi: 10}}},
		{"all traced", 3, 4, true, trace.AllEpisodes, []farm.Span{{Lo: 0, Hi: 1}, {Lo: 1, Hi: 2}, {Lo: 2, Hi: 3}}},
		{"none traced", 5, 5, true, trace.NoEpisodes, []farm.Span{{Lo: 0, Hi: 5}}},
		{"more traced than runs", 2, 4, true, trace.FirstEpisodes(9), []farm.Span{{Lo: 0, Hi: 1}, {Lo: 1, Hi: 2}}},
	} {
		require.Equal(t, c.want, RunSpans(c.runs, c.size, c.traces, c.traced), c.name)
	}
	require.Equal(t, []farm.Span{{Lo: 0, Hi: 1024}, {Lo: 1024, Hi: 1500}}, farm.Spans(1500, 1024))
}
