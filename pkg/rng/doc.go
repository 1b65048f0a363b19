// Package rng derives reproducible, independent random streams from one run seed.
//
// Every random draw in dpsim comes from a stream named by a path of labels below the run seed;
// the same path always gives the same stream, so a run is reproduced exactly from --seed
// whichever process or engine draws it. Two kinds:
//
//   - Noise streams (NewNoise, ReseedNoise, NoiseKey): a role's secrets. ChaCha8, a
//     cryptographically secure generator, keyed by SHA-256("dpsim/noise/v1" || seed || path):
//     one-way, so neither a published value nor a stream's whole state reveals the run seed or
//     another stream (docs/protocol.md section 12.1).
//   - Fast streams (New, Reseed, Derive, At): PCG seeded through a SplitMix64 chain, for what is
//     not a role's secret - the fault injector's fates, the auditor's secret bits, graph
//     generators, vector sums' data. SplitMix64 is a bijection: never use them for noise.
package rng
