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
                   ["/cluster", "Cluster", "cluster"]];
    document.body.prepend(el("header", { class: "top" },
      el("span", { class: "brand" }, "SRHarness"),
      links.map(([href, label, key]) => el("a", { href, class: key === current ? "here" : null },
                                          label))));
  }

  function lastPathPart() {
    return decodeURIComponent(window.location.pathname.split("/").filter(Boolean).pop() || "");
  }

  return { el, clear, put, api, post, num, seconds, math, badge, nav, lastPathPart, SVG_NS };
})();
