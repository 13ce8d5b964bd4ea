"use strict";
SRH.nav("cluster");
const { el, put } = SRH;

async function refresh() {
  const note = document.getElementById("note");
  try {
    const data = await SRH.api("/api/cluster");
    if (!data.enabled) {
      put(note, "No cluster: start `srh web --redis redis://HOST:6379/0` to see workers, " +
        "queues and the runs in flight.");
      return;
    }
    put(document.querySelector("#workers tbody"), data.workers.length ? data.workers.map((w) =>
      el("tr", {}, el("td", {}, w.name), el("td", {}, w.active.length ? w.active.map((t) =>
        el("div", {}, el("code", {}, `${t.name} ${t.run_id || ""}`))) : "idle")))
      : el("tr", {}, el("td", { class: "muted" }, "no worker answers a ping"), el("td", {})));
    put(document.querySelector("#queues tbody"), data.queues.map((q) =>
      el("tr", {}, el("td", {}, q.name), el("td", { class: "num" }, q.depth))));
    put(document.getElementById("unacked"),
        data.unacked === null || data.unacked === undefined ? "" :
        `${data.unacked} message(s) delivered and not yet acknowledged`);
    put(document.querySelector("#runs tbody"), data.runs_in_flight.map((run) => el("tr", {},
      el("td", {}, el("a", { href: `/runs/${encodeURIComponent(run.run_id)}` }, run.run_id)),
      el("td", { class: "num" }, `${run.nodes} / ${run.max_nodes}`),
      el("td", {}, el("code", {}, run.best_formula || "–")),
      el("td", { class: "num" }, SRH.seconds(run.elapsed_seconds)))));
    put(note, `Redis ${data.redis_url}; ${data.recent_runs} recent run(s)` +
      (data.errors.length ? ` · ${data.errors.join("; ")}` : ""));
  } catch (error) { put(note, error.message); }
}
refresh();
setInterval(refresh, 4000);
