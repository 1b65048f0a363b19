package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/fault"
)

func TestNewSeeds(t *testing.T) {
	for _, run := range []uint64{0, 1, 42, 1<<64 - 1} {
		s := NewSeeds(run)
		require.Equal(t, run, s.Run)
		require.Equal(t, fault.SeedOf(run), s.Fault, "the fault seed is the hash of the run seed")
		require.NotEqual(t, run, s.Fault, "the fault seed does not reveal the run seed")
		require.Equal(t, s, NewSeeds(run))
	}
}
