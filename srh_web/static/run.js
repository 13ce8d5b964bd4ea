// One run: progress, tree, node detail, Pareto front, timeline and controls, kept live
// through the server-sent event stream.
"use strict";
SRH.nav("runs");
const { el, put, num } = SRH;
const key = SRH.lastPathPart();
const base = `/api/runs/${encodeURIComponent(key)}`;
const state = { nodes: [], selected: null, summary: null, cursor: 0, refreshing: false,
                again: false, timeline: [], streams: new Map() };
const ACTIONS = ["pause", "resume", "force_pause", "next_c", "next_r"];

// ------------------------------------------------------------------ summary
function renderSummary(s) {
  state.summary = s;
  put(document.getElementById("title"), `Run ${s.run_id}`);
  const held = s.control && s.control.alive && s.status === "running"
    && ["pausing", "interrupting", "paused"].includes(s.control.interaction_state);
  put(document.getElementById("status"), SRH.badge(s.status));
  put(document.getElementById("held"), held ? SRH.badge(s.control.interaction_state) : "");
  const st = s.settings;
  const stats = [["R × C × L × K", `${st.R} × ${st.C} × ${st.L} × ${st.K}`],
    ["responses", `${s.nodes} / ${st.max_nodes}`], ["elapsed", SRH.seconds(s.elapsed_seconds)],
    ["tokens", s.tokens ? s.tokens.total.toLocaleString() : "–"],
    ["model", [st.llm_provider, st.llm_model].filter(Boolean).join(":") || "–"],
    ["candidates", s.front.ranked_count]];
  if (s.cost) stats.push(["cost", `$${s.cost.toFixed(4)}`]);
  if (s.model_requests !== undefined) stats.push(["model requests", s.model_requests]);
  put(document.getElementById("stats"), stats.map(([label, value]) =>
    el("div", { class: "stat", "data-stat": label }, el("span", { class: "muted" }, label),
       el("b", {}, value))));
  document.getElementById("bar").style.width =
    `${Math.min(100, (100 * s.nodes) / Math.max(1, st.max_nodes))}%`;
  put(document.getElementById("problem"), s.problem.description || "",
      s.problem.target ? ` Target ${s.problem.target} from ${s.problem.features.join(", ")}.` : "");
  put(document.getElementById("branches"), s.branches.map((b) =>
    el("span", { class: "badge" }, `R${b.R}-C${b.C}: L${b.L} ${b.status}` +
      (b.stop_reason ? ` (${b.stop_reason})` : ""))), " ");
  const best = s.best;
  put(document.getElementById("best"), best ? SRH.math(best.latex, best.formula, true)
    : "no candidate yet");
  put(document.getElementById("best-text"), best ? el("code", {}, best.formula) : "",
      best ? ` · complexity ${best.complexity} · ${s.front.metric} train ${num(best.train)}` +
        `, validation ${num(best.validation)}` : "");
  renderFront(s.front);
  renderControls(s.control);
}

// -------------------------------------------------------------------- front
function renderFront(front) {
  put(document.getElementById("metric-train"), `${front.metric} train`);
  put(document.getElementById("metric-valid"), `${front.metric} validation`);
  put(document.querySelector("#front tbody"), front.front.map((row) => el("tr", {},
    el("td", { class: "num" }, row.complexity), el("td", { class: "num" }, num(row.train)),
    el("td", { class: "num" }, num(row.validation)),
    el("td", {}, SRH.math(row.latex, row.formula)))));
  plot(document.getElementById("plot"), front);
}

function plot(container, front) {
  const points = front.top.filter((r) => typeof r.complexity === "number").map((r) => ({
    x: r.complexity, y: r.validation ?? r.train, row: r }))
    .filter((p) => typeof p.y === "number");
  if (!points.length) { put(container, el("p", { class: "muted" }, "no ranked candidate yet")); return; }
  const W = 460, H = 230, P = { l: 56, r: 12, t: 22, b: 34 };
  const floor = Math.max(1e-300, Math.min(...points.filter((p) => p.y > 0).map((p) => p.y)) || 1e-12);
  const ly = (y) => Math.log10(Math.max(y, floor));
  const xs = points.map((p) => p.x), ys = points.map((p) => ly(p.y));
  const [x0, x1] = [Math.min(...xs) - 1, Math.max(...xs) + 1];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (y1 - y0 < 1) { y0 -= 0.5; y1 += 0.5; }
  const sx = (x) => P.l + ((x - x0) / (x1 - x0)) * (W - P.l - P.r);
  const sy = (y) => H - P.b - ((ly(y) - y0) / (y1 - y0)) * (H - P.t - P.b);
  const svg = el("svg:svg", { width: "100%", viewBox: `0 0 ${W} ${H}`, role: "img",
                              "aria-label": "Pareto front: complexity against error" });
  svg.appendChild(el("svg:line", { x1: P.l, y1: H - P.b, x2: W - P.r, y2: H - P.b, stroke: "#94a3b8" }));
  svg.appendChild(el("svg:line", { x1: P.l, y1: P.t, x2: P.l, y2: H - P.b, stroke: "#94a3b8" }));
  svg.appendChild(el("svg:text", { x: W / 2, y: H - 6, "font-size": 11 }, "complexity"));
  svg.appendChild(el("svg:text", { x: 4, y: 12, "font-size": 11 }, `${front.metric} (log)`));
  for (const x of [...new Set([Math.min(...xs), Math.max(...xs)])]) {
    svg.appendChild(el("svg:text", { x: sx(x) - 3, y: H - P.b + 13, "font-size": 10 }, x));
  }
  for (const decade of [Math.ceil(y0), Math.floor(y1)]) {
    svg.appendChild(el("svg:text", { x: 6, y: sy(10 ** decade) + 4, "font-size": 10 },
                       `1e${decade}`));
  }
  for (const p of points) {
    svg.appendChild(el("svg:circle", { cx: sx(p.x), cy: sy(p.y), r: 3, fill: "#94a3b8" },
      el("svg:title", {}, `${p.row.formula} (complexity ${p.x}, ${num(p.y)})`)));
  }
  const frontPoints = front.front.map((r) => ({ x: r.complexity, y: r.validation ?? r.train }))
    .filter((p) => typeof p.y === "number").sort((a, b) => a.x - b.x);
  const path = frontPoints.map((p, i) => (i ? `H${sx(p.x)}V${sy(p.y)}` : `M${sx(p.x)},${sy(p.y)}`))
    .join("");
  if (path) svg.appendChild(el("svg:path", { d: path, fill: "none", stroke: "#dc2626",
                                             "stroke-width": 1.5 }));
  for (const p of frontPoints) {
    svg.appendChild(el("svg:circle", { cx: sx(p.x), cy: sy(p.y), r: 4, fill: "#dc2626" }));
  }
  put(container, svg);
}

// --------------------------------------------------------------------- tree
async function refreshNodes() {
  const data = await SRH.api(`${base}/nodes?after=${state.nodes.length}`);
  if (data.total < state.nodes.length) {          // the run's log was rewritten: start over
    state.nodes = (await SRH.api(`${base}/nodes?after=0`)).nodes;
  } else {
    state.nodes.push(...data.nodes);
  }
  put(document.getElementById("tree-count"), `${state.nodes.length} node(s)`);
  SRHTree.draw(document.getElementById("tree"), state.nodes, state.selected, selectNode);
}

async function selectNode(nodeId) {
  state.selected = nodeId;
  SRHTree.draw(document.getElementById("tree"), state.nodes, state.selected, selectNode);
  try {
    renderNode(await SRH.api(`${base}/nodes/${encodeURIComponent(nodeId)}`));
  } catch (error) { put(document.getElementById("node"), error.message); }
}

function message(m) {
  const parts = [el("div", { class: "role" }, m.role + (m.name ? ` · ${m.name}` : ""))];
  if (m.content) parts.push(el("pre", {}, typeof m.content === "string" ? m.content
                                                  : JSON.stringify(m.content, null, 1)));
  for (const call of m.tool_calls || []) {
    const fn = call.function || call;
    parts.push(el("pre", {}, `→ ${fn.name}(${typeof fn.arguments === "string" ? fn.arguments
      : JSON.stringify(fn.arguments ?? fn.params)})`));
  }
  return el("div", { class: `msg ${m.role}` }, parts);
}

function renderNode(node) {
  put(document.getElementById("node-title"), node.label);
  const parents = (node.parents || []).map((p) =>
    el("div", {}, `${p.relation} ← `, el("a", { href: "#", onclick: (e) => {
      e.preventDefault(); selectNode(p.parent_node_id); } }, p.parent_node_id)));
  const tools = node.tool_calls.map((t) => el("div", { class: "tool-call" },
    el("div", {}, el("b", {}, t.name), " ", el("code", {}, JSON.stringify(t.params)), " ",
       el("span", { class: t.ok ? "ok" : "bad" }, t.ok ? "ok" : "failed")),
    el("pre", { class: "tool-result" }, t.result_str)));
  const prompt = (node.prompt || []).map(message);
  put(document.getElementById("node"),
    el("p", { class: "note" }, `created ${node.created_at || "–"}`,
       node.finish_reason ? ` · finish ${node.finish_reason}` : "",
       node.usage && node.usage.total_tokens ? ` · ${node.usage.total_tokens} tokens (step)` : ""),
    parents.length ? el("div", {}, el("h2", {}, "Parents"), parents) : null,
    el("h2", {}, "Model reply"), el("pre", { class: "reply" }, node.content || "(empty)"),
    el("h2", {}, `Tool calls (${node.tool_calls.length})`), tools.length ? tools : el("p",
      { class: "muted" }, "none"),
    el("details", {}, el("summary", {}, `Messages sent to the model (${prompt.length})` +
      (node.prompt_node ? ` — the step's prompt, stored on ${node.prompt_node}` : "")), prompt));
}

// ----------------------------------------------------------------- controls
function renderControls(control) {
  const note = document.getElementById("control-note");
  const alive = control && control.alive;
  const current = control ? control.interaction_state : null;
  put(document.getElementById("control-state"), control ? SRH.badge(current) : "");
  const enabled = { pause: current === "running", resume: ["pausing", "interrupting", "paused"]
    .includes(current), force_pause: ["running", "pausing"].includes(current),
    next_c: !!current && current !== "idle", next_r: !!current && current !== "idle",
    message: !!alive };
  for (const action of [...ACTIONS, "message"]) {
    document.getElementById(action === "message" ? "send" : action).disabled =
      !(alive && enabled[action]);
  }
  if (!control) put(note, "This run does not take commands (start it with srh run --interactive).");
  else if (!alive) put(note, "The run's process is not running.");
  else if (current === "paused") put(note, control.waiting_at_boundary
    ? "Paused at a step boundary: no step in flight."
    : "Pausing: the steps in flight finish first.");
}

async function command(action) {
  const note = document.getElementById("control-note");
  const body = { action };
  if (action === "message") {
    body.message = document.getElementById("message").value;
    if (!body.message.trim()) { put(note, "Type a message first."); return; }
  }
  try {
    const reply = await SRH.post(`${base}/control`, body);
    put(note, `${action} sent (${reply.id.slice(0, 8)})`);
    if (action === "message") document.getElementById("message").value = "";
  } catch (error) { put(note, `Refused: ${error.message}`); }
}

for (const action of ACTIONS) {
  document.getElementById(action).addEventListener("click", () => command(action));
}
document.getElementById("send").addEventListener("click", () => command("message"));

// ----------------------------------------------------------------- timeline
function renderStreams() {
  const entries = [...state.streams.values()].slice(-6).reverse();
  document.getElementById("streams-card").hidden = entries.length === 0;
  put(document.getElementById("streams"), entries.map((entry) => el("div", { class: "msg assistant" },
    el("div", { class: "role" }, `${entry.label || "reply"}${entry.done ? " · complete" : " · streaming…"}`),
    el("pre", { class: "stream" }, entry.text))));
}

function addTimeline(event) {
  if (SRH.stream(state.streams, event)) renderStreams();
  if (event.kind === "assistant_delta") return;  // shown as the streamed text, not a line each

  state.timeline.unshift(el("div", { "data-kind": event.kind },
    el("span", { class: "muted" }, `#${event.seq} ${new Date(event.timestamp * 1000)
      .toLocaleTimeString()} `), el("b", {}, event.kind), " ", SRH.describe(event)));
  state.timeline = state.timeline.slice(0, 300);
  put(document.getElementById("timeline"), state.timeline);
}

// -------------------------------------------------------------------- live
async function refresh() {
  if (state.refreshing) { state.again = true; return; }
  state.refreshing = true;
  try {
    renderSummary(await SRH.api(base));
    await refreshNodes();
  } catch (error) {
    put(document.getElementById("live"), `(${error.message})`);
  } finally {
    state.refreshing = false;
    if (state.again) { state.again = false; refresh(); }
  }
}

function connect() {
  const source = new EventSource(`${base}/events?after=${state.cursor}`);
  source.addEventListener("open", () => put(document.getElementById("live"), "live"));
  source.addEventListener("error", () => put(document.getElementById("live"), "reconnecting…"));
  source.addEventListener("progress", () => refresh());
  source.addEventListener("reset", () => { state.timeline = []; state.streams.clear(); });
  source.addEventListener("timeline", (message) => {
    const event = JSON.parse(message.data);
    state.cursor = event.seq;
    addTimeline(event);
    if (["state_changed", "command_received", "execution_completed"].includes(event.kind)) refresh();
  });
}

refresh().then(connect);
