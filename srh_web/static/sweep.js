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
    renderStatus(data.status);
  } catch (error) { put(document.getElementById("note"), error.message); }
  refreshReport();
}

// A cluster sweep: its status and the controls that apply now.
function renderStatus(view) {
  const card = document.getElementById("cluster-card");
  card.hidden = !view;
  if (!view) return;
  put(document.getElementById("sweep-status"), SRH.badge(view.status));
  const eta = view.eta_seconds === null || view.eta_seconds === undefined ? ""
    : ` · ETA ${SRH.seconds(view.eta_seconds)}`;
  put(document.getElementById("sweep-progress"),
    `elapsed ${SRH.seconds(view.elapsed_seconds)}${eta}` +
    (view.control ? ` · ${view.control} requested` : ""));
  for (const button of document.querySelectorAll("#controls button")) {
    button.disabled = !view.controls.includes(button.dataset.action);
  }
}

function rate(value, ci) {
  if (value === null || value === undefined) return "–";
  const pct = (x) => `${(100 * x).toFixed(1)}%`;
  return ci ? `${pct(value)} [${pct(ci[0])}, ${pct(ci[1])}]` : pct(value);
}

async function refreshReport() {
  try {
    const report = await SRH.api(`/api/sweeps/${encodeURIComponent(key)}/report`);
    put(document.querySelector("#report tbody"), report.variants.map((v) => el("tr", {},
      el("td", {}, v.variant), el("td", { class: "num" }, String(v.cells)),
      el("td", { class: "num" }, String(v.solved)),
      el("td", { class: "num" }, rate(v.solve_rate, v.solve_rate_ci)),
      el("td", { class: "num" }, rate(v.accuracy_rate, v.accuracy_rate_ci)),
      el("td", { class: "num" }, SRH.seconds(v.median_seconds)))));
    put(document.getElementById("comparisons"), report.comparisons.map((c) =>
      `${c.a} vs ${c.b}: ${c.pairs} pairs, p (Holm) ${c.p_holm === null ? "–" :
        c.p_holm.toPrecision(2)}${c.winner ? `, ${c.winner} wins` : ""}`).join("; "));
  } catch (error) { put(document.getElementById("comparisons"), error.message); }
}

for (const button of document.querySelectorAll("#controls button")) {
  button.addEventListener("click", async () => {
    const note = document.getElementById("control-note");
    try {
      const view = await SRH.post(`/api/sweeps/${encodeURIComponent(key)}/control`,
                                  { action: button.dataset.action });
      renderStatus(view);
      put(note, `${button.dataset.action} sent`);
    } catch (error) { put(note, error.message); }
  });
}
for (const id of ["status", "solved", "q"]) {
  document.getElementById(id).addEventListener("input", refresh);
}
refresh();
setInterval(refresh, 5000);
