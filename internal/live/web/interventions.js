// The interventions panel of the live view: add, change or remove a link rule or a partition
// and crash a process while the run goes, through the API on this server (GET /api/faults,
// POST/PUT/DELETE /api/faults/links|partitions, POST /api/procs/{name}/crash). A change takes
// effect at step 0 of the next episode; the table shows where each one did.
// window.dpsimInterventions holds what was drawn (the browser test reads it).
"use strict";

(() => {
  if (document.body.dataset.mode === "view") { // dpsim view: a finished run takes no changes
    const sec = document.getElementById("interventions");
    if (sec) sec.hidden = true;
    return;
  }
  const iv = window.dpsimInterventions = { state: null, error: "", sent: 0, applied: 0 };
  const el = (id) => document.getElementById(id);
  let editing = null; // {target, name}: the form changes this rule instead of adding one

  function num(id) {
    const v = el(id).value.trim();
    return v === "" ? undefined : Number(v);
  }

  // ruleBody is the link rule of the form (only the fields given).
  function ruleBody() {
    const b = {};
    for (const k of ["name", "from", "to"]) {
      const v = el("iv-link-" + k).value.trim();
      if (v !== "") b[k] = v;
    }
    for (const k of ["drop", "delay", "jitter", "duplicate", "reorder"]) {
      const v = num("iv-link-" + k);
      if (v !== undefined) b[k] = v;
    }
    return b;
  }

  function partitionBody() {
    const b = {};
    const name = el("iv-part-name").value.trim();
    if (name !== "") b.name = name;
    const agents = el("iv-part-agents").value.split(",").map((s) => s.trim()).filter((s) => s !== "");
    b.agents = agents.map(Number);
    const from = num("iv-part-from"), to = num("iv-part-to");
    if (from !== undefined || to !== undefined) b.window = [from || 0, to];
    return b;
  }

  // The server takes a change only as JSON from this page's origin, with the token (the cookie
  // it set when the page was opened with ?token=; fetch sends it to the same origin).
  async function send(method, path, body) {
    const opts = { method, credentials: "same-origin", headers: { "Content-Type": "application/json" } };
    if (body !== undefined) opts.body = JSON.stringify(body);
    const msg = el("iv-msg");
    try {
      const r = await fetch(path, opts);
      const out = await r.json();
      if (!r.ok) {
        iv.error = (out.field ? out.field + ": " : "") + out.error;
        msg.textContent = "Refused (" + r.status + "): " + out.error;
        msg.className = "note bad";
        return;
      }
      iv.error = "";
      iv.sent++;
      msg.textContent = out.op + " " + out.target + " " + out.name + (out.applied ?
        ": in force from episode " + out.episode + " step " + out.step + "." : ": takes effect at the start of the next episode.");
      msg.className = "note";
      editing = null;
      el("iv-link-submit").textContent = "Add rule";
      el("iv-part-submit").textContent = "Add partition";
    } catch (e) {
      iv.error = String(e);
      msg.textContent = "Failed: " + e;
      msg.className = "note bad";
    }
    refresh();
  }

  function button(text, onclick) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.addEventListener("click", onclick);
    return b;
  }

  function editLink(l) {
    editing = { target: "links", name: l.name };
    el("iv-link-name").value = l.name;
    el("iv-link-from").value = l.subject ? "" : (l.from || "");
    el("iv-link-to").value = l.to || "";
    for (const k of ["drop", "delay", "jitter", "duplicate", "reorder"]) el("iv-link-" + k).value = l[k] || "";
    el("iv-link-submit").textContent = "Change rule " + l.name;
  }

  function editPartition(p) {
    editing = { target: "partitions", name: p.name };
    el("iv-part-name").value = p.name;
    el("iv-part-agents").value = p.side.join(", ");
    el("iv-part-from").value = p.window.from;
    el("iv-part-to").value = p.window.to;
    el("iv-part-submit").textContent = "Change partition " + p.name;
  }

  // currentTable lists the rules (or partitions) acting from the next episode, each with its
  // change and remove buttons.
  function currentTable(id, items, target, describe, edit) {
    const t = el(id);
    t.textContent = "";
    if (items.length === 0) {
      t.insertRow().insertCell().textContent = "none";
      return;
    }
    for (const it of items) {
      const row = t.insertRow();
      row.insertCell().textContent = it.name;
      const d = row.insertCell();
      d.textContent = describe(it);
      d.className = "l";
      const c = row.insertCell();
      c.appendChild(button("change", () => edit(it)));
      c.appendChild(button("remove", () => send("DELETE", "api/faults/" + target + "/" + encodeURIComponent(it.name))));
    }
  }

  function describeLink(l) {
    const parts = [(l.subject ? "subject " + l.subject : (l.from || "*")) + " -> " + (l.to || "*")];
    for (const k of ["drop", "delay", "jitter", "duplicate", "reorder"]) if (l[k]) parts.push(k + " " + l[k]);
    if (l.window) parts.push("steps " + l.window.from + ".." + (l.window.to - 1));
    if (l.active && l.active.from) parts.push("from episode " + l.active.from.episode + " step " + l.active.from.step);
    return parts.join(", ");
  }

  function describePartition(p) {
    let d = "agents " + p.side.join(", ") + " | the others, steps " + p.window.from + ".." + (p.window.to - 1);
    if (p.active && p.active.from) d += ", from episode " + p.active.from.episode + " step " + p.active.from.step;
    return d;
  }

  function render(st) {
    iv.state = st;
    iv.applied = st.interventions.filter((c) => c.applied).length;
    const note = el("iv-note");
    if (!st.enabled) note.textContent = "Interventions are not possible in this run: " + st.refused;
    else if (st.next_episode < 0 && !st.realtime) note.textContent = "No episode is left to start: the faults are final.";
    else if (st.realtime) note.textContent = "A link rule or partition change takes effect in the episode in progress, a few steps ahead; a crash at the next episode.";
    else note.textContent = "A change takes effect at step 0 of the next episode the launcher starts (now episode " + st.next_episode + ").";
    el("iv-forms").style.display = st.enabled && (st.next_episode >= 0 || st.realtime) ? "" : "none";
    currentTable("iv-links", st.current.links || [], "links", describeLink, editLink);
    currentTable("iv-parts", st.current.partitions || [], "partitions", describePartition, editPartition);
    const t = el("iv-applied");
    t.textContent = "";
    const head = t.insertRow();
    for (const h of ["#", "change", "name", "in the faults", "episode", "step", "detail", "asked by"]) {
      const th = document.createElement("th");
      th.textContent = h;
      head.appendChild(th);
    }
    if (st.interventions.length === 0) t.insertRow().insertCell().textContent = "none yet";
    for (const c of st.interventions) {
      const row = t.insertRow();
      const cells = [c.id, c.op + " " + c.target, c.name, c.rule || "", c.applied ? c.episode : "pending", c.applied ? c.step : "", c.detail || "",
        (c.remote_addr || "") + (c.origin ? " (" + c.origin + ")" : "")];
      for (const v of cells) {
        const td = row.insertCell();
        td.textContent = String(v);
        if (typeof v === "string") td.className = "l";
      }
    }
  }

  async function refresh() {
    try {
      const r = await fetch("api/faults", { cache: "no-store" });
      if (r.ok) render(await r.json());
    } catch (e) {
      // the run's server is gone (the run ended): keep what was drawn
    }
  }

  el("iv-link-submit").addEventListener("click", () => {
    if (editing && editing.target === "links") send("PUT", "api/faults/links/" + encodeURIComponent(editing.name), ruleBody());
    else send("POST", "api/faults/links", ruleBody());
  });
  el("iv-part-submit").addEventListener("click", () => {
    if (editing && editing.target === "partitions") send("PUT", "api/faults/partitions/" + encodeURIComponent(editing.name), partitionBody());
    else send("POST", "api/faults/partitions", partitionBody());
  });
  el("iv-crash-submit").addEventListener("click", () => {
    const b = {};
    for (const k of ["step", "down"]) {
      const v = num("iv-crash-" + k);
      if (v !== undefined) b[k] = v;
    }
    if (el("iv-crash-noise").value) b.noise = el("iv-crash-noise").value;
    send("POST", "api/procs/" + encodeURIComponent(el("iv-crash-proc").value.trim()) + "/crash", b);
  });
  refresh();
  setInterval(refresh, 1000);
})();
