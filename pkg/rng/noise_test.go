package rng

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The key is SHA-256 over the documented bytes (docs/protocol.md section 12.1), whatever the
// path's length, and ReseedNoise starts where NewNoise does, without allocating.
func TestNoiseKeyDocumented(t *testing.T) {
	for _, path := range [][]uint64{nil, {Label("plant"), 0, 7}, {1, 2, 3, 4, 5, 6, 7}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}} {
		b := []byte("dpsim/noise/v1")
		b = binary.LittleEndian.AppendUint64(b, 42)
		for _, p := range path {
			b = binary.LittleEndian.AppendUint64(b, p)
		}
		require.Equal(t, sha256.Sum256(b), NoiseKey(42, path...), "path %v", path)
	}
	var c rand.ChaCha8
	r := rand.New(&c)
	for ep := uint64(0); ep < 3; ep++ {
		ReseedNoise(&c, 42, Label("agent"), 7, ep)
		want := NewNoise(42, Label("agent"), 7, ep)
		for i := 0; i < 300; i++ { // past ChaCha8's first 992-byte block
			require.Equal(t, want.Uint64(), r.Uint64(), "episode %d draw %d", ep, i)
		}
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { ReseedNoise(&c, 42, Label("plant"), 0, 3) }))
	require.NotEqual(t, NoiseKey(42, Label("plant"), 0, 1), NoiseKey(42, Label("plant"), 0, 2))
	require.NotEqual(t, NoiseKey(42, Label("plant"), 0, 1), NoiseKey(43, Label("plant"), 0, 1))
}
