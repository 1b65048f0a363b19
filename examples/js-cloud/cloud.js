#!/usr/bin/env node
// The cloud controller of a dpsim cloud-control run, in JavaScript: a drop-in for
// `dpsim cloud`. It takes the launcher's arguments and environment, speaks the role-process
// protocol over NATS (internal/launch: ctl.ready, ctl.episode(s), ctl.done, ctl.stop,
// ctl.result; pkg/wire: the message encodings and checks) and writes the files the launcher
// merges (procs/cloud-0.trace.jsonl, cloud-0.result.json). Its arithmetic is the Go cloud's
// (pkg/sim CloudCore, pkg/dynamics ObserverController) with the same float64 operations in the
// same order, so a run with it has the Go cloud's metrics and traces bit for bit.
//
// Supported: lockstep runs without link faults or crashes, episodes in flight (ctl.episodes,
// messages carrying several episodes: the Dpsim-Episodes header), json and binary encodings,
// --keep-episodes, TLS (--tls-ca, --tls-cert, --tls-key), credentials from the environment,
// the URL or --credentials. Refused with an error: realtime mode, link faults, partitions,
// crashes, --sign-keys, --resume, --scenario (the launcher always passes --plan).
//
// The role-process plumbing (flags, messages, NATS, the coordination protocol, the files) is
// ../js-role/role.js, shared with the JavaScript plant; this file is what only the cloud does.
'use strict';

const role = require('../js-role/role');
const nats = require('nats');

const { checkMatrix, goJSONNumber } = role;

const USAGE = `Usage: node cloud.js --run ID --plan FILE [--nats-url URL] [--out DIR] [--timeout D] [--encoding json|binary] ...

The cloud controller of a dpsim cloud-control run (the observer-based tracking controller of
eq. (24)) in JavaScript: the same flags, environment ($DPSIM_NATS_USER, $DPSIM_NATS_PASSWORD,
$NATS_URL), protocol and files as 'dpsim cloud', and the same numbers bit for bit. Lockstep runs
without link faults or crashes only; episodes in flight supported. See README.md.
`;

// ---------------------------------------------------------------- the plan file

// readPlan reads what the cloud needs of the plan file the launcher wrote for it (pkg/plan
// WriteFile, format dpsim-plan/2: the scenario's keys in snake_case, durations in ns): every
// read of the file's layout is here.
function readPlan(bytes) {
  const f = JSON.parse(bytes.toString('utf8'));
  if (f.format !== 'dpsim-plan/2') throw new Error(`plan file: format ${JSON.stringify(f.format)}, want "dpsim-plan/2"`);
  const s = f.scenario;
  if (!s) throw new Error('plan file: no scenario');
  if (s.kind !== 'cloud-control') throw new Error(`plan file: scenario kind ${JSON.stringify(s.kind)}: the cloud runs cloud-control scenarios only`);
  const plant = s.plant, ctl = s.controller;
  if (!plant || !ctl) throw new Error('plan file: a cloud-control plan without plant or controller');
  const ref = ctl.reference || {};
  const tr = s.transport || {};
  const faults = s.faults || {};
  return {
    steps: s.steps,
    A: plant.a, B: plant.b, C: plant.c,
    K: f.k, L: f.l, // the gains as resolved (given, or from LQR)
    xhat0: ctl.xhat0 || null,
    reference: { kind: ref.kind || '', value: ref.value || null, before: ref.before || null, after: ref.after || null, at: ref.at || 0 },
    mode: tr.mode || 'lockstep',
    periodMs: (tr.period_ns || 0) / 1e6,
    faults: {
      links: faults.links || [], crashes: faults.crashes || [], partitions: faults.partitions || [],
      serverRestarts: faults.server_restarts || [], proxies: faults.proxies || [],
    },
  };
}

// ---------------------------------------------------------------- the arithmetic

// tanhInt is dynamics.tanhInt: Math.tanh of an integer (V8's fdlibm port gives Go's math.Tanh
// bits for every integer; both saturate to +-1 from 20 on).
function tanhInt(k) {
  if (k >= 20) return 1;
  if (k <= -20) return -1;
  return Math.tanh(k);
}

// referenceOf returns x_r(t) as a function writing into dst (dynamics.Reference).
function referenceOf(r, nx) {
  switch (r.kind) {
    case 'tanh':
      if (nx !== 2) throw new Error(`reference tanh has dimension 2, want nx=${nx}`);
      return (t, dst) => {
        dst[0] = tanhInt(t);
        dst[1] = 1 - Math.abs(tanhInt(t - 9));
      };
    case 'zero':
    case '':
      return (t, dst) => dst.fill(0);
    case 'constant':
      if (!r.value || r.value.length !== nx) throw new Error(`constant reference has dimension ${r.value ? r.value.length : 0}, want nx=${nx}`);
      return (t, dst) => dst.set(r.value);
    case 'step':
      if (!r.before || !r.after || r.before.length !== nx || r.after.length !== nx) throw new Error(`step reference: before and after need ${nx} values`);
      return (t, dst) => dst.set(t < r.at ? r.before : r.after);
  }
  throw new Error(`controller.reference: unknown kind ${JSON.stringify(r.kind)}`);
}

// Model is the controller's constant part: dimensions, A, B, C, K, L row-major, the
// reference (tabulated: it is a pure function of t) and xhat0.
class Model {
  constructor(p) {
    this.T = p.steps;
    if (!(Number.isInteger(this.T) && this.T >= 1)) throw new Error(`plan file: steps ${p.steps} < 1`);
    this.nx = p.A.length;
    this.nu = p.B[0] ? p.B[0].length : 0;
    this.ny = p.C.length;
    const { nx, nu, ny } = this;
    if (nu === 0) throw new Error('observer-controller: the system has no input matrix B');
    this.a = checkMatrix('A', p.A, nx, nx);
    this.b = checkMatrix('B', p.B, nx, nu);
    this.c = checkMatrix('C', p.C, ny, nx);
    this.k = checkMatrix('k', p.K, nu, nx);
    this.l = checkMatrix('l', p.L, nx, ny);
    this.xhat0 = new Float64Array(nx);
    if (p.xhat0) {
      if (p.xhat0.length !== nx) throw new Error(`initial estimate has length ${p.xhat0.length}, want nx=${nx}`);
      this.xhat0.set(p.xhat0);
    }
    const ref = referenceOf(p.reference, nx);
    this.refTab = [];
    this.refAt = (t) => {
      let r = this.refTab[t];
      if (!r) {
        r = new Float64Array(nx);
        ref(t, r);
        this.refTab[t] = r;
      }
      return r;
    };
  }
}

// Core is one episode's cloud: sim.CloudCore over its inputs (role.Core: the deliveries of
// plant.0 filed by step, duplicates, stale copies, the receive-side link counters) and the
// controller's arithmetic (dynamics.ObserverController.stepAny: sums from 0, left to right,
// the same float64 operations in the same order as Go's).
class Core extends role.Core {
  constructor(model, out) {
    super(model, out, model.ny); // out: (ep, step, u) of each u(t) released
    const { nx, nu, ny } = model;
    this.xhat = new Float64Array(nx);
    this.used = new Float64Array(nx);
    this.xn = new Float64Array(nx);
    this.e = new Float64Array(nx);
    this.innov = new Float64Array(ny);
    this.yhat = new Float64Array(ny);
    this.u = new Float64Array(nu);
  }

  begin(ep) {
    super.begin(ep);
    this.xhat.set(this.m.xhat0);
    this.used.set(this.xhat);
  }

  // complete is CloudCore.complete: u(t) from yhat(t), or from the prediction C xhat(t).
  complete() {
    const t = this.cur;
    const { nx, ny, nu } = this.m;
    const yhat = this.yhat;
    if (this.have) {
      for (let i = 0; i < ny; i++) yhat[i] = this.vals[i];
    } else { // predict: yhat = C xhat(t), zero innovation
      const c = this.m.c, xh = this.xhat;
      for (let i = 0; i < ny; i++) {
        let s = 0;
        for (let j = 0; j < nx; j++) s += c[i * nx + j] * xh[j];
        yhat[i] = s;
      }
    }
    this.used.set(this.xhat);
    this.step(t, yhat, this.u);
    this.records.push(`{"episode":${this.ep},"step":${t},"u":[${Array.from(this.u, goJSONNumber).join(',')}],"xhat":[${Array.from(this.used, goJSONNumber).join(',')}]}\n`);
    this.out(this.ep, t, Array.from(this.u));
    void nu;
    return t + 1 === this.m.T;
  }

  // step is ObserverController.stepAny: u = -K (xhat - r), xhat+ = A xhat + B u + L (yhat - C xhat).
  step(t, yhat, u) {
    const { nx, nu, ny, a, b, c, k, l } = this.m;
    const r = this.m.refAt(t);
    const xh = this.xhat, e = this.e, innov = this.innov, xn = this.xn;
    for (let i = 0; i < nx; i++) e[i] = xh[i] - r[i];
    for (let j = 0; j < nu; j++) {
      let acc = 0;
      for (let i = 0; i < nx; i++) acc += k[j * nx + i] * e[i];
      u[j] = -acc;
    }
    for (let i = 0; i < ny; i++) {
      let acc = yhat[i];
      for (let j = 0; j < nx; j++) acc -= c[i * nx + j] * xh[j];
      innov[i] = acc;
    }
    for (let i = 0; i < nx; i++) {
      let acc = 0;
      for (let j = 0; j < nx; j++) acc += a[i * nx + j] * xh[j];
      for (let j = 0; j < nu; j++) acc += b[i * nu + j] * u[j];
      for (let j = 0; j < ny; j++) acc += l[i * ny + j] * innov[j];
      xn[i] = acc;
    }
    xh.set(xn);
  }
}

// ---------------------------------------------------------------- the process

// ROLE is the cloud to role.js: it hears plant.0's yhat and publishes u.
const ROLE = {
  nats, role: 'cloud', self: 'cloud.0', peer: 'plant.0', hear: 'yhat', width: (m) => m.ny, send: 'u',
  usage: USAGE, readPlan, model: (plan) => new Model(plan), Core, Process: role.RoleProcess,
};

if (require.main === module) {
  role.main(ROLE);
} else {
  module.exports = { Core, Model, readPlan, goFormatG: role.goFormatG, goJSONNumber }; // for checks of the arithmetic
}
