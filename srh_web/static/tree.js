// The search tree as SVG: one column per step L, one row per (restart, branch, sample),
// a line per parent link. Labels are SVG text nodes.
"use strict";

const SRHTree = (() => {
  const { el } = SRH;
  const COL = 64, ROW = 22, LEFT = 92, TOP = 22, W = 44, H = 16;
  const LINK = { continuation: "#64748b", restart_seed: "#2563eb", context_merge: "#d97706" };

  function fill(node) {
    if (node.finish_reason === "cancelled" || node.finish_reason === "length") return "#fde68a";
    if (node.n_errors > 0) return "#fecaca";
    return node.n_tool_calls > 0 ? "#bbf7d0" : "#e5e7eb";
  }

  function layout(nodes) {
    const rows = new Map();
    let maxL = 1;
    for (const node of nodes) {
      const c = node.coordinate;
      const key = `${c.R}-${c.C}-${c.K}`;
      if (!rows.has(key)) rows.set(key, { R: c.R, C: c.C, K: c.K });
      maxL = Math.max(maxL, c.L);
    }
    const ordered = [...rows.entries()].sort((a, b) =>
      a[1].R - b[1].R || a[1].C - b[1].C || a[1].K - b[1].K);
    const index = new Map(ordered.map(([key], i) => [key, i]));
    return { ordered, index, maxL };
  }

  function draw(container, nodes, selected, onSelect) {
    const { ordered, index, maxL } = layout(nodes);
    const width = LEFT + maxL * COL + 20, height = TOP + ordered.length * ROW + 10;
    const svg = el("svg:svg", { width, height, viewBox: `0 0 ${width} ${height}`,
                                role: "img", "aria-label": "search tree" });
    const where = new Map();
    for (const node of nodes) {
      const c = node.coordinate;
      where.set(node.node_id, { x: LEFT + (c.L - 1) * COL,
                                y: TOP + index.get(`${c.R}-${c.C}-${c.K}`) * ROW });
    }
    for (let L = 1; L <= maxL; L++) {
      svg.appendChild(el("svg:text", { x: LEFT + (L - 1) * COL + 12, y: 12 }, `L${L}`));
    }
    ordered.forEach(([, row], i) => svg.appendChild(el("svg:text", { x: 4, y: TOP + i * ROW + 12 },
      `R${row.R} C${row.C} K${row.K}`)));
    for (const node of nodes) {
      const to = where.get(node.node_id);
      for (const parent of node.parents || []) {
        const from = where.get(parent.parent_node_id);
        if (!from) continue;
        svg.appendChild(el("svg:line", { x1: from.x + W, y1: from.y + H / 2, x2: to.x,
          y2: to.y + H / 2, stroke: LINK[parent.relation] || "#94a3b8", "stroke-width": 1.2,
          "stroke-dasharray": parent.relation === "context_merge" ? "3 2" : null }));
      }
    }
    for (const node of nodes) {
      const at = where.get(node.node_id);
      const group = el("svg:g", { class: `node${node.node_id === selected ? " selected" : ""}`,
                                  "data-node": node.node_id, tabindex: 0,
                                  onclick: () => onSelect(node.node_id) });
      group.appendChild(el("svg:title", {}, `${node.label}: ${node.n_tool_calls} tool call(s), ` +
        `${node.n_errors} error(s)`));
      group.appendChild(el("svg:rect", { x: at.x, y: at.y, width: W, height: H, rx: 3,
                                         fill: fill(node) }));
      group.appendChild(el("svg:text", { x: at.x + 6, y: at.y + 11 },
                           `K${node.coordinate.K}·${node.n_tool_calls}`));
      svg.appendChild(group);
    }
    SRH.put(container, svg);
  }

  return { draw };
})();
