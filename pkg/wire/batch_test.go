package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A message batching episodes (Route.Episodes) validates against the episodes in flight and
// Dim values per episode; the single-episode rules are unchanged.

func TestValidateBatched(t *testing.T) {
	exp := Expect{Run: "r1", Dim: 2, Steps: 10, Episode: 5, Episodes: 3, Sender: "plant.0", Kind: "yhat"}
	msg := func(ep, n, vals int) *Message {
		m := &Message{V: Version, Run: "r1", Episode: ep, Step: 1, Sender: "plant.0", Kind: "yhat", Route: Route{Episodes: n}}
		for i := range vals {
			m.Values = append(m.Values, float64(i))
		}
		return m
	}
	for _, tc := range []struct {
		name string
		m    *Message
		exp  Expect
		want Reason // numReasons: valid
	}{
		{"all three", msg(5, 3, 6), exp, numReasons},
		{"the last two", msg(6, 2, 4), exp, numReasons},
		{"one of them", msg(7, 0, 2), exp, numReasons},
		{"too few values", msg(5, 3, 5), exp, ReasonDim},
		{"values of one episode", msg(5, 3, 2), exp, ReasonDim},
		{"past the last episode", msg(6, 3, 6), exp, ReasonEpisode},
		{"before the first", msg(4, 2, 4), exp, ReasonEpisode},
		{"batch where one episode is expected", msg(5, 2, 4), Expect{Run: "r1", Dim: 2, Episode: 5}, ReasonEpisode},
		{"single where one is expected", msg(5, 1, 2), Expect{Run: "r1", Dim: 2, Episode: 5}, numReasons},
		{"any episode", msg(40, 3, 6), Expect{Run: "r1", Dim: 2, Episode: AnyEpisode}, numReasons},
		{"any length: must split", msg(5, 3, 7), Expect{Run: "r1", Episode: 5, Episodes: 3}, ReasonDim},
		{"another sender", func() *Message { m := msg(5, 3, 6); m.Sender = "plant.1"; return m }(), exp, ReasonSender},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.m, tc.exp)
			if tc.want == numReasons {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Equal(t, tc.want, ReasonOf(err), "%v", err)
		})
	}
}

// The count of a batch travels in its own header, only on a plain broadcast.
