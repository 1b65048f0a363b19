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
'use strict';

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { connect, headers: natsHeaders } = require('nats');
const nkeys = require('nkeys.js');
const nacl = require('tweetnacl');
const noise = require('./noise');

const VERSION = 1; // bus schema version
const BINARY_MAGIC = 0xd5;
const MAX_EPISODES = 1 << 12; // the most episodes one message may carry (Dpsim-Episodes)
const MAX_INFLIGHT = 1024; // the most episodes ctl.episodes may start
const READY_REPEAT_MS = 500; // ctl.ready is repeated this often until the first episode
const SELF = 'plant.0';
const CLOUD = 'cloud.0';
const SUBSCRIBERS = [CLOUD, 'eavesdropper.0']; // who hears plant.0.yhat: its outgoing links
const LAUNCHER = 'launcher.0'; // the sender of the challenger's x0 messages
const MAX_QUEUED_X0 = MAX_INFLIGHT + 16; // private x(0)s that may wait: a whole group's, and more

class Stopped extends Error {}
class UsageError extends Error {}

// ---------------------------------------------------------------- flags and durations

// parseDuration parses a Go duration ("10s", "1m30s", "250ms", "2h0m0.5s"): milliseconds.
function parseDuration(s) {
  const units = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1e3, m: 60e3, h: 3600e3 };
  let str = String(s).trim();
  let sign = 1;
  if (str[0] === '-' || str[0] === '+') {
    if (str[0] === '-') sign = -1;
    str = str.slice(1);
  }
  if (str === '0') return 0;
  const re = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let total = 0;
  let pos = 0;
  while (pos < str.length) {
    re.lastIndex = pos;
    const m = re.exec(str);
    if (!m) throw new UsageError(`invalid duration ${JSON.stringify(s)}`);
    total += parseFloat(m[1]) * units[m[2]];
    pos = re.lastIndex;
  }
  if (pos === 0) throw new UsageError(`invalid duration ${JSON.stringify(s)}`);
  return sign * total;
}

// parseArgs reads the flags `dpsim plant` takes (Go's flag syntax: -f, --f, f=v or f v).
function parseArgs(argv) {
  const cfg = {
    natsURL: '', run: '', plan: '', scenario: '', point: 0, out: '.', mode: '', timeout: 10e3,
    idleTimeout: 120e3, logLevel: 'info', encoding: 'json', parentPID: 0, faultSeed: '', id: 0,
    period: 0, keepEpisodes: -1, signKeys: '', tlsCA: '', tlsCert: '', tlsKey: '', credentials: '',
    connectRetry: 20e3, resume: false, sampler: '',
  };
  const take = {
    'nats-url': (v) => { cfg.natsURL = v; },
    run: (v) => { cfg.run = v; },
    plan: (v) => { cfg.plan = v; },
    scenario: (v) => { cfg.scenario = v; },
    point: (v) => { cfg.point = intFlag('point', v); },
    out: (v) => { cfg.out = v; },
    mode: (v) => { cfg.mode = v; },
    timeout: (v) => { cfg.timeout = parseDuration(v); },
    'idle-timeout': (v) => { cfg.idleTimeout = parseDuration(v); },
    'log-level': (v) => { cfg.logLevel = v; },
    encoding: (v) => { cfg.encoding = v; },
    'parent-pid': (v) => { cfg.parentPID = intFlag('parent-pid', v); },
    'fault-seed': (v) => { cfg.faultSeed = v; },
    id: (v) => { cfg.id = intFlag('id', v); },
    period: (v) => { cfg.period = parseDuration(v); },
    'keep-episodes': (v) => { cfg.keepEpisodes = intFlag('keep-episodes', v); },
    'sign-keys': (v) => { cfg.signKeys = v; },
    'tls-ca': (v) => { cfg.tlsCA = v; },
    'tls-cert': (v) => { cfg.tlsCert = v; },
    'tls-key': (v) => { cfg.tlsKey = v; },
    credentials: (v) => { cfg.credentials = v; },
    'connect-retry': (v) => { cfg.connectRetry = parseDuration(v); },
    sampler: (v) => { cfg.sampler = v; },
  };
  const bools = { resume: (v) => { cfg.resume = v; } };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help' || a === '-help') {
      process.stdout.write(USAGE);
      process.exit(0);
    }
    if (!a.startsWith('-')) throw new UsageError(`unexpected argument ${JSON.stringify(a)} (flags only; see --help)`);
    let name = a.replace(/^--?/, '');
    let val;
    const eq = name.indexOf('=');
    if (eq >= 0) {
      val = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    if (bools[name]) {
      bools[name](val === undefined ? true : val === 'true' || val === '1');
      continue;
    }
    if (!take[name]) throw new UsageError(`flag provided but not defined: -${name}`);
    if (val === undefined) {
      if (i + 1 >= argv.length) throw new UsageError(`flag needs an argument: -${name}`);
      val = argv[++i];
    }
    take[name](val);
  }
  return cfg;
}

function intFlag(name, v) {
  if (!/^-?\d+$/.test(v)) throw new UsageError(`invalid value ${JSON.stringify(v)} for flag -${name}`);
  return parseInt(v, 10);
}

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

// ---------------------------------------------------------------- log (zerolog-like JSON lines)

const LEVELS = { trace: -1, debug: 0, info: 1, warn: 2, error: 3 };
let logLevel = LEVELS.info;
let logCtx = {};
function log(level, message, fields) {
  if (LEVELS[level] < logLevel) return;
  const line = { level, ...logCtx, ...fields, time: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), message };
  process.stderr.write(JSON.stringify(line) + '\n');
}

// ---------------------------------------------------------------- number formats

// goJSONNumber formats a float64 as Go's encoding/json does (the trace files): the ES6 number
// format, but -0 stays "-0".
function goJSONNumber(x) {
  if (Object.is(x, -0)) return '-0';
  return String(x);
}

// goFormatG is strconv.FormatFloat(x, 'g', -1, 64): how Go writes a value on the wire (bus
// EncodeJSON). The shortest round-trip digits are JavaScript's too; only the layout differs
// (%e below 1e-4 and from 1e21 ... in fact from exponent 6 on: 1e+06).
function goFormatG(x) {
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const neg = x < 0;
  const e = Math.abs(x).toExponential(); // shortest digits: "d.ddde+X"
  const [mant, expStr] = e.split('e');
  const digits = mant.replace('.', '');
  const exp = parseInt(expStr, 10);
  let s;
  if (exp < -4 || exp >= 6) {
    const ex = Math.abs(exp);
    s = digits[0] + (digits.length > 1 ? '.' + digits.slice(1) : '') + 'e' + (exp < 0 ? '-' : '+') + (ex < 10 ? '0' : '') + ex;
  } else if (exp < 0) {
    s = '0.' + '0'.repeat(-exp - 1) + digits;
  } else if (digits.length <= exp + 1) {
    s = digits + '0'.repeat(exp + 1 - digits.length);
  } else {
    s = digits.slice(0, exp + 1) + '.' + digits.slice(exp + 1);
  }
  return neg ? '-' + s : s;
}

// ---------------------------------------------------------------- messages (pkg/bus)

function nowNanos() {
  return BigInt(Date.now()) * 1000000n;
}

// encodeMessage is bus.Encode: JSON (EncodeJSON) or the binary layout (EncodeBinary).
function encodeMessage(m, encoding) {
  if (encoding === 'binary') {
    const run = Buffer.from(m.run), from = Buffer.from(m.from), kind = Buffer.from(m.kind || '');
    const n = m.vals.length;
    const b = Buffer.alloc(25 + run.length + from.length + kind.length + 8 * n);
    b[0] = BINARY_MAGIC;
    b[1] = m.v;
    b[2] = run.length;
    b[3] = from.length;
    b[4] = kind.length;
    b.writeInt32LE(m.ep, 5);
    b.writeInt32LE(m.step, 9);
    b.writeBigInt64LE(BigInt(m.sent), 13);
    b.writeUInt32LE(n, 21);
    let p = 25;
    run.copy(b, p); p += run.length;
    from.copy(b, p); p += from.length;
    kind.copy(b, p); p += kind.length;
    for (const v of m.vals) {
      b.writeDoubleLE(v, p);
      p += 8;
    }
    return b;
  }
  for (let i = 0; i < m.vals.length; i++) {
    if (!Number.isFinite(m.vals[i])) throw new Error(`cannot encode message: value ${i} is ${m.vals[i]} (JSON carries finite numbers only)`);
  }
  let s = `{"v":${m.v},"run":${JSON.stringify(m.run)},"ep":${m.ep},"step":${m.step},"from":${JSON.stringify(m.from)},"sent":${m.sent}`;
  if (m.kind) s += `,"kind":${JSON.stringify(m.kind)}`;
  s += ',"vals":[' + m.vals.map(goFormatG).join(',') + ']}';
  return Buffer.from(s);
}

class InvalidError extends Error {
  constructor(reason, detail) {
    super(`invalid message (${reason}): ${detail}`);
    this.reason = reason;
  }
}

// decodeMessage is bus.Decode: the encoding told by the first byte.
function decodeMessage(data) {
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (b.length > 0 && b[0] === BINARY_MAGIC) {
    if (b.length < 25) throw new InvalidError('decode', `binary message of ${b.length} bytes is shorter than its 25-byte header`);
    if (b[1] !== VERSION) throw new InvalidError('version', `binary schema version ${b[1]}, want ${VERSION}`);
    const lr = b[2], lf = b[3], lk = b[4];
    const n = b.readUInt32LE(21);
    const want = 25 + lr + lf + lk + 8 * n;
    if (b.length !== want) throw new InvalidError('decode', `binary message is ${b.length} bytes, header announces ${want}`);
    let p = 25;
    const m = { v: b[1], ep: b.readInt32LE(5), step: b.readInt32LE(9), sent: b.readBigInt64LE(13) };
    m.run = b.toString('utf8', p, p + lr); p += lr;
    m.from = b.toString('utf8', p, p + lf); p += lf;
    m.kind = b.toString('utf8', p, p + lk); p += lk;
    m.vals = new Array(n);
    for (let i = 0; i < n; i++, p += 8) m.vals[i] = b.readDoubleLE(p);
    return m;
  }
  let o;
  try {
    o = JSON.parse(b.toString('utf8'));
  } catch (e) {
    throw new InvalidError('decode', e.message);
  }
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new InvalidError('decode', 'not a JSON object');
  const int = (k) => {
    const v = o[k];
    if (v === undefined || v === null) return 0;
    if (!Number.isInteger(v)) throw new InvalidError('decode', `field ${JSON.stringify(k)} must be an integer`);
    return v;
  };
  const str = (k) => {
    const v = o[k];
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') throw new InvalidError('decode', `field ${JSON.stringify(k)} must be a string`);
    return v;
  };
  const vals = o.vals === undefined || o.vals === null ? [] : o.vals;
  if (!Array.isArray(vals) || vals.some((x) => typeof x !== 'number')) throw new InvalidError('decode', 'vals must be an array of numbers');
  return { v: int('v'), run: str('run'), ep: int('ep'), step: int('step'), from: str('from'), sent: o.sent, kind: str('kind'), vals };
}

// routeOf reads the delivery headers a fault-free run can carry: Dpsim-Episodes (a batched
// message) and Dpsim-To. The fault headers never come in the runs this plant accepts.
function routeOf(h) {
  const r = { to: '', episodes: 0 };
  if (!h) return r;
  r.to = h.get('Dpsim-To') || '';
  for (const name of ['Dpsim-At', 'Dpsim-More', 'Dpsim-Gap', 'Dpsim-Except']) {
    if (h.get(name)) throw new InvalidError('dim', `header ${name}: link faults are not supported by this plant`);
  }
  const v = h.get('Dpsim-Episodes');
  if (v) {
    const n = /^\d+$/.test(v) ? parseInt(v, 10) : NaN;
    if (!(n >= 2 && n <= MAX_EPISODES)) throw new InvalidError('dim', `header Dpsim-Episodes ${JSON.stringify(v)} is not a count of episodes in 2..${MAX_EPISODES}`);
    if (r.to) throw new InvalidError('dim', 'header Dpsim-Episodes on a message that is no plain broadcast');
    r.episodes = n;
  }
  return r;
}

// validate is bus.Validate: the same checks in the same order (the first failure names the
// drop reason).
function validate(m, e, count) {
  if (m.v !== VERSION) throw new InvalidError('version', `schema version ${m.v}, want ${VERSION}`);
  if (m.run !== e.run) throw new InvalidError('run', `run ${JSON.stringify(m.run)}, want ${JSON.stringify(e.run)}`);
  const n = count;
  if (m.ep < 0 || (e.episode >= 0 && (m.ep < e.episode || m.ep + n > e.episode + Math.max(e.episodes || 0, 1)))) {
    throw new InvalidError('episode', `episode ${m.ep}, want ${e.episode}`);
  }
  if (m.step < 0 || (e.steps > 0 && m.step >= e.steps)) throw new InvalidError('step', `step ${m.step} outside 0 <= step < ${e.steps}`);
  if (e.dim > 0 && m.vals.length !== e.dim * n) throw new InvalidError('dim', `${m.vals.length} values, want ${e.dim * n}`);
  if (!(e.dim > 0) && n > 1 && m.vals.length % n !== 0) throw new InvalidError('dim', `${m.vals.length} values do not split into ${n} episodes`);
  for (let i = 0; i < m.vals.length; i++) {
    if (!Number.isFinite(m.vals[i])) throw new InvalidError('nonfinite', `value ${i} is ${m.vals[i]}`);
  }
  if (e.sender && m.from !== e.sender) throw new InvalidError('sender', `from ${JSON.stringify(m.from)}, want ${JSON.stringify(e.sender)}`);
  if (e.kind && m.kind !== e.kind) throw new InvalidError('kind', `kind ${JSON.stringify(m.kind)}, want ${JSON.stringify(e.kind)}`);
}

// Counters is bus.Counters: received, and dropped by reason.
class Counters {
  constructor() {
    this.received = 0;
    this.dropped = {};
  }
  drop(reason) {
    this.dropped[reason] = (this.dropped[reason] || 0) + 1;
  }
  snapshot() {
    const order = ['decode', 'version', 'run', 'episode', 'step', 'dim', 'nonfinite', 'sender', 'kind', 'late', 'duplicate', 'ahead', 'signature', 'sealed'];
    const s = { received: this.received, accepted: 0, dropped: 0 };
    const by = {};
    for (const r of order) {
      if (this.dropped[r]) {
        by[r] = this.dropped[r];
        s.dropped += this.dropped[r];
      }
    }
    s.accepted = Math.max(s.received - s.dropped, 0);
    if (s.dropped > 0) s.dropped_by_reason = by;
    return s;
  }
}
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

// planDigest is the plan digest of 3.1: the first 48 bits of the SHA-256 of the file's bytes,
// never 0.
function planDigest(bytes) {
  const h = crypto.createHash('sha256').update(bytes).digest();
  return Math.max(h.readUIntBE(0, 6), 1);
}

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

// checkMatrix checks a row-major matrix (array of rows) of r x c finite values.
function checkMatrix(name, m, r, c) {
  if (!Array.isArray(m) || m.length !== r) throw new Error(`plan file: ${name} must have ${r} rows`);
  for (let i = 0; i < r; i++) {
    if (!Array.isArray(m[i]) || m[i].length !== c) throw new Error(`plan file: ${name} row ${i} must have ${c} values`);
    for (const x of m[i]) if (!Number.isFinite(x)) throw new Error(`plan file: ${name}[${i}] is not finite`);
  }
  return m.flat(); // row-major
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

// Core is one episode's plant (pkg/sim PlantCore over its inputs: the deliveries of cloud.0
// filed by step, duplicates, stale copies, the receive-side link counters): it releases
// yhat(t) at the start of step t and completes the step with u(t) - or, missing at the
// deadline, with faults.missing.plant: hold (the newest u received, by step; zero before the
// first) or zero - then applies x(t+1) = A x(t) + B u(t).
class Core {
  constructor(model, out) {
    this.m = model;
    this.out = out; // (ep, step, yhat) of each yhat(t) released
    const { nx, nu, ny, T } = model;
    this.x = new Float64Array(nx);
    this.xn = new Float64Array(nx);
    this.yhat = new Float64Array(ny);
    this.u = new Float64Array(nu);
    this.noise = model.secure ? new SecureNoise(model) : new FloatNoise(model);
    this.ep = -1;
    this.prevEp = -1;
    this.cur = 0;
    this.done = false;
    // inputs of the one sender, cloud.0
    this.have = false;
    this.fdone = false;
    this.nstep = -1; // the newest step received
    this.vals = new Float64Array(nu);
    this.newest = new Float64Array(nu); // the values of step nstep
    this.seen = new Uint8Array(T);
    // the first copy of each step, this episode's and the previous one's (conflicts)
    this.usedCopy = new Float64Array(T * nu);
    this.usedHas = new Uint8Array(T);
    this.prevCopy = new Float64Array(T * nu);
    this.prevHas = new Uint8Array(T);
    this.ahead = [];
    this.stats = { delivered: 0, late: 0, dup_received: 0, gaps: 0, conflicts: 0 };
    this.unexpected = 0;
    this.stale = 0;
    this.forced = 0;
    this.records = []; // trace lines of the episode
    this.since = 0; // when the core last progressed (ms)
  }

  // begin starts episode ep from x0 (null: the plan's), reseeds the noise and releases yhat(0).
  begin(ep, x0) {
    this.prevEp = this.ep;
    this.ep = ep;
    this.cur = 0;
    this.have = false;
    this.fdone = false;
    this.nstep = -1;
    this.seen.fill(0);
    [this.usedCopy, this.prevCopy] = [this.prevCopy, this.usedCopy];
    [this.usedHas, this.prevHas] = [this.prevHas, this.usedHas];
    this.usedHas.fill(0);
    for (const m of this.ahead) this.fileStale(m);
    this.ahead = [];
    this.done = false;
    this.records = [];
    this.since = Date.now();
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

  // record notes the first copy of step t in table and reports whether one noted differs.
  static record(copy, has, n, t, v) {
    if (!has[t]) {
      has[t] = 1;
      for (let i = 0; i < n; i++) copy[t * n + i] = v[i];
      return false;
    }
    for (let i = 0; i < n; i++) {
      if (!Object.is(copy[t * n + i], v[i]) && !(Number.isNaN(v[i]) && Number.isNaN(copy[t * n + i]))) return true;
    }
    return false;
  }

  wellFormed(m) {
    return m.step >= 0 && m.step < this.m.T;
  }

  // deliver files one delivery {ep, step, vals} and completes what can be completed.
  deliver(m) {
    if (this.done) {
      this.fileStale(m);
      return;
    }
    this.file(m);
    this.run();
  }

  file(m) {
    if (m.ep === this.ep && m.step === this.cur && this.cur < this.m.T) {
      this.apply(m);
      return;
    }
    if (m.ep < this.ep) {
      this.fileStale(m);
      return;
    }
    if (!this.wellFormed(m) || m.ep !== this.ep) {
      this.unexpected++;
      return;
    }
    if (m.step > this.cur) {
      if (this.ahead.length >= 4 * (this.m.T - this.cur)) {
        this.unexpected++;
        return;
      }
      this.ahead.push({ ep: m.ep, step: m.step, vals: Array.from(m.vals) });
      return;
    }
    this.apply(m);
  }

  fileStale(m) {
    if (!this.wellFormed(m) || m.ep > this.ep) {
      this.unexpected++;
      return;
    }
    this.stale++;
    let copy = null, has = null;
    if (m.ep === this.ep) [copy, has] = [this.usedCopy, this.usedHas];
    else if (m.ep === this.prevEp) [copy, has] = [this.prevCopy, this.prevHas];
    if (copy && Core.record(copy, has, this.m.nu, m.step, m.vals)) this.stats.conflicts++;
  }

  apply(m) {
    const st = this.stats, nu = this.m.nu;
    st.delivered++;
    if (m.step === this.cur) {
      if (this.have) {
        st.dup_received++;
        if (Core.record(this.usedCopy, this.usedHas, nu, m.step, m.vals)) st.conflicts++;
      } else {
        Core.record(this.usedCopy, this.usedHas, nu, m.step, m.vals);
        this.have = true;
        for (let i = 0; i < nu; i++) this.vals[i] = m.vals[i];
        this.seen[m.step] = 1;
        if (m.step > this.nstep) {
          this.nstep = m.step;
          for (let i = 0; i < nu; i++) this.newest[i] = m.vals[i];
        }
      }
    } else if (this.seen[m.step]) { // late, a second copy
      st.dup_received++;
      if (Core.record(this.usedCopy, this.usedHas, nu, m.step, m.vals)) st.conflicts++;
    } else { // late
      Core.record(this.usedCopy, this.usedHas, nu, m.step, m.vals);
      this.seen[m.step] = 1;
      st.late++;
      if (m.step > this.nstep) {
        this.nstep = m.step;
        for (let i = 0; i < nu; i++) this.newest[i] = m.vals[i];
      }
    }
    if (m.step === this.cur && !this.fdone) this.fdone = true; // its last delivery for the step
  }

  run() {
    while (!this.done && this.fdone) this.finish();
  }

  finish() {
    if (this.complete()) {
      this.done = true;
      return;
    }
    this.cur++;
    this.have = false;
    this.fdone = false;
    this.since = Date.now();
    if (this.ahead.length === 0) return;
    const keep = [];
    for (const m of this.ahead) {
      if (m.step === this.cur) this.apply(m);
      else keep.push(m);
    }
    this.ahead = keep;
  }

  // tick says the deadline of step t passed: the step completes without u(t).
  tick(t) {
    if (this.done || this.cur !== t) return;
    this.forced++;
    this.finish();
    this.run();
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

class PlantProcess {
  constructor(cfg) {
    this.cfg = cfg;
    this.name = `plant-${cfg.id}`;
    this.data = new Counters();
    this.ctl = new Counters();
    this.queue = []; // data messages received, not yet handled
    this.qhead = 0;
    this.episodes = []; // validated episode starts
    this.x0q = []; // the challenger's opened x(0)s, {ep, x0}, in arrival order
    this.opener = null; // opens the sealed x(0): null without a curve key
    this.lastEp = -1;
    this.wakeFn = null;
    this.stopWhy = '';
    this.stopByCtl = false;
    this.stopped = false;
    this.slots = [];
    this.group = { first: 0, count: 0, prevFirst: -1, prevCount: 0 };
    this.batch = []; // coalesced releases: {ep, step, vals}
    this.sent = 0; // releases of yhat (each one goes on both links)
    this.res = {
      v: 1, run: cfg.run, role: 'plant', id: cfg.id, name: this.name, pid: process.pid, point: cfg.point,
      status: '', episodes: 0, steps: 0, busy_seconds: 0, steps_per_sec: 0,
    };
    this.busyMs = 0;
    this.records = 0;
    this.lastDone = [];
    this.reannounce = false;
    // --keep-episodes (role.diskBound)
    this.bound = { keep: cfg.keepEpisodes, finished: 0, keepEnd: cfg.keepEpisodes === 0 ? 0 : -1, end: 0 };
    this.pos = 0; // the trace file's write position
  }

  stop(why, byCtl) {
    if (this.stopped) return;
    this.stopped = true;
    this.stopWhy = why;
    this.stopByCtl = byCtl;
    this.wake();
  }

  wake() {
    if (this.wakeFn) {
      const w = this.wakeFn;
      this.wakeFn = null;
      w();
    }
  }

  // waitUntil waits for a wake (a message, an episode, a stop) or the deadline (ms epoch).
  waitUntil(deadline) {
    return new Promise((resolve) => {
      const ms = Math.min(Math.max(0, deadline - Date.now()), 2 ** 31 - 1); // setTimeout's bound
      const timer = setTimeout(() => {
        this.wakeFn = null;
        resolve();
      }, ms);
      this.wakeFn = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  subject(...tokens) {
    return ['dpsim', this.cfg.run, ...tokens].join('.');
  }

  publishMsg(subject, kind, ep, vals, hdrs) {
    const m = { v: VERSION, run: this.cfg.run, ep, step: 0, from: SELF, sent: nowNanos(), kind, vals };
    this.nc.publish(subject, encodeMessage(m, this.cfg.encoding), hdrs ? { headers: hdrs } : undefined);
  }

  async flush() {
    let timer;
    const t = new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`NATS flush within --timeout ${this.cfg.timeout}ms: timeout`)), this.cfg.timeout); });
    try {
      await Promise.race([this.nc.flush(), t]);
    } finally {
      clearTimeout(timer);
    }
  }

  async connectNATS() {
    const cfg = this.cfg;
    let url = cfg.natsURL || process.env.NATS_URL || '';
    if (!url) throw new UsageError('no NATS server: pass --nats-url or set $NATS_URL');
    let user = process.env.DPSIM_NATS_USER || '', pass = process.env.DPSIM_NATS_PASSWORD || '';
    let x0Seed = process.env.DPSIM_X0_SEED || '', x0Sender = process.env.DPSIM_X0_SENDER || '';
    const servers = [];
    for (const u of url.split(',')) {
      const s = u.trim();
      if (!s) continue;
      try {
        const p = new URL(s);
        if (p.username) {
          user = decodeURIComponent(p.username);
          pass = decodeURIComponent(p.password);
          p.username = '';
          p.password = '';
        }
        servers.push(`${p.hostname.includes(':') ? '[' + p.hostname + ']' : p.hostname}:${p.port || 4222}`);
        if (p.protocol === 'tls:') cfg.tlsCA = cfg.tlsCA || '';
      } catch {
        servers.push(s);
      }
    }
    if (cfg.credentials) {
      const c = readCredentials(cfg.credentials);
      if (c.DPSIM_NATS_USER) {
        user = c.DPSIM_NATS_USER;
        pass = c.DPSIM_NATS_PASSWORD || '';
      }
      if (c.DPSIM_SIGN_SEED) throw new UsageError('--credentials carries a signing seed: signed runs (--sign) are not supported by this plant');
      if (c.DPSIM_X0_SEED) { // the file's curve key replaces the environment's, sender and all
        x0Seed = c.DPSIM_X0_SEED;
        x0Sender = c.DPSIM_X0_SENDER || '';
      }
    }
    if (x0Seed && x0Sender) this.opener = new X0Opener(x0Seed, x0Sender);
    const opts = { servers, name: `dpsim-${this.name}`, maxReconnectAttempts: 40, reconnectTimeWait: 250, waitOnFirstConnect: false };
    if (user) {
      opts.user = user;
      opts.pass = pass;
    }
    if (cfg.tlsCA || cfg.tlsCert) {
      opts.tls = {};
      if (cfg.tlsCA) opts.tls.caFile = cfg.tlsCA;
      if (cfg.tlsCert) opts.tls.certFile = cfg.tlsCert;
      if (cfg.tlsKey) opts.tls.keyFile = cfg.tlsKey;
    }
    const deadline = Date.now() + cfg.connectRetry;
    for (let attempt = 1; ; attempt++) {
      try {
        this.nc = await connect(opts);
        break;
      } catch (e) {
        if (this.stopped || Date.now() >= deadline) throw new Error(`connect to ${servers.join(',')}: ${e.message}`);
        log('warn', 'NATS server not reachable yet; retrying', { error: e.message, attempt });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    (async () => {
      for await (const s of this.nc.status()) {
        if (s.type === 'reconnect') {
          log('warn', 'nats connection', { event: 'reconnected' });
          this.reannounce = true;
          this.publishReady();
          for (const d of this.lastDone) this.publishMsg(this.subject('ctl', 'done', SELF), 'done', d.ep, d.vals);
        } else if (s.type === 'disconnect') {
          log('warn', 'nats connection', { event: 'disconnected' });
        }
      }
    })().catch(() => {});
  }

  publishReady() {
    this.publishMsg(this.subject('ctl', 'ready', SELF), 'ready', 0, [process.pid, this.digest]);
  }

  // setup subscribes the cloud's u (the data inbox), ctl.episode, ctl.stop and the challenger's
  // private line (section 7: the plant takes explicit x(0)s).
  setup() {
    this.dataSubject = this.subject('cloud', '0', 'u');
    this.nc.subscribe(this.dataSubject, {
      callback: (err, msg) => {
        if (err) return;
        this.queue.push(msg);
        this.wake();
      },
    });
    this.nc.subscribe(this.subject('ctl', 'episode'), { callback: (err, msg) => { if (!err) this.onEpisode(msg); } });
    this.nc.subscribe(this.subject('ctl', 'stop'), {
      callback: (err, msg) => {
        if (err) return;
        const m = this.ctlMessage(msg, 'stop');
        if (m) this.stop('ctl.stop from ' + m.from, true);
      },
    });
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

  // awaitX0 returns the private x(0) of episode ep, waiting at most --timeout: one of another
  // episode met meanwhile is stale and dropped, and a private episode without its x(0) is an
  // error, never a silent default.
  async awaitX0(ep) {
    const deadline = Date.now() + this.cfg.timeout;
    for (;;) {
      while (this.x0q.length > 0) {
        const q = this.x0q.shift();
        if (q.ep === ep) return q.x0;
      }
      if (this.stopped) throw new Stopped();
      if (Date.now() >= deadline) throw new Error(`episode ${ep} announced a private x0 that did not arrive within ${this.cfg.timeout}ms`);
      await this.waitUntil(deadline);
    }
  }

  // ctlMessage decodes and validates a ctl message (any episode, kind if given), counting it.
  ctlMessage(msg, kind) {
    this.ctl.received++;
    try {
      const m = decodeMessage(msg.data);
      validate(m, { run: this.cfg.run, episode: -1, kind }, 1);
      return m;
    } catch (e) {
      this.ctlInvalid(msg.subject, e);
      return null;
    }
  }

  ctlInvalid(subject, e) {
    this.ctl.drop(e.reason || 'decode');
    log('warn', 'dropped invalid message', { subject, reason: e.reason || 'decode', error: e.message });
  }

  onEpisode(msg) {
    const m = this.ctlMessage(msg, '');
    if (!m) return;
    let st;
    switch (m.kind) {
      case 'episode': // vals: empty, or an explicit x(0) (a hand-driven run)
      case 'episode-x0': // its x(0) comes sealed on the challenger's private line (section 7)
        if (m.vals.length !== 0 && m.vals.length !== this.model.nx) {
          this.ctlInvalid(msg.subject, new InvalidError('dim', `ctl.episode carries ${m.vals.length} values: an explicit x(0) has nx = ${this.model.nx}`));
          return;
        }
        st = { ep: m.ep, count: 1, x0: m.vals.length > 0 ? Float64Array.from(m.vals) : null, private: m.kind === 'episode-x0' };
        break;
      case 'episodes':
      case 'episodes-x0': { // the same, a group: one sealed x(0) per episode, in order
        const v = m.vals.length === 1 ? m.vals[0] : NaN;
        if (!(Number.isInteger(v) && v >= 1 && v <= MAX_INFLIGHT)) {
          this.ctlInvalid(msg.subject, new InvalidError('dim', `ctl.${m.kind} carries [count] in 1..${MAX_INFLIGHT}`));
          return;
        }
        st = { ep: m.ep, count: v, x0: null, private: m.kind === 'episodes-x0' };
        break;
      }
      default:
        this.ctlInvalid(msg.subject, new InvalidError('kind', `kind ${JSON.stringify(m.kind)} on ctl.episode`));
        return;
    }
    if (m.ep <= this.lastEp) {
      this.ctlInvalid(msg.subject, new InvalidError('episode', `episode ${m.ep} after episode ${this.lastEp}: episodes must increase`));
      return;
    }
    if (this.episodes.length >= 16) {
      this.ctlInvalid(msg.subject, new InvalidError('ahead', 'too many episodes queued'));
      return;
    }
    this.episodes.push(st);
    this.lastEp = st.ep + st.count - 1;
    this.wake();
  }

  // serve announces ready and runs the episodes the launcher starts until stopped.
  async serve() {
    this.publishReady();
    await this.flush();
    log('info', 'ready', { steps: this.model.T, mode: 'lockstep', nats: this.cfg.natsURL });
    let idleDeadline = Date.now() + this.cfg.idleTimeout;
    let nextReady = Date.now() + READY_REPEAT_MS;
    for (;;) {
      if (this.stopped) return;
      if (this.episodes.length > 0) {
        const st = this.episodes.shift();
        this.reannounce = false;
        await this.playGroup(st);
        idleDeadline = Date.now() + this.cfg.idleTimeout;
        continue;
      }
      const now = Date.now();
      if (now >= idleDeadline) throw new Error(`no ctl.episode or ctl.stop for ${this.cfg.idleTimeout} ms (--idle-timeout): is the launcher gone?`);
      if (now >= nextReady) {
        if (this.res.episodes === 0 || this.reannounce) {
          this.publishReady();
          if (this.reannounce) for (const d of this.lastDone) this.publishMsg(this.subject('ctl', 'done', SELF), 'done', d.ep, d.vals);
        }
        nextReady = now + READY_REPEAT_MS;
      }
      await this.waitUntil(Math.min(idleDeadline, nextReady));
    }
  }

  slotOf(ep) {
    const g = this.group;
    if (ep - g.first >= 0 && ep - g.first < g.count) return this.slots[ep - g.first];
    if (ep - g.prevFirst >= 0 && ep - g.prevFirst < g.prevCount) return this.slots[ep - g.prevFirst];
    return this.slots[0];
  }

  // playGroup runs episodes st.ep..st.ep+count-1 at once (one core each; a private group from
  // the challenger's x(0)s, awaited first, in episode order), writes their records episode by
  // episode and answers one ctl.done per episode, in order.
  async playGroup(st) {
    let x0s = null;
    if (st.private) {
      x0s = [];
      for (let k = 0; k < st.count; k++) x0s.push(await this.awaitX0(st.ep + k));
    }
    const start = Date.now();
    const g = this.group;
    while (this.slots.length < st.count) {
      this.slots.push(new Core(this.model, (ep, step, vals) => this.release(ep, step, vals)));
    }
    // the trace is cut back past the kept episodes (diskBound.begin)
    if (this.bound.keepEnd >= 0) {
      fs.ftruncateSync(this.fd, this.bound.keepEnd);
      this.pos = this.bound.keepEnd;
    }
    g.prevFirst = g.first;
    g.prevCount = g.count;
    g.first = st.ep;
    g.count = st.count;
    const slots = this.slots.slice(0, st.count);
    slots.forEach((s, k) => s.begin(st.ep + k, x0s ? x0s[k] : st.x0));
    const forced0 = this.forcedTotal();
    try {
      let live = slots.filter((s) => !s.done).length;
      while (live > 0) {
        if (this.stopped) throw new Stopped();
        if (this.qhead >= this.queue.length) {
          this.flushBatch();
          let deadline = Infinity;
          for (const s of slots) if (!s.done) deadline = Math.min(deadline, s.since + this.cfg.timeout);
          await this.waitUntil(deadline);
          if (this.stopped) throw new Stopped();
          if (this.qhead >= this.queue.length) {
            const now = Date.now();
            for (const s of slots) if (!s.done && now >= s.since + this.cfg.timeout) s.tick(s.cur);
            live = slots.filter((s) => !s.done).length;
            continue;
          }
        }
        for (const part of this.receive(this.nextQueued())) {
          const s = this.slotOf(part.ep);
          const was = s.done;
          s.deliver(part);
          if (!was && s.done) live--;
        }
      }
      this.flushBatch();
    } catch (e) {
      this.missed += this.forcedTotal() - forced0;
      if (e instanceof Stopped) {
        this.writePartial(slots);
        throw e;
      }
      throw e;
    } finally {
      this.busyMs += Date.now() - start;
    }
    this.missed += this.forcedTotal() - forced0;
    // the group's records, episode by episode (role.writeGroup)
    const nexts = [];
    for (const s of slots) {
      this.writeRecords(s);
      this.bound.finished++;
      this.bound.end = this.pos;
      if (this.bound.keep > 0 && this.bound.keepEnd < 0 && this.bound.finished === this.bound.keep) this.bound.keepEnd = this.pos;
      nexts.push(this.bound.keepEnd >= 0 ? this.bound.keepEnd : this.bound.end);
      this.res.steps += this.model.T;
    }
    fs.fsync(this.fd, () => {});
    const dones = [];
    slots.forEach((s, k) => {
      this.res.episodes++;
      const d = { ep: st.ep + k, vals: [this.model.T, this.missed, process.pid, nexts[k]] };
      dones.push(d);
      this.publishMsg(this.subject('ctl', 'done', SELF), 'done', d.ep, d.vals);
    });
    this.lastDone = dones;
    await this.flush();
    log('debug', 'episodes done', { first: st.ep, count: st.count, took_ms: Date.now() - start });
  }

  forcedTotal() {
    return this.slots.reduce((n, s) => n + s.forced, 0);
  }

  writeRecords(s) {
    if (s.records.length === 0) return;
    const b = Buffer.from(s.records.join(''));
    fs.writeSync(this.fd, b, 0, b.length, this.pos);
    this.pos += b.length;
    this.records += s.records.length;
    s.records = [];
  }

  writePartial(slots) {
    for (const s of slots) this.writeRecords(s);
  }

  nextQueued() {
    const msg = this.queue[this.qhead];
    this.queue[this.qhead++] = undefined;
    if (this.qhead > 4096 && this.qhead * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.qhead);
      this.qhead = 0;
    }
    return msg;
  }

  // receive decodes and checks one data message (bus.Inbox) and returns its deliveries, one
  // per episode it carries; an invalid message is counted, logged and dropped.
  receive(msg) {
    this.data.received++;
    const g = this.group;
    try {
      const m = decodeMessage(msg.data);
      const r = routeOf(msg.headers);
      const n = Math.max(r.episodes, 1);
      const e = { run: this.cfg.run, episode: g.first, episodes: g.count, steps: this.model.T, dim: this.model.nu, sender: CLOUD, kind: 'u' };
      if (e.episode > 0 && m.ep >= 0 && m.ep < e.episode) { // stale: the cores' to judge
        e.episode = m.ep;
        e.episodes = n;
      }
      validate(m, e, n);
      if (r.to && r.to !== SELF) return [];
      const nu = this.model.nu, parts = [];
      for (let i = 0; i < n; i++) parts.push({ ep: m.ep + i, step: m.step, vals: m.vals.slice(i * nu, (i + 1) * nu) });
      return parts;
    } catch (err) {
      const reason = err.reason || 'decode';
      this.data.drop(reason);
      this.invalidLogged = (this.invalidLogged || 0) + 1;
      if (this.invalidLogged <= 20 || this.invalidLogged % 1000 === 0) {
        log('warn', 'dropped invalid message', { subject: msg.subject, reason, invalid_total: this.invalidLogged, error: err.message });
      }
      return [];
    }
  }

  // release gathers yhat(t) of an episode: sent when the process is about to wait.
  release(ep, step, vals) {
    this.sent++;
    this.batch.push({ ep, step, vals });
  }

  // flushBatch sends what was released: by step, then episode, the runs of consecutive
  // episodes of one step as one message (Dpsim-Episodes).
  flushBatch() {
    if (this.batch.length === 0) return;
    const es = this.batch;
    this.batch = [];
    es.sort((a, b) => a.step - b.step || a.ep - b.ep);
    const subject = this.subject('plant', String(this.cfg.id), 'yhat');
    for (let i = 0; i < es.length;) {
      let j = i + 1;
      while (j < es.length && j - i < MAX_EPISODES && es[j].step === es[i].step && es[j].ep === es[i].ep + (j - i)) j++;
      const vals = [];
      for (let k = i; k < j; k++) vals.push(...es[k].vals);
      const m = { v: VERSION, run: this.cfg.run, ep: es[i].ep, step: es[i].step, from: SELF, sent: nowNanos(), kind: 'yhat', vals };
      let opts;
      if (j - i > 1) {
        const h = natsHeaders();
        h.set('Dpsim-Episodes', String(j - i));
        opts = { headers: h };
      }
      this.nc.publish(subject, encodeMessage(m, this.cfg.encoding), opts);
      i = j;
    }
  }

  // links is the result's per-link counters: the publisher's (every release on both links)
  // and the cores' receive side, sorted by link.
  links() {
    const zero = () => ({ sent: 0, dropped: 0, duplicated: 0, delayed: 0, reordered: 0, expired: 0, delivered: 0, late: 0, dup_received: 0, gaps: 0 });
    const out = [];
    for (const s of SUBSCRIBERS) out.push({ link: `${SELF}->${s}`, ...zero(), sent: this.sent });
    const rx = { link: `${CLOUD}->${SELF}`, ...zero() };
    let conflicts = 0;
    for (const c of this.slots) {
      rx.delivered += c.stats.delivered;
      rx.late += c.stats.late;
      rx.dup_received += c.stats.dup_received;
      rx.gaps += c.stats.gaps;
      conflicts += c.stats.conflicts;
    }
    if (conflicts > 0) rx.conflicts = conflicts;
    out.push(rx);
    out.sort((a, b) => (a.link < b.link ? -1 : a.link > b.link ? 1 : 0));
    return out;
  }

  // drainStale hands the cores the data messages still queued at the end (compared, counted).
  drainStale() {
    if (this.slots.length === 0) return;
    while (this.qhead < this.queue.length) {
      for (const part of this.receive(this.nextQueued())) {
        const s = this.slotOf(part.ep);
        if (s.done) s.deliver(part);
      }
    }
  }

  // finish writes the result file, publishes it on ctl.result and drains the connection.
  async finish(runErr) {
    if (this.fd !== undefined) {
      try {
        this.drainStale();
        fs.fsyncSync(this.fd);
        fs.closeSync(this.fd);
      } catch (e) {
        runErr = runErr || e;
      }
    }
    const res = this.res;
    if (runErr) {
      res.status = 'failed';
      res.error = runErr.message;
    } else if (this.stopWhy && !this.stopByCtl) {
      res.status = 'interrupted';
      res.error = this.stopWhy;
      runErr = new Error('interrupted: ' + this.stopWhy);
    } else {
      res.status = 'ok';
    }
    res.busy_seconds = this.busyMs / 1000;
    res.steps_per_sec = this.busyMs > 0 ? res.steps / res.busy_seconds : 0;
    res.invalid = this.data.snapshot();
    res.ctl_invalid = this.ctl.snapshot();
    res.timing = { mode: 'lockstep', steps: res.steps, elapsed_ns: Math.round(this.busyMs * 1e6), steps_per_sec: res.steps_per_sec,
      overruns: 0, max_overrun_ns: 0, missed: this.missed, jitter: { n: 0, mean_ns: 0, max_ns: 0, p99_ns: 0 }, step_timeout_ns: Math.round(this.cfg.timeout * 1e6) };
    if (this.nc) {
      const st = this.nc.stats();
      res.conn = { name: `dpsim-${this.name}`, url: this.cfg.natsURL.replace(/\/\/[^@/]*@/, '//'), disconnects: 0, reconnects: 0, async_errors: 0, slow_consumers: 0,
        in_msgs: st.inMsgs, out_msgs: st.outMsgs, in_bytes: st.inBytes, out_bytes: st.outBytes };
    }
    const [rss, src] = peakRSS();
    res.peak_rss_bytes = rss;
    if (src) res.peak_rss_source = src;
    if (this.fd !== undefined) res.trace_file = `${this.name}.trace.jsonl`;
    res.records = this.records;
    res.slow_consumer_dropped = 0;
    res.unexpected = this.slots.reduce((n, s) => n + s.unexpected, 0);
    res.stale = this.slots.reduce((n, s) => n + s.stale, 0);
    if (this.model) res.links = this.links();
    const data = JSON.stringify(res, null, 2);
    const file = path.join(this.cfg.out, `${this.name}.result.json`);
    try {
      fs.writeFileSync(file + '.tmp', data + '\n', { mode: 0o644 });
      fs.renameSync(file + '.tmp', file);
    } catch (e) {
      runErr = runErr || new Error('result file: ' + e.message);
    }
    if (this.nc) {
      try {
        this.nc.publish(this.subject('ctl', 'result', SELF), Buffer.from(data));
        await this.nc.drain();
      } catch (e) {
        log('warn', 'drain', { error: e.message });
      }
    }
    const fields = { status: res.status, episodes: res.episodes, steps: res.steps, invalid: res.invalid.dropped };
    if (runErr) log('error', 'exit', { ...fields, error: runErr.message });
    else log('info', 'exit', fields);
    return runErr;
  }
}

function readCredentials(file) {
  const st = fs.statSync(file);
  if (st.mode & 0o077) throw new UsageError(`--credentials ${file}: must not be readable by others (chmod 600)`);
  const out = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const t = line.trim();
    if (!t || t.startsWith('#')) continue;
    const eq = t.indexOf('=');
    if (eq > 0) out[t.slice(0, eq).trim()] = t.slice(eq + 1).trim();
  }
  return out;
}

// peakRSS is the process's peak resident set: VmHWM of /proc/self/status.
function peakRSS() {
  try {
    const m = /VmHWM:\s+(\d+)\s+kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (m) return [parseInt(m[1], 10) * 1024, 'VmHWM'];
  } catch {
    // not Linux
  }
  return [process.resourceUsage().maxRSS * 1024, 'getrusage'];
}

// loadPlan reads --plan (waited for as long as --connect-retry, as the Go roles do).
async function loadPlan(cfg) {
  const deadline = Date.now() + cfg.connectRetry;
  for (;;) {
    try {
      return fs.readFileSync(cfg.plan);
    } catch (e) {
      if (e.code !== 'ENOENT' || Date.now() >= deadline) throw new Error(`--plan: ${e.message}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

// checkSupported refuses what this plant does not implement, naming it.
function checkSupported(cfg, plan) {
  const mode = cfg.mode || plan.mode;
  if (mode !== 'lockstep') throw new UsageError(`--mode ${mode}: this plant runs lockstep only`);
  const f = plan.faults;
  for (const [what, list] of [['link faults (faults.links)', f.links], ['partitions (faults.partitions)', f.partitions], ['crashes (faults.crashes)', f.crashes]]) {
    if (list.length > 0) throw new UsageError(`the scenario has ${what}: not supported by this plant (use dpsim plant)`);
  }
}

async function main() {
  let cfg;
  try {
    cfg = parseArgs(process.argv.slice(2));
    if (!(cfg.logLevel in LEVELS)) throw new UsageError(`unknown log level ${JSON.stringify(cfg.logLevel)}`);
    logLevel = LEVELS[cfg.logLevel];
    if (!cfg.run) throw new UsageError('--run is required');
    if (cfg.scenario) throw new UsageError('--scenario: this plant reads the launcher\'s --plan file only');
    if (!cfg.plan) throw new UsageError('--plan is required');
    if (cfg.id !== 0) throw new UsageError(`--id ${cfg.id}: a run has one plant, id 0`);
    if (cfg.encoding === 'bin') cfg.encoding = 'binary';
    if (cfg.encoding === '') cfg.encoding = 'json';
    if (cfg.encoding !== 'json' && cfg.encoding !== 'binary') throw new UsageError(`--encoding: unknown encoding ${JSON.stringify(cfg.encoding)} (want json or binary)`);
    if (cfg.signKeys) throw new UsageError('--sign-keys: signed runs (dpsim run --sign) are not supported by this plant');
    if (cfg.resume) throw new UsageError('--resume: crashes are not supported by this plant');
    if (cfg.timeout < 1) throw new UsageError('--timeout must be at least 1ms');
  } catch (e) {
    process.stderr.write(`plant: ${e.message}\n`);
    process.exit(2);
  }
  logCtx = { proc: `plant-${cfg.id}`, run: cfg.run };
  const proc = new PlantProcess(cfg);
  const onSignal = (sig) => proc.stop('signal ' + sig, false);
  process.on('SIGINT', () => onSignal('interrupt'));
  process.on('SIGTERM', () => onSignal('terminated'));
  let runErr = null;
  try {
    const bytes = await loadPlan(cfg);
    const plan = readPlan(bytes);
    checkSupported(cfg, plan);
    proc.model = new Model(plan, cfg.sampler);
    log('info', 'noise', { kind: proc.model.kind, mechanism: proc.model.mechanism, sampler: proc.model.sampler, granularity_exp: proc.model.G });
    proc.digest = planDigest(bytes);
    proc.missed = 0;
    fs.mkdirSync(cfg.out, { recursive: true });
    if (cfg.parentPID > 0) watchParent(proc, cfg.parentPID);
    await proc.connectNATS();
    proc.fd = fs.openSync(path.join(cfg.out, `${proc.name}.trace.jsonl`), 'w+', 0o644);
    proc.setup();
    await proc.serve();
  } catch (e) {
    if (!(e instanceof Stopped)) runErr = e;
  }
  const err = await proc.finish(runErr);
  if (err) {
    process.stderr.write(`plant: ${err.message}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  }
  process.exit(0);
}

// watchParent stops the process when the launcher (--parent-pid) is gone, or when it was
// orphaned (started through a shell that does not exec, the parent is the shell).
function watchParent(proc, pid) {
  const ppid0 = process.ppid;
  const t = setInterval(() => {
    let gone = process.ppid !== ppid0;
    try {
      process.kill(pid, 0);
    } catch (e) {
      if (e.code === 'ESRCH') gone = true;
    }
    if (gone) {
      clearInterval(t);
      proc.stop(`parent process ${pid} is gone`, false);
    }
  }, 200);
  t.unref();
}

if (require.main === module) {
  main();
} else {
  module.exports = { Core, Model, readPlan, parseJSON, goFormatG, goJSONNumber, decodeMessage, openX0, X0Opener }; // for checks of the arithmetic and the sealed x(0)
}
