// The live view of a dpsim run: reads /events (Server-Sent Events of the launcher's state) and
// draws the progress, the latest traced episode (uPlot), the links (replayed live, final at a
// point's end), the processes with their live memory, and the timeline (a chart and a table).
// window.dpsimLive holds what was drawn (the browser test reads it).
"use strict";

const live = window.dpsimLive = { drained: () => new Promise((done) => schedule("drained", done)), state: null, points: 0, plots: {}, events: 0, ended: false, timeline: null, liveLinks: [], stream: 0, tablesAt: 0 };

// The page redraws only what changed: a fast run sends a state event every 250 ms, and the
// page shares the run's cores (setText, fillTable and the plots skip an unchanged value).
const drawn = {};

function changed(id, key) {
  if (drawn[id] === key) return false;
  drawn[id] = key;
  return true;
}

// The drawing of plots and tables is queued, one task per animation frame (a newer task of the
// same key replaces a pending one): the page's work comes in short slices rather than one
// burst per event, so a realtime run sharing the cores is not held up by it.
const queue = new Map();
let queued = false;

function schedule(key, fn) {
  queue.delete(key);
  queue.set(key, fn);
  if (!queued) {
    queued = true;
    requestAnimationFrame(runQueue);
  }
}

function runQueue() {
  const first = queue.keys().next();
  if (!first.done) {
    const fn = queue.get(first.value);
    queue.delete(first.value);
    fn();
  }
  if (queue.size > 0) {
    requestAnimationFrame(runQueue);
  } else {
    queued = false;
  }
}

function setText(id, text) {
  if (changed("text:" + id, text)) $(id).textContent = text;
}

function fmtBytes(b) { return b > 0 ? (b / (1 << 20)).toFixed(1) + " MiB" : "-"; }

function renderProgress(st) {
  setText("title", "dpsim run " + st.scenario + " (" + st.kind + ", " + st.engine + ", " + st.mode + ")");
  if (changed("status", st.status)) {
    const s = $("status");
    s.textContent = st.status;
    s.className = "status " + st.status;
  }
  const frac = st.episodes_total > 0 ? st.episodes_done / st.episodes_total : 0;
  const width = (100 * frac).toFixed(1) + "%";
  if (changed("bar", width)) $("bar").style.width = width;
  let text = st.episodes_done + " / " + st.episodes_total + " episodes (" + (100 * frac).toFixed(0) + "%), " +
    st.steps_done + " steps, elapsed " + fmtSec(st.elapsed_sec);
  if (st.status === "running") text += ", time left " + fmtSec(st.remaining_sec);
  if (st.points.length > 1) text += " - point " + (st.point + 1) + " of " + st.points.length + " (" + st.points[st.point].name + ")";
  if (st.error) text += " - " + st.error;
  setText("progress", text);
  // a stalled run says why it waits (issue 34): one line, gone when the progress resumes
  const stall = st.stall && st.status === "running" ? "Stalled: " + st.stall.line : "";
  if (changed("stall", stall)) {
    $("stall").textContent = stall;
    $("stall").hidden = stall === "";
  }
}

// plotSpecs returns the plots of series ep: {id, title, ylabel, lines: [{label, color, dash, values}]}.
function plotSpecs(st, ep) {
  const comp = (i) => "[" + i + "]";
  const specs = [];
  if (st.kind === "consensus") {
    const bound = st.points[ep.point] ? st.points[ep.point].bound : 0;
    const lines = [{ label: "||x(t) - 1x*||²", color: PALETTE[0], values: ep.sq_deviation }];
    if (bound > 0) lines.push({ label: "Prop. 1 bound", color: GREY, dash: [6, 4], ref: true, values: ep.t.map(() => bound) });
    specs.push({ id: "dev", title: "Squared deviation from consensus, against the paper's bound", lines });
    specs.push({ id: "maxdev", title: "Largest deviation max_i |x_i(t) - x*|", lines: [{ label: "max |x_i - x*|", color: PALETTE[0], values: ep.max_abs_deviation }] });
    specs.push({ id: "eve", title: "Eavesdropper's error ||x̂(0) - x(0)|| (gaps: not identifiable yet)", lines: [{ label: "error", color: PALETTE[1], values: ep.eve_error }] });
    return sideBySide(specs);
  }
  const x = [];
  (ep.x || []).forEach((v, i) => x.push({ label: "x" + comp(i), color: PALETTE[i], values: v }));
  (ep.ref || []).forEach((v, i) => x.push({ label: "x_r" + comp(i), color: PALETTE[i], dash: [6, 4], values: v }));
  specs.push({ id: "x", title: "True state x(t) (solid) and reference x_r(t) (dashed)", lines: x, signed: true });
  const e = [];
  (ep.eve_x0 || []).forEach((v, i) => e.push({ label: "x̂(0)" + comp(i), color: PALETTE[i], values: v }));
  (ep.x0 || []).forEach((v, i) => e.push({ label: "x(0)" + comp(i), color: PALETTE[i], dash: [6, 4], values: ep.t.map(() => v) }));
  specs.push({ id: "eve", title: "Eavesdropper's estimate of x(0) (solid) against the true x(0) (dashed)", lines: e, signed: true });
  const bound = st.points[ep.point] ? st.points[ep.point].bound : 0;
  const track = [{ label: "||x(t) - x_r(t)||²", color: PALETTE[0], values: ep.sq_tracking_error }];
  if (bound > 0) track.push({ label: "Var(γ) limit", color: GREY, dash: [6, 4], ref: true, values: ep.t.map(() => bound) });
  specs.push({ id: "track", title: "Squared tracking error, against the paper's limit Var(γ) of its mean (constant offset: p - p_r → -γ, v - v_r → 0)", lines: track });
  specs.push({ id: "err", title: "Tracking error ||x(t) - x_r(t)|| and eavesdropper's error ||x̂(0) - x(0)||", lines: [
    { label: "tracking error", color: PALETTE[0], values: ep.tracking_error },
    { label: "eavesdropper's error", color: PALETTE[1], values: ep.eve_error }] });
  return sideBySide(specs);
}

// sideBySide lays the episode's plots out two a row, an odd last one alone across the width.
function sideBySide(specs) {
  specs.forEach((sp, i) => { sp.cols = specs.length % 2 === 1 && i === specs.length - 1 ? 1 : 2; });
  return specs;
}

// drawPlot draws (or updates) the plot of spec over the steps t: {id, title, lines: [{label,
// color, dash, values, ref (a constant: a bound), band (hidden: a band's edge)}], bands:
// [{series: [upper, lower] (indices in lines), fill}], parent, cols (plots side by side in
// parent), signed (values of either sign: a linear axis)}. Its y axis is log when the data span decades or a bound would vanish on a linear
// one (yScale); the plot takes its share of the parent's width.
function drawPlot(spec, t) {
  const parent = $(spec.parent || "plots");
  const ys = yScale(spec.lines.filter((l) => !l.ref).map((l) => l.values), spec.lines.filter((l) => l.ref).map((l) => l.values && l.values[0]), spec.signed);
  const key = spec.lines.map((l) => l.label).join("|") + (ys.log ? "|log" : "|lin");
  let p = live.plots[spec.id];
  if (p && p.key !== key) {
    unlay(p.u);
    p.u.destroy();
    p.div.remove();
    p = null;
  }
  const floor = ys.min;
  // a log axis has no room for 0: a band's lower edge stops at the axis's floor, a line breaks
  const vals = (l) => {
    const v = l.values || t.map(() => null);
    if (!ys.log) return v;
    return v.map((x) => (x === null || x === undefined ? null : x > 0 ? Math.max(x, l.band ? floor : 0) : (l.band ? floor : null)));
  };
  const data = [t].concat(spec.lines.map(vals));
  if (!p) {
    const div = document.createElement("div");
    div.className = "plot";
    const h = document.createElement("h3");
    div.appendChild(h);
    parent.appendChild(div);
    const opts = {
      width: plotWidth(parent, spec.cols), height: spec.height || 260,
      padding: [xPadding, xPadding, xPadding, xPadding],
      scales: { x: { time: false }, y: ys.log ? { distr: 3, log: 10, range: () => [live.plots[spec.id].ys.min, live.plots[spec.id].ys.max] }
        : { range: () => [live.plots[spec.id].ys.min, live.plots[spec.id].ys.max] } },
      axes: [linearAxis("x", "step t"), ys.log ? logAxis(spec.ylabel || "") : linearAxis("y", spec.ylabel || "")],
      series: [{ label: "t" }].concat(spec.lines.map((l) => (l.band ? { label: l.label, stroke: "rgba(0,0,0,0)", width: 0, points: { show: false } }
        : { label: l.label, stroke: l.color, width: 1.5, dash: l.dash, spanGaps: false }))),
      bands: spec.bands || [],
    };
    p = live.plots[spec.id] = { key, div, ys, u: null };
    p.u = new uPlot(opts, data, div);
    layOut(p.u, parent, spec.cols);
    spec.lines.forEach((l, i) => { // a band's edge: not a series of its own in the legend
      const row = l.band && p.u.root.querySelectorAll(".u-legend .u-series")[i + 1];
      if (row) row.style.display = "none";
    });
  } else {
    p.ys = ys;
    p.u.setData(data);
  }
  p.div.querySelector("h3").textContent = spec.title;
}

// renderAggregate draws the Monte Carlo estimate of the mean square the paper bounds, over the
// completed episodes of the point in progress, with its 95% band, against the bound.
function renderAggregate(st) {
  const a = st.aggregate;
  if (!a || a.runs === 0) return;
  if (!changed("aggregate", [a.point, a.runs, a.t.length].join("/"))) return;
  const pt = st.points[a.point] || {};
  const bound = pt.bound || 0;
  const consensus = st.kind === "consensus";
  const what = consensus ? "E||x(t) - 1x*||²" : bound > 0 ? "E[(p(t) - p_r(t))²], the position error" : "E[(x[0](t) - x_r[0](t))²]";
  const lines = [
    { label: "95% interval (upper)", band: true, values: a.ci_hi },
    { label: "95% interval (lower)", band: true, values: a.ci_lo },
    { label: "mean over the episodes", color: PALETTE[0], values: a.mean },
  ];
  if (bound > 0) lines.push({ label: consensus ? "Prop. 1 bound" : "Var(γ) limit", color: GREY, dash: [6, 4], ref: true, values: a.t.map(() => bound) });
  const of = st.points.length > 1 ? " of point " + pt.name : "";
  const title = what + " over " + a.runs + " completed episodes" + of + " (mean, 95% band)" +
    (bound > 0 ? (consensus ? " against Proposition 1's bound " : " against its limit Var(γ) = ") + fmtBound(bound) : "");
  $("aggregate-note").textContent = "The Monte Carlo estimate the report will hold against the theory, from the launcher's metrics as the episodes are folded" +
    (consensus ? "" : bound > 0 ? " (constant offset: p - p_r → -γ, so E[(p - p_r)²] → Var(γ))" : "") + ".";
  schedule("plot:aggregate", () => drawPlot({ id: "aggregate", title, lines, parent: "aggregate-plot", cols: 1, height: 300,
    bands: [{ series: [1, 2], fill: "rgba(31,119,180,0.18)" }] }, a.t));
}

function fmtBound(v) { return Number(v.toPrecision(4)).toLocaleString("en-US", { maximumFractionDigits: 6 }); }

function renderEpisode(st) {
  const eps = st.episodes || [];
  if (eps.length === 0) return;
  const ep = eps[eps.length - 1];
  const done = (st.done || [])[ep.point] || 0;
  if (!changed("episode", [ep.point, ep.episode, ep.t.length, ep.complete, done].join("/"))) return;
  const of = st.points.length > 1 ? " of point " + st.points[ep.point].name : "";
  const traced = st.trace_episodes;
  let title, note;
  if (!ep.complete) {
    title = "Traced episode " + ep.episode + of + " (in progress)";
    note = "Its merged records so far.";
  } else if (ep.episode >= done - 1 || done === 0) {
    title = "Latest completed episode: episode " + ep.episode + of;
    note = "Traced (--trace-episodes " + (traced < 0 ? "-1: every episode" : traced) + ").";
  } else {
    title = "Traced episode " + ep.episode + of + ", the last one traced - not the latest completed";
    note = done + " episodes of this point completed; " + (traced >= 0 && done > traced ? "episodes from " + traced + " on are not traced (--trace-episodes " +
      traced + "), so none of them is shown here: the aggregate above covers them all." : "the later ones are not traced yet.");
  }
  $("episode-title").textContent = title;
  $("episode-note").textContent = note + " One realisation of the noise: it is not expected to match the bound, which speaks of the mean over episodes. " +
    ep.t.length + " steps shown" + (eps.length > 1 ? "; traced episodes kept: " + eps.map((e) => e.episode).join(", ") : "") + ".";
  for (const spec of plotSpecs(st, ep)) schedule("plot:" + spec.id, () => drawPlot(spec, ep.t));
  schedule("points", () => { live.points = ep.t.length; });
}

// renderStream draws the episode in progress as it is published (realtime): a line per
// publisher, step by step.
function renderStream(st) {
  const s = st.stream;
  if (!s || s.t.length === 0) return;
  if (!changed("stream", [s.point, s.episode, s.t.length, JSON.stringify(s.values.map((v) => v[v.length - 1]))].join("/"))) return;
  $("stream-box").hidden = false;
  setText("stream-title", "Episode " + s.episode + " as it is published (realtime, step " + s.t[s.t.length - 1] + ")");
  const names = { plant: "ŷ(t) released by ", cloud: "u(t) sent by ", agent: "y(t) released by ", host: "y(t) released by " };
  const lines = s.senders.map((n, i) => ({ label: (names[n.split(".")[0]] || "") + n, color: PALETTE[i], values: s.values[i] }));
  schedule("plot:stream", () => {
    drawPlot({ id: "stream", title: "First value of each publisher's message, per step", lines, parent: "stream-plot" }, s.t);
    live.stream = s.t.length;
  });
}

function fillTable(id, head, rows, bad) {
  if (!changed("table:" + id, JSON.stringify([head, rows, bad]))) return;
  const t = $(id);
  t.textContent = "";
  const tr = t.insertRow();
  head.forEach((h, i) => {
    const th = document.createElement("th");
    th.textContent = h;
    if (i === 0 || h === "process" || h === "state" || h === "event" || h === "detail" || h === "link") th.className = "l";
    tr.appendChild(th);
  });
  rows.forEach((r, k) => {
    const row = t.insertRow();
    if (bad && bad[k]) row.className = "bad";
    r.forEach((v, i) => {
      const td = row.insertCell();
      td.textContent = v === undefined || v === null ? "" : String(v);
      if (typeof v === "string") td.className = "l";
    });
  });
  if (rows.length === 0) t.insertRow().insertCell().textContent = "none yet";
}

function renderLinks(st) {
  const multi = st.points.length > 1;
  const head = (multi ? ["point"] : []).concat(["link", "sent", "dropped", "delivered", "late", "duplicated", "delayed", "expired", "lost", "gaps", "conflicts"]);
  const rows = st.links.map((l) => (multi ? [l.point] : []).concat([l.link, l.sent, l.dropped, l.delivered, l.late, l.duplicated, l.delayed, l.expired, l.lost || 0, l.gaps, l.conflicts || 0]));
  fillTable("links", head, rows, st.links.map((l) => (l.conflicts || 0) > 0));
  const ll = st.live_links || [];
  live.liveLinks = ll.map((l) => ({ link: l.link, sent: l.sent, dropped: l.dropped }));
  const lhead = (multi ? ["point"] : []).concat(["link", "episodes", "sent", "dropped", "duplicated", "delayed", "reordered", "expired"]);
  const lrows = ll.map((l) => (multi ? [l.point] : []).concat([l.link, l.episodes || 0, l.sent, l.dropped, l.duplicated, l.delayed, l.reordered, l.expired]));
  fillTable("live-links", lhead, lrows, null);
}

function renderProcs(st) {
  const head = ["process", "state", "exit", "RSS now", "peak RSS", "episodes", "steps", "invalid", "missed", "disconnects", "reconnects"];
  const rows = st.processes.map((p) => {
    const inv = Object.entries(p.invalid || {}).map(([k, v]) => k + " " + v).join(", ");
    return [p.key, p.state, p.finished ? p.exit_code : "", p.finished ? "-" : fmtBytes(p.rss_bytes),
      fmtBytes(p.finished ? p.peak_rss_bytes : p.rss_max_bytes), p.finished ? p.episodes : "",
      p.finished ? p.steps : "", inv || (p.finished ? "0" : ""), p.finished ? p.missed : "", p.finished ? p.disconnects : "", p.finished ? p.reconnects : ""];
  });
  fillTable("procs", head, rows, st.processes.map((p) => p.state !== "ready" && p.state !== "ok"));
  const late = Object.entries(st.lateness || {}).sort().map(([role, l]) => role + ": " + l.n + " messages, mean " +
    (1000 * l.mean_sec).toFixed(2) + " ms, worst " + (1000 * l.max_sec).toFixed(2) + " ms");
  setText("lateness", late.length ? "Realtime: how late the steps' messages were published after their tick - " + late.join("; ") +
    " (histograms: /metrics dpsim_step_lateness_seconds)." : "");
}

// The timeline chart's lanes: each event of the timeline goes to one.
const LANES = [
  { name: "crashes", events: ["killed"] },
  { name: "restarts", events: ["restarted"] },
  { name: "server", events: ["nats-server-stopped", "nats-server-started", "nats-server-restart-failed"] },
  { name: "connections", events: ["disconnected", "reconnected", "connection-closed", "connection-reset"] },
  { name: "link faults", events: ["partition", "proxy"] },
  { name: "exits", events: ["exited"] },
];

function laneOf(ev) {
  const i = LANES.findIndex((l) => l.events.includes(ev));
  return i >= 0 ? i : LANES.length;
}

// renderTimelineChart draws the timeline's events on a time axis (seconds since the start), a
// lane per kind of event, up to the elapsed time.
function renderTimelineChart(st) {
  const tl = st.timeline || [];
  // the time axis runs to the elapsed time: redrawn when an event comes, else every 2 s
  if (!changed("timeline-chart", tl.length + "/" + Math.floor(st.elapsed_sec / 2) + "/" + st.status)) return;
  const lanes = LANES.concat([{ name: "other" }]);
  const xs = [0].concat(tl.map((e) => e.t_sec), [Math.max(st.elapsed_sec, tl.length ? tl[tl.length - 1].t_sec : 0)]);
  const data = [xs].concat(lanes.map((_, k) => xs.map((_, i) => (i > 0 && i <= tl.length && laneOf(tl[i - 1].event) === k ? k : null))));
  live.timeline = { events: tl.length, lanes: lanes.length };
  if (!live.timelinePlot) {
    const opts = {
      width: plotWidth($("timeline-chart"), 1), height: 200,
      padding: [xPadding, xPadding, xPadding, xPadding],
      scales: { x: { time: false }, y: { range: [-0.5, lanes.length - 0.5] } },
      axes: [linearAxis("x", "seconds since the start"), { font: AXIS_FONT, values: (u, ticks) => ticks.map((t) => (Number.isInteger(t) && lanes[t] ? lanes[t].name : "")),
        size: yAxisSize, splits: () => lanes.map((_, k) => k) }],
      series: [{ label: "s" }].concat(lanes.map((l, k) => ({ label: l.name, stroke: PALETTE[k % PALETTE.length], fill: PALETTE[k % PALETTE.length],
        paths: () => null, points: { show: true, size: 9, width: 1 } }))),
    };
    live.timelinePlot = new uPlot(opts, data, $("timeline-chart"));
    layOut(live.timelinePlot, $("timeline-chart"), 1);
  } else {
    live.timelinePlot.setData(data);
  }
}

function renderTimeline(st) {
  const tl = st.timeline || [];
  const rows = tl.map((e) => [e.t_sec.toFixed(2) + " s", e.point, e.episode >= 0 ? e.episode : "", e.step >= 0 ? e.step : "", e.proc || "", e.event, e.detail || ""]);
  fillTable("timeline", ["time", "point", "episode", "step", "process", "event", "detail"], rows, null);
}

function render(st) {
  live.state = st;
  live.events++;
  renderProgress(st);
  renderAggregate(st);
  renderEpisode(st);
  renderStream(st);
  // the tables and the timeline chart at most every TABLE_MS while a point goes (their
  // counters move with every group; the page shares the run's cores), at once when the point
  // or the status changes
  const now = Date.now();
  if (changed("tables-point", st.point + "/" + st.status) || st.status !== "running" || !(now - live.tablesAt < TABLE_MS)) {
    live.tablesAt = now;
    schedule("links", () => renderLinks(st));
    schedule("procs", () => renderProcs(st));
    schedule("timeline", () => renderTimeline(st));
    schedule("timeline-chart", () => renderTimelineChart(st));
  }
}

const TABLE_MS = 1000;

function connect() {
  const es = new EventSource("events");
  es.addEventListener("state", (e) => render(JSON.parse(e.data)));
  es.addEventListener("end", (e) => {
    render(JSON.parse(e.data));
    schedule("ended", () => { live.ended = true; }); // once the end state is drawn
    es.close(); // the run ended: the stream does not come back
  });
  es.onerror = () => {
    if (!live.ended) {
      const s = $("status");
      drawn.status = null; // the next state redraws it
      // a stream refused (no token: the server was started again) is not retried
      s.textContent = es.readyState === EventSource.CLOSED ? "disconnected (reload with the URL dpsim printed)" : "disconnected (retrying)";
      s.className = "status disconnected";
    }
  };
}

if (document.body.dataset.mode !== "view") connect(); // view mode (dpsim view): view.js draws a finished run
else $("aggregate-box").hidden = true; // its figures of report.md hold the aggregates
