"use strict";
SRH.nav("runs");
const { el, put } = SRH;

async function refresh() {
  const body = document.querySelector("#runs tbody");
  try {
    const data = await SRH.api("/api/runs");
    put(body, data.runs.map((run) => el("tr", {},
      el("td", {}, run.key ? el("a", { href: `/runs/${encodeURIComponent(run.key)}` }, run.run_id)
        : "–"),
      el("td", {}, run.source), el("td", {}, SRH.badge(run.status)),
      el("td", { class: "num" }, `${run.nodes ?? "–"} / ${run.max_nodes ?? "–"}`),
      el("td", {}, el("code", {}, run.best_formula || run.error || "–")),
      el("td", { class: "num" }, SRH.seconds(run.elapsed_seconds)),
      el("td", { class: "num" }, run.cost ? `$${run.cost.toFixed(4)}` : "–"),
      el("td", {}, run.interactive ? "interactive" : ""))));
    put(document.getElementById("note"), data.runs.length ? "" :
      "No runs yet: start one with `srh run --interactive --out runs/NAME ...`.");
  } catch (error) { put(document.getElementById("note"), `Cannot list runs: ${error.message}`); }
}
refresh();
setInterval(refresh, 3000);
