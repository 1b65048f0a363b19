// What the run's page (app.js) and the audit's page (audit.js) share: the palette, element
// lookup, durations and the plots' width. Loaded before either.
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

function plotWidth() { return Math.max(320, Math.min(540, window.innerWidth - 80)); }
