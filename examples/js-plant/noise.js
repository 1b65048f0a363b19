// The noise of dpsim, from docs/protocol.md section 12 alone: the streams (12.1), the float
// sampler of the demonstrations (12.2), the exact secure samplers and the exact rounding
// (12.3). Given the same run seed and path it draws what dpsim's Go code draws, digit for digit,
// and rounds to the same float64 values (vectors/ and the tests beside this file check it).
'use strict';

const crypto = require('crypto');
const { ChaCha8 } = require('./chacha8rand');

// ---------------------------------------------------------------- 12.1 streams

const MASK64 = (1n << 64n) - 1n;
const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;

// label is Label(name): the 64-bit FNV-1a hash of the name's UTF-8 bytes, a BigInt.
function label(name) {
  let h = FNV_OFFSET;
  for (const b of Buffer.from(name, 'utf8')) {
    h ^= BigInt(b);
    h = (h * FNV_PRIME) & MASK64;
  }
  return h;
}

// u64 reads a uint64 given as a BigInt, a safe integer or a decimal string, checking its range.
function u64(v) {
  const b = typeof v === 'bigint' ? v : BigInt(v);
  if (b < 0n || b > MASK64) throw new RangeError(`${v} is not a uint64`);
  return b;
}

// noiseKey is the stream key SHA-256("dpsim/noise/v1" || LE64(seed) || LE64(p_1) || ...).
function noiseKey(seed, path) {
  const b = Buffer.alloc(14 + 8 * (1 + path.length));
  b.write('dpsim/noise/v1', 0, 'ascii');
  b.writeBigUInt64LE(u64(seed), 14);
  path.forEach((p, i) => b.writeBigUInt64LE(u64(p), 22 + 8 * i));
  return crypto.createHash('sha256').update(b).digest();
}

// newStream is the stream of (seed, path): ChaCha8Rand keyed by noiseKey.
function newStream(seed, path) {
  return new ChaCha8(noiseKey(seed, path));
}

// The streams' paths (12.1): the plant's noise of episode e, agent i's, and the restarts that
// redraw.
const LABEL_PLANT = label('plant');
const LABEL_AGENT = label('agent');
const plantPath = (e) => [LABEL_PLANT, 0n, BigInt(e)];
const agentPath = (i, e) => [LABEL_AGENT, BigInt(i), BigInt(e)];

// ---------------------------------------------------------------- 12.2 the float sampler

// Go's math/rand/v2 ziggurat (Marsaglia and Tsang), its tables as Go holds them (float32 bit
// patterns: Go rounds the decimal literals to float32 once; JavaScript would round twice).
const KN = [
  0x76ad2212, 0x00000000, 0x600f1b53, 0x6ce447a6, 0x725b46a2, 0x7560051d, 0x774921eb, 0x789a25bd,
  0x799045c3, 0x7a4bce5d, 0x7adf629f, 0x7b5682a6, 0x7bb8a8c6, 0x7c0ae722, 0x7c50cce7, 0x7c8cec5b,
  0x7cc12cd6, 0x7ceefed2, 0x7d177e0b, 0x7d3b8883, 0x7d5bce6c, 0x7d78dd64, 0x7d932886, 0x7dab0e57,
  0x7dc0dd30, 0x7dd4d688, 0x7de73185, 0x7df81cea, 0x7e07c0a3, 0x7e163efa, 0x7e23b587, 0x7e303dfd,
  0x7e3beec2, 0x7e46db77, 0x7e51155d, 0x7e5aabb3, 0x7e63abf7, 0x7e6c222c, 0x7e741906, 0x7e7b9a18,
  0x7e82adfa, 0x7e895c63, 0x7e8fac4b, 0x7e95a3fb, 0x7e9b4924, 0x7ea0a0ef, 0x7ea5b00d, 0x7eaa7ac3,
  0x7eaf04f3, 0x7eb3522a, 0x7eb765a5, 0x7ebb4259, 0x7ebeeafd, 0x7ec2620a, 0x7ec5a9c4, 0x7ec8c441,
  0x7ecbb365, 0x7ece78ed, 0x7ed11671, 0x7ed38d62, 0x7ed5df12, 0x7ed80cb4, 0x7eda175c, 0x7edc0005,
  0x7eddc78e, 0x7edf6ebf, 0x7ee0f647, 0x7ee25ebe, 0x7ee3a8a9, 0x7ee4d473, 0x7ee5e276, 0x7ee6d2f5,
  0x7ee7a620, 0x7ee85c10, 0x7ee8f4cd, 0x7ee97047, 0x7ee9ce59, 0x7eea0eca, 0x7eea3147, 0x7eea3568,
  0x7eea1aab, 0x7ee9e071, 0x7ee98602, 0x7ee90a88, 0x7ee86d08, 0x7ee7ac6a, 0x7ee6c769, 0x7ee5bc9c,
  0x7ee48a67, 0x7ee32efc, 0x7ee1a857, 0x7edff42f, 0x7ede0ffa, 0x7edbf8d9, 0x7ed9ab94, 0x7ed7248d,
  0x7ed45fae, 0x7ed1585c, 0x7ece095f, 0x7eca6ccb, 0x7ec67be2, 0x7ec22eee, 0x7ebd7d1a, 0x7eb85c35,
  0x7eb2c075, 0x7eac9c20, 0x7ea5df27, 0x7e9e769f, 0x7e964c16, 0x7e8d44ba, 0x7e834033, 0x7e781728,
  0x7e6b9933, 0x7e5d8a1a, 0x7e4d9ded, 0x7e3b737a, 0x7e268c2f, 0x7e0e3ff5, 0x7df1aa5d, 0x7dcf8c72,
  0x7da61a1e, 0x7d72a0fb, 0x7d30e097, 0x7cd9b4ab, 0x7c600f1a, 0x7ba90bdc, 0x7a722176, 0x77d664e5,
];
// wn and fn as float32 bit patterns
const WN_BITS = [
  0x30eda334, 0x2f0b6da4, 0x2f39ca49, 0x2f5a647f, 0x2f7472bb, 0x2f8549b7, 0x2f8f0673, 0x2f97cc6b,
  0x2f9fd5f7, 0x2fa74a60, 0x2fae457f, 0x2fb4dbd9, 0x2fbb1d0b, 0x2fc11543, 0x2fc6ce35, 0x2fcc4fc3,
  0x2fd1a069, 0x2fd6c593, 0x2fdbc3d4, 0x2fe09f16, 0x2fe55ab5, 0x2fe9f9a0, 0x2fee7e66, 0x2ff2eb48,
  0x2ff74247, 0x2ffb852c, 0x2fffb591, 0x3001ea74, 0x3003f23f, 0x3005f2c2, 0x3007ec89, 0x3009e012,
  0x300bcdd4, 0x300db63a, 0x300f99aa, 0x30117880, 0x30135314, 0x301529b8, 0x3016fcb8, 0x3018cc5d,
  0x301a98ec, 0x301c62a4, 0x301e29c3, 0x301fee85, 0x3021b120, 0x302371cc, 0x302530bb, 0x3026ee1f,
  0x3028aa28, 0x302a6506, 0x302c1ee4, 0x302dd7f1, 0x302f9055, 0x3031483d, 0x3032ffd1, 0x3034b73b,
  0x30366ea2, 0x3038262f, 0x3039de0a, 0x303b965b, 0x303d4f48, 0x303f08fa, 0x3040c398, 0x30427f4a,
  0x30443c39, 0x3045fa8e, 0x3047ba71, 0x30497c0d, 0x304b3f8d, 0x304d051c, 0x304ecce7, 0x3050971c,
  0x305263ea, 0x30543382, 0x30560616, 0x3057dbda, 0x3059b504, 0x305b91cb, 0x305d726a, 0x305f571e,
  0x30614027, 0x30632dc6, 0x30652042, 0x306717e6, 0x306914fd, 0x306b17db, 0x306d20d5, 0x306f304a,
  0x3071469a, 0x3073642d, 0x30758975, 0x3077b6e7, 0x3079ed05, 0x307c2c58, 0x307e7576, 0x3080647f,
  0x308193d1, 0x3082c90f, 0x308404a0, 0x308546f7, 0x3086908f, 0x3087e1f2, 0x30893bb9, 0x308a9e8b,
  0x308c0b26, 0x308d825c, 0x308f051a, 0x3090946f, 0x3092318c, 0x3093ddd1, 0x30959ad5, 0x30976a70,
  0x30994ecc, 0x309b4a7a, 0x309d608e, 0x309f94c2, 0x30a1ebae, 0x30a46b0c, 0x30a71a2b, 0x30aa0290,
  0x30ad30f7, 0x30b0b700, 0x30b4ae16, 0x30b93cef, 0x30bea2f6, 0x30c5539f, 0x30ce4706, 0x30dc53e2,
];
const FN_BITS = [
  0x3f800000, 0x3f76ae78, 0x3f6fb039, 0x3f69bd3a, 0x3f646c92, 0x3f5f8cdb, 0x3f5b0216, 0x3f56ba86,
  0x3f52aa0c, 0x3f4ec7f0, 0x3f4b0da6, 0x3f47761e, 0x3f43fd53, 0x3f40a003, 0x3f3d5b7d, 0x3f3a2d82,
  0x3f37142b, 0x3f340dd6, 0x3f311918, 0x3f2e34b7, 0x3f2b5f9d, 0x3f2898d4, 0x3f25df84, 0x3f2332e7,
  0x3f20924f, 0x3f1dfd1c, 0x3f1b72bd, 0x3f18f2b1, 0x3f167c7d, 0x3f140fb5, 0x3f11abf3, 0x3f0f50d9,
  0x3f0cfe12, 0x3f0ab34c, 0x3f08703e, 0x3f0634a1, 0x3f040036, 0x3f01d2c0, 0x3eff580d, 0x3efb17a7,
  0x3ef6e3ec, 0x3ef2bc7d, 0x3eeea102, 0x3eea9128, 0x3ee68ca0, 0x3ee29320, 0x3edea460, 0x3edac01e,
  0x3ed6e61c, 0x3ed3161b, 0x3ecf4fe5, 0x3ecb9342, 0x3ec7dffe, 0x3ec435e9, 0x3ec094d4, 0x3ebcfc92,
  0x3eb96cf8, 0x3eb5e5de, 0x3eb2671e, 0x3eaef092, 0x3eab8216, 0x3ea81b8a, 0x3ea4bccc, 0x3ea165bf,
  0x3e9e1644, 0x3e9ace41, 0x3e978d98, 0x3e945432, 0x3e9121f5, 0x3e8df6cb, 0x3e8ad29c, 0x3e87b554,
  0x3e849ede, 0x3e818f27, 0x3e7d0c3a, 0x3e77075b, 0x3e710f91, 0x3e6b24bc, 0x3e6546c0, 0x3e5f757f,
  0x3e59b0df, 0x3e53f8c8, 0x3e4e4d22, 0x3e48add7, 0x3e431ad5, 0x3e3d9407, 0x3e38195e, 0x3e32aaca,
  0x3e2d483e, 0x3e27f1ad, 0x3e22a70d, 0x3e1d6855, 0x3e18357f, 0x3e130e85, 0x3e0df364, 0x3e08e41b,
  0x3e03e0aa, 0x3dfdd226, 0x3df3fab7, 0x3dea3b16, 0x3de09356, 0x3dd7038f, 0x3dcd8bdf, 0x3dc42c6b,
  0x3dbae55f, 0x3db1b6eb, 0x3da8a14c, 0x3d9fa4c4, 0x3d96c1a1, 0x3d8df83b, 0x3d8548f8, 0x3d79689a,
  0x3d68757b, 0x3d57b9c6, 0x3d4736da, 0x3d36ee4f, 0x3d26e1fe, 0x3d171416, 0x3d07872a, 0x3cf07ca9,
  0x3cd27abd, 0x3cb511fd, 0x3c984e77, 0x3c788042, 0x3c41fa5f, 0x3c0d4db6, 0x3bb5d458, 0x3b2ef4f2,
];

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const fromBits = (b) => {
  u32[0] = b;
  return f32[0];
};
const WN = WN_BITS.map(fromBits);
const FN = FN_BITS.map(fromBits);
const RN = 3.442619855899;
const INV_RN = 1.0 / RN; // Go's constant 1.0 / rn: the same float64 (vectors check the draws)
const fr = Math.fround;

// normFloat64 is rand.New(c).NormFloat64(). float32 arithmetic is float64 arithmetic rounded
// to float32 after every operation (exact: a float32 product or sum rounded once from float64
// is the float32 operation's result). math.Log is goLog; math.Exp is Math.exp, which may differ
// from Go's in the last bit - read only through a float32 rounding, in the wedges (about 1 draw
// in 100), where one such bit changes the float32 once in about 2^29.
function normFloat64(c) {
  for (;;) {
    c.next();
    const j = c.lo | 0; // int32(u)
    const i = c.hi & 0x7f; // u >> 32 & 0x7F
    const x = j * WN[i];
    if (Math.abs(j) < KN[i]) return x;
    if (i === 0) {
      let t;
      for (;;) {
        t = -goLog(c.float64()) * INV_RN;
        const y = -goLog(c.float64());
        if (y + y >= t * t) break;
      }
      return j > 0 ? RN + t : -RN - t;
    }
    if (fr(FN[i] + fr(fr(c.float64()) * fr(FN[i - 1] - FN[i]))) < fr(Math.exp(-0.5 * x * x))) return x;
  }
}

// goLog is Go's math.Log on amd64 (math/log_amd64.s; the algorithm of FreeBSD's e_log.c that
// math/log.go holds too), operation for operation: V8's Math.log, another fdlibm port, differs
// from it in the last bit for about one argument in eight, which the float sampler's Laplace
// would publish. Arguments here are normal positive float64s (2U, 2(1-U), U of Float64()).
const LN2_HI = 6.93147180369123816490e-01;
const LN2_LO = 1.90821492927058770002e-10;
const L1 = 6.666666666666735130e-01;
const L2 = 3.999999999940941908e-01;
const L3 = 2.857142874366239149e-01;
const L4 = 2.222219843214978396e-01;
const L5 = 1.818357216161805012e-01;
const L6 = 1.531383769920937332e-01;
const L7 = 1.479819860511658591e-01;
const HSQRT2 = 7.07106781186547524401e-01;
const ldv = new DataView(new ArrayBuffer(8));
function goLog(x) {
  if (!(x > 0) || x === Infinity || x < 2.2250738585072014e-308) return Math.log(x); // not reached here
  ldv.setFloat64(0, x);
  const hi = ldv.getUint32(0);
  let k = ((hi >>> 20) & 0x7ff) - 0x3fe;
  ldv.setUint32(0, (hi & 0x800fffff) | 0x3fe00000); // f1 in [1/2, 1): Frexp's fraction
  let f1 = ldv.getFloat64(0);
  if (!(HSQRT2 < f1)) { // the assembly's test: f1 <= sqrt(2)/2
    k -= 1;
    f1 *= 2;
  }
  const f = f1 - 1;
  const s = f / (2 + f);
  const s2 = s * s;
  const s4 = s2 * s2;
  const t1 = s2 * (L1 + s4 * (L3 + s4 * (L5 + s4 * L7)));
  const t2 = s4 * (L2 + s4 * (L4 + s4 * L6));
  const R = t1 + t2;
  const hfsq = 0.5 * f * f;
  return k * LN2_HI - ((hfsq - (s * (hfsq + R) + k * LN2_LO)) - f);
}

// laplaceFloat is noise.SampleLaplace(r, 1): ln(2U) for U < 1/2, -ln(2(1-U)) otherwise, U =
// Float64() redrawn while 0.
function laplaceFloat(c) {
  let u = c.float64();
  while (u === 0) u = c.float64();
  if (u < 0.5) return 1 * goLog(2 * u);
  return -1 * goLog(2 * (1 - u));
}

// ---------------------------------------------------------------- 12.3 the secure samplers

// A Uniform is U in (0, 1), 0.d_1 d_2 ... in base 2^32: its digits drawn so far.
// An Exact is a sample (-1)^neg (k + x): {neg, k, x} with x a Uniform (an array of digits).

const TWO31 = 0x80000000;

// ExactSampler draws exact standard normals and Laplaces from a stream's digits, the high 32
// bits of each uint64: only comparisons of digits and uniform integers, no floating point.
class ExactSampler {
  constructor(stream) {
    this.src = stream;
    this.digits = 0; // digits drawn (for tests)
  }

  digit() {
    this.digits++;
    return this.src.uint32hi();
  }

  // get returns digit j (0-based) of u, drawing the digits up to j first.
  get(u, j) {
    while (u.length <= j) u.push(this.digit());
    return u[j];
  }

  // less is x < y: digit by digit, x's digit j drawn before y's, up to the first difference.
  less(x, y) {
    for (let j = 0; ; j++) {
      const a = this.get(x, j);
      const b = this.get(y, j);
      if (a !== b) return a < b;
    }
  }

  // choose is a uniform integer in [0, m): limit = floor(2^32 / m) m, digits drawn until one is
  // below it, reduced mod m.
  choose(m) {
    const limit = Math.floor(4294967296 / m) * m;
    for (;;) {
      const d = this.digit();
      if (d < limit) return d % m;
    }
  }

  // bit is the top bit of a fresh digit.
  bit() {
    return this.digit() >= TWO31;
  }

  // h is true with probability exp(-1/2) (von Neumann).
  h() {
    let p = [];
    if (!(this.get(p, 0) < TWO31)) return true; // not p < 1/2
    for (;;) {
      const q = [];
      if (!this.less(q, p)) return false;
      p = [];
      if (!this.less(p, q)) return true;
    }
  }

  // b is B(k, x): true with probability exp(-x(x+2k)/(2k+2)) (Karney).
  b(k, x) {
    let prev = x;
    let n = 0;
    const m = 2 * k + 2;
    for (;;) {
      const u = [];
      if (!this.less(u, prev)) break;
      const c = this.choose(m);
      if (c === 2 * k + 1) break;
      if (c === 2 * k) {
        const v = [];
        if (!this.less(v, x)) break;
      }
      n++;
      prev = u;
    }
    return n % 2 === 0;
  }

  // e is E(x): true with probability exp(-x) (von Neumann).
  e(x) {
    let prev = x;
    let n = 0;
    for (;;) {
      const u = [];
      if (!this.less(u, prev)) break;
      n++;
      prev = u;
    }
    return n % 2 === 0;
  }

  // normal is an exact standard normal (Karney's Algorithm N).
  normal() {
    for (;;) {
      let k = 0;
      while (this.h()) k++;
      let ok = true;
      for (let i = 0; i < k * (k - 1); i++) {
        if (!this.h()) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      const x = [];
      for (let i = 0; i <= k; i++) {
        if (!this.b(k, x)) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      return { neg: this.bit(), k, x };
    }
  }

  // laplace is an exact standard Laplace (density exp(-|v|)/2; von Neumann's exponential).
  laplace() {
    let k = 0;
    let x;
    for (;;) {
      x = [];
      if (this.e(x)) break;
      k++;
    }
    return { neg: this.bit(), k, x };
  }

  // sample is normal() or laplace() by mechanism name.
  sample(mechanism) {
    return mechanism === 'laplace' ? this.laplace() : this.normal();
  }

  // round is round_g(v), g = 2^G, of the exact real v = sum_i ab[2i] ab[2i+1] + sum_j coef[j]
  // samples[j], drawing one more digit of every sample with coef[j] != 0, in the order of j,
  // while the open interval that holds v holds a point of g (Z + 1/2). It returns a float64.
  round(G, ab, coef, samples) {
    if (ab.length % 2 !== 0 || coef.length !== samples.length) throw new Error('noise: round: malformed terms');
    for (let r = 0; ; r++) {
      const w = decide(G, ab, coef, samples);
      if (w !== null) return w;
      if (r === MAX_REFINE) throw new Error(`noise: exact rounding undecided after ${MAX_REFINE} refinements`);
      for (let j = 0; j < samples.length; j++) {
        if (coef[j] !== 0) this.get(samples[j].x, samples[j].x.length);
      }
    }
  }
}

const MAX_REFINE = 64; // as dpsim: an interval still undecided after that many digits is a bug

// dyadic returns a finite float64 as [m, e], its value m 2^e exactly (m a BigInt).
const dv = new DataView(new ArrayBuffer(8));
function dyadic(v) {
  if (!Number.isFinite(v)) throw new RangeError(`noise: ${v} is not finite`);
  dv.setFloat64(0, v);
  const hi = dv.getUint32(0), lo = dv.getUint32(4);
  const bexp = (hi >>> 20) & 0x7ff;
  let m = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let e;
  if (bexp === 0) {
    e = -1074;
  } else {
    m |= 1n << 52n;
    e = bexp - 1075;
  }
  return [hi >>> 31 ? -m : m, e];
}

function floorDiv(a, b) { // b > 0
  const q = a / b;
  return a % b !== 0n && a < 0n ? q - 1n : q;
}

function ceilDiv(a, b) { // b > 0
  const q = a / b;
  return a % b !== 0n && a > 0n ? q + 1n : q;
}

// decide is the exact rule of 12.3 on the digits drawn so far: g floor(lo/g + 1/2) when no point
// of g (Z + 1/2) lies in the open interval (lo, hi) that holds v, else null.
function decide(G, ab, coef, samples) {
  const terms = []; // [lo, hi, e]: an interval [lo 2^e, hi 2^e] (lo = hi for an exact term)
  for (let i = 0; i < ab.length; i += 2) {
    const [m1, e1] = dyadic(ab[i]);
    const [m2, e2] = dyadic(ab[i + 1]);
    const p = m1 * m2;
    terms.push([p, p, e1 + e2]);
  }
  for (let j = 0; j < samples.length; j++) {
    if (coef[j] === 0) continue;
    const s = samples[j];
    const n = s.x.length;
    let xv = BigInt(s.k); // k + X in units of 2^(-32 n)
    for (const d of s.x) xv = (xv << 32n) | BigInt(d);
    let x0 = xv, x1 = xv + 1n;
    if (s.neg) [x0, x1] = [-x1, -x0];
    const [mc, ec] = dyadic(coef[j]);
    let p0 = mc * x0, p1 = mc * x1;
    if (p0 > p1) [p0, p1] = [p1, p0];
    terms.push([p0, p1, ec - 32 * n]);
  }
  let e = G - 1;
  for (const t of terms) e = Math.min(e, t[2]);
  let lo = 0n, hi = 0n;
  for (const [a, b, te] of terms) {
    const sh = BigInt(te - e);
    lo += a << sh;
    hi += b << sh;
  }
  // in units of 2^e: g = 2^(G-e), g/2 = 2^(G-1-e); a = lo/g + 1/2, b = hi/g + 1/2
  const g = 1n << BigInt(G - e);
  const half = g >> 1n;
  const fa = floorDiv(lo + half, g);
  const cb = ceilDiv(hi + half, g);
  if (cb - fa > 1n) return null; // an integer lies strictly between a and b: undecided
  if (fa > 1n << 53n || fa < -(1n << 53n)) throw new RangeError(`noise: exact rounding: ${fa} grid steps is not exact in float64`);
  return Number(fa) * 2 ** G;
}

// granularityExp is G = floor(log2 s) - 20 for the smallest noise scale s > 0 (12.3): g = 2^G.
function granularityExp(s) {
  if (!(s > 0) || !Number.isFinite(s)) throw new RangeError(`noise: scale ${s}: no granularity`);
  const [m, e] = dyadic(s);
  return e + m.toString(2).length - 1 - 20;
}

// value is the sample's value to float64 precision (for reports only: a sample is no float64).
function value(s) {
  let v = s.k;
  let scale = 2 ** -32;
  for (let j = 0; j < s.x.length && j < 3; j++) {
    v += s.x[j] * scale;
    scale *= 2 ** -32;
  }
  v += scale / 2;
  return s.neg ? -v : v;
}

module.exports = {
  label, noiseKey, newStream, plantPath, agentPath, LABEL_PLANT, LABEL_AGENT,
  normFloat64, laplaceFloat, goLog, ExactSampler, decide, dyadic, granularityExp, value,
};
