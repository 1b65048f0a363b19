package launch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/trace"
)

// A shard's ranges: the episode after the first played ones (where the collection counts the
// unfinished from), and the traced episodes the processes keep - they count the episodes they
// play, so a shard that plays traced episodes 1 and 4 of the first 5 keeps its first 2.
func TestRangesNextAndKeep(t *testing.T) {
	o := PlayOptions{Runs: 40, TraceEpisodes: trace.FirstEpisodes(5), Ranges: []EpisodeRange{{1, 2}, {4, 5}, {12, 28}}}
	for played, want := range map[int]int{0: 1, 1: 4, 2: 12, 3: 13, 17: 27, 18: 28} {
		require.Equal(t, want, o.nextEpisode(played), "after %d played", played)
	}
	require.Equal(t, trace.FirstEpisodes(2), o.keepEpisodes())
	o.TraceEpisodes = trace.AllEpisodes
	require.Equal(t, trace.AllEpisodes, o.keepEpisodes())
	// without ranges: Start..Runs-1, as a resumed point plays them
	o = PlayOptions{Runs: 40, Start: 3, TraceEpisodes: trace.FirstEpisodes(5)}
	require.Equal(t, []EpisodeRange{{3, 40}}, o.ranges())
	require.Equal(t, 10, o.nextEpisode(7))
	require.Equal(t, 40, o.nextEpisode(37))
	require.Equal(t, trace.FirstEpisodes(2), o.keepEpisodes())
	require.Empty(t, PlayOptions{Runs: 4, Start: 4}.ranges())
}
