// Flow Studio: the run list, a run page with its graph, timeline and step panel, and the
// compare page. Everything a run wrote is put into the page as text (textContent and
// attributes), never parsed as markup: transcripts hold model output.
"use strict";

const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...children) {
  const node = tag.startsWith("svg:")
    ? document.createElementNS(SVG, tag.slice(4))
    : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(path, options) {
  const response = await fetch(path, options);
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  if (!response.ok) throw new Error((body && body.error) || `${response.status} ${response.statusText}`);
  return body;
}

function post(path, body) {
  return api(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body || {}),
  });
}

function notice(text, isError) {
  const node = document.getElementById("notice");
  node.textContent = text || "";
  node.className = isError ? "error" : "";
}

function badge(status) {
  return el("span", { class: "badge", "data-status": status, text: status });
}

function duration(row) {
  if (!row.created_at) return "";
  const end = row.completed_at ? Date.parse(row.completed_at) : Date.now();
  const ms = Math.max(0, end - Date.parse(row.created_at));
  if (!Number.isFinite(ms)) return "";  // a golden run's times are placeholders
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value) search.set(key, value);
  return search.toString();
}

// -- the run list ------------------------------------------------------------------------

async function listPage(params) {
  const app = document.getElementById("app");
  document.getElementById("where").textContent = "Runs";
  const state = {
    page: Number(params.get("page") || 1),
    status: params.get("status") || "",
    flow: params.get("flow") || "",
  };
  const body = el("tbody", { id: "run-rows" });
  const pager = el("div", { class: "pager" });
  const filters = el("div", { class: "filters" });
  const compare = el("div", { class: "controls" });
  const goldens = el("ul", { id: "goldens" });  // each opens as a run page
  app.replaceChildren(
    el("h2", { text: "Start a run" }),
    await startForm(),
    el("h2", { text: "Runs" }),
    filters,
    el("table", { id: "runs" },
      el("thead", {}, el("tr", {}, ["", "run", "status", "flows", "steps", "loops", "tokens",
        "cost", "duration", "created"].map((h) => el("th", { text: h })))),
      body),
    pager,
    compare,
    el("h2", { text: "Golden runs" }),
    goldens,
  );
  await renderFilters(filters, state);
  renderCompare(compare);
  api("/api/goldens").then((r) => goldens.replaceChildren(...r.goldens.map((g) =>
    el("li", {}, el("a", { href: `?${query({ run: `golden:${g}` })}`, text: g })))));
  let last = "";
  async function refresh() {
    try {
      const result = await api(`/api/runs?${query(state)}`);
      const text = JSON.stringify(result);
      if (text !== last) {
        last = text;
        renderRows(body, result.runs);
        renderPager(pager, state, result);
      }
    } catch (error) {
      notice(error.message, true);
    }
  }
  await refresh();
  setInterval(() => { if (!document.hidden) refresh(); }, 1000);
}

function renderRows(body, runs) {
  const checked = new Set([...body.querySelectorAll("input:checked")].map((i) => i.value));
  body.replaceChildren(...runs.map((run) => el("tr", { class: "run-row", "data-run": run.run_id },
    el("td", {}, el("input", { type: "checkbox", value: run.run_id, class: "pick",
      checked: checked.has(run.run_id), title: "pick two runs to compare" })),
    el("td", {}, el("a", { href: `?run=${encodeURIComponent(run.run_id)}`, text: run.run_id })),
    el("td", {}, badge(run.status)),
    el("td", { text: (run.flows || []).join(", ") }),
    el("td", { class: "num", text: run.steps }),
    el("td", { class: "num", text: run.loops }),
    el("td", { class: "num", text: run.tokens }),
    el("td", { class: "num", text: `$${Number(run.cost_usd || 0).toFixed(4)}` }),
    el("td", { class: "num", text: duration(run) }),
    el("td", { text: run.created_at || "" }),
  )));
  if (!runs.length) body.append(el("tr", {}, el("td", { colspan: 10, class: "muted", text: "No runs yet." })));
}

function renderPager(pager, state, result) {
  const pages = Math.max(1, Math.ceil(result.total / result.per_page));
  const link = (page, text) => el("a", { href: `?${query({ ...state, page })}`, text });
  pager.replaceChildren(
    state.page > 1 ? link(state.page - 1, "← newer") : "",
    el("span", { text: `page ${state.page} of ${pages} · ${result.total} run(s)` }),
    state.page < pages ? link(state.page + 1, "older →") : "",
  );
}

async function renderFilters(filters, state) {
  const facets = await api("/api/facets");
  const select = (name, values) => el("select", { name, id: `filter-${name}`,
    onchange: (event) => { location.search = query({ ...state, [name]: event.target.value, page: 1 }); } },
    el("option", { value: "", text: `any ${name}` }),
    values.map((v) => el("option", { value: v, text: v, selected: v === state[name] })));
  filters.replaceChildren("Filter:", select("status", facets.statuses), select("flow", facets.flows));
}

function renderCompare(box) {
  const golden = el("select", { id: "golden" }, el("option", { value: "", text: "or a golden run…" }));
  api("/api/goldens").then((r) => golden.append(...r.goldens.map((g) => el("option", { value: `golden:${g}`, text: g }))));
  box.replaceChildren(
    el("button", { id: "compare", type: "button", text: "Compare", onclick: () => {
      const picked = [...document.querySelectorAll("input.pick:checked")].map((i) => i.value);
      const sides = golden.value ? [golden.value, ...picked.slice(0, 1)] : picked.slice(0, 2);
      if (sides.length !== 2) { notice("Pick two runs, or a golden run and one run.", true); return; }
      location.search = query({ compare: sides.join(",") });
    } }),
    golden,
  );
}

async function startForm() {
  const [flows, backends] = await Promise.all([api("/api/flows"), api("/api/backends")]);
  const defaults = new Set(flows.default);
  const form = el("form", { class: "start", id: "start-form" },
    el("fieldset", {}, el("legend", { text: "flows" }),
      flows.flows.filter((f) => !f.error && !f.utility).map((f) => el("label", {},
        el("input", { type: "checkbox", name: "flow", value: f.key, checked: defaults.has(f.key) }),
        ` ${f.key}`))),
    el("label", {}, "backend ", el("select", { name: "backend", id: "backend" },
      backends.backends.map((b) => el("option", { value: b, text: b, selected: b === backends.default })))),
    el("label", {}, "mode ", el("select", { name: "mode", id: "mode" },
      backends.modes.map((m) => el("option", { value: m, text: m, selected: m === "stub" })))),
    el("button", { type: "submit", id: "start", text: "Start run" }),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = [...form.querySelectorAll("input[name=flow]:checked")].map((i) => i.value);
    try {
      const result = await post("/api/runs", { flows: chosen, backend: form.backend.value, mode: form.mode.value });
      location.search = query({ run: result.run_id });
    } catch (error) {
      notice(error.message, true);
    }
  });
  return form;
}

// -- the run page ------------------------------------------------------------------------

const NODE_W = 230, NODE_H = 38, GAP = 26, LEFT = 120, RIGHT = 170;

let graphCount = 0;

function drawGraph(flow) {
  const marker = `arrow-${++graphCount}`;
  const y = (i) => 16 + i * (NODE_H + GAP);
  const position = new Map(flow.nodes.map((n, i) => [n.id, i]));
  const height = y(flow.nodes.length) + 10;
  const svg = el("svg:svg", { width: LEFT + NODE_W + RIGHT, height, class: "flow-graph", "data-flow": flow.key },
    el("svg:defs", {}, el("svg:marker", { id: marker, viewBox: "0 0 10 10", refX: 9, refY: 5,
      markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, el("svg:path", { d: "M0,0 L10,5 L0,10 z" }))));
  let left = 0, right = 0;
  const between = new Map();  // labels so far on edges between the same two steps
  for (const edge of flow.edges) {
    const i = position.get(edge.from), j = position.get(edge.to);
    if (i === undefined || j === undefined) continue;
    let d, lx, ly;
    if (edge.kind === "linear" && j === i + 1) {
      const x = LEFT + NODE_W / 2;
      d = `M${x},${y(i) + NODE_H} L${x},${y(j)}`;
      lx = x + 6; ly = (y(i) + NODE_H + y(j)) / 2 + 4;
    } else if (j <= i) {
      const off = 30 + 16 * (left++ % 7), x = LEFT;
      d = `M${x},${y(i) + NODE_H / 2} C${x - off * 2},${y(i)} ${x - off * 2},${y(j) + NODE_H} ${x},${y(j) + NODE_H / 2}`;
      lx = 4; ly = (y(i) + y(j) + NODE_H) / 2 + 4;  // halfway between the two steps
    } else {
      const off = 30 + 16 * (right++ % 7), x = LEFT + NODE_W;
      d = `M${x},${y(i) + NODE_H / 2} C${x + off * 2},${y(i)} ${x + off * 2},${y(j) + NODE_H} ${x},${y(j) + NODE_H / 2}`;
      // On its curve: beside its farthest point, halfway between the two steps.
      lx = Math.min(x + 1.5 * off + 3, LEFT + NODE_W + RIGHT - 60); ly = (y(i) + y(j) + NODE_H) / 2 + 4;
    }
    svg.append(el("svg:path", { class: "edge", d, "data-kind": edge.kind, "data-from": edge.from,
      "data-to": edge.to, "marker-end": `url(#${marker})` }, el("svg:title", { text: edge.label || edge.kind })));
    if (edge.label) {
      const pair = `${edge.from}\u0000${edge.to}`, k = between.get(pair) || 0;
      between.set(pair, k + 1);
      ly += 18 * k;  // two edges between the same steps: one label under the other
      svg.append(el("svg:text", { class: "edge-label", x: lx, y: ly, "data-from": edge.from,
        "data-to": edge.to, text: edge.label }));
    }
  }
  flow.nodes.forEach((node, i) => {
    svg.append(el("svg:g", { class: "node", "data-flow": flow.key, "data-step": node.id,
      "data-status": "not_run", "data-count": 0, tabindex: 0 },
      el("svg:rect", { x: LEFT, y: y(i), width: NODE_W, height: NODE_H }),
      el("svg:text", { x: LEFT + 8, y: y(i) + 16, text: node.id }),
      el("svg:text", { class: "count", x: LEFT + 8, y: y(i) + 31, text: countText(0, node.agents) }),
      el("svg:title", { text: node.role || node.id })));
  });
  const by = flow.injected_by;  // a detour or utility flow: nested under the step that entered it
  return el("section", by
    ? { class: "graph injected", "data-injected-by": `${by.flow}/${by.step}`, "data-depth": flow.depth }
    : { class: "graph" },
    el("h3", { text: `${flow.key}: ${flow.title}` }),
    by ? el("p", { class: "muted injected-by", text: `↳ entered from ${by.flow}/${by.step}` }) : null,
    flow.source === "events" ? el("p", { class: "muted", text: flow.description }) : null,
    svg);
}

function countText(count, agents) {
  const who = (agents || []).join(", ");
  return `×${count}${who ? ` · ${who}` : ""}`;
}

function addTimelineRow(event, page) {
  const kind = String(event.kind || "?");
  page.timeline.append(el("tr", { "data-seq": event.seq, "data-kind": kind },
    el("td", { class: "num", text: event.seq }),
    el("td", { text: String(event.ts || "").slice(11, 23), title: String(event.ts || "") }),
    el("td", { text: kind }),
    el("td", { text: event.step_id ? `${event.flow_key}/${event.step_id}` : "" }),
    el("td", { text: summarise(kind, event.payload, page.kinds) })));
  page.lastSeq = Math.max(page.lastSeq, event.seq);
}

// Lays one event over the graph; false when the step has no node (yet).
function applyToNode(event) {
  if (typeof event.step_id !== "string" || typeof event.flow_key !== "string") return true;
  const node = document.querySelector(`g.node[data-flow="${CSS.escape(event.flow_key)}"][data-step="${CSS.escape(event.step_id)}"]`);
  if (!node) return false;
  const payload = event.payload && typeof event.payload === "object" ? event.payload : {};
  if (event.kind === "step_start") {
    const count = Number(node.getAttribute("data-count")) + 1;
    node.setAttribute("data-count", count);
    node.setAttribute("data-status", "running");
    node.querySelector("text.count").textContent = countText(count, Array.isArray(payload.agents) ? payload.agents : []);
  } else if (event.kind === "step_end") {
    node.setAttribute("data-status", String(payload.status || "succeeded"));
  } else if (event.kind === "step_error") {
    node.setAttribute("data-status", "failed");
  } else if (event.kind === "route_decision" && typeof payload.to_step === "string") {
    markEdges(event.flow_key, event.step_id, payload.to_step, (edge) =>
      edge.setAttribute("data-taken", Number(edge.getAttribute("data-taken") || 0) + 1));
  } else if (event.kind === "routing_offroad" && typeof payload.actual_step === "string") {
    markEdges(event.flow_key, event.step_id, payload.actual_step, (edge) =>
      edge.setAttribute("data-offroad", "true"));
  }
  return true;
}

// The route taken: every edge of a flow from one step to another gets ``mark``.
function markEdges(flow, from, to, mark) {
  const svg = document.querySelector(`svg.flow-graph[data-flow="${CSS.escape(flow)}"]`);
  if (!svg) return;
  svg.querySelectorAll(`path.edge[data-from="${CSS.escape(from)}"][data-to="${CSS.escape(to)}"]`)
    .forEach(mark);
}

function applyEvent(event, page) {
  if (typeof event.seq === "number" && event.seq <= page.lastSeq) return;  // had it already
  page.events.push(event);
  addTimelineRow(event, page);
  if (!applyToNode(event)) page.redrawGraph();  // a flow drawn from its events grew a step
  if (String(event.kind || "").startsWith("run_")) page.reloadSummary();
}

// An event's payload as one line: the fields its kind declares, in the contract's order
// (GET /api/event-kinds, made from the kinds' declarations), then any others it carries.
function summarise(kind, payload, kinds) {
  if (!payload || typeof payload !== "object") return "";
  const declared = (kinds && kinds[kind] && kinds[kind].fields) || [];
  const keys = [...declared.filter((k) => k in payload), ...Object.keys(payload).filter((k) => !declared.includes(k))];
  const parts = keys.filter((k) => payload[k] !== undefined && payload[k] !== null)
    .map((k) => `${k}=${brief(payload[k])}`);
  return parts.join(" ").slice(0, 300);
}

function brief(value) {
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

async function runPage(runId) {
  const app = document.getElementById("app");
  document.getElementById("where").textContent = runId;
  const base = `/api/runs/${encodeURIComponent(runId)}`;
  const header = el("div", { id: "run-header" });
  const controls = el("div", { class: "controls" });
  const graphs = el("div", { class: "graphs", id: "graphs" });
  const timeline = el("tbody", { id: "timeline-rows" });
  const panel = el("aside", { class: "step", id: "step-panel" }, el("p", { class: "muted", text: "Click a step to see its receipt, handoff, tool calls, judgements and transcript." }));
  app.replaceChildren(header, controls, graphs,
    el("div", { class: "run-layout" },
      el("div", {}, el("h2", { text: "Events" }),
        el("div", { class: "timeline" }, el("table", { id: "timeline" },
          el("thead", {}, el("tr", {}, ["seq", "time", "kind", "step", "payload"].map((h) => el("th", { text: h })))),
          timeline))),
      panel));
  const page = { timeline, lastSeq: 0, source: null, events: [], reloadSummary: null, redrawGraph: null, kinds: {}, ready: false };
  let redrawing = false;
  async function drawGraphs() {
    const graph = await api(`${base}/graph`);
    graphs.replaceChildren(...graph.flows.map(drawGraph));
    // Node states come from the events, so the graph and the timeline agree on every seq.
    for (const event of page.events) applyToNode(event);
  }
  page.redrawGraph = () => {
    if (redrawing) return;
    redrawing = true;
    drawGraphs().catch((e) => notice(e.message, true)).finally(() => { redrawing = false; });
  };
  // Every event of the log after the last one shown, applied once: a page that says a run
  // is over shows all of it, whichever way (stream, summary) it learnt the end first.
  async function catchUp() {
    const missed = await api(`${base}/events?since_seq=${page.lastSeq}`);
    for (const event of missed.events) applyEvent(event, page);
  }
  async function reloadSummary() {
    const summary = await api(base);
    if (page.ready && !["pending", "running"].includes(summary.status)) await catchUp();
    header.replaceChildren(el("h2", {}, `${runId} `, el("span", { id: "run-status", class: "badge", "data-status": summary.status, text: summary.status })),
      el("p", { class: "muted", text: `flows ${summary.flows.join(", ")} · ${summary.steps} steps · ${summary.loops} loops · ${summary.tokens} tokens · $${Number(summary.cost_usd).toFixed(4)} · ${duration(summary)} · ${summary.backend || ""} ${summary.mode || ""}` }),
      summary.error ? el("p", { class: "error", id: "run-error", text: summary.error }) : "");
    renderControls(controls, runId, summary, page);
    return summary;
  }
  page.reloadSummary = () => { reloadSummary().catch((e) => notice(e.message, true)); };
  try {
    await reloadSummary();
    page.kinds = await api("/api/event-kinds");
    const events = await api(`${base}/events`);
    for (const event of events.events) {
      page.events.push(event);
      addTimelineRow(event, page);
    }
    await drawGraphs();
    page.ready = true;  // from here on a summary that says the run is over catches up
  } catch (error) {
    app.replaceChildren(el("p", { class: "error", id: "run-error", text: error.message }));
    return;
  }
  graphs.addEventListener("click", (event) => {
    const node = event.target.closest("g.node");
    if (node) openStep(runId, node.getAttribute("data-flow"), node.getAttribute("data-step"), null, panel);
  });
  follow(runId, page);
}

function follow(runId, page) {
  if (page.source) page.source.close();
  const source = new EventSource(`/api/runs/${encodeURIComponent(runId)}/stream?since_seq=${page.lastSeq}`);
  page.source = source;
  source.onmessage = (message) => applyEvent(JSON.parse(message.data), page);
  source.addEventListener("end", () => { source.close(); page.reloadSummary(); });
}

function renderControls(box, runId, summary, page) {
  const act = (action) => async () => {
    try {
      const result = await post(`/api/runs/${encodeURIComponent(runId)}/${action}`);
      notice(result.message);
      if (action === "resume") follow(runId, page);
      page.reloadSummary();
    } catch (error) {
      notice(error.message, true);
    }
  };
  const live = summary.status === "running" || summary.status === "pending";
  const resumable = ["paused", "stopped", "crashed", "blocked"].includes(summary.status);
  box.replaceChildren(
    el("button", { id: "pause", type: "button", text: "Pause", disabled: !live, onclick: act("pause") }),
    el("button", { id: "stop", type: "button", text: "Stop", disabled: !live, onclick: act("stop") }),
    el("button", { id: "resume", type: "button", text: "Resume", disabled: !resumable, onclick: act("resume") }),
    el("a", { href: "/", text: "all runs" }),
  );
}

async function openStep(runId, flow, step, iteration, panel) {
  document.querySelectorAll("g.node.selected").forEach((n) => n.classList.remove("selected"));
  const node = document.querySelector(`g.node[data-flow="${CSS.escape(flow)}"][data-step="${CSS.escape(step)}"]`);
  if (node) node.classList.add("selected");
  const path = `/api/runs/${encodeURIComponent(runId)}/flows/${encodeURIComponent(flow)}/steps/${encodeURIComponent(step)}`;
  let result;
  try {
    result = await api(iteration === null ? path : `${path}?iteration=${iteration}`);
  } catch (error) {
    panel.replaceChildren(el("h3", { text: `${flow}/${step}` }), el("p", { class: "error", text: error.message }));
    return;
  }
  const pick = el("select", { id: "iteration", onchange: (e) => openStep(runId, flow, step, Number(e.target.value), panel) },
    result.iterations.map((n) => el("option", { value: n, text: `execution ${n + 1} of ${result.iterations.length}`, selected: n === result.iteration })));
  panel.replaceChildren(
    el("h3", {}, `${flow}/${step} `, badge(result.receipt.status || "?")),
    result.iterations.length > 1 ? pick : "",
    el("h4", { text: "Handoff" }),
    el("pre", { id: "handoff", text: result.handoff ? JSON.stringify(result.handoff, null, 2) : "(none)" }),
    toolCalls(result.tool_calls || [], result.receipt.tools_allowed),
    judgements(result.receipt.judgements),
    el("h4", { text: "Transcript" }),
    el("div", { id: "transcript" }, result.transcript.map(message)),
    el("details", {}, el("summary", { text: `Receipt (${result.receipt_file})` }),
      el("pre", { id: "receipt", text: JSON.stringify(result.receipt, null, 2) })),
  );
}

// The step's tool calls in order: name, how it ended, its time, its input and output.
function toolCalls(calls, allowed) {
  if (!calls.length && !Array.isArray(allowed)) return "";
  const shown = Array.isArray(allowed) && allowed.length ? ` (allowed: ${allowed.join(", ")})` : "";
  return el("div", {},
    el("h4", { text: `Tool calls: ${calls.length}${shown}` }),
    el("ol", { id: "tool-calls" }, calls.map((call) => {
      const ended = call.success === true ? "ok" : call.success === false ? "failed" : "running";
      const time = typeof call.ms === "number" ? `${call.ms} ms` : "";
      return el("li", { class: "tool-call", "data-tool": String(call.tool), "data-success": ended },
        el("strong", { class: "tool-name", text: String(call.tool) }), " ",
        el("span", { class: "badge", "data-status": ended === "ok" ? "succeeded" : ended, text: ended }), " ",
        el("span", { class: "muted tool-ms", text: time }),
        el("div", { class: "tool-input" }, el("em", { text: "input" }), longText(call.input)),
        ended === "running" ? "" : el("div", { class: "tool-output" }, el("em", { text: "output" }), longText(call.output)));
    })));
}

// What the step's judges made of its reply: name, verdict, score against threshold, why.
function judgements(list) {
  if (!Array.isArray(list) || !list.length) return "";
  const passed = list.filter((j) => j && j.passed === true).length;
  return el("div", {},
    el("h4", { text: `Judgements: ${passed} of ${list.length} passed` }),
    el("ol", { id: "judgements" }, list.map((j) => {
      const verdict = j.passed === true ? "passed" : "failed";
      const score = typeof j.score === "number" ? String(j.score) : "no score";
      return el("li", { class: "judgement", "data-judge": String(j.name), "data-passed": verdict },
        el("strong", { class: "judge-name", text: String(j.name) }), " ",
        el("span", { class: "badge", "data-status": verdict === "passed" ? "succeeded" : "failed", text: verdict }), " ",
        el("span", { class: "muted judge-score", text: `${score} (threshold ${j.threshold}) · ${j.model}` }),
        el("div", { class: "judge-reason" }, longText(String(j.reason))));
    })));
}

const SHOWN_CHARS = 600, SHOWN_LINES = 12;

// A value as text; a long one is cut visibly, the whole of it one click away.
function longText(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value === undefined ? null : value, null, 2);
  let end = Math.min(text.length, SHOWN_CHARS);
  for (let i = 0, lines = 0; i < end; i++) if (text[i] === "\n" && ++lines === SHOWN_LINES) end = i;
  if (end >= text.length) return el("pre", { text });
  return el("div", { class: "long" },
    el("pre", { class: "cut", text: `${text.slice(0, end)}… (${text.length - end} more characters)` }),
    el("details", {}, el("summary", { text: `show all ${text.length} characters` }), el("pre", { class: "whole", text })));
}

function message(line) {
  if (!line || typeof line !== "object") line = { content: JSON.stringify(line) };
  const role = String(line.role || line.type || "line");
  let content = line.content;
  if (content === undefined) content = JSON.stringify(line.type === "tool_use" ? line.input : line.output !== undefined ? line.output : line, null, 2);
  if (typeof content !== "string") content = JSON.stringify(content, null, 2);
  return el("div", { class: "message", "data-role": role },
    el("strong", { text: line.tool ? `${role} · ${String(line.tool)}` : role }),
    el("pre", { text: content }));
}

// -- the compare page --------------------------------------------------------------------

async function comparePage(spec) {
  const app = document.getElementById("app");
  const [a, b] = spec.split(",");
  document.getElementById("where").textContent = `Compare ${a} → ${b}`;
  let result;
  try {
    result = await api(`/api/compare?${query({ a, b })}`);
  } catch (error) {
    app.replaceChildren(el("p", { class: "error", id: "compare-error", text: error.message }));
    return;
  }
  const title = el("h2", { id: "compare-title", text: result.changes.length
    ? `${a} → ${b}: ${result.changes.length} file(s) changed`
    : `No differences between ${a} and ${b}` });
  const steps = el("table", { id: "compare-steps" },
    el("thead", {}, el("tr", {}, ["flow", "step", "files"].map((h) => el("th", { text: h })))),
    el("tbody", {}, result.steps.map((s) => el("tr", {},
      el("td", { text: s.flow }), el("td", { text: s.step || "-" }),
      el("td", { text: s.files.map((f) => `${f.path} (${f.change})`).join(", ") })))));
  const files = result.changes.map((change) => el("details", { class: "change", open: true },
    el("summary", { text: `${change.path} (${change.change}; ${change.steps.join(", ")})` }),
    el("pre", { class: "diff" }, change.diff.map((line) => el("span", {
      class: line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "",
      text: line })))));
  app.replaceChildren(title, result.changes.length ? steps : "", ...files);
}

// -- routing -----------------------------------------------------------------------------

function main() {
  const params = new URLSearchParams(location.search);
  const page = params.get("run") ? runPage(params.get("run"))
    : params.get("compare") ? comparePage(params.get("compare"))
    : listPage(params);
  page.catch((error) => {
    document.getElementById("app").replaceChildren(el("p", { class: "error", text: error.message }));
  });
}

main();
