// The challenger's sealed x(0) (docs/protocol.md section 7) as plant.js opens it, against
// dpsim's own plant: vectors/sealed.json, written by `go run ./examples/js-plant/vectors/sealed`,
// holds x0 messages made by dpsim's launcher code (pkg/contract X0Message, nkeys curve keys made
// for the vectors), some altered on purpose, in both encodings, with the receiver's keys and what
// dpsim's plant makes of each: the x(0) it opens, bit for bit, or the reason it drops it.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');

const FILE = path.join(__dirname, '..', 'vectors', 'sealed.json');
const haveDeps = fs.existsSync(path.join(__dirname, '..', 'node_modules', 'tweetnacl'));

const bits = (x) => {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(x);
  return b.toString('hex');
};

// openCase is what plant.js makes of one case's message in one encoding: {x0} or {reason}.
function openCase(plant, c, data) {
  const m = plant.decodeMessage(data);
  const opener = c.seed && c.sender ? new plant.X0Opener(c.seed, c.sender) : null;
  try {
    return { x0: Array.from(plant.openX0(m, opener, c.self, c.id, c.nx), bits) };
  } catch (e) {
    if (!e.reason) throw e;
    return { reason: e.reason };
  }
}

test('sealed x(0): plant.js opens what dpsim\'s plant opens and drops what it drops, for the same reason', { skip: !haveDeps && 'no node_modules: npm ci in examples/js-plant' }, () => {
  const plant = require('../plant');
  const V = JSON.parse(fs.readFileSync(FILE, 'utf8'));
  let opened = 0;
  const reasons = new Set();
  for (const c of V.cases) {
    const want = c.reason ? { reason: c.reason } : { x0: c.x0 };
    assert.deepStrictEqual(openCase(plant, c, Buffer.from(c.json)), want, `${c.name} (json)`);
    assert.deepStrictEqual(openCase(plant, c, Buffer.from(c.binary, 'base64')), want, `${c.name} (binary)`);
    if (c.reason) reasons.add(c.reason);
    else opened++;
  }
  assert.ok(opened >= 3, `${opened} cases open`);
  assert.deepStrictEqual([...reasons].sort(), ['decode', 'dim', 'sealed']);
});

test('sealed x(0): one opener opens every box of its keys (the shared key computed once)', { skip: !haveDeps && 'no node_modules: npm ci in examples/js-plant' }, () => {
  const plant = require('../plant');
  const V = JSON.parse(fs.readFileSync(FILE, 'utf8'));
  const first = V.cases[0];
  const opener = new plant.X0Opener(first.seed, first.sender);
  for (const c of V.cases) {
    if (c.seed !== first.seed || c.sender !== first.sender || c.reason) continue;
    const x0 = plant.openX0(plant.decodeMessage(Buffer.from(c.json)), opener, c.self, c.id, c.nx);
    assert.deepStrictEqual(Array.from(x0, bits), c.x0, c.name);
  }
});
