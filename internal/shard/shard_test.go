package shard

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
)

// The N slices of a shard cover the trials 0..total-1 once each, in order, sizes within one.
func TestShardRangesCoverTheTrials(t *testing.T) {
	for _, total := range []int{7, 8, 200, 200_001} {
		for _, n := range []int{1, 2, 3, 7, total} {
			next, small, big := 0, total, 0
			for i := range n {
				lo, hi := Shard{I: i, N: n}.Range(total)
				require.Equal(t, next, lo, "total %d, shard %d/%d", total, i, n)
				require.Less(t, lo, hi)
				small, big, next = min(small, hi-lo), max(big, hi-lo), hi
			}
			require.Equal(t, total, next)
			require.LessOrEqual(t, big-small, 1)
		}
	}
}

func TestParse(t *testing.T) {
	s, err := Parse("3/7")
	require.NoError(t, err)
	require.Equal(t, Shard{I: 3, N: 7}, s)
	for _, bad := range []string{"", "3", "7/7", "-1/7", "0/0", "a/b", "1/10001"} {
		_, err := Parse(bad)
		require.ErrorIs(t, err, cli.ErrUsage, bad)
	}
}
