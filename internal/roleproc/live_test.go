package roleproc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A mid-episode change is put in force at the first release at or before its step, waits in
// an earlier episode, and fails the process when it comes past its step or after its episode.
func TestCheckMid(t *testing.T) {
	cases := []struct {
		name          string
		atEp, atStep  int // the transport's episode and the release's step
		applied, fail bool
	}{
		{"before the step", 3, 5, true, false},
		{"at the step", 3, 12, true, false},
		{"an earlier episode: waits", 2, 40, false, false},
		{"past the step", 3, 13, false, true},
		{"a later episode", 4, 0, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			applied := 0
			tr := &natsTransport{ep: c.atEp, mid: &midFaults{}, onMid: func(*midChange) error { applied++; return nil }}
			tr.mid.p.Store(&midChange{lf: liveFaults{gen: 2}, ep: 3, step: 12})
			err := tr.checkMid(c.atStep)
			if c.fail {
				require.ErrorContains(t, err, "past it")
				require.Zero(t, applied)
				return
			}
			require.NoError(t, err)
			if c.applied {
				require.Equal(t, 1, applied)
				require.Nil(t, tr.mid.p.Load(), "in force: no longer pending")
				require.NoError(t, tr.checkMid(c.atStep+1), "once")
				require.Equal(t, 1, applied)
			} else {
				require.Zero(t, applied)
				require.NotNil(t, tr.mid.p.Load())
			}
		})
	}
}
