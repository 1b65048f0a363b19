// The view of a finished run (dpsim view OUT), in the live view's page: the server marks the
// page's body data-mode="view", app.js then does not connect to the live event stream and
// this script draws, from /api/state and /api/episode, the traced episodes with a step
// slider, every figure of report.md as an interactive uPlot plot (drag to zoom, double-click
// to reset), the fault timeline and the summary. window.dpsimView holds what was drawn (the
// browser test reads it).
"use strict";

(() => {
  if (document.body.dataset.mode !== "view") return;

  const COLORS = ["rgb(31,119,180)", "rgb(214,39,40)", "rgb(44,160,44)", "rgb(255,127,14)", "rgb(148,103,189)"];
  const view = window.dpsimView = { state: null, episode: null, step: 0, values: {}, episodePlots: [], figures: [], ready: false, error: "" };
  const byId = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const width = (n) => Math.max(320, Math.min(n > 1 ? 480 : 1000, window.innerWidth - 80));
  const fmt = (v) => (v === null || v === undefined || Number.isNaN(v) ? "-" : typeof v === "number" ? Number(v.toPrecision(6)).toString() : String(v));

  function table(id, head, rows, bad) {
    const t = typeof id === "string" ? byId(id) : id;
    t.textContent = "";
    const tr = t.insertRow();
    head.forEach((h, i) => {
      const th = el("th", i === 0 ? "l" : "", h);
      tr.appendChild(th);
    });
    rows.forEach((r, k) => {
      const row = t.insertRow();
      if (bad && bad[k]) row.className = "bad";
      r.forEach((v) => {
        const td = row.insertCell();
        td.textContent = v === undefined || v === null ? "" : typeof v === "number" ? fmt(v) : String(v);
        if (typeof v === "string") td.className = "l";
      });
    });
    if (rows.length === 0) t.insertRow().insertCell().textContent = "none";
    return t;
  }

  // section inserts a new section with heading title before the section holding before.
  function section(title, before) {
    const s = el("section");
    s.appendChild(el("h2", "", title));
    const at = before ? byId(before).closest("section") : null;
    document.body.insertBefore(s, at || document.querySelector("footer"));
    return s;
  }

  // plot draws one uPlot plot into parent: lines [{label, color, dash, width, values}] over x,
  // with the options of axes {x, y} ({label, log, ticks}) and bands/extras of a figure.
  function plot(parent, title, x, lines, axes, n, extra) {
    const div = el("div", "plot");
    div.appendChild(el("h3", "", title));
    parent.appendChild(div);
    const ax = (a) => {
      const o = { label: a.label || "" };
      if (a.log) { // label the powers of ten only
        o.values = (u, splits) => splits.map((v) => {
          if (v === null || !(v > 0)) return null; // a split uPlot leaves unlabelled
          const e = Math.round(Math.log10(v));
          if (Math.abs(Math.log10(v) - e) > 1e-9) return "";
          return Math.abs(e) >= 4 ? "1e" + e : String(Number(Math.pow(10, e).toPrecision(1)));
        });
      }
      if (a.ticks && a.ticks.length) {
        o.splits = () => a.ticks.map((t) => t.value);
        o.values = (u, splits) => splits.map((v) => (a.ticks.find((t) => t.value === v) || { label: "" }).label);
      }
      return o;
    };
    const scale = (a, isX) => {
      const s = isX ? { time: false } : {};
      if (a.log) { s.distr = 3; s.log = 10; }
      return s;
    };
    const opts = {
      width: width(n), height: 260,
      scales: { x: scale(axes.x, true), y: scale(axes.y, false) },
      axes: [ax(axes.x), ax(axes.y)],
      series: [{ label: axes.x.label || "x" }].concat(lines.map((l) => Object.assign({
        label: l.label, stroke: l.color, width: l.width || 1.5, dash: l.dash, spanGaps: false,
      }, l.opts || {}))),
      cursor: { drag: { x: true, y: true, uni: 40 } },
    };
    Object.assign(opts, extra || {});
    const u = new uPlot(opts, [x].concat(lines.map((l) => l.values)), div);
    // the figure's own ranges first (zoom moves from there; a double-click fits the data)
    for (const [key, a] of [["x", axes.x], ["y", axes.y]]) {
      if (a.min !== undefined && a.min < a.max) u.setScale(key, { min: a.min, max: a.max });
    }
    lines.forEach((l, i) => {
      if (l.hidden) { // a band's edge: not a series of its own in the legend
        const row = u.root.querySelectorAll(".u-legend .u-series")[i + 1];
        if (row) row.style.display = "none";
      }
    });
    return u;
  }

  // ---- traced episodes ----

  function renderEpisodeControls(st) {
    const box = el("div", "view-controls");
    const pointSel = el("select");
    pointSel.id = "view-point";
    st.points.forEach((p, k) => pointSel.appendChild(new Option((k + 1) + ": " + p.name, k)));
    const epSel = el("select");
    epSel.id = "view-episode";
    const slider = el("input");
    slider.type = "range";
    slider.id = "view-step";
    slider.min = 0;
    const stepLabel = el("span", "", "");
    stepLabel.id = "view-step-label";
    const values = el("table");
    values.id = "view-values";
    if (st.points.length > 1) box.append("point ", pointSel, " ");
    box.append("episode ", epSel, " step ", slider, " ", stepLabel);
    const plots = byId("plots");
    plots.parentNode.insertBefore(box, plots);
    plots.parentNode.insertBefore(values, plots.nextSibling);
    const fillEpisodes = () => {
      const p = st.points[pointSel.value];
      epSel.textContent = "";
      p.episodes.forEach((e) => epSel.appendChild(new Option(String(e), e)));
      if (p.episodes.length) loadEpisode(+pointSel.value, p.episodes[0]);
      else byId("episode-note").textContent = "No traced episode in this point (see dpsim run --trace-episodes).";
    };
    pointSel.onchange = fillEpisodes;
    epSel.onchange = () => loadEpisode(+pointSel.value, +epSel.value);
    slider.oninput = () => setStep(+slider.value);
    fillEpisodes();
  }

  async function loadEpisode(k, e) {
    try {
      const r = await fetch("api/episode?point=" + k + "&episode=" + e);
      if (!r.ok) throw new Error("episode " + e + " of point " + k + ": " + (await r.text()));
      drawEpisode(await r.json());
    } catch (err) {
      view.error = String(err);
      byId("episode-note").textContent = view.error;
    }
  }

  function drawEpisode(ep) {
    const st = view.state;
    view.episode = ep;
    view.episodePlots.forEach((u) => u.destroy());
    view.episodePlots = [];
    const plots = byId("plots");
    plots.textContent = "";
    const specs = plotSpecs(st, ep); // app.js: the plots of a traced episode, as in the live view
    view.specs = specs;
    for (const spec of specs) {
      const lines = spec.lines.map((l) => ({ label: l.label, color: l.color, dash: l.dash, values: l.values || ep.t.map(() => null) }));
      view.episodePlots.push(plot(plots, spec.title, ep.t, lines, { x: { label: "step t" }, y: {} }, 2, { cursor: { sync: { key: "episode" }, y: false, drag: { x: true, y: false } } }));
    }
    const p = st.points[ep.point];
    byId("episode-title").textContent = "Traced episode " + ep.episode + (st.points.length > 1 ? " of point " + p.name : "");
    byId("episode-note").textContent = "Merged records (" + p.trace_file + "), " + ep.t.length + " steps shown of 0.." + p.steps +
      "; " + p.episodes.length + " traced episode(s) of this point. Move the slider (or the mouse over a plot) to read the values at a step.";
    const slider = byId("view-step");
    slider.max = ep.t.length - 1;
    slider.value = 0;
    setStep(0);
  }

  // setStep moves the cursor of every episode plot to the i-th kept step and lists the values.
  function setStep(i) {
    const ep = view.episode;
    if (!ep) return;
    view.step = i;
    const t = ep.t[i];
    byId("view-step-label").textContent = "t = " + t;
    view.episodePlots.forEach((u) => u.setCursor({ left: u.valToPos(t, "x"), top: u.bbox.height / (2 * devicePixelRatio) }));
    const rows = [];
    view.values = {};
    for (const spec of view.specs) {
      for (const l of spec.lines) {
        const v = l.values ? l.values[i] : null;
        view.values[l.label] = v;
        rows.push([spec.title.split(" (")[0], l.label, v === null ? "not known" : v]);
      }
    }
    table("view-values", ["plot at t = " + t, "series", "value"], rows);
  }

  // ---- figures ----

  // figureLines turns a panel's series (figure.Data) into uPlot data: the x values of all
  // series joined, a line per series (markers, error bars), two hidden edges and a fill per band.
  function figureLines(panel) {
    const tables = [];
    const lines = [];
    const bands = [];
    const bars = [];
    panel.series.forEach((s, k) => {
      const color = s.color;
      const dash = s.dash ? s.dash.map((d) => d * 1.33) : undefined;
      const label = s.label || "";
      if (s.kind === "band") {
        tables.push([s.x, s.hi, s.lo]);
        const hi = lines.length + 1;
        lines.push({ label: (label || "band") + " (upper)", color: "rgba(0,0,0,0)", hidden: true, opts: { width: 0, points: { show: false } } });
        lines.push({ label: (label || "band") + " (lower)", color: "rgba(0,0,0,0)", hidden: true, opts: { width: 0, points: { show: false } } });
        bands.push({ series: [hi, hi + 1], fill: color });
        return;
      }
      tables.push([s.x, s.y]);
      const o = {};
      if (s.kind === "points") {
        o.paths = () => null;
        o.points = { show: true, size: 7, fill: color };
      } else if (s.markers) {
        o.points = { show: true, size: 7, fill: color };
      } else {
        o.points = { show: false };
      }
      // a series without a legend entry: the grey reference line (zero, a target) or the
      // panel's one quantity
      const name = label || (color === "rgba(90,90,90,1)" ? "reference" : panel.y.label || "series " + (k + 1));
      lines.push({ label: name, color, dash, width: (s.width || 1.5) * 1.33, opts: o });
      if (s.lo && s.hi) bars.push({ idx: lines.length, x: s.x, lo: s.lo, hi: s.hi, color });
    });
    const data = uPlot.join(tables);
    lines.forEach((l, i) => { l.values = data[i + 1]; });
    return { x: data[0], lines, bands, bars };
  }

  // errorBars is a uPlot plugin drawing the 95% intervals of the series that have them.
  function errorBars(bars) {
    return {
      hooks: {
        draw: (u) => {
          const c = u.ctx;
          c.save();
          for (const b of bars) {
            if (!u.series[b.idx].show) continue;
            c.strokeStyle = b.color;
            c.lineWidth = 1.5 * devicePixelRatio;
            b.x.forEach((x, i) => {
              if (b.lo[i] === null || b.hi[i] === null) return;
              const px = u.valToPos(x, "x", true);
              const lo = u.valToPos(b.lo[i], "y", true);
              const hi = u.valToPos(b.hi[i], "y", true);
              const w = 5 * devicePixelRatio;
              c.beginPath();
              c.moveTo(px, lo); c.lineTo(px, hi);
              c.moveTo(px - w, lo); c.lineTo(px + w, lo);
              c.moveTo(px - w, hi); c.lineTo(px + w, hi);
              c.stroke();
            });
          }
          c.restore();
        },
      },
    };
  }

  function renderFigures(st) {
    const s = section("Figures of report.md", "links");
    s.id = "view-figures";
    if (st.figures.length === 0) s.appendChild(el("p", "note", "report.md has no figures."));
    for (const f of st.figures) {
      const box = el("div", "figure");
      box.id = "figure-" + f.name;
      box.appendChild(el("h3", "figure-name", f.name));
      s.appendChild(box);
      const rec = { name: f.name, panels: [] };
      view.figures.push(rec);
      if (!f.data) {
        const img = el("img");
        img.src = "out/" + f.image;
        img.alt = f.alt;
        img.style.maxWidth = "100%";
        box.appendChild(img);
        box.appendChild(el("p", "note", "No figure data (a run of an older dpsim): its image."));
        continue;
      }
      const row = el("div", "plots");
      box.appendChild(row);
      const panels = f.data.panels.flat();
      for (const p of panels) {
        const fl = figureLines(p);
        const u = plot(row, p.title, fl.x, fl.lines, { x: p.x, y: p.y }, panels.length, { bands: fl.bands, plugins: [errorBars(fl.bars)] });
        const pts = fl.lines.filter((l) => !l.hidden).reduce((n, l) => n + l.values.filter((v) => v !== null && v !== undefined).length, 0);
        rec.panels.push({ title: p.title, x: p.x.label, y: p.y.label, points: pts, bands: fl.bands.length, u });
      }
      if (f.data.caption) box.appendChild(el("p", "note caption", f.data.caption));
    }
  }

  // ---- timeline and summary ----

  function renderTimeline(st) {
    const rows = st.timeline.map((e) => [e.t_sec.toFixed(2) + " s", e.point, e.episode >= 0 ? e.episode : "", e.step >= 0 ? e.step : "", e.proc || "", e.event, e.detail || ""]);
    table("timeline", ["time", "point", "episode", "step", "process", "event", "detail"], rows, st.timeline.map((e) => /kill|fail|closed/.test(e.event)));
    const sec = byId("timeline").closest("section");
    const h = sec.querySelector("h2");
    h.textContent = "Fault timeline (" + st.timeline.length + " event" + (st.timeline.length === 1 ? "" : "s") + ")";
    if (st.faults_applied) {
      sec.appendChild(el("h3", "", "faults.applied.yaml"));
      const pre = el("pre", "yaml", st.faults_applied);
      pre.id = "view-faults-applied";
      sec.appendChild(pre);
    }
  }

  // flatten lists the scalar leaves of a JSON value as [key, value] (the long series are gone).
  function flatten(v, prefix, out) {
    if (v === null || typeof v !== "object") {
      out.push([prefix, v]);
    } else if (Array.isArray(v)) {
      if (v.length <= 12 && v.every((e) => e === null || typeof e !== "object")) out.push([prefix, v.map(fmt).join(", ")]);
      else v.forEach((e, i) => flatten(e, prefix + "[" + i + "]", out));
    } else {
      for (const k of Object.keys(v)) flatten(v[k], prefix ? prefix + "." + k : k, out);
    }
    return out;
  }

  function renderSummary(st) {
    const sum = st.summary;
    const s = section("Summary", "links");
    s.id = "view-summary";
    const facts = [["status", st.status], ["scenario", st.scenario + " (" + (sum.scenario_file || "") + ")"], ["kind", st.kind],
      ["engine", st.engine + ", " + st.mode], ["runs", st.runs], ["seed", sum.seed_string || sum.seed], ["started", sum.started],
      ["elapsed", fmt(sum.elapsed_seconds) + " s"], ["directory", st.dir]];
    if (st.error) facts.push(["error", st.error]);
    (sum.degraded || []).forEach((d) => facts.push(["degraded", d]));
    // live changes of the faults (dpsim run --ui): what, where, and who asked
    ((sum.interventions || {}).list || []).filter((c) => c.applied).forEach((c) => facts.push(["intervention",
      c.op + " " + c.target + " " + c.name + " from episode " + c.episode + " step " + c.step + ", asked at " + c.at +
      " by " + c.remote_addr + " (Origin " + (c.origin || "none") + ", " + c.user_agent + ")"]));
    table(s.appendChild(el("table")), ["run", ""], facts);
    const problems = (sum.problems || []).map((p) => [p.point, p.process, p.kind, p.count || "", p.fatal ? "fatal" : "degraded", p.detail]);
    s.appendChild(el("h3", "", "Problems"));
    table(s.appendChild(el("table")), ["point", "process", "kind", "messages", "effect", "detail"], problems, problems.map((p) => p[4] === "fatal")).id = "view-problems";
    if ((sum.warnings || []).length) {
      s.appendChild(el("h3", "", "Warnings"));
      const ul = s.appendChild(el("ul"));
      sum.warnings.forEach((w) => ul.appendChild(el("li", "", w)));
    }
    if (st.notes.length) {
      s.appendChild(el("h3", "", "Shown in part"));
      const ul = s.appendChild(el("ul"));
      st.notes.forEach((w) => ul.appendChild(el("li", "", w)));
    }
    s.appendChild(el("h3", "", "Points"));
    table(s.appendChild(el("table")), ["point", "requested", "completed", "traced", "elapsed s", "error"],
      (sum.points || []).map((p) => [p.name, p.requested, p.episodes, p.trace_episodes, p.elapsed_seconds, p.error || ""]), (sum.points || []).map((p) => !!p.error));
    s.appendChild(el("h3", "", "Metrics"));
    const sel = el("select");
    sel.id = "view-metrics-point";
    (sum.points || []).forEach((p, k) => sel.appendChild(new Option((k + 1) + ": " + p.name, k)));
    if ((sum.points || []).length > 1) s.appendChild(sel);
    const mt = s.appendChild(el("table"));
    mt.id = "view-metrics";
    const show = () => {
      const p = (sum.points || [])[+sel.value || 0] || {};
      const m = Object.assign({}, p.metrics || {});
      delete m.links;
      table(mt, ["metric", "value"], flatten(m, "", []).concat(flatten(p.guarantee || {}, "guarantee", [])));
      renderLinks(p);
    };
    sel.onchange = show;
    show();
  }

  function renderLinks(p) {
    const links = (p.metrics && p.metrics.links) || [];
    const head = ["link", "sent", "dropped", "delivered", "late", "duplicated", "delayed", "expired", "lost", "gaps", "conflicts"];
    table("links", head, links.map((l) => [l.link, l.sent, l.dropped, l.delivered, l.late, l.duplicated, l.delayed, l.expired, l.lost || 0, l.gaps, l.conflicts || 0]),
      links.map((l) => (l.conflicts || 0) > 0));
    const note = byId("links").closest("section").querySelector(".note");
    if (note) note.textContent = "Of point " + (p.name || "") + " (the processes' results).";
  }

  function renderProcesses(st) {
    const ps = st.summary.processes || [];
    const head = ["process", "point", "status", "exit", "peak RSS", "episodes", "steps", "invalid dropped", "disconnects", "reconnects", "error"];
    table("procs", head, ps.map((p) => [p.name, p.point, p.status || "ok", p.exit_code, p.max_rss_bytes > 0 ? (p.max_rss_bytes / (1 << 20)).toFixed(1) + " MiB" : "-",
      p.episodes, p.steps, (p.invalid && p.invalid.dropped) || 0, (p.conn && p.conn.disconnects) || 0, (p.conn && p.conn.reconnects) || 0, p.error || ""]),
    ps.map((p) => p.status && p.status !== "ok"));
  }

  async function start() {
    try {
      const r = await fetch("api/state");
      if (!r.ok) throw new Error("api/state: " + r.status);
      const st = view.state = await r.json();
      document.title = "dpsim view - " + st.scenario;
      byId("title").textContent = "dpsim view " + st.scenario + " (" + st.kind + ", " + st.engine + ", " + st.mode + ")";
      const badge = byId("status");
      badge.textContent = st.status;
      badge.className = "status " + st.status;
      byId("progress-box").style.display = "none";
      renderEpisodeControls(st);
      renderFigures(st);
      renderSummary(st);
      renderProcesses(st);
      renderTimeline(st);
      document.querySelector("footer").textContent = "Data: api/state (the run in " + st.dir + ").";
      view.ready = true;
      if (location.hash && byId(location.hash.slice(1))) byId(location.hash.slice(1)).scrollIntoView(); // a link to a figure: #figure-NAME
    } catch (err) {
      view.error = String(err);
      byId("status").textContent = "error: " + view.error;
      console.error(err);
    }
  }

  start();
})();
