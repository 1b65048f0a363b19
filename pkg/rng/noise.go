package rng

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
)

// noiseDomain separates the noise keys from any other use of SHA-256 over a seed.
const noiseDomain = "dpsim/noise/v1"

// NoiseKey returns the 32-byte key of the noise stream named by path below seed:
//
//	SHA-256("dpsim/noise/v1" || LE64(seed) || LE64(path[0]) || ... )
//
// (docs/protocol.md section 12.1). SHA-256 is one-way: a stream's key, or its whole generator
// state, gives away neither the run seed nor the key of another path - unlike Derive, whose
// SplitMix64 chain is a bijection and is kept for streams that are not a role's secret (fault
// fates, the auditor's bits). It does not allocate.
func NoiseKey(seed uint64, path ...uint64) [32]byte {
	var buf [len(noiseDomain) + 8*8]byte
	n := copy(buf[:], noiseDomain)
	h := sha256.New()
	binary.LittleEndian.PutUint64(buf[n:], seed)
	n += 8
	for _, p := range path {
		if n+8 > len(buf) {
			h.Write(buf[:n])
			n = 0
		}
		binary.LittleEndian.PutUint64(buf[n:], p)
		n += 8
	}
	if len(path) <= 7 {
		return sha256.Sum256(buf[:n])
	}
	h.Write(buf[:n])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// NewNoise returns the noise stream of seed and path: ChaCha8 (math/rand/v2, the C2SP
// chacha8rand generator, a cryptographically secure generator) keyed by NoiseKey. It allocates:
// a caller that keeps one generator per emitter reseeds it with ReseedNoise instead.
func NewNoise(seed uint64, path ...uint64) *rand.Rand {
	return rand.New(rand.NewChaCha8(NoiseKey(seed, path...)))
}

// ReseedNoise sets c to the state NewNoise(seed, path...) starts its generator in, without
// allocating.
func ReseedNoise(c *rand.ChaCha8, seed uint64, path ...uint64) {
	c.Seed(NoiseKey(seed, path...))
}
