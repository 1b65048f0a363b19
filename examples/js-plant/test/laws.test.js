// The secure samplers' laws and the exact rounding's rule, checked without Go: what the
// vectors could not tell if they were regenerated from a wrong implementation.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const noise = require('../noise');

function moments(draw, n) {
  let m1 = 0, m2 = 0, m4 = 0;
  for (let i = 0; i < n; i++) {
    const v = draw();
    m1 += v;
    m2 += v * v;
    m4 += v * v * v * v;
  }
  return [m1 / n, m2 / n, m4 / n];
}

test('exact normal: mean 0, variance 1, fourth moment 3', () => {
  const s = new noise.ExactSampler(noise.newStream(7n, noise.plantPath(0)));
  const [m1, m2, m4] = moments(() => noise.value(s.normal()), 40000);
  assert.ok(Math.abs(m1) < 0.02, `mean ${m1}`);
  assert.ok(Math.abs(m2 - 1) < 0.03, `variance ${m2}`);
  assert.ok(Math.abs(m4 - 3) < 0.2, `fourth moment ${m4}`);
});

test('exact Laplace: mean 0, variance 2, E|v| 1', () => {
  const s = new noise.ExactSampler(noise.newStream(7n, noise.plantPath(1)));
  let abs = 0;
  const [m1, m2] = moments(() => {
    const v = noise.value(s.laplace());
    abs += Math.abs(v);
    return v;
  }, 40000);
  assert.ok(Math.abs(m1) < 0.03, `mean ${m1}`);
  assert.ok(Math.abs(m2 - 2) < 0.08, `variance ${m2}`);
  assert.ok(Math.abs(abs / 40000 - 1) < 0.02, `E|v| ${abs / 40000}`);
});

test('choose is uniform and the float sampler\'s normal has variance 1', () => {
  const s = new noise.ExactSampler(noise.newStream(9n, noise.agentPath(3, 2)));
  const counts = new Array(6).fill(0);
  for (let i = 0; i < 60000; i++) counts[s.choose(6)]++;
  for (const c of counts) assert.ok(Math.abs(c - 10000) < 400, `counts ${counts}`);
  const c = noise.newStream(9n, noise.plantPath(5));
  const [m1, m2] = moments(() => noise.normFloat64(c), 40000);
  assert.ok(Math.abs(m1) < 0.02 && Math.abs(m2 - 1) < 0.03, `${m1} ${m2}`);
});

test('exact rounding: round_g of the exact value, deciding on the open interval', () => {
  // a sample 1 + 0.5 (digits 2^31): the interval (1.5, 1.5 + 2^-32) after one digit
  const one = () => ({ neg: false, k: 1, x: [0x80000000] });
  const s = new noise.ExactSampler(noise.newStream(1n, [1n]));
  // g = 1: the interval lies above the boundary 1.5, so round(v) = 2
  assert.strictEqual(s.round(0, [], [1], [one()]), 2);
  // minus: (-1.5 - 2^-32, -1.5) lies below -1.5: -2
  assert.strictEqual(s.round(0, [], [1], [{ neg: true, k: 1, x: [0x80000000] }]), -2);
  // an exact part: 0.25 + 1.5.. = 1.75..: 2; with g = 2^-1, 1.75.. -> 2 (boundary 1.75 excluded: v > 1.75)
  assert.strictEqual(s.round(0, [0.25, 1], [1], [one()]), 2);
  assert.strictEqual(s.round(-1, [0.25, 1], [1], [one()]), 2);
  // a boundary inside the interval draws digits until it is decided; the sample keeps them
  const x = { neg: false, k: 0, x: [0x7fffffff] }; // (0.5 - 2^-32, 0.5): contains no point of Z + 1/2
  assert.strictEqual(s.round(0, [], [1], [x]), 0);
  assert.strictEqual(x.x.length, 1);
  const y = { neg: false, k: 0, x: [0] }; // (0, 2^-32) with coefficient 2^32: (0, 1) holds 0.5
  const before = s.digits;
  const w = s.round(0, [], [2 ** 32], [y]);
  assert.ok(y.x.length >= 2 && s.digits - before === y.x.length - 1);
  assert.strictEqual(w, y.x[1] >= 0x80000000 ? 1 : 0);
  // a zero coefficient draws nothing: 3 * 0.5 + 2^32 y lies in (1.5, 2.5), round_1 = 2
  const z = { neg: false, k: 0, x: [0] };
  const n = s.digits;
  assert.strictEqual(s.round(0, [3, 0.5], [0, 2 ** 32], [z, y]), 2);
  assert.strictEqual(z.x.length, 1);
  assert.strictEqual(s.digits, n);
});
