"use strict";
SRH.nav("sweeps");
const { el, put } = SRH;
const key = SRH.lastPathPart();

function query() {
  const params = new URLSearchParams();
  for (const id of ["status", "solved", "q"]) {
    const value = document.getElementById(id).value.trim();
    if (value) params.set(id, value);
  }
  return params.toString();
}

async function refresh() {
  const q = query();
  document.getElementById("csv").href =
    `/api/sweeps/${encodeURIComponent(key)}/results.csv${q ? "?" + q : ""}`;
  try {
    const data = await SRH.api(`/api/sweeps/${encodeURIComponent(key)}${q ? "?" + q : ""}`);
    put(document.getElementById("title"), `Sweep ${data.sweep || data.name}`);
    put(document.getElementById("counts"), `${data.rows.length} of ${data.total} cells · ` +
      Object.entries(data.counts).map(([s, n]) => `${n} ${s}`).join(", ") +
      ` · ${data.solved} solved`);
    put(document.querySelector("#cells tbody"), data.rows.map((row) => el("tr", {},
      el("td", {}, el("code", {}, row.cell)), el("td", {}, SRH.badge(row.status)),
      el("td", { class: row.solved === true ? "ok" : row.solved === false ? "bad" : "muted" },
         row.solved === null || row.solved === undefined ? "–" : row.solved ? "yes" : "no"),
      el("td", {}, el("code", {}, row.best_formula || "–")),
      el("td", { class: "num" }, SRH.seconds(row.seconds)),
      el("td", { class: "num" }, row.cost ? `$${row.cost.toFixed(4)}` : "–"),
      el("td", {}, row.run_id ? el("a", { href: `/runs/${encodeURIComponent(row.run_id)}` },
                                  row.run_id) : "–"),
      el("td", { class: "bad" }, row.error || ""))));
  } catch (error) { put(document.getElementById("note"), error.message); }
}
for (const id of ["status", "solved", "q"]) {
  document.getElementById(id).addEventListener("input", refresh);
}
refresh();
setInterval(refresh, 5000);
