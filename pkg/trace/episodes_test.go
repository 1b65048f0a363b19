package trace

import (
	"encoding/json"
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Episodes has one meaning whatever it is read from: the flags' numbers, JSON, or a
// point resumed at a later episode.
func TestEpisodes(t *testing.T) {
	for _, tc := range []struct {
		in        string
		traced    []int // episodes traced among 0..5
		all, none bool
		from2     string // From(2) written as a number
	}{
		{"-1", []int{0, 1, 2, 3, 4, 5}, true, false, "-1"},
		{"0", nil, false, true, "0"},
		{"1", []int{0}, false, false, "0"},
		{"3", []int{0, 1, 2}, false, false, "1"},
		{"100", []int{0, 1, 2, 3, 4, 5}, false, false, "98"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseEpisodes(tc.in)
			require.NoError(t, err)
			var traced []int
			for ep := range 6 {
				if v.Traced(ep) {
					traced = append(traced, ep)
				}
			}
			assert.Equal(t, tc.traced, traced)
			assert.Equal(t, tc.all, v.All())
			assert.Equal(t, tc.none, v.None())
			assert.Equal(t, tc.in, v.String())
			assert.Equal(t, tc.from2, v.From(2).String())
			b, err := json.Marshal(v)
			require.NoError(t, err)
			assert.Equal(t, tc.in, string(b))
			var back Episodes
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, v, back)

			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			var f Episodes
			fs.Var(&f, "keep-episodes", "")
			require.NoError(t, fs.Parse([]string{"--keep-episodes", tc.in}))
			assert.Equal(t, v, f)
		})
	}
	assert.True(t, Episodes{}.All(), "the zero value bounds nothing")
	assert.Equal(t, AllEpisodes, FirstEpisodes(-1))
	assert.Equal(t, NoEpisodes, FirstEpisodes(0))
	n, ok := FirstEpisodes(7).Limit()
	assert.Equal(t, [2]any{7, true}, [2]any{n, ok})
	_, ok = AllEpisodes.Limit()
	assert.False(t, ok)
	for _, bad := range []string{"-2", "x", ""} {
		_, err := ParseEpisodes(bad)
		assert.ErrorContains(t, err, "want N >= 0, or -1 for every episode", bad)
	}
	var v Episodes
	assert.Error(t, json.Unmarshal([]byte("-5"), &v))
	assert.Error(t, json.Unmarshal([]byte(`"3"`), &v))
}
