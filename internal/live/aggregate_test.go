package live

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/metrics"
)

// The State carries the Monte Carlo mean square of the last Aggregate, thinned to about
// MaxPoints steps with the last one, a step no episode reached as null; null before any.
func TestHubAggregate(t *testing.T) {
	h := controlHub(3000)
	_, b := h.JSON(0)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Equal(t, "null", string(raw["aggregate"]))

	const n = metrics.MaxSeriesPoints
	s := &metrics.Series{N: make([]int, n), Mean: make([]float64, n), SE: make([]float64, n), Lo: make([]float64, n), Hi: make([]float64, n), Step: make([]int, n)}
	for i := range n {
		s.Step[i] = (3000 * i) / (n - 1)
		if i > 0 {
			s.N[i], s.Mean[i], s.Lo[i], s.Hi[i] = 7, 20000+float64(i), 19000+float64(i), 21000+float64(i)
		}
	}
	h.Aggregate(0, 7, s)
	st, err := h.State()
	require.NoError(t, err)
	a := st.Aggregate
	require.NotNil(t, a)
	require.Equal(t, 7, a.Runs)
	require.LessOrEqual(t, len(a.T), MaxPoints+1)
	require.Greater(t, len(a.T), MaxPoints/2)
	require.Equal(t, 3000, a.T[len(a.T)-1], "the last step is kept")
	require.Len(t, a.Mean, len(a.T))
	require.Equal(t, 20000.0+n-1, a.Mean[len(a.Mean)-1])
	require.Equal(t, 19000.0+n-1, a.Lo[len(a.Lo)-1])
	require.Equal(t, 21000.0+n-1, a.Hi[len(a.Hi)-1])
	var nulls struct {
		Aggregate struct {
			Mean []*float64 `json:"mean"`
		} `json:"aggregate"`
	}
	_, b = h.JSON(0)
	require.NoError(t, json.Unmarshal(b, &nulls))
	require.Nil(t, nulls.Aggregate.Mean[0], "step 0: no episode folded there")
	require.Less(t, len(b), 40000, "the state stays small")
}
