package rng

import (
	crand "crypto/rand"
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
)

// splitmix64 is the SplitMix64 finaliser: a bijective mixer with good avalanche, used to
// turn (seed, path) into well-separated PCG seeds.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Derive folds a path of labels into the seed and returns the derived 64-bit seed.
func Derive(seed uint64, path ...uint64) uint64 {
	h := splitmix64(seed)
	for _, p := range path {
		h = splitmix64(h ^ splitmix64(p+0x632be59bd9b4e019))
	}
	return h
}

// New returns the PCG stream for seed and path. It allocates; call it once per stream
// (per episode), never per step.
func New(seed uint64, path ...uint64) *rand.Rand {
	d := Derive(seed, path...)
	return rand.New(rand.NewPCG(d, splitmix64(d^0xda3e39cb94b95bdb)))
}

// Reseed sets p to the state New(seed, path...) starts its source in: a caller that keeps one
// rand.New(p) per emitter starts each episode's stream without allocating.
func Reseed(p *rand.PCG, seed uint64, path ...uint64) {
	d := Derive(seed, path...)
	p.Seed(d, splitmix64(d^0xda3e39cb94b95bdb))
}

// Label turns a readable name ("plant", "agent") into a path element (FNV-1a).
func Label(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// FromCrypto returns a fresh seed from crypto/rand, for runs started without --seed.
// The caller must record it so the run can be reproduced.
func FromCrypto() uint64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; fall back to the runtime's source.
		return rand.Uint64()
	}
	return binary.LittleEndian.Uint64(b[:])
}

// At returns draw k of the counter stream keyed by key (a Derive result): a uniform in [0, 1)
// with 53 random bits, the SplitMix64 output of key + k * golden ratio. A pure function of
// (key, k): draws can be taken in any order, or skipped, and two parties that name the same
// key draw the same numbers without coordinating. The fault injector decides a message's fate
// this way from (seed, link, episode, step) alone, so the in-memory network and every NATS
// publisher agree bit for bit. Not for long streams: use New.
func At(key, k uint64) float64 {
	return float64(splitmix64(key+k*0x9e3779b97f4a7c15)>>11) / (1 << 53)
}

// OpenAt is At mapped to (0, 1), for logarithms.
func OpenAt(key, k uint64) float64 {
	return (float64(splitmix64(key+k*0x9e3779b97f4a7c15)>>11) + 0.5) / (1 << 53)
}
