// The secure sampler of noise.js against dpsim's own (pkg/noise ExactSampler, pkg/rng streams):
// vectors/exact.json, written by `go run ./examples/js-plant/vectors/exact`, holds for 400
// streams every sample's sign, integer part and digits, the exact roundings done on them (the
// digits each one drew, the float64 it gave) and the stream's next word after all of it.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const noise = require('../noise');

const FILE = process.env.EXACT_VECTORS || path.join(__dirname, '..', 'vectors', 'exact.json');

const hex8 = (d) => d.toString(16).padStart(8, '0');
const fromHex = (h) => Buffer.from(h, 'hex').readDoubleBE(0);
const bits = (x) => {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(x);
  return b.toString('hex');
};

test('exact samples, roundings and digits drawn equal dpsim\'s', { skip: !fs.existsSync(FILE) && `no ${FILE}` }, (t) => {
  const V = JSON.parse(fs.readFileSync(FILE, 'utf8'));
  let samples = 0, rounds = 0, refined = 0;
  for (const [n, c] of V.cases.entries()) {
    const stream = noise.newStream(BigInt(c.seed), c.path.map(BigInt));
    const s = new noise.ExactSampler(stream);
    const drawn = c.samples.map((want, j) => {
      const got = s.sample(c.mechanism);
      assert.deepStrictEqual({ neg: got.neg, k: got.k, digits: got.x.map(hex8) }, want, `case ${n} sample ${j}`);
      samples++;
      return got;
    });
    for (const [r, rd] of c.rounds.entries()) {
      const before = drawn.reduce((a, x) => a + x.x.length, 0);
      const w = s.round(rd.G, (rd.ab || []).map(fromHex), rd.coef.map(fromHex), drawn);
      assert.strictEqual(bits(w), rd.value, `case ${n} round ${r}: ${w}`);
      assert.deepStrictEqual(drawn.map((x) => x.x.map(hex8)), rd.after, `case ${n} round ${r}: digits`);
      if (drawn.reduce((a, x) => a + x.x.length, 0) > before) refined++;
      rounds++;
    }
    assert.strictEqual(stream.uint64().toString(), c.next, `case ${n}: the stream's next word`);
  }
  assert.ok(samples > 500 && rounds >= 1000 && refined > 100, `${samples} samples, ${rounds} roundings, ${refined} refined`);
  t.diagnostic(`${samples} samples, ${rounds} roundings (${refined} drew more digits) equal`);
});
