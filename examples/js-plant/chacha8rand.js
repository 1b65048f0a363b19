// ChaCha8Rand, the generator of Go's math/rand/v2.ChaCha8 (the C2SP chacha8rand spec,
// https://c2sp.org/chacha8rand), ported from Go's internal/chacha8rand (chacha8.go and
// chacha8_generic.go) operation for operation. Seeded with 32 bytes, it yields the uint64
// sequence of (*rand.ChaCha8).Uint64() for the same seed, bit for bit (vectors/ checks it).
//
// The generator: the 32-byte key is a ChaCha8 key with a zero nonce; one iteration runs the
// ChaCha8 block function on counters 0..15 in groups of four (interlaced as a 4-way SIMD
// implementation lays them out), outputs the first 992 bytes (124 uint64s) and keeps the last
// 32 bytes as the next iteration's key.
'use strict';

const CTR_INC = 4; // counter increment between block calls
const CTR_MAX = 16; // reseed when the counter reaches 16
const CHUNK = 32; // uint64s per block call
const RESEED = 4; // uint64s of the buffer's end that become the next key

// quarter rounds on the 16 words of one block, in place (Go's qr; >>> 0 keeps uint32)
function rounds(x) {
  let b0 = x[0], b1 = x[1], b2 = x[2], b3 = x[3], b4 = x[4], b5 = x[5], b6 = x[6], b7 = x[7];
  let b8 = x[8], b9 = x[9], b10 = x[10], b11 = x[11], b12 = x[12], b13 = x[13], b14 = x[14], b15 = x[15];
  for (let round = 0; round < 4; round++) {
    // b0, b4, b8, b12 = qr(b0, b4, b8, b12) and so on: the column then the diagonal rounds
    b0 = (b0 + b4) | 0; b12 ^= b0; b12 = (b12 << 16) | (b12 >>> 16);
    b8 = (b8 + b12) | 0; b4 ^= b8; b4 = (b4 << 12) | (b4 >>> 20);
    b0 = (b0 + b4) | 0; b12 ^= b0; b12 = (b12 << 8) | (b12 >>> 24);
    b8 = (b8 + b12) | 0; b4 ^= b8; b4 = (b4 << 7) | (b4 >>> 25);

    b1 = (b1 + b5) | 0; b13 ^= b1; b13 = (b13 << 16) | (b13 >>> 16);
    b9 = (b9 + b13) | 0; b5 ^= b9; b5 = (b5 << 12) | (b5 >>> 20);
    b1 = (b1 + b5) | 0; b13 ^= b1; b13 = (b13 << 8) | (b13 >>> 24);
    b9 = (b9 + b13) | 0; b5 ^= b9; b5 = (b5 << 7) | (b5 >>> 25);

    b2 = (b2 + b6) | 0; b14 ^= b2; b14 = (b14 << 16) | (b14 >>> 16);
    b10 = (b10 + b14) | 0; b6 ^= b10; b6 = (b6 << 12) | (b6 >>> 20);
    b2 = (b2 + b6) | 0; b14 ^= b2; b14 = (b14 << 8) | (b14 >>> 24);
    b10 = (b10 + b14) | 0; b6 ^= b10; b6 = (b6 << 7) | (b6 >>> 25);

    b3 = (b3 + b7) | 0; b15 ^= b3; b15 = (b15 << 16) | (b15 >>> 16);
    b11 = (b11 + b15) | 0; b7 ^= b11; b7 = (b7 << 12) | (b7 >>> 20);
    b3 = (b3 + b7) | 0; b15 ^= b3; b15 = (b15 << 8) | (b15 >>> 24);
    b11 = (b11 + b15) | 0; b7 ^= b11; b7 = (b7 << 7) | (b7 >>> 25);

    b0 = (b0 + b5) | 0; b15 ^= b0; b15 = (b15 << 16) | (b15 >>> 16);
    b10 = (b10 + b15) | 0; b5 ^= b10; b5 = (b5 << 12) | (b5 >>> 20);
    b0 = (b0 + b5) | 0; b15 ^= b0; b15 = (b15 << 8) | (b15 >>> 24);
    b10 = (b10 + b15) | 0; b5 ^= b10; b5 = (b5 << 7) | (b5 >>> 25);

    b1 = (b1 + b6) | 0; b12 ^= b1; b12 = (b12 << 16) | (b12 >>> 16);
    b11 = (b11 + b12) | 0; b6 ^= b11; b6 = (b6 << 12) | (b6 >>> 20);
    b1 = (b1 + b6) | 0; b12 ^= b1; b12 = (b12 << 8) | (b12 >>> 24);
    b11 = (b11 + b12) | 0; b6 ^= b11; b6 = (b6 << 7) | (b6 >>> 25);

    b2 = (b2 + b7) | 0; b13 ^= b2; b13 = (b13 << 16) | (b13 >>> 16);
    b8 = (b8 + b13) | 0; b7 ^= b8; b7 = (b7 << 12) | (b7 >>> 20);
    b2 = (b2 + b7) | 0; b13 ^= b2; b13 = (b13 << 8) | (b13 >>> 24);
    b8 = (b8 + b13) | 0; b7 ^= b8; b7 = (b7 << 7) | (b7 >>> 25);

    b3 = (b3 + b4) | 0; b14 ^= b3; b14 = (b14 << 16) | (b14 >>> 16);
    b9 = (b9 + b14) | 0; b4 ^= b9; b4 = (b4 << 12) | (b4 >>> 20);
    b3 = (b3 + b4) | 0; b14 ^= b3; b14 = (b14 << 8) | (b14 >>> 24);
    b9 = (b9 + b14) | 0; b4 ^= b9; b4 = (b4 << 7) | (b4 >>> 25);
  }
  // b4..b11 are added back to the key words (as ChaCha20 does); the others are stored as they are
  x[0] = b0; x[1] = b1; x[2] = b2; x[3] = b3;
  x[4] += b4; x[5] += b5; x[6] += b6; x[7] += b7;
  x[8] += b8; x[9] += b9; x[10] += b10; x[11] += b11;
  x[12] = b12; x[13] = b13; x[14] = b14; x[15] = b15;
}

// block is chacha8rand's block function (block_generic): four ChaCha8 blocks with counters
// counter..counter+3 from the key (8 uint32 words, little-endian), written interlaced into buf
// (64 uint32 words: word w of block i at index 4w + i, so that uint64 k of Go's [32]uint64 is
// buf[2k] | buf[2k+1] << 32 on a little-endian machine).
function block(key, buf, counter, x) {
  for (let i = 0; i < 4; i++) {
    x[0] = 0x61707865; x[1] = 0x3320646e; x[2] = 0x79622d32; x[3] = 0x6b206574; // "expand 32-byte k"
    for (let j = 0; j < 8; j++) x[4 + j] = key[j];
    x[12] = (counter + i) >>> 0;
    x[13] = 0; x[14] = 0; x[15] = 0;
    rounds(x);
    for (let w = 0; w < 16; w++) buf[4 * w + i] = x[w];
  }
}

// ChaCha8 is rand.ChaCha8: new ChaCha8(seed) with seed 32 bytes (a Buffer or Uint8Array).
class ChaCha8 {
  constructor(seed) {
    this.key = new Uint32Array(8); // the seed as 4 uint64s = 8 uint32s, little-endian
    this.buf = new Uint32Array(2 * CHUNK);
    this.x = new Uint32Array(16);
    this.i = 0;
    this.n = 0;
    this.c = 0;
    this.lo = 0; // the low and high 32 bits of the last value (next())
    this.hi = 0;
    if (seed !== undefined) this.seed(seed);
  }

  // seed is State.Init: the generator restarts as new ChaCha8(seed).
  seed(seed) {
    if (!seed || seed.length !== 32) throw new Error('chacha8rand: the seed must be 32 bytes');
    for (let j = 0; j < 8; j++) {
      this.key[j] = (seed[4 * j] | (seed[4 * j + 1] << 8) | (seed[4 * j + 2] << 16) | (seed[4 * j + 3] << 24)) >>> 0;
    }
    block(this.key, this.buf, 0, this.x);
    this.c = 0;
    this.i = 0;
    this.n = CHUNK;
  }

  // refill is State.Refill: the next block call, and a new key every 16 blocks.
  refill() {
    this.c += CTR_INC;
    if (this.c === CTR_MAX) {
      // the buffer's last 4 uint64s become the key (forward secrecy)
      for (let j = 0; j < 2 * RESEED; j++) this.key[j] = this.buf[2 * (CHUNK - RESEED) + j];
      this.c = 0;
    }
    block(this.key, this.buf, this.c, this.x);
    this.i = 0;
    this.n = CHUNK;
    if (this.c === CTR_MAX - CTR_INC) this.n = CHUNK - RESEED;
  }

  // next draws the next uint64 into this.lo and this.hi (its low and high 32 bits, as
  // non-negative numbers): Uint64() without a BigInt.
  next() {
    if (this.i >= this.n) this.refill();
    const k = this.i++;
    this.lo = this.buf[2 * k];
    this.hi = this.buf[2 * k + 1];
  }

  // uint64 is (*rand.ChaCha8).Uint64() as a BigInt.
  uint64() {
    this.next();
    return (BigInt(this.hi) << 32n) | BigInt(this.lo);
  }

  // uint32hi is uint32(Uint64() >> 32): the high half of the next uint64.
  uint32hi() {
    this.next();
    return this.hi;
  }

  // float64 is rand.New(c).Float64(): the low 53 bits of a uint64 over 2^53.
  float64() {
    this.next();
    return ((this.hi & 0x1fffff) * 4294967296 + this.lo) / 9007199254740992;
  }
}

module.exports = { ChaCha8 };
