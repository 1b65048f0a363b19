#!/usr/bin/env node
// The plant of a dpsim cloud-control run, in JavaScript: a drop-in for `dpsim plant`, written
// from docs/protocol.md. It takes the launcher's arguments and environment, speaks the
// role-process protocol over NATS (ctl.ready, ctl.episode(s), ctl.done, ctl.stop, ctl.result;
// the message encodings and checks of section 4), holds the true state x(t) - written only to
// its trace file, never published - and publishes yhat(t) with the noise of section 12: the
// streams keyed by SHA-256 of the run seed and path over ChaCha8 (chacha8rand.js), and either
// the exact secure samplers with exact rounding to the grid g, or the float sampler
// (noise.js). Its arithmetic is the Go plant's (pkg/sim Plant, pkg/dynamics Plant) with the same
// float64 operations in the same order, so a run with it has the Go plant's metrics and traces
// bit for bit for the same seed.
//
// Supported: lockstep runs without link faults or crashes, structured and i.i.d. noise (and
// none), Gaussian and Laplace, the secure and the float sampler, episodes in flight
// (ctl.episodes, the Dpsim-Episodes header), an explicit x(0) in ctl.episode's vals, the
// challenger's sealed x(0) on its private line (episode-x0, episodes-x0: dpsim audit --engine
// wire; section 7), json and binary encodings, --keep-episodes, TLS, credentials from the
// environment, the URL or --credentials. Refused with an error: realtime mode, link faults,
// partitions, crashes, --sign-keys, --resume, --scenario.
//
// The role-process plumbing (flags, messages, NATS, the coordination protocol, the files) is
// ../js-role/role.js, shared with the JavaScript cloud; this file is what only the plant does.
'use strict';

const role = require('../js-role/role');
const nats = require('nats');
const nkeys = require('nkeys.js');
const nacl = require('tweetnacl');
const noise = require('./noise');

const { InvalidError, Stopped, checkMatrix, decodeMessage, goFormatG, goJSONNumber, log, validate } = role;

const SELF = 'plant.0';
const LAUNCHER = 'launcher.0'; // the sender of the challenger's x0 messages
const MAX_QUEUED_X0 = role.MAX_INFLIGHT + 16; // private x(0)s that may wait: a whole group's, and more

const USAGE = `Usage: node plant.js --run ID --plan FILE [--nats-url URL] [--out DIR] [--timeout D] [--encoding json|binary] [--sampler secure|float] ...

The plant of a dpsim cloud-control run in JavaScript: the same flags, environment
($DPSIM_NATS_USER, $DPSIM_NATS_PASSWORD, $DPSIM_X0_SEED, $DPSIM_X0_SENDER, $NATS_URL), protocol and
files as 'dpsim plant'. It holds
the true state x(t), writes it only to its trace file, and publishes yhat(t) with dpsim's noise
drawn from the plan's seed as docs/protocol.md section 12 specifies: the same numbers bit for bit.
--sampler chooses the noise's sampler (default: the plan's privacy.sampler, secure when absent):
secure (exact samples, values rounded exactly to the grid g) or float (the textbook float64
samplers). Lockstep runs without link faults or crashes only; episodes in flight and the
challenger's sealed x(0) (dpsim audit --engine wire --role plant.0=...) supported. See README.md.
`;

// ---------------------------------------------------------------- the challenger's sealed x(0)

// Section 7 (pkg/contract x0.go, pkg/bus seal.go). The launcher publishes each private episode's
// x(0) on dpsim-challenger.<run>.x0 - outside dpsim.>, so the eavesdropper never hears it - as a
// message of kind "x0" from launcher.0 whose vals are one record per receiver,
// [id, n, w_1..w_k]: the receiver's id, the box's length n in bytes, and its bytes six per value
// (big-endian integers in [0, 2^48), the last padded with zeros). A box is nkeys's sealed box
// ("xkv1", a 24-byte nonce, a NaCl box: X25519, XSalsa20-Poly1305) from the launcher's curve key
// ($DPSIM_X0_SENDER) to this process's ($DPSIM_X0_SEED); it opens to the JSON
// {"run", "ep", "to", "x0"}. The keys are decoded by nkeys.js, the box opened by tweetnacl (the
// NaCl box nkeys.js calls, split as nacl.box.before + nacl.box.open.after so the X25519 shared
// key is computed once per process rather than once per episode).

const X0_WORD_BYTES = 6; // bytes of a box per value (48 bits: exact in a float64)
const MAX_X0_BOX = 1 << 16; // a box's longest length in bytes
const XKEY_VERSION = Buffer.from('xkv1'); // nkeys's sealed-box version prefix
const X0_NONCE_BYTES = 24;

// findX0Box returns the bytes of the box of receiver id in an x0 message's vals (contract
// findBox): an InvalidError (dim) for a malformed record or no box for id.
function findX0Box(vals, id) {
  for (let i = 0; i < vals.length;) {
    if (i + 2 > vals.length) throw new InvalidError('dim', 'x0: a truncated box record');
    const n = vals[i + 1];
    if (!(n >= 1 && n <= MAX_X0_BOX && Number.isInteger(n))) throw new InvalidError('dim', `x0: box length ${goFormatG(n)}`);
    const words = Math.ceil(n / X0_WORD_BYTES);
    if (i + 2 + words > vals.length) throw new InvalidError('dim', 'x0: a truncated box');
    if (vals[i] === id) {
      const box = Buffer.alloc(words * X0_WORD_BYTES);
      for (let k = 0; k < words; k++) {
        const w = vals[i + 2 + k];
        if (!(w >= 0 && w < 2 ** 48 && Number.isInteger(w))) throw new InvalidError('dim', `x0: box word ${goFormatG(w)}`);
        box.writeUIntBE(w, k * X0_WORD_BYTES, X0_WORD_BYTES);
      }
      return box.subarray(0, n);
    }
    i += 2 + words;
  }
  throw new InvalidError('dim', `x0: no box for id ${id}`);
}

// X0Opener opens this process's sealed boxes: the curve seed (an nkeys curve seed, "SX...") and
// the launcher's public curve key ("X..."), their X25519 shared key computed at the first box.
class X0Opener {
  constructor(seed, sender) {
    this.seed = seed;
    this.sender = sender;
    this.shared = null;
  }

  // key is the NaCl box's precomputed key (nacl.box.before): an unusable seed is an
  // InvalidError (decode), as dpsim's roles count it; a sender that is not a curve key, sealed.
  key() {
    if (this.shared) return this.shared;
    let kp;
    try {
      kp = nkeys.fromCurveSeed(Buffer.from(this.seed));
    } catch (e) {
      throw new InvalidError('decode', `curve seed: ${e.message}`);
    }
    let pub;
    try {
      pub = kp.decodePubCurveKey(this.sender);
    } catch (e) {
      throw new InvalidError('sealed', `sealed box does not open: not sealed to this process by the launcher, or altered (nkeys: not a valid sender public curve key: ${e.message})`);
    }
    this.shared = nacl.box.before(pub, kp.seed);
    return this.shared;
  }

  // open returns the plaintext of box (nkeys Open): an InvalidError (sealed) when it was not
  // sealed to this key by the sender, or was altered.
  open(box) {
    const shared = this.key();
    const fail = (why) => new InvalidError('sealed', `sealed box does not open: not sealed to this process by the launcher, or altered (${why})`);
    if (box.length <= XKEY_VERSION.length + X0_NONCE_BYTES) throw fail('nkeys: invalid encrypted data');
    if (!box.subarray(0, XKEY_VERSION.length).equals(XKEY_VERSION)) throw fail('nkeys: encrypted input is not from the expected version');
    const nonce = box.subarray(XKEY_VERSION.length, XKEY_VERSION.length + X0_NONCE_BYTES);
    const data = nacl.box.open.after(box.subarray(XKEY_VERSION.length + X0_NONCE_BYTES), nonce, shared);
    if (!data) throw fail('nkeys: could not decrypt input');
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }
}

// openX0 opens the box of this plant (self, id) in the x0 message m (contract.OpenX0 and the
// plant's check of its values): the plant's x(0), nx finite values. An InvalidError: sealed when
// there is no curve key, the box does not open, or it was sealed for another run, episode or
// process; dim when the message is malformed, holds no box for id, or the values are not nx
// finite numbers.
function openX0(m, opener, self, id, nx) {
  if (!opener) throw new InvalidError('sealed', 'sealed x0: no curve key ($DPSIM_X0_SEED, $DPSIM_X0_SENDER or --credentials) to open it with');
  const data = opener.open(findX0Box(m.vals, id));
  let s;
  try {
    s = JSON.parse(data.toString('utf8'));
  } catch (e) {
    throw new InvalidError('sealed', `sealed x0: ${e.message}`);
  }
  if (s === null || typeof s !== 'object' || Array.isArray(s)) throw new InvalidError('sealed', 'sealed x0: not a JSON object');
  const run = s.run === undefined ? '' : s.run;
  const ep = s.ep === undefined ? 0 : s.ep;
  const to = s.to === undefined ? '' : s.to;
  if (typeof run !== 'string' || !Number.isInteger(ep) || typeof to !== 'string') throw new InvalidError('sealed', 'sealed x0: run, ep or to of the wrong type');
  if (run !== m.run || ep !== m.ep || to !== self) {
    throw new InvalidError('sealed', `sealed x0 of run ${JSON.stringify(run)} episode ${ep} for ${to}, in a message of run ${JSON.stringify(m.run)} episode ${m.ep} to ${self}`);
  }
  const x0 = s.x0 === undefined || s.x0 === null ? [] : s.x0;
  if (!Array.isArray(x0) || !x0.every((v) => typeof v === 'number')) throw new InvalidError('sealed', 'sealed x0: x0 is not a list of numbers');
  if (x0.length === 0 || x0.length !== nx || !x0.every(Number.isFinite)) {
    throw new InvalidError('dim', `explicit x0: plant x0 needs ${nx} finite values, got ${x0.length}`);
  }
  return Float64Array.from(x0);
}

// ---------------------------------------------------------------- the plan file

const NUMBER = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;

// parseJSON is JSON.parse but for the values of the keys named "seed", kept exactly as BigInt
// (a uint64 seed may exceed 2^53, where a double would round it: 3.1 says parse it exactly).
function parseJSON(text) {
  let i = 0;
  const fail = (what) => {
    throw new SyntaxError(`plan file: ${what} at offset ${i}`);
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const value = (key) => {
    ws();
    const ch = text[i];
    if (ch === '{') {
      i++;
      const o = {};
      ws();
      if (text[i] === '}') {
        i++;
        return o;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const k = string();
        ws();
        if (text[i++] !== ':') fail('expected ":"');
        o[k] = value(k);
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i++] !== '}') fail('expected "," or "}"');
        return o;
      }
    }
    if (ch === '[') {
      i++;
      const a = [];
      ws();
      if (text[i] === ']') {
        i++;
        return a;
      }
      for (;;) {
        a.push(value(undefined));
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i++] !== ']') fail('expected "," or "]"');
        return a;
      }
    }
    if (ch === '"') return string();
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m) {
      i += m[0].length;
      if (key === 'seed' && !m[2] && !m[3]) return BigInt(m[0]);
      return Number(m[0]);
    }
    for (const [lit, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(lit, i)) {
        i += lit.length;
        return v;
      }
    }
    return fail('unexpected character');
  };
  const string = () => {
    STRING.lastIndex = i;
    const m = STRING.exec(text);
    if (!m) fail('bad string');
    i += m[0].length;
    return JSON.parse(m[0]);
  };
  const v = value(undefined);
  ws();
  if (i !== text.length) fail('text after the value');
  return v;
}

// readPlan reads what the plant needs of the plan file the launcher wrote for it (3.1, format
// dpsim-plan/2): every read of the file's layout is here.
function readPlan(bytes) {
  const f = parseJSON(bytes.toString('utf8'));
  if (f.format !== 'dpsim-plan/2') throw new Error(`plan file: format ${JSON.stringify(f.format)}, want "dpsim-plan/2"`);
  const s = f.scenario;
  if (!s) throw new Error('plan file: no scenario');
  if (s.kind !== 'cloud-control') throw new Error(`plan file: scenario kind ${JSON.stringify(s.kind)}: the plant runs cloud-control scenarios only`);
  const plant = s.plant;
  if (!plant) throw new Error('plan file: a cloud-control plan without plant');
  const pr = s.privacy || {};
  const model = pr.model || null;
  const tr = s.transport || {};
  const faults = s.faults || {};
  const seed = typeof s.seed === 'bigint' ? s.seed : BigInt(s.seed || 0);
  return {
    steps: s.steps,
    seed,
    A: plant.a, B: plant.b || [], C: plant.c,
    x0: f.plant_x0 || null, // the plant's own x(0) (absent: the origin)
    noise: {
      kind: pr.noise || 'structured',
      mechanism: pr.mechanism || 'gaussian',
      sampler: pr.sampler || 'secure',
      scale: f.scale || 0,
      S: f.noise_matrix || null, // structured: S (nz x r)
      Am: model ? model.a : plant.a, // the private model (absent: the plant itself)
      Cm: model ? model.c : plant.c,
      embedding: f.embedding || (model ? null : plant.a.map((_, i) => i)),
      granularity: f.granularity || 0,
    },
    missing: (faults.missing && faults.missing.plant) || 'hold',
    mode: tr.mode || 'lockstep',
    faults: {
      links: faults.links || [], crashes: faults.crashes || [], partitions: faults.partitions || [],
      serverRestarts: faults.server_restarts || [], proxies: faults.proxies || [],
    },
  };
}

// ---------------------------------------------------------------- the arithmetic

// dot is sum_k row[k] v[k] from 0.0, left to right, each product and sum rounded to float64
// (JavaScript has no fused multiply-add: a * b + c rounds twice, as Go's loops do on amd64).
function dot(m, off, v, n) {
  let acc = 0;
  for (let k = 0; k < n; k++) acc += m[off + k] * v[k];
  return acc;
}

// Model is the plant's constant part: dimensions, A, B, C row-major, x(0), the noise design.
class Model {
  constructor(p, samplerFlag) {
    this.T = p.steps;
    if (!(Number.isInteger(this.T) && this.T >= 1)) throw new Error(`plan file: steps ${p.steps} < 1`);
    this.nx = p.A.length;
    this.nu = p.B.length > 0 && p.B[0] ? p.B[0].length : 0;
    this.ny = p.C.length;
    const { nx, nu, ny } = this;
    this.a = checkMatrix('A', p.A, nx, nx);
    this.b = nu > 0 ? checkMatrix('B', p.B, nx, nu) : [];
    this.c = checkMatrix('C', p.C, ny, nx);
    this.x0 = new Float64Array(nx);
    if (p.x0) {
      if (p.x0.length !== nx || !p.x0.every(Number.isFinite)) throw new Error(`plan file: plant_x0 needs ${nx} finite values`);
      this.x0.set(p.x0);
    }
    this.seed = p.seed;
    this.missing = p.missing;
    if (this.missing !== 'hold' && this.missing !== 'zero') throw new Error(`plan file: faults.missing.plant ${JSON.stringify(this.missing)} (want hold or zero)`);
    const n = p.noise;
    this.kind = n.kind;
    this.mechanism = n.mechanism;
    this.sampler = samplerFlag || n.sampler;
    if (this.sampler !== 'secure' && this.sampler !== 'float') throw new Error(`--sampler ${JSON.stringify(this.sampler)}: want secure or float`);
    if (this.mechanism !== 'gaussian' && this.mechanism !== 'laplace') throw new Error(`plan file: privacy.mechanism ${JSON.stringify(this.mechanism)}: want gaussian or laplace`);
    if (this.kind !== 'none') {
      if (!n.Am || !n.Cm) throw new Error('plan file: no private model');
      this.nz = n.Am.length;
      this.am = checkMatrix('the private model A_m', n.Am, this.nz, this.nz);
      this.cm = checkMatrix('the private model C_m', n.Cm, ny, this.nz);
    }
    switch (this.kind) {
      case 'structured':
        if (!n.S || !n.S[0]) throw new Error('plan file: structured noise needs noise_matrix');
        this.r = n.S[0].length;
        this.s = checkMatrix('noise_matrix', n.S, this.nz, this.r);
        break;
      case 'iid-calibrated':
      case 'iid-naive':
        if (!(n.scale >= 0) || !Number.isFinite(n.scale)) throw new Error(`plan file: scale ${n.scale}`);
        this.scale = n.scale;
        break;
      case 'none':
        break;
      default:
        throw new Error(`plan file: privacy.noise ${JSON.stringify(this.kind)}: want structured, iid-calibrated, iid-naive or none`);
    }
    // The secure sampler applies when there is noise to draw (12.3: g from a scale > 0);
    // otherwise the plant publishes C x(t) + gamma(t) as the float sampler does (gamma = 0 for
    // none, scale 0 times the draws for a zero scale).
    this.secure = this.sampler === 'secure' && this.kind !== 'none' && this.smallestScale() > 0;
    if (this.secure) {
      // g = 2^G, G = floor(log2 s_min) - 20 (12.3)
      this.G = n.granularity > 0 ? noise.granularityExp(n.granularity) + 20 : noise.granularityExp(this.smallestScale());
      // the private model's coordinates q_1 < ... < q_nz in x (12.4)
      this.q = n.embedding || embedding(this);
      if (!Array.isArray(this.q) || this.q.length !== this.nz) throw new Error(`plan file: embedding ${JSON.stringify(this.q)}: want ${this.nz} coordinates`);
    }
  }

  // smallestScale is s_min of 12.3: the smallest row norm of S (structured; a row's norm is
  // hypot folded over its entries, as pkg/plan computes it) or scale (i.i.d.).
  smallestScale() {
    if (this.kind === 'none') return 0;
    if (this.kind !== 'structured') return this.scale;
    let min = Infinity;
    for (let k = 0; k < this.nz; k++) {
      let norm = 0;
      for (let j = 0; j < this.r; j++) norm = Math.hypot(norm, this.s[k * this.r + j]);
      min = Math.min(min, norm);
    }
    return min === Infinity ? 0 : min;
  }
}

// embedding finds the plant's state coordinates q_1 < ... < q_nz that hold the private model's
// state: with Q the selection (Q e_k = e_{q_k}), A Q = Q A_m and C Q = C_m exactly, so that
// C A^t x(0) = C_m A_m^t x(0)[q] + C A^t x_np(0), x_np(0) being x(0) with those coordinates
// set to 0. The first selection in lexicographic order is taken (pkg/plan does the same).
function embedding(m) {
  const { nx, ny, nz, a, c, am, cm } = m;
  if (nz > nx) throw new Error(`the private model has ${nz} states, the plant ${nx}`);
  const embeds = (q) => {
    const row = new Array(nx).fill(-1); // plant row -> model row
    q.forEach((col, k) => { row[col] = k; });
    for (let k = 0; k < nz; k++) {
      const col = q[k];
      for (let i = 0; i < nx; i++) {
        const want = row[i] >= 0 ? am[row[i] * nz + k] : 0;
        if (a[i * nx + col] !== want) return false;
      }
      for (let i = 0; i < ny; i++) if (c[i * nx + col] !== cm[i * nz + k]) return false;
    }
    return true;
  };
  const MAX_TRIES = 1 << 16;
  const q = new Array(nz);
  let tries = 0;
  const search = (k, from) => {
    if (k === nz) {
      tries++;
      return embeds(q);
    }
    for (let col = from; col <= nx - (nz - k) && tries < MAX_TRIES; col++) {
      q[k] = col;
      if (search(k + 1, col + 1)) return true;
    }
    return false;
  };
  if (!search(0, 0)) {
    throw new Error('privacy.sampler secure: the private model (privacy.model A_m, C_m) is not a set of the plant\'s state coordinates (no selection Q with A Q = Q A_m and C Q = C_m); use --sampler float');
  }
  return q.slice();
}

// stepState is dynamics.Plant.Step: x <- A x + B u, each row summed from 0, A's terms then B's,
// left to right (xn is scratch).
function stepState(m, x, u, xn) {
  const { nx, nu, a, b } = m;
  for (let i = 0; i < nx; i++) {
    let acc = 0;
    for (let j = 0; j < nx; j++) acc += a[i * nx + j] * x[j];
    for (let j = 0; j < nu; j++) acc += b[i * nu + j] * u[j];
    xn[i] = acc;
  }
  x.set(xn);
}

// FloatNoise is the float sampler (12.2), pkg/noise's streams: gamma(t) = C_m A_m^t S eta
// (structured; z(0) = S eta, gamma = C_m z, z <- A_m z), scale xi(t) (i.i.d.) or 0 (none); the
// plant publishes C x(t) + gamma(t).
class FloatNoise {
  constructor(m) {
    this.m = m;
    if (m.kind === 'structured') {
      this.eta = new Float64Array(m.r);
      this.z = new Float64Array(m.nz);
      this.w = new Float64Array(m.nz);
    }
  }

  draw() {
    return this.m.mechanism === 'laplace' ? noise.laplaceFloat(this.stream) : noise.normFloat64(this.stream);
  }

  begin(ep) {
    const m = this.m;
    this.stream = noise.newStream(m.seed, noise.plantPath(ep));
    if (m.kind !== 'structured') return;
    for (let k = 0; k < m.r; k++) this.eta[k] = this.draw();
    for (let i = 0; i < m.nz; i++) this.z[i] = dot(m.s, i * m.r, this.eta, m.r);
  }

  // output writes yhat(t) = C x(t) + gamma(t) and moves the stream to t + 1.
  output(x, yhat) {
    const m = this.m;
    for (let i = 0; i < m.ny; i++) yhat[i] = dot(m.c, i * m.nx, x, m.nx);
    switch (m.kind) {
      case 'structured': {
        for (let i = 0; i < m.ny; i++) yhat[i] += dot(m.cm, i * m.nz, this.z, m.nz);
        for (let i = 0; i < m.nz; i++) this.w[i] = dot(m.am, i * m.nz, this.z, m.nz);
        [this.z, this.w] = [this.w, this.z];
        break;
      }
      case 'none':
        for (let i = 0; i < m.ny; i++) yhat[i] += 0;
        break;
      default: // i.i.d.: scale N(0,1), or noise.SampleLaplace(r, scale)
        for (let i = 0; i < m.ny; i++) {
          let g;
          if (m.mechanism === 'laplace') {
            let u = this.stream.float64();
            while (u === 0) u = this.stream.float64();
            g = u < 0.5 ? m.scale * noise.goLog(2 * u) : -m.scale * noise.goLog(2 * (1 - u));
          } else {
            g = m.scale * noise.normFloat64(this.stream);
          }
          yhat[i] += g;
        }
    }
  }

  apply() {}
}

// SecureNoise is the secure plant of 12.4: the private model's coordinates q of x(0) are
// released only rounded exactly to the grid g together with their noise, w = round_g(x(0)[q] +
// S eta) (structured, once per episode) or round_g(O_t x(0)[q] + scale xi(t)) (i.i.d., every
// step); the rest of the output comes from x_np, the state started from x(0) with the q
// coordinates zeroed, under the plant's own dynamics and inputs.
class SecureNoise {
  constructor(m) {
    this.m = m;
    this.xnp = new Float64Array(m.nx);
    this.xn = new Float64Array(m.nx);
    this.z = new Float64Array(m.nz);
    this.w = new Float64Array(m.nz);
    this.x0q = new Float64Array(m.nz);
    if (m.kind !== 'structured') this.o = new Float64Array(m.ny * m.nz); // O_t
    this.identity = m.am.every((v, k) => v === (Math.floor(k / m.nz) === k % m.nz ? 1 : 0));
  }

  begin(ep, x0) {
    const m = this.m;
    this.xnp.set(x0);
    for (let k = 0; k < m.nz; k++) {
      this.x0q[k] = x0[m.q[k]];
      this.xnp[m.q[k]] = 0;
    }
    this.stream = noise.newStream(m.seed, noise.plantPath(ep));
    this.sampler = new noise.ExactSampler(this.stream);
    if (m.kind === 'structured') {
      const eta = [];
      for (let j = 0; j < m.r; j++) eta.push(this.sampler.sample(m.mechanism));
      this.eta = eta;
      for (let k = 0; k < m.nz; k++) {
        const coef = Array.from(m.s.slice(k * m.r, (k + 1) * m.r));
        this.z[k] = this.sampler.round(m.G, [this.x0q[k], 1], coef, eta);
      }
    } else {
      this.o.set(m.cm); // O_0 = C_m
    }
  }

  // output writes yhat(t): b_i + a_i with a = C_m z (structured), or b_i + w_i with w_i the
  // step's rounded i.i.d. value; b = C x_np.
  output(x, yhat) {
    const m = this.m;
    if (m.kind === 'structured') {
      for (let i = 0; i < m.ny; i++) {
        const a = dot(m.cm, i * m.nz, this.z, m.nz);
        const b = dot(m.c, i * m.nx, this.xnp, m.nx);
        yhat[i] = b + a;
      }
      return;
    }
    for (let i = 0; i < m.ny; i++) {
      const xi = this.sampler.sample(m.mechanism);
      const ab = [];
      for (let k = 0; k < m.nz; k++) ab.push(this.o[i * m.nz + k], this.x0q[k]);
      const w = this.sampler.round(m.G, ab, [m.scale], [xi]);
      const b = dot(m.c, i * m.nx, this.xnp, m.nx);
      yhat[i] = b + w;
    }
  }

  // apply moves the published part on with u(t): x_np <- A x_np + B u, z <- A_m z (structured),
  // O <- O A_m (i.i.d.).
  apply(u) {
    const m = this.m;
    stepState(m, this.xnp, u, this.xn);
    if (this.identity) return; // A_m = I: z and O stay (as dpsim skips them: a -0 stays -0)
    if (m.kind === 'structured') {
      for (let i = 0; i < m.nz; i++) this.w[i] = dot(m.am, i * m.nz, this.z, m.nz);
      [this.z, this.w] = [this.w, this.z];
    } else {
      const o = this.o, next = new Float64Array(o.length), nz = m.nz;
      for (let i = 0; i < m.ny; i++) {
        for (let k = 0; k < nz; k++) {
          let acc = 0;
          for (let l = 0; l < nz; l++) acc += o[i * nz + l] * m.am[l * nz + k];
          next[i * nz + k] = acc;
        }
      }
      this.o = next;
    }
  }
}

// Core is one episode's plant (pkg/sim PlantCore over its inputs, role.Core: the deliveries of
// cloud.0 filed by step, duplicates, stale copies, the receive-side link counters): it releases
// yhat(t) at the start of step t and completes the step with u(t) - or, missing at the
// deadline, with faults.missing.plant: hold (the newest u received, by step; zero before the
// first) or zero - then applies x(t+1) = A x(t) + B u(t).
class Core extends role.Core {
  constructor(model, out) {
    super(model, out, model.nu); // out: (ep, step, yhat) of each yhat(t) released
    const { nx, nu, ny } = model;
    this.x = new Float64Array(nx);
    this.xn = new Float64Array(nx);
    this.yhat = new Float64Array(ny);
    this.u = new Float64Array(nu);
    this.noise = model.secure ? new SecureNoise(model) : new FloatNoise(model);
  }

  // begin starts episode ep from x0 (null: the plan's), reseeds the noise and releases yhat(0).
  begin(ep, x0) {
    super.begin(ep);
    this.x.set(x0 || this.m.x0);
    this.u.fill(0);
    this.noise.begin(ep, this.x);
    this.emit();
  }

  // emit records x(t) and releases yhat(t).
  emit() {
    this.noise.output(this.x, this.yhat);
    this.records.push(`{"episode":${this.ep},"step":${this.cur},"x":[${Array.from(this.x, goJSONNumber).join(',')}],"yhat":[${Array.from(this.yhat, goJSONNumber).join(',')}]}\n`);
    this.out(this.ep, this.cur, Array.from(this.yhat));
  }

  // complete applies u(t) (received, or the missing-input rule's), x(t+1) = A x(t) + B u(t),
  // and releases yhat(t+1) - or, after u(T-1), records x(T) and is done.
  complete() {
    const t = this.cur;
    const { nu } = this.m;
    if (this.have) {
      for (let i = 0; i < nu; i++) this.u[i] = this.vals[i];
    } else if (this.m.missing === 'zero') {
      this.u.fill(0);
    } else if (this.nstep >= 0) { // hold the newest u received; u keeps its value before the first
      for (let i = 0; i < nu; i++) this.u[i] = this.newest[i];
    }
    stepState(this.m, this.x, this.u, this.xn);
    this.noise.apply(this.u);
    if (t + 1 === this.m.T) {
      this.records.push(`{"episode":${this.ep},"step":${this.m.T},"x":[${Array.from(this.x, goJSONNumber).join(',')}]}\n`);
      return true;
    }
    this.cur = t + 1; // emit writes the record of step t+1 (finish moves cur on as well)
    this.emit();
    this.cur = t;
    return false;
  }
}

// ---------------------------------------------------------------- the process

// PlantProcess is role.js's process with the plant's own part: the challenger's sealed x(0)s
// (section 7) and an explicit x(0) in ctl.episode's vals.
class PlantProcess extends role.RoleProcess {
  constructor(cfg, spec) {
    super(cfg, spec);
    this.x0q = []; // the challenger's opened x(0)s, {ep, x0}, in arrival order
    this.opener = null; // opens the sealed x(0): null without a curve key
  }

  // useCredentials takes the curve key of the sealed x(0): the environment's, or the
  // --credentials file's, which replaces it, sender and all.
  useCredentials(c) {
    let x0Seed = process.env.DPSIM_X0_SEED || '', x0Sender = process.env.DPSIM_X0_SENDER || '';
    if (c && c.DPSIM_X0_SEED) {
      x0Seed = c.DPSIM_X0_SEED;
      x0Sender = c.DPSIM_X0_SENDER || '';
    }
    if (x0Seed && x0Sender) this.opener = new X0Opener(x0Seed, x0Sender);
  }

  // setup subscribes what every role does (role.js: the cloud's u, ctl.episode, ctl.stop) and
  // the challenger's private line (section 7: the plant takes explicit x(0)s).
  setup() {
    super.setup();
    this.nc.subscribe(`dpsim-challenger.${this.cfg.run}.x0`, { callback: (err, msg) => { if (!err) this.onX0(msg); } });
  }

  // onX0 opens this plant's box of a challenger's x0 message and queues its x(0) for the
  // episode that announces it; what does not open or fit is counted and dropped (section 7).
  onX0(msg) {
    this.ctl.received++;
    let m, x0;
    try {
      m = decodeMessage(msg.data);
      validate(m, { run: this.cfg.run, episode: -1, kind: 'x0', sender: LAUNCHER }, 1);
      x0 = openX0(m, this.opener, SELF, this.cfg.id, this.model.nx);
    } catch (e) {
      this.ctlInvalid(msg.subject, e);
      return;
    }
    if (this.x0q.length >= MAX_QUEUED_X0) {
      this.ctlInvalid(msg.subject, new InvalidError('ahead', 'too many x0 messages queued'));
      return;
    }
    this.x0q.push({ ep: m.ep, x0 });
    this.wake();
  }

  // awaitX0 returns the private x(0) of episode ep, waiting at most max(--timeout, 10 s): one
  // of another episode met meanwhile is stale and dropped, and a private episode without its
  // x(0) is an error, never a silent default.
  async awaitX0(ep) {
    const wait = Math.max(this.cfg.timeout, 10000);
    const deadline = Date.now() + wait;
    for (;;) {
      while (this.x0q.length > 0) {
        const q = this.x0q.shift();
        if (q.ep === ep) return q.x0;
      }
      if (this.stopped) throw new Stopped();
      if (Date.now() >= deadline) throw new Error(`episode ${ep} announced a private x0 that did not arrive within ${wait}ms`);
      await this.waitUntil(deadline);
    }
  }

  // episodeStart reads the x(0) of a ctl.episode: its vals are empty, or an explicit x(0) (a
  // hand-driven run); a group's x(0)s come sealed, one per episode, or are the plan's.
  episodeStart(st, m, subject) {
    st.x0 = null;
    if (m.kind === 'episode' || m.kind === 'episode-x0') {
      if (m.vals.length !== 0 && m.vals.length !== this.model.nx) {
        this.ctlInvalid(subject, new InvalidError('dim', `ctl.episode carries ${m.vals.length} values: an explicit x(0) has nx = ${this.model.nx}`));
        return null;
      }
      if (m.vals.length > 0) st.x0 = Float64Array.from(m.vals);
    }
    return st;
  }

  // playGroup runs a group (role.js); a private group from the challenger's x(0)s, awaited
  // first, in episode order.
  async playGroup(st) {
    let x0s = null;
    if (st.private) {
      x0s = [];
      for (let k = 0; k < st.count; k++) x0s.push(await this.awaitX0(st.ep + k));
    }
    await super.playGroup(st, x0s);
  }
}

// ROLE is the plant to role.js: it hears cloud.0's u and publishes yhat.
const ROLE = {
  nats, role: 'plant', self: SELF, peer: 'cloud.0', hear: 'u', width: (m) => m.nu, send: 'yhat',
  usage: USAGE, flags: ['sampler'], readPlan, Core, Process: PlantProcess,
  model: (plan, cfg) => {
    const m = new Model(plan, cfg.sampler);
    log('info', 'noise', { kind: m.kind, mechanism: m.mechanism, sampler: m.sampler, granularity_exp: m.G });
    return m;
  },
};

if (require.main === module) {
  role.main(ROLE);
} else {
  module.exports = { Core, Model, readPlan, parseJSON, goFormatG, goJSONNumber, decodeMessage, openX0, X0Opener }; // for checks of the arithmetic and the sealed x(0)
}
