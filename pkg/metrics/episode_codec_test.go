package metrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An episode survives the codec exactly, complete or waiting for a step (its held records too),
// and folds to the same Results; one of another plan's shape is refused.
func TestEpisodeCodecRoundTrip(t *testing.T) {
	_, p := loadPlan(t, "cloud-vehicle")
	tr := playControl(t, p, 3, 2)
	acc, err := NewAccumulator(p, 3)
	require.NoError(t, err)
	full, gap := acc.NewEpisode(0), acc.NewEpisode(1)
	for i := range tr.Control {
		r := &tr.Control[i]
		switch {
		case r.Episode == 0:
			require.NoError(t, acc.PutControl(full, r))
		case r.Step != 2: // episode 1 misses step 2: steps 3.. wait, held
			require.NoError(t, acc.PutControl(gap, r))
		}
	}
	for _, e := range []*Episode{full, gap} {
		data, err := acc.MarshalEpisode(e)
		require.NoError(t, err)
		back, err := acc.UnmarshalEpisode(data)
		require.NoError(t, err)
		require.Equal(t, e.Index(), back.Index())
		back.scratch = e.scratch // a buffer, not state
		require.Equal(t, e, back)
	}
	require.NotEmpty(t, gap.held)

	fold := func(e *Episode) *Results {
		a, err := NewAccumulator(p, 3)
		require.NoError(t, err)
		require.NoError(t, a.AddEpisode(e))
		return a.Results()
	}
	data, err := acc.MarshalEpisode(full)
	require.NoError(t, err)
	back, err := acc.UnmarshalEpisode(data)
	require.NoError(t, err)
	require.Equal(t, fold(full), fold(back))

	_, other := loadPlan(t, "consensus-laplace")
	oacc, err := NewAccumulator(other, 3)
	require.NoError(t, err)
	_, err = oacc.UnmarshalEpisode(data)
	require.ErrorContains(t, err, "shape")
	_, err = acc.UnmarshalEpisode([]byte("garbage"))
	require.Error(t, err)
}
