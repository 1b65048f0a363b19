// What the run's page (app.js) and the audit's page (audit.js) share: the palette, element
// lookup, durations, and the plots' layout and axes (legible whatever the data's magnitude and
// the window's width: the rules figure.Check applies to the report's figures). Loaded before
// either.
"use strict";

// The project's palette (pkg/figure: Tableau 10, colour-blind friendly).
const PALETTE = ["rgb(31,119,180)", "rgb(214,39,40)", "rgb(44,160,44)", "rgb(255,127,14)", "rgb(148,103,189)",
  "rgb(140,86,75)", "rgb(227,119,194)", "rgb(127,127,127)", "rgb(188,189,34)", "rgb(23,190,207)"];
const GREY = "rgb(90,90,90)";

function $(id) { return document.getElementById(id); }

// fmtSec renders a duration in seconds as "12.3 s", "4 min 5 s" or "1 h 2 min" ("?" when unknown).
function fmtSec(s) {
  if (s === null || s === undefined) return "?";
  if (s < 60) return s.toFixed(1) + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + Math.round(s - 60 * m) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

// ---- plots: width, axes ----

// The axes' fonts (uPlot's defaults, named so that their labels can be measured).
const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
const LABEL_FONT = "bold " + AXIS_FONT;

let measureCtx = null;

// textWidth is the width in CSS pixels of text in font (AXIS_FONT by default).
function textWidth(text, font) {
  if (!measureCtx) measureCtx = document.createElement("canvas").getContext("2d");
  measureCtx.font = font || AXIS_FONT;
  return measureCtx.measureText(String(text)).width;
}

// PLOT_GAP is the space between plots side by side (the .plots-row gap).
const PLOT_GAP = 16;

// plotWidth is the width of one of cols plots side by side in container (an element): the
// container's whole width shared, one plot a row when they would be narrower than 480 px.
function plotWidth(container, cols) {
  const w = container ? container.clientWidth : window.innerWidth - 80;
  let n = Math.max(1, cols || 1);
  while (n > 1 && (w - PLOT_GAP * (n - 1)) / n < 480) n--;
  return Math.max(280, Math.floor((w - PLOT_GAP * (n - 1)) / n) - 1);
}

// The plots laid out by plotWidth, resized with the window: {u, container, cols}.
const laidOut = [];

function layOut(u, container, cols) {
  laidOut.push({ u, container, cols });
}

function unlay(u) {
  const i = laidOut.findIndex((p) => p.u === u);
  if (i >= 0) laidOut.splice(i, 1);
}

let resizeTimer = 0;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    for (const p of laidOut) {
      if (p.container.isConnected) p.u.setSize({ width: plotWidth(p.container, p.cols), height: p.u.height });
    }
  }, 100);
});

// fmtNum is a tick label: the value with the decimals of the tick step (uPlot's own format).
function fmtNum(v, decimals) {
  return v.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

function decimalsOf(step) {
  return step >= 1 || !(step > 0) ? 0 : Math.min(20, Math.ceil(-Math.log10(step) - 1e-9));
}

// linearAxis returns the options of a linear axis (side: "x" or "y") whose labels are never
// clipped nor run into each other: a y axis is as wide as its widest label, ticks on an x axis
// are at least its widest label (and a margin) apart.
function linearAxis(side, label) {
  const o = { label, font: AXIS_FONT, labelFont: LABEL_FONT, gap: 5, ticks: { size: 6 } };
  o.values = (u, splits, axisIdx, space, incr) => splits.map((v) => fmtNum(v, decimalsOf(incr)));
  if (side === "x") {
    o.space = (u, axisIdx, min, max) => 16 + Math.max(textWidth(fmtNum(min, 0)), textWidth(fmtNum(max, 0)), textWidth(fmtNum((max - min) / 7, decimalsOf((max - min) / 7))));
  } else {
    o.size = yAxisSize;
  }
  return o;
}

// logAxis returns the options of a log y axis: labels at the powers of ten (and 2 and 5
// times them over up to two decades), as figure.LogTicker labels.
function logAxis(label) {
  return {
    label, font: AXIS_FONT, labelFont: LABEL_FONT, gap: 5, ticks: { size: 6 }, size: yAxisSize,
    splits: (u, axisIdx, min, max) => logSplits(min, max),
    values: (u, splits) => splits.map((v) => fmtLog(v)),
  };
}

function logSplits(min, max) {
  const lo = Math.floor(Math.log10(min) + 1e-9), hi = Math.ceil(Math.log10(max) - 1e-9);
  const out = [];
  const mants = hi - lo <= 2 ? [1, 2, 5] : [1];
  const every = Math.max(1, Math.ceil((hi - lo) / 8)); // at most about 8 labels
  for (let e = lo; e <= hi; e++) {
    if ((e - lo) % every !== 0 && mants.length === 1) continue;
    for (const m of mants) {
      const v = m * Math.pow(10, e);
      if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9)) out.push(v);
    }
  }
  return out;
}

function fmtLog(v) {
  const e = Math.floor(Math.log10(v) + 1e-9);
  if (e >= 6 || e <= -4) return Number((v / Math.pow(10, e)).toPrecision(1)) + "e" + e;
  return fmtNum(v, Math.max(0, -e));
}

// yAxisSize is the width of a y axis: its widest label, the tick and the gap.
function yAxisSize(u, values, axisIdx) {
  if (!values) return 50;
  const a = u.axes[axisIdx];
  const w = Math.max(0, ...values.filter((v) => v !== null && v !== undefined).map((v) => textWidth(v)));
  return Math.ceil(w + (a.ticks && a.ticks.size !== undefined ? a.ticks.size : 6) + (a.gap || 5) + 4);
}

// xPadding is the room right of the plotting area: half the last x label, which is centred
// on the right edge.
function xPadding(u, side) {
  if (side !== 1) return side === 0 ? 12 : 0;
  const sc = u.scales.x;
  const max = sc && sc.max !== undefined && sc.max !== null ? sc.max : 0;
  return Math.ceil(Math.max(textWidth(fmtNum(max, 0)), textWidth(fmtNum(sc && sc.min ? sc.min : 0, 0))) / 2 + 6);
}

// yScale decides the y axis of values (arrays of numbers and nulls) beside the constant lines
// refs (a bound, a claim: they must be visible): a log axis when the positive values span two
// decades or more, or when a reference would sit within a tenth of the top of a linear axis
// from 0 (figure.LogUseful's rule, and a bound of 35 under data of 20,000 would be invisible);
// else a linear one from 0 (or below, for negative values) to above the largest value or
// reference. linear: a quantity of either sign (a state), always on a linear axis. It returns
// {log, min, max}.
function yScale(values, refs, linear) {
  let lo = Infinity, hi = -Infinity, pmin = Infinity, pmax = 0;
  const see = (v) => {
    if (v === null || v === undefined || !isFinite(v)) return;
    lo = Math.min(lo, v); hi = Math.max(hi, v);
    if (v > 0) { pmin = Math.min(pmin, v); pmax = Math.max(pmax, v); }
  };
  values.forEach((vs) => (vs || []).forEach(see));
  const rs = (refs || []).filter((r) => r > 0 && isFinite(r));
  rs.forEach(see);
  if (!(hi >= lo)) return { log: false, min: 0, max: 1 };
  const decades = pmax > 0 ? Math.log10(pmax / pmin) : 0;
  const refLow = rs.some((r) => r < 0.1 * pmax);
  if (!linear && lo >= 0 && pmax > 0 && (decades >= 2 || refLow)) {
    let min = Math.pow(10, Math.floor(Math.log10(pmin / 1.25)));
    const max = Math.pow(10, Math.ceil(Math.log10(pmax * 1.25)));
    min = Math.max(min, max / 1e12); // figure.MaxLogDecades
    return { log: true, min, max };
  }
  const span = hi - Math.min(0, lo) || Math.abs(hi) || 1;
  return { log: false, min: lo < 0 ? lo - 0.05 * span : 0, max: hi + 0.08 * span };
}
