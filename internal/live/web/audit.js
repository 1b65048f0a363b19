// The live view of a dpsim audit: reads /events (Server-Sent Events of the audit's state) and
// draws the progress, the lower bounds on eps against the trials so far beside the claim, the
// empirical trade-off curve against the claim's, and the verdict at the end.
// window.dpsimAudit holds what was drawn (the browser test reads it).
"use strict";

const view = window.dpsimAudit = { state: null, events: 0, ended: false, point: -1, bounds: 0, evidence: 0, empirical: 0, claim: 0, gdp: 0, plots: {} };

function g4(v) { return v === null || v === undefined ? "-" : Number(v).toPrecision(4); }

function last(a) { return a && a.length ? a[a.length - 1] : null; }

// boundKeys are a point's lower bounds on eps: the keys of its bounds other than trials, one
// per row of the audit's table (audit.Bounds), in its order - the page names none of them.
function boundKeys(p) { return Object.keys(p.bounds).filter((k) => k !== "trials"); }

// absent: the point's audit does not compute bound k (a pure-eps claim has no Gaussian-DP
// bound): the hub writes null for every one of its values.
function absent(p, k) { const s = p.bounds[k]; return s.length > 0 && s.every((v) => v === null); }

// BOUND_COLORS are the palette indices of the bounds, in the table's order (1 is the claim's).
const BOUND_COLORS = [0, 3, 4, 5, 6, 8, 9];

// current is the point shown: the one in progress, or the last one once every point ended.
function current(st) { return st.points[Math.min(st.point, st.points.length - 1)]; }

function renderProgress(st) {
  $("title").textContent = "dpsim audit " + st.scenario + " (" + st.kind + ", " + st.engine + " engine" + (st.dispatch ? " on workers" : "") + ")";
  const s = $("status");
  s.textContent = st.status;
  s.className = "status " + st.status;
  const frac = st.trials_total > 0 ? st.trials_done / st.trials_total : 0;
  $("bar").style.width = (100 * frac).toFixed(1) + "%";
  let text = st.trials_done + " / " + st.trials_total + " trials (" + (100 * frac).toFixed(0) + "%), " +
    Math.round(st.rate_per_sec) + " trials/s, elapsed " + fmtSec(st.elapsed_sec);
  if (st.status === "running") text += ", time left " + fmtSec(st.remaining_sec);
  if (st.points.length > 1) text += " - point " + (st.point + 1) + " of " + st.points.length + " (" + current(st).name + ")";
  if (st.error) text += " - " + st.error;
  $("progress").textContent = text;
  const p = current(st);
  let claim = "Claim: eps = " + g4(p.epsilon_claimed) + ", delta = " + g4(p.delta) + ", " + p.mechanism;
  if (p.episodes_per_trial > 1) claim += "; " + p.episodes_per_trial + " episodes per trial: composed eps_run = " + g4(p.epsilon_claimed_run) + " (the verdict's)";
  claim += ". Joint confidence " + st.confidence + ", " + st.selection + " threshold selection.";
  if (!st.live) claim += " The trials are played by workers: the bounds come at the end of each point.";
  $("claim").textContent = claim;
}

function renderVerdict(st) {
  const done = st.points.filter((p) => p.final);
  if (done.length === 0) return;
  const v = $("verdict");
  v.textContent = done.map((p) => (st.points.length > 1 ? p.name + ": " : "") + p.verdict_line).join(" ");
  v.className = "";
  if (st.verdict) {
    $("verdict-title").textContent = "Verdict: " + st.verdict.toUpperCase();
    $("verdict-title").style.color = st.verdict === "violation" ? PALETTE[1] : PALETTE[2];
  }
}

// drawPlot draws (or updates) plot id: x values and lines [{label, color, dash, values, points}],
// the y range yRange ([min, max]; null: uPlot's), side by side with the page's other plot, axes
// whose labels fit (common.js).
function drawPlot(id, title, xlabel, ylabel, x, lines, xRange, yRange) {
  const key = lines.map((l) => l.label).join("|");
  let p = view.plots[id];
  if (p && p.key !== key) {
    unlay(p.u);
    p.u.destroy();
    p.div.remove();
    p = null;
  }
  const data = [x].concat(lines.map((l) => l.values));
  if (!p) {
    const div = document.createElement("div");
    div.className = "plot";
    div.id = "plot-" + id;
    const h = document.createElement("h3");
    div.appendChild(h);
    $("plots").appendChild(div);
    const scale = (r) => (r ? { range: () => view.plots[id].ranges[r] } : {});
    const opts = {
      width: plotWidth($("plots"), 2), height: 280,
      padding: [xPadding, xPadding, xPadding, xPadding],
      scales: { x: Object.assign({ time: false }, scale(xRange && "x")), y: scale(yRange && "y") },
      axes: [linearAxis("x", xlabel), linearAxis("y", ylabel)],
      series: [{ label: xlabel }].concat(lines.map((l) => ({ label: l.label, stroke: l.color, width: 1.5, dash: l.dash, spanGaps: true,
        points: { show: !!l.points, size: 5 } }))),
    };
    p = view.plots[id] = { key, div, ranges: { x: xRange, y: yRange }, u: null };
    p.u = new uPlot(opts, data, div);
    layOut(p.u, $("plots"), 2);
  } else {
    p.ranges = { x: xRange, y: yRange };
    p.u.setData(data);
  }
  p.div.querySelector("h3").textContent = title;
}

function renderBounds(st, p) {
  const b = p.bounds;
  const x = b.trials;
  const claim = x.map(() => p.epsilon_claimed_run);
  const lines = [];
  boundKeys(p).forEach((k, i) => {
    if (!absent(p, k)) lines.push({ label: k, color: PALETTE[BOUND_COLORS[i]], values: b[k], points: true });
  });
  lines.push({ label: "claimed eps" + (p.episodes_per_trial > 1 ? "_run" : ""), color: PALETTE[1], dash: [6, 4], values: claim });
  const title = "Lower bounds on eps against the trials so far (" + (p.final ? "last point: the result" : "intermediate: not a verdict") + ")";
  // from 0 to above the bounds and the claim (which must show: the bounds are compared with it)
  const top = Math.max(p.epsilon_claimed_run, ...lines.flatMap((l) => l.values).filter((v) => v !== null && isFinite(v)));
  drawPlot("bounds", title, "trials (both bits)", "eps", x, lines, null, [0, top * 1.08 || 1]);
  view.bounds = x.length;
}

// renderEvidence draws the sequential test's running evidence (--sequential): each family's
// ln e-value of the claim against the pairs, with its rejection line ln(1/alpha). Unlike the
// fixed-size bounds, this may be watched and stopped on: Ville's inequality holds at every look.
function renderEvidence(st, p) {
  const q = p.sequential;
  const box = $("evidence");
  if (!q) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  const x = q.history.map((l) => l.pairs);
  const lines = [];
  q.families.forEach((f, i) => {
    lines.push({ label: f.name + ": ln e of the claim", color: PALETTE[BOUND_COLORS[i]], values: q.history.map((l) => l.log_e[i]), points: true });
    lines.push({ label: f.name + ": ln(1/alpha)", color: PALETTE[BOUND_COLORS[i]], dash: [6, 4], values: x.map(() => f.log_threshold) });
  });
  const vals = lines.flatMap((l) => l.values).filter((v) => v !== null && isFinite(v));
  drawPlot("evidence", "Sequential evidence: the claim is rejected when a family's ln e reaches its line", "trials per side", "ln e-value", x, lines,
    null, [Math.max(-10, Math.min(0, ...vals)), Math.max(...vals) * 1.1 || 1]);
  const stop = q.stopped_because ? "stopped (" + q.stopped_because + ") after " : "running: ";
  $("evidence-note").textContent = stop + q.trials_used.bit0 + " trials per side, " + q.looks + " looks; " +
    q.families.map((f) => f.name + " e-value " + g4(Math.exp(f.log_e)) + " of 1/alpha = " + g4(Math.exp(f.log_threshold)) +
      ", eps_lb " + g4(f.epsilon_lb)).join("; ") + (q.target ? "; target " + g4(q.target) + " eps" : "") + ".";
  view.evidence = x.length;
}

// union merges the x values of several curves (each {fpr, fnr}, in any order) into one sorted
// axis and returns it with each curve's values on it (null where a curve has no point): the
// lowest FNR where a curve has several at the same FPR.
function union(curves) {
  const xs = Array.from(new Set(curves.flatMap((c) => c.fpr))).sort((a, b) => a - b);
  const at = new Map(xs.map((v, i) => [v, i]));
  const ys = curves.map((c) => {
    const y = xs.map(() => null);
    c.fpr.forEach((f, i) => {
      const k = at.get(f);
      const v = c.fnr[i];
      if (v !== null && (y[k] === null || v < y[k])) y[k] = v;
    });
    return y;
  });
  return { xs, ys };
}

function renderTradeoff(st, p) {
  // the empirical curve first: the claim's dashed curves are drawn over it (a tight audit's
  // curve lies on the claim's mu-GDP curve)
  const curves = [{ fpr: p.curve.fpr || [], fnr: p.curve.fnr || [] }, { fpr: p.claim.fpr, fnr: p.claim.fnr }];
  const lines = [{ label: "empirical" + (p.score ? " (" + p.score + ")" : ""), color: PALETTE[0] },
    { label: "claim (eps, delta) boundary", color: PALETTE[1], dash: [6, 4] }];
  if (p.claim.fnr_gdp && p.claim.fnr_gdp.length) {
    curves.push({ fpr: p.claim.fpr, fnr: p.claim.fnr_gdp });
    lines.push({ label: "claim mu-GDP (mu " + g4(p.mu_claimed) + ")", color: PALETTE[3], dash: [2, 3] });
  }
  const u = union(curves);
  lines.forEach((l, i) => { l.values = u.ys[i]; });
  drawPlot("tradeoff", "Empirical trade-off (FNR against FPR) against the claim's: below the claim's boundary is forbidden",
    "FPR = P(guess x' | x)", "FNR", u.xs, lines, [0, 1], [0, 1]);
  view.claim = p.claim.fpr.length;
  view.gdp = (p.claim.fnr_gdp || []).length;
  view.empirical = (p.curve.fpr || []).length;
}

function renderPlots(st) {
  const p = current(st);
  view.point = st.points.indexOf(p);
  const n = p.bounds.trials.length;
  let note = n === 0 ? (p.note || "No bounds yet.") : n + " updates shown, the latest from " + last(p.bounds.trials) + " trials: " +
    boundKeys(p).filter((k) => !absent(p, k)).map((k) => k + " " + g4(last(p.bounds[k]))).join(", ") +
    " (claimed " + g4(p.epsilon_claimed_run) + ")" + (p.final ? ", the result." : ", not a verdict.");
  if (p.analysis_sec > 0) note += " Last recomputation " + (1000 * p.analysis_sec).toFixed(0) + " ms.";
  $("plots-note").textContent = note;
  if (st.points.length > 1) $("plots-title").textContent = "Lower bounds and trade-off: " + p.name;
  if (n > 0) {
    renderBounds(st, p);
    renderTradeoff(st, p);
  }
  renderEvidence(st, p);
}

function renderPoints(st) {
  const t = $("points");
  t.textContent = "";
  const head = t.insertRow();
  const keys = st.points.length ? boundKeys(st.points[0]) : [];
  const heads = ["point", "trials played", "x", "x'", "eps claimed", ...keys, "verdict"];
  heads.forEach((h, i) => {
    const th = document.createElement("th");
    th.textContent = h;
    if (i === 0 || i === heads.length - 1) th.className = "l";
    head.appendChild(th);
  });
  st.points.forEach((p) => {
    const r = t.insertRow();
    if (p.verdict === "violation") r.className = "bad";
    const cells = [p.name, p.played + " / " + 2 * p.trials, p.scored.x, p.scored.x_prime, g4(p.epsilon_claimed_run),
      ...keys.map((k) => absent(p, k) ? "n/a" : g4(last(p.bounds[k]))), p.final ? p.verdict : (p.played > 0 ? "running" : "")];
    cells.forEach((v, i) => {
      const td = r.insertCell();
      td.textContent = String(v);
      if (i === 0 || i === cells.length - 1) td.className = "l";
    });
  });
}

function render(st) {
  view.state = st;
  view.events++;
  renderProgress(st);
  renderPlots(st);
  renderPoints(st);
  renderVerdict(st);
}

function connect() {
  const es = new EventSource("events");
  es.addEventListener("state", (e) => render(JSON.parse(e.data)));
  es.addEventListener("end", (e) => {
    view.ended = true;
    render(JSON.parse(e.data));
    es.close(); // the audit ended: the stream does not come back
  });
  es.onerror = () => {
    if (!view.ended) {
      const s = $("status");
      // a stream refused (no token: the server was started again) is not retried
      s.textContent = es.readyState === EventSource.CLOSED ? "disconnected (reload with the URL dpsim printed)" : "disconnected (retrying)";
      s.className = "status disconnected";
    }
  };
}

connect();
