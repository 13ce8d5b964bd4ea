// Shared helpers of the workbench pages. Every piece of text from a run (model replies,
// tool results, formulas, names) goes into the page through text nodes, never as HTML.
"use strict";

const SRH = (() => {
  const SVG_NS = "http://www.w3.org/2000/svg";

  function el(tag, attrs, ...children) {
    const node = tag.startsWith("svg:") ? document.createElementNS(SVG_NS, tag.slice(4))
      : document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function put(node, ...children) { clear(node); children.flat().forEach((c) =>
    c !== null && c !== undefined && node.appendChild(typeof c === "object" ? c
      : document.createTextNode(String(c)))); return node; }

  function cookie(name) {
    const found = document.cookie.split("; ").find((part) => part.startsWith(name + "="));
    return found ? decodeURIComponent(found.slice(name.length + 1)) : "";
  }

  async function api(path) {
    const response = await fetch(path, { credentials: "same-origin",
                                         headers: { Accept: "application/json" } });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body.error || response.statusText);
    return body;
  }

  async function post(path, body) {
    const response = await fetch(path, {
      method: "POST", credentials: "same-origin", body: JSON.stringify(body),
      headers: { "Content-Type": "application/json", "X-SRH-CSRF": cookie("srh_csrf") } });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.error || response.statusText);
    return data;
  }

  function num(value, digits = 4) {
    if (value === null || value === undefined) return "–";
    if (typeof value !== "number") return String(value);
    if (value === 0) return "0";
    const magnitude = Math.abs(value);
    return magnitude >= 1e-3 && magnitude < 1e5 ? String(+value.toPrecision(digits))
      : value.toExponential(digits - 1);
  }

  function seconds(value) {
    if (value === null || value === undefined) return "–";
    if (value < 90) return `${value.toFixed(1)} s`;
    if (value < 5400) return `${(value / 60).toFixed(1)} min`;
    return `${(value / 3600).toFixed(1)} h`;
  }

  function math(latex, text, display = false) {
    const node = el(display ? "div" : "span", { class: "math", title: text || "" });
    if (latex && window.katex) {
      try {
        window.katex.render(latex, node, { throwOnError: false, trust: false, strict: "ignore",
                                           maxSize: 20, maxExpand: 200, displayMode: display,
                                           output: "htmlAndMathml" });
        return node;
      } catch (error) { /* shown as text below */ }
    }
    node.textContent = text || latex || "–";
    return node;
  }

  function badge(status) { return el("span", { class: `badge ${status || ""}` }, status || "?"); }

  function nav(current) {
    const links = [["/", "Runs", "runs"], ["/sweeps", "Sweeps", "sweeps"],
                   ["/cluster", "Cluster", "cluster"],
                   ["/panels/prepare/main", "Prepare data", "prepare"],
                   ["/panels/evaluator/main", "Build evaluator", "evaluator"]];
    document.body.prepend(el("header", { class: "top" },
      el("span", { class: "brand" }, "SRHarness"),
      links.map(([href, label, key]) => el("a", { href, class: key === current ? "here" : null },
                                          label))));
  }

  function lastPathPart() {
    return decodeURIComponent(window.location.pathname.split("/").filter(Boolean).pop() || "");
  }

  // ------------------------------------------------------------ events
  // A timeline event is {seq, kind, timestamp, payload}. Known kinds get a sentence; any
  // other kind (a new one included) shows its payload's fields, so it needs no code here.
  function coordLabel(p) {
    if (p.coord) return `R${p.coord.R}-C${p.coord.C}-L${p.coord.L}` + (p.coord.K ? `-K${p.coord.K}` : "");
    return p.R ? `R${p.R}-C${p.C}-L${p.L}` : "";
  }

  function summary(value, limit = 200) {
    let text;
    if (value === null || value === undefined) text = "";
    else if (typeof value !== "object") text = String(value);
    else if (Array.isArray(value)) text = `[${value.length}]`;
    else {
      text = Object.entries(value).map(([key, item]) => {
        if (item === null || typeof item !== "object") return `${key}=${item}`;
        return `${key}=${Array.isArray(item) ? `[${item.length}]` : `{${Object.keys(item).join(", ")}}`}`;
      }).join(" · ");
    }
    return text.length > limit ? text.slice(0, limit) + "…" : text;
  }

  function toolName(p) { return p.call ? p.call.name : (p.name || ""); }

  function describe(event) {
    const p = event.payload || {};
    const c = coordLabel(p);
    const at = (text) => [c, text].filter(Boolean).join(" ");
    switch (event.kind) {
      case "state_changed": return `${p.previous} → ${p.current}`;
      case "command_received": return `${p.action}${p.accepted === false ? ` refused: ${p.error}` : ""}` +
        (p.message ? `: ${p.message}` : "");
      case "prompt_added": return at((p.message && p.message.content) || p.content || "");
      case "assistant_completed": return at(`${(p.tool_calls || []).map((t) => t.name).join(", ") ||
        "no tool call"} ${p.content ? "· " + p.content.slice(0, 160) : ""}`);
      case "assistant_delta": return at((p.content || p.delta || "").slice(-160));
      case "assistant_failed": return at(p.error || "");
      case "tool_started": return at(toolName(p));
      case "tool_completed": return at(`${toolName(p)} ${p.ok ? "ok" : "failed"}`);
      case "topk_updated": return at(`best: ${p.records && p.records[0] ? p.records[0].formula : "–"}`);
      case "execution_completed": case "execution_failed":
        return summary(Object.fromEntries(Object.entries(p).filter(([, v]) => v !== null && v !== "")));
      case "settings_applied": return at(summary(p.settings));
      case "settings_failed": return at(`${summary(p.settings)} refused: ${p.error || ""}`);
      default: {
        const rest = Object.fromEntries(Object.entries(p).filter(([key]) => !["coord", "R", "C", "L", "K"]
          .includes(key)));
        return at(summary(rest));
      }
    }
  }

  // Streamed replies (assistant_delta): one text per response, the text so far when the
  // event has it (content), else each delta appended; assistant_completed closes it.
  function stream(streams, event) {
    const p = event.payload || {};
    const key = p.response_id || coordLabel(p) || "reply";
    if (event.kind === "assistant_delta") {
      const entry = streams.get(key) || { label: coordLabel(p), text: "", done: false };
      entry.text = typeof p.content === "string" ? p.content : entry.text + (p.delta || "");
      streams.delete(key);
      streams.set(key, entry);                  // the newest stream last
      return true;
    }
    const label = coordLabel(p);
    const entry = streams.get(key) || [...streams.values()].find((e) => !e.done && e.label === label);
    if (event.kind === "assistant_completed" && entry) {
      entry.done = true;
      if (typeof p.content === "string" && p.content) entry.text = p.content;
      return true;
    }
    return false;
  }

  return { el, clear, put, api, post, num, seconds, math, badge, nav, lastPathPart, SVG_NS,
           describe, summary, stream, coordLabel };
})();
