// An authoring panel (/panels/{prepare|evaluator}/{id}): a conversation with the data-
// preparation or evaluator-construction agent. The agent's events arrive on the panel's
// server-sent event stream; the panel's state (status, last result, commit) with each change.
"use strict";
const { el, put } = SRH;
const [kind, panelId] = window.location.pathname.split("/").filter(Boolean).slice(1)
  .map(decodeURIComponent);
SRH.nav(kind);
const base = `/api/panels/${encodeURIComponent(kind)}/${encodeURIComponent(panelId)}`;
const TEXT = {
  prepare: { title: "Prepare data", purpose: "The data-preparation agent reads the workspace " +
    "(and the web, PDFs) and writes context.data; it is committed only when " +
    "validate_context_data passes." },
  evaluator: { title: "Build evaluator", purpose: "The evaluator-construction agent writes " +
    "context.evaluator/*.py and proves it with validate_evaluator on the data (by default this " +
    "panel id's context.data); only a proved evaluator can be committed." },
};
const CALL_CHARS = 240;     // a tool call's arguments shown inline (all of them on hover)
const state = { cursor: 0, view: null, streams: new Map(), lines: [] };

function typed(error) { return error.type ? `${error.type}: ${error.message}` : error.message; }

// ------------------------------------------------------------------ state
function renderView(view) {
  state.view = view;
  put(document.getElementById("status"), SRH.badge(view.status));
  put(document.getElementById("workspace"), view.workspace);
  const llm = document.getElementById("llm");
  if (!llm.value) llm.value = view.llm || "";
  put(document.getElementById("setup-note"), view.error ? el("span", { class: "bad" },
    typed(view.error)) : "");
  document.getElementById("send").disabled = view.status === "working";
  put(document.getElementById("send-note"), view.status === "working" ? "the model is working…" : "");
  const result = view.result;
  const parts = [];
  if (result) {
    parts.push(el("div", {}, `last turn: ${result.steps} response(s), ${result.stopped}` +
      (result.usage && result.usage.total_tokens ? `, ${result.usage.total_tokens} tokens` : "")));
    if (kind === "prepare") parts.push(...validation(result.validation));
    else parts.push(...proof(result));
  }
  put(document.getElementById("result"), parts.length ? parts : "no result yet");
  document.getElementById("commit").disabled = view.status === "working" || !result ||
    (kind === "evaluator" ? !result.valid : result.validation === null);
  const c = view.committed;
  put(document.getElementById("committed"), c ? el("div", { class: "ok", id: "committed-text" },
    `committed ${c.path}`, c.schema ? ` — target ${c.schema.target}, features ` +
      `${(c.schema.features || []).join(", ")}, ${c.schema.n_samples} samples` : "",
    el("pre", {}, c.command)) : "");
}

function validation(report) {
  if (!report) return [el("div", { class: "muted" }, "no context.data written yet")];
  if (report.ok) return [el("div", { class: "ok" }, "context.data is valid")];
  return [el("div", { class: "bad" }, `context.data does not validate (${report.errors.length} problem(s))`),
    el("ul", {}, report.errors.map((e) => el("li", {}, `${e.location}: ${e.message}`,
      e.hint ? el("span", { class: "muted" }, ` — ${e.hint}`) : "")))];
}

function proof(result) {
  const out = [result.valid ? el("div", { class: "ok" }, `proved: ${result.evaluator_file}`)
    : el("div", { class: "bad" }, "no proved evaluator")];
  if (result.unproved && result.unproved.length) {
    out.push(el("div", { class: "bad" }, `not proved in their current version: ${result.unproved.join(", ")}`));
  }
  return out;
}

async function refresh() {
  try { renderView(await SRH.api(base)); }
  catch (error) { put(document.getElementById("live"), `(${error.message})`); }
}

// ----------------------------------------------------------- conversation
function line(event) {
  const p = event.payload || {};
  switch (event.kind) {
    case "prompt_added":
      return el("div", { class: "msg user" }, el("div", { class: "role" }, "you"),
                el("pre", {}, p.content || (p.message && p.message.content) || ""));
    case "assistant_completed":
      return el("div", { class: "msg assistant" }, el("div", { class: "role" }, "assistant"),
        p.content ? el("pre", { class: "reply" }, p.content) : null,
        (p.tool_calls || []).map((t) => {
          const args = JSON.stringify(t.params);
          return el("div", { class: "call", title: args },
                    `→ ${t.name}(${args.length > CALL_CHARS ? args.slice(0, CALL_CHARS) + "…" : args})`);
        }));
    case "tool_completed":
      return el("div", { class: "msg tool" }, el("div", { class: "role" }, `tool · ${p.name} · `,
        el("span", { class: p.ok ? "ok" : "bad" }, p.ok ? "ok" : "failed")),
        el("pre", { class: "tool-result" }, p.result_str || ""));
    case "execution_failed":
      return el("div", { class: "msg error bad" }, el("div", { class: "role" }, "error"),
        el("pre", {}, p.type ? `${p.type}: ${p.error}` : (p.error || SRH.summary(p))));
    case "tool_started": return null;      // its tool_completed follows with the result
    default:                               // any other kind, new ones included
      return el("div", { class: "event note", "data-kind": event.kind },
        el("b", {}, event.kind), " ", SRH.describe(event));
  }
}

function addEvent(event) {
  if (SRH.stream(state.streams, event) && event.kind === "assistant_delta") {
    const key = event.payload.response_id || "reply";
    const text = state.streams.get(key).text;
    const last = state.lines[state.lines.length - 1];
    if (last && last.dataset.stream === key) last.querySelector("pre").textContent = text;
    else state.lines.push(el("div", { class: "msg assistant", "data-stream": key },
      el("div", { class: "role" }, "assistant · streaming…"), el("pre", {}, text)));
  } else {
    if (event.kind === "assistant_completed") {   // the complete reply replaces its stream
      state.lines = state.lines.filter((node) => !node.dataset.stream);
    }
    const node = line(event);
    if (node) state.lines.push(node);
  }
  state.lines = state.lines.slice(-400);
  const box = document.getElementById("conversation");
  put(box, state.lines);
  box.scrollTop = box.scrollHeight;
}

// ---------------------------------------------------------------- actions
async function send() {
  const note = document.getElementById("send-note");
  const message = document.getElementById("message").value;
  if (!message.trim()) { put(note, "Type a message first."); return; }
  const body = { message };
  const llm = document.getElementById("llm").value.trim();
  if (llm) body.llm = llm;
  if (kind === "evaluator") {
    const data = document.getElementById("data").value.trim();
    const target = document.getElementById("target").value.trim();
    if (data) body.data = data;
    if (target) body.target = target;
  }
  try {
    const view = await SRH.post(`${base}/messages`, body);
    // The stream may have shown this turn's end already (a fast turn): that view is newer.
    const shown = state.view;
    if (!shown || shown.turns < view.turns || shown.status === "working") renderView(view);
    document.getElementById("message").value = "";
  } catch (error) { put(note, el("span", { class: "bad" }, `Refused: ${error.message}`)); }
}

async function commit() {
  const note = document.getElementById("commit-note");
  try {
    renderView(await SRH.post(`${base}/commit`, {}));
    put(note, "committed");
  } catch (error) { put(note, el("span", { class: "bad" }, `Refused: ${error.message}`)); }
}

function connect() {
  const source = new EventSource(`${base}/events?after=${state.cursor}`);
  source.addEventListener("open", () => put(document.getElementById("live"), "live"));
  source.addEventListener("error", () => put(document.getElementById("live"), "reconnecting…"));
  source.addEventListener("progress", (message) => renderView(JSON.parse(message.data).control));
  source.addEventListener("reset", () => { state.lines = []; state.streams.clear(); });
  source.addEventListener("timeline", (message) => {
    const event = JSON.parse(message.data);
    state.cursor = event.seq;
    addEvent(event);
  });
}

put(document.getElementById("title"), `${TEXT[kind] ? TEXT[kind].title : kind} · ${panelId}`);
document.title = `${TEXT[kind] ? TEXT[kind].title : kind} · SRHarness`;
put(document.getElementById("purpose"), TEXT[kind] ? TEXT[kind].purpose : "");
document.getElementById("data-fields").hidden = kind !== "evaluator";
document.getElementById("panel-id").value = panelId;
document.getElementById("open").addEventListener("click", () => {
  const id = document.getElementById("panel-id").value.trim();
  if (id) window.location.pathname = `/panels/${encodeURIComponent(kind)}/${encodeURIComponent(id)}`;
});
document.getElementById("send").addEventListener("click", send);
document.getElementById("commit").addEventListener("click", commit);
refresh().then(connect);
