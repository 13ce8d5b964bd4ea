"use strict";
SRH.nav("sweeps");
const { el, put } = SRH;

async function refresh() {
  try {
    const data = await SRH.api("/api/sweeps");
    put(document.querySelector("#sweeps tbody"), data.sweeps.map((sweep) => el("tr", {},
      el("td", {}, el("a", { href: `/sweeps/${encodeURIComponent(sweep.key)}` }, sweep.name)),
      el("td", { class: "num" }, sweep.total),
      ["pending", "running", "done", "failed"].map((s) =>
        el("td", { class: "num" }, sweep.counts[s] || 0)),
      el("td", { class: "num" }, sweep.solved))));
    put(document.getElementById("note"), data.sweeps.length ? "" :
      "No sweep directories (with sweep.json) under the run roots.");
  } catch (error) { put(document.getElementById("note"), error.message); }
}
refresh();
setInterval(refresh, 5000);
