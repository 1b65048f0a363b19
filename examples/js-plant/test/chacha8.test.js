// The port of ChaCha8Rand, the stream keys and the float sampler against Go's own outputs
// (vectors/chacha8.json, written by `go run ./examples/js-plant/vectors`).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { ChaCha8 } = require('../chacha8rand');
const noise = require('../noise');

const V = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'vectors', 'chacha8.json'), 'utf8'));

const bits = (x) => {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(x);
  return b.toString('hex');
};

test('ChaCha8 Uint64 equals Go math/rand/v2 across the 992-byte iterations and rekeys', () => {
  let n = 0;
  for (const s of V.seeds) {
    const c = new ChaCha8(Buffer.from(s.seed, 'hex'));
    s.uint64.forEach((want, i) => {
      assert.strictEqual(c.uint64().toString(), want, `seed ${s.name} output ${i}`);
      n++;
    });
  }
  assert.ok(n >= 5 * 1500);
});

test('ChaCha8 reseeding restarts the stream', () => {
  const s = V.seeds[1];
  const c = new ChaCha8(Buffer.from(V.seeds[0].seed, 'hex'));
  for (let i = 0; i < 300; i++) c.uint64();
  c.seed(Buffer.from(s.seed, 'hex'));
  for (let i = 0; i < 300; i++) assert.strictEqual(c.uint64().toString(), s.uint64[i]);
});

test('Float64, NormFloat64 and the unit Laplace (the float sampler) equal Go bit for bit', () => {
  for (const s of V.seeds) {
    let c = new ChaCha8(Buffer.from(s.seed, 'hex'));
    s.float64.forEach((want, i) => assert.strictEqual(bits(c.float64()), want, `seed ${s.name} Float64 ${i}`));
    c = new ChaCha8(Buffer.from(s.seed, 'hex'));
    s.norm.forEach((want, i) => assert.strictEqual(bits(noise.normFloat64(c)), want, `seed ${s.name} NormFloat64 ${i}`));
    c = new ChaCha8(Buffer.from(s.seed, 'hex'));
    s.laplace.forEach((want, i) => assert.strictEqual(bits(noise.laplaceFloat(c)), want, `seed ${s.name} Laplace ${i}`));
  }
});

test('labels are FNV-1a and keys SHA-256 over the documented bytes', () => {
  for (const l of V.labels) assert.strictEqual(noise.label(l.name).toString(), l.label, l.name);
  for (const k of V.keys) {
    assert.strictEqual(noise.noiseKey(k.seed, (k.path || []).map(BigInt)).toString('hex'), k.key, `seed ${k.seed} path ${k.path}`);
  }
});
