// The role-process plumbing the JavaScript roles of examples/js-cloud and examples/js-plant
// share, written against docs/protocol.md: the launcher's flags, the log, the message encodings
// and checks (pkg/wire), the plan digest, the receive side of an episode's core (sim's inputs of
// its one sender), and the process around the cores: NATS connection (TLS, credentials,
// reconnects), ctl.ready, ctl.episode(s), episodes in flight, the trace file, ctl.done, ctl.stop
// and the result file. What a role computes stays in its own file (cloud.js: the controller;
// plant.js: the plant and its noise); a role describes itself to main() and RoleProcess with a
// spec (below).
//
// Plain CommonJS with no dependencies of its own: the nats client is the caller's (spec.nats),
// because each example installs its own from its own lockfile and Node resolves require()
// relative to the requiring file.
'use strict';

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

const VERSION = 1; // bus schema version
const BINARY_MAGIC = 0xd5;
const MAX_EPISODES = 1 << 12; // bus.MaxEpisodes: the most episodes one message may carry (Dpsim-Episodes)
const MAX_INFLIGHT = 1024; // contract.MaxInflight: the most episodes ctl.episodes may start
const READY_REPEAT_MS = 500; // contract.ReadyRepeat: ctl.ready is repeated this often until the first episode

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

// parseArgs reads the flags `dpsim cloud` and `dpsim plant` take (Go's flag syntax: -f, --f,
// f=v or f v), and the role's own string flags (strings: their names, default ''); --help
// prints usage.
function parseArgs(argv, usage, strings = []) {
  const cfg = {
    natsURL: '', run: '', plan: '', scenario: '', point: 0, out: '.', mode: '', timeout: 10e3,
    idleTimeout: 120e3, logLevel: 'info', encoding: 'json', parentPID: 0, faultSeed: '', id: 0,
    period: 0, keepEpisodes: -1, signKeys: '', tlsCA: '', tlsCert: '', tlsKey: '', credentials: '',
    connectRetry: 20e3, resume: false,
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
  };
  for (const name of strings) {
    cfg[name] = '';
    take[name] = (v) => { cfg[name] = v; };
  }
  const bools = { resume: (v) => { cfg.resume = v; } };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help' || a === '-help') {
      process.stdout.write(usage);
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

// ---------------------------------------------------------------- messages (pkg/wire)

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
// message) and Dpsim-To. The fault headers never come in the runs these roles accept (who: the
// role, for the error).
function routeOf(h, who) {
  const r = { to: '', episodes: 0 };
  if (!h) return r;
  r.to = h.get('Dpsim-To') || '';
  for (const name of ['Dpsim-At', 'Dpsim-More', 'Dpsim-Gap', 'Dpsim-Except']) {
    if (h.get(name)) throw new InvalidError('dim', `header ${name}: link faults are not supported by this ${who}`);
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

// ---------------------------------------------------------------- the plan file

// planDigest is plan.FileDigest (the plan digest of docs/protocol.md 3.1): the first 48 bits of
// the SHA-256 of the file's bytes, never 0.
function planDigest(bytes) {
  const h = crypto.createHash('sha256').update(bytes).digest();
  return Math.max(h.readUIntBE(0, 6), 1);
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

// checkSupported refuses what these roles do not implement, naming it (who: the role).
function checkSupported(cfg, plan, who) {
  const mode = cfg.mode || plan.mode;
  if (mode !== 'lockstep') throw new UsageError(`--mode ${mode}: this ${who} runs lockstep only`);
  const f = plan.faults;
  for (const [what, list] of [['link faults (faults.links)', f.links], ['partitions (faults.partitions)', f.partitions], ['crashes (faults.crashes)', f.crashes]]) {
    if (list.length > 0) throw new UsageError(`the scenario has ${what}: not supported by this ${who} (use dpsim ${who})`);
  }
}

// ---------------------------------------------------------------- an episode's inputs

// Core is the receive side of one episode's core (pkg/sim's inputs of the one sender): the
// deliveries {ep, step, vals} of width values filed by step, duplicates, stale copies and the
// receive-side link counters. A role's core extends it with complete(): what step cur does with
// the step's input (this.have, this.vals; this.newest, the values of the newest step received,
// nstep) - true when the episode is done.
class Core {
  constructor(model, out, width) {
    this.m = model;
    this.out = out; // (ep, step, vals) of each value released
    this.width = width;
    const T = model.T;
    this.ep = -1;
    this.prevEp = -1;
    this.cur = 0;
    this.done = false;
    this.have = false;
    this.fdone = false;
    this.nstep = -1; // the newest step received
    this.vals = new Float64Array(width);
    this.newest = new Float64Array(width); // the values of step nstep
    this.seen = new Uint8Array(T);
    // the first copy of each step, this episode's and the previous one's (conflicts)
    this.usedCopy = new Float64Array(T * width);
    this.usedHas = new Uint8Array(T);
    this.prevCopy = new Float64Array(T * width);
    this.prevHas = new Uint8Array(T);
    this.ahead = [];
    this.stats = { delivered: 0, late: 0, dup_received: 0, gaps: 0, conflicts: 0 };
    this.unexpected = 0;
    this.stale = 0;
    this.forced = 0;
    this.records = []; // trace lines of the episode
    this.since = 0; // when the core last progressed (ms)
  }

  // begin starts episode ep's inputs (the role's core then starts its own state).
  begin(ep) {
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
    if (copy && Core.record(copy, has, this.width, m.step, m.vals)) this.stats.conflicts++;
  }

  apply(m) {
    const st = this.stats, n = this.width;
    st.delivered++;
    if (m.step === this.cur) {
      if (this.have) {
        st.dup_received++;
        if (Core.record(this.usedCopy, this.usedHas, n, m.step, m.vals)) st.conflicts++;
      } else {
        Core.record(this.usedCopy, this.usedHas, n, m.step, m.vals);
        this.have = true;
        for (let i = 0; i < n; i++) this.vals[i] = m.vals[i];
        this.seen[m.step] = 1;
        if (m.step > this.nstep) {
          this.nstep = m.step;
          for (let i = 0; i < n; i++) this.newest[i] = m.vals[i];
        }
      }
    } else if (this.seen[m.step]) { // late, a second copy
      st.dup_received++;
      if (Core.record(this.usedCopy, this.usedHas, n, m.step, m.vals)) st.conflicts++;
    } else { // late
      Core.record(this.usedCopy, this.usedHas, n, m.step, m.vals);
      this.seen[m.step] = 1;
      st.late++;
      if (m.step > this.nstep) {
        this.nstep = m.step;
        for (let i = 0; i < n; i++) this.newest[i] = m.vals[i];
      }
    }
    if (m.step === this.cur && !this.fdone) this.fdone = true; // At = Step, no More: its last delivery for the step
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

  // tick says the deadline of step t passed: the step completes without its input.
  tick(t) {
    if (this.done || this.cur !== t) return;
    this.forced++;
    this.finish();
    this.run();
  }
}

// ---------------------------------------------------------------- the process

// A role's spec says what RoleProcess and main need of it:
//   nats      the nats client module (the role's own: require('nats'))
//   role      'cloud' or 'plant' (file names, messages); self, its sender name ('cloud.0')
//   peer      the one sender it hears ('plant.0'); hear, that sender's kind and subject's last
//             token ('yhat'); width(model), the values per episode it carries
//   send      the kind and subject's last token of what it publishes ('u')
//   usage     the --help text; flags, its own string flags (['sampler'])
//   readPlan(bytes), model(plan, cfg): the plan file read, and the role's model of it
//   Process   RoleProcess or a subclass of it
// A core is made by spec.Core(model, release) and started by core.begin(ep, x0) (x0: the
// episode's explicit x(0) or undefined, for the roles that take one).

// RoleProcess is a role process around its cores: the NATS connection, the coordination
// protocol (ctl.ready, ctl.episode(s), ctl.done, ctl.stop, ctl.result), the data inbox of the
// peer's messages, the coalesced publishing of the cores' releases, the trace and result files.
class RoleProcess {
  constructor(cfg, spec) {
    this.cfg = cfg;
    this.spec = spec;
    this.nats = spec.nats;
    this.self = spec.self;
    this.name = `${spec.role}-${cfg.id}`;
    this.data = new Counters();
    this.ctl = new Counters();
    this.queue = []; // data messages received, not yet handled
    this.qhead = 0;
    this.episodes = []; // validated episode starts
    this.lastEp = -1;
    this.wakeFn = null;
    this.stopWhy = '';
    this.stopByCtl = false;
    this.stopped = false;
    this.slots = [];
    this.group = { first: 0, count: 0, prevFirst: -1, prevCount: 0 };
    this.batch = []; // coalesced releases: {ep, step, vals}
    this.sent = 0; // releases (each one goes on both links)
    this.res = {
      v: 1, run: cfg.run, role: spec.role, id: cfg.id, name: this.name, pid: process.pid, point: cfg.point,
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
    const m = { v: VERSION, run: this.cfg.run, ep, step: 0, from: this.self, sent: nowNanos(), kind, vals };
    this.nc.publish(subject, encodeMessage(m, this.cfg.encoding), hdrs ? { headers: hdrs } : undefined);
  }

  // flush waits for the server's confirmation at most max(--timeout, 10 s) (docs/protocol.md,
  // section 2.1): only a gone server ends it, never a busy machine under a short step timeout.
  async flush() {
    let timer;
    const wait = Math.max(this.cfg.timeout, 10000);
    const t = new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`NATS flush within ${wait}ms: timeout`)), wait); });
    try {
      await Promise.race([this.nc.flush(), t]);
    } finally {
      clearTimeout(timer);
    }
  }

  // useCredentials takes what the role reads of the credentials (c: the --credentials file's
  // variables, or null) besides the NATS user and password.
  useCredentials() {}

  async connectNATS() {
    const cfg = this.cfg;
    let url = cfg.natsURL || process.env.NATS_URL || '';
    if (!url) throw new UsageError('no NATS server: pass --nats-url or set $NATS_URL');
    let user = process.env.DPSIM_NATS_USER || '', pass = process.env.DPSIM_NATS_PASSWORD || '';
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
    let c = null;
    if (cfg.credentials) {
      c = readCredentials(cfg.credentials);
      if (c.DPSIM_NATS_USER) {
        user = c.DPSIM_NATS_USER;
        pass = c.DPSIM_NATS_PASSWORD || '';
      }
      if (c.DPSIM_SIGN_SEED) throw new UsageError(`--credentials carries a signing seed: signed runs (--sign) are not supported by this ${this.spec.role}`);
    }
    this.useCredentials(c);
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
        this.nc = await this.nats.connect(opts);
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
          for (const d of this.lastDone) this.publishMsg(this.subject('ctl', 'done', this.self), 'done', d.ep, d.vals);
        } else if (s.type === 'disconnect') {
          log('warn', 'nats connection', { event: 'disconnected' });
        }
      }
    })().catch(() => {});
  }

  publishReady() {
    this.publishMsg(this.subject('ctl', 'ready', this.self), 'ready', 0, [process.pid, this.digest]);
  }

  // setup subscribes the peer's messages (the data inbox), ctl.episode and ctl.stop.
  setup() {
    this.dataSubject = this.subject(...this.spec.peer.split('.'), this.spec.hear);
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

  // episodeStart completes the start st = {ep, count, private} of ctl.episode(s) message m with
  // what the role reads of it (null: dropped, counted through ctlInvalid).
  episodeStart(st) {
    return st;
  }

  onEpisode(msg) {
    const m = this.ctlMessage(msg, '');
    if (!m) return;
    let st;
    switch (m.kind) {
      case 'episode':
      case 'episode-x0': // its x(0) comes sealed on the challenger's private line (section 7), to the roles that take one
        st = { ep: m.ep, count: 1, private: m.kind === 'episode-x0' };
        break;
      case 'episodes':
      case 'episodes-x0': { // the same, a group: one sealed x(0) per episode, in order
        const v = m.vals.length === 1 ? m.vals[0] : NaN;
        if (!(Number.isInteger(v) && v >= 1 && v <= MAX_INFLIGHT)) {
          this.ctlInvalid(msg.subject, new InvalidError('dim', `ctl.${m.kind} carries [count] in 1..${MAX_INFLIGHT}`));
          return;
        }
        st = { ep: m.ep, count: v, private: m.kind === 'episodes-x0' };
        break;
      }
      default:
        this.ctlInvalid(msg.subject, new InvalidError('kind', `kind ${JSON.stringify(m.kind)} on ctl.episode`));
        return;
    }
    st = this.episodeStart(st, m, msg.subject);
    if (!st) return;
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
          if (this.reannounce) for (const d of this.lastDone) this.publishMsg(this.subject('ctl', 'done', this.self), 'done', d.ep, d.vals);
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

  // playGroup runs episodes st.ep..st.ep+count-1 at once (one core each, started from x0s[k],
  // or st.x0 without x0s), writes their records episode by episode and answers one ctl.done per
  // episode, in order.
  async playGroup(st, x0s) {
    const start = Date.now();
    const g = this.group;
    while (this.slots.length < st.count) {
      this.slots.push(new this.spec.Core(this.model, (ep, step, vals) => this.release(ep, step, vals)));
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
      this.publishMsg(this.subject('ctl', 'done', this.self), 'done', d.ep, d.vals);
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
      const r = routeOf(msg.headers, this.spec.role);
      const n = Math.max(r.episodes, 1);
      const w = this.spec.width(this.model);
      const e = { run: this.cfg.run, episode: g.first, episodes: g.count, steps: this.model.T, dim: w, sender: this.spec.peer, kind: this.spec.hear };
      if (e.episode > 0 && m.ep >= 0 && m.ep < e.episode) { // stale: the cores' to judge
        e.episode = m.ep;
        e.episodes = n;
      }
      validate(m, e, n);
      if (r.to && r.to !== this.self) return [];
      const parts = [];
      for (let i = 0; i < n; i++) parts.push({ ep: m.ep + i, step: m.step, vals: m.vals.slice(i * w, (i + 1) * w) });
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

  // release gathers a core's value of an episode (role.coalescer): sent when the process is
  // about to wait.
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
    const kind = this.spec.send;
    const subject = this.subject(this.spec.role, String(this.cfg.id), kind);
    for (let i = 0; i < es.length;) {
      let j = i + 1;
      while (j < es.length && j - i < MAX_EPISODES && es[j].step === es[i].step && es[j].ep === es[i].ep + (j - i)) j++;
      const vals = [];
      for (let k = i; k < j; k++) vals.push(...es[k].vals);
      const m = { v: VERSION, run: this.cfg.run, ep: es[i].ep, step: es[i].step, from: this.self, sent: nowNanos(), kind, vals };
      let opts;
      if (j - i > 1) {
        const h = this.nats.headers();
        h.set('Dpsim-Episodes', String(j - i));
        opts = { headers: h };
      }
      this.nc.publish(subject, encodeMessage(m, this.cfg.encoding), opts);
      i = j;
    }
  }

  // links is the result's per-link counters: the publisher's (every release on both its
  // links: to the peer and the eavesdropper) and the cores' receive side, sorted by link
  // (sim.MergeLinkStats).
  links() {
    const zero = () => ({ sent: 0, dropped: 0, duplicated: 0, delayed: 0, reordered: 0, expired: 0, delivered: 0, late: 0, dup_received: 0, gaps: 0 });
    const out = [];
    for (const s of [this.spec.peer, 'eavesdropper.0']) out.push({ link: `${this.self}->${s}`, ...zero(), sent: this.sent });
    const rx = { link: `${this.spec.peer}->${this.self}`, ...zero() };
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
        this.nc.publish(this.subject('ctl', 'result', this.self), Buffer.from(data));
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

// main runs the role of spec as a process (the launcher's arguments, environment and files)
// and exits: 0, 1 on a failed run, 2 on a usage error.
async function main(spec) {
  const who = spec.role;
  let cfg;
  try {
    cfg = parseArgs(process.argv.slice(2), spec.usage, spec.flags || []);
    if (!(cfg.logLevel in LEVELS)) throw new UsageError(`unknown log level ${JSON.stringify(cfg.logLevel)}`);
    logLevel = LEVELS[cfg.logLevel];
    if (!cfg.run) throw new UsageError('--run is required');
    if (cfg.scenario) throw new UsageError(`--scenario: this ${who} reads the launcher's --plan file only`);
    if (!cfg.plan) throw new UsageError('--plan is required');
    if (cfg.id !== 0) throw new UsageError(`--id ${cfg.id}: a run has one ${who}, id 0`);
    if (cfg.encoding === 'bin') cfg.encoding = 'binary';
    if (cfg.encoding === '') cfg.encoding = 'json';
    if (cfg.encoding !== 'json' && cfg.encoding !== 'binary') throw new UsageError(`--encoding: unknown encoding ${JSON.stringify(cfg.encoding)} (want json or binary)`);
    if (cfg.signKeys) throw new UsageError(`--sign-keys: signed runs (dpsim run --sign) are not supported by this ${who}`);
    if (cfg.resume) throw new UsageError(`--resume: crashes are not supported by this ${who}`);
    if (cfg.timeout < 1) throw new UsageError('--timeout must be at least 1ms');
  } catch (e) {
    process.stderr.write(`${who}: ${e.message}\n`);
    process.exit(2);
  }
  logCtx = { proc: `${who}-${cfg.id}`, run: cfg.run };
  const proc = new spec.Process(cfg, spec);
  const onSignal = (sig) => proc.stop('signal ' + sig, false);
  process.on('SIGINT', () => onSignal('interrupt'));
  process.on('SIGTERM', () => onSignal('terminated'));
  let runErr = null;
  try {
    const bytes = await loadPlan(cfg);
    const plan = spec.readPlan(bytes);
    checkSupported(cfg, plan, who);
    proc.model = spec.model(plan, cfg);
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
    process.stderr.write(`${who}: ${err.message}\n`);
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

// What the roles use: their cores extend Core, the plant's process RoleProcess; the rest is
// for what each reads and checks itself (the plan, the plant's sealed x(0)).
module.exports = {
  MAX_INFLIGHT,
  Stopped, UsageError, InvalidError,
  log, goJSONNumber, goFormatG,
  decodeMessage, validate,
  checkMatrix,
  Core, RoleProcess, main,
};
