"""Benchmark sweeps as cluster jobs (starts its own Redis, workers and model server).

(s) LLM-bound scale: a local OpenAI-compatible server answering each request
    after 1 s; N cells (C=2 L=3 K=2, no early stop, evaluate_formula only) submitted
    with ``srh sweep submit`` semantics (the workers coordinate); 64 branch threads
    in 1 worker process, then in 2 processes of 32. Reported: wall from submit to
    the sweep's end against the ideal (requests x 1 s / in-flight cap), the
    server-observed peak of concurrent requests, submit-to-first-request latency,
    Redis commands and memory per cell. With ``--max-in-flight M`` the endpoints
    file sets ``max_in_flight = M`` (the cluster-wide quota, when this checkout has
    it); without, the cap is the threads (64).
(c) per-cell overhead: the 12-cell sweep of scripts/bench_cluster.py (6 problems x
    2 seeds, C=2 L=6 K=2 on 10^4 samples, offline model): embedded ``--jobs 2`` and
    the cluster (coordinated by the workers, 2 tool workers + a branches worker),
    same machine, side by side.

The peak in flight is computed from the server's arrival times: every request is
answered after exactly the scripted delay, so the requests in flight at an
arrival are those that arrived within the delay before it.

    With ``--artifacts`` the workers write each finished run's directory under
    ``SRH_ARTIFACTS`` and compact its Redis keys: compare the memory per cell.

Usage: python scripts/bench_sweeps.py [--cells 200] [--only s,c] [--quick]
       [--max-in-flight 32] [--processes 1,2] [--artifacts] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.bench_cluster import SWEEP_PROBLEMS, Cluster, sweep_file  # noqa: E402

REQUEST_SECONDS = 1.0
SCALE_SETTINGS = ('llm_provider = "openai"\nllm_model = "bench"\nendpoint = "bench"\n'
                  'tool_parser = "openai"\ntools = ["evaluate_formula"]\nglobal_width = 2\n'
                  'max_refinement_depth = 3\nlocal_sample_size = 2\nearly_stop = false\n')
FORMULAS = ("x1*x2", "x1 + x2", "x2**2", "x1**2")


def scale_sweep(directory: Path, name: str, cells: int) -> Path:
    """``cells`` cells: the suite's first problems x enough seeds."""
    from srh_core.problems import load_suite

    problems = load_suite(None).names()[:20]
    seeds = list(range(-(-cells // len(problems))))
    chosen = problems if len(problems) * len(seeds) == cells else problems[:cells // len(seeds)]
    path = directory / f"{name}.toml"
    path.write_text(f'[sweep]\nname = "{name}"\nproblems = {json.dumps(chosen)}\n'
                    f"seeds = {seeds}\nsamples = 200\nmax_parallel = 128\nretries = 0\n\n"
                    f"[settings]\n{SCALE_SETTINGS}", encoding="utf-8")
    return path


def peak_in_flight(arrivals: list[float], delay: float) -> int:
    arrivals = sorted(arrivals)
    peak, start = 0, 0
    for end, t in enumerate(arrivals):
        while arrivals[start] <= t - delay:
            start += 1
        peak = max(peak, end - start + 1)
    return peak


def redis_figures(client: Any) -> tuple[int, int]:
    stats = client.info("commandstats")
    commands = sum(int(v["calls"]) for v in stats.values())
    return commands, int(client.info("memory")["used_memory"])


def wait_over(client: Any, name: str, timeout: float) -> dict[str, Any]:
    from srh_workers.sweeps.control import sweep_status_view

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        view = sweep_status_view(client, name)
        if view["over"]:
            return view
        time.sleep(0.2)
    raise RuntimeError(f"sweep {name} not over after {timeout:g}s: {view}")


def bench_scale(cells: int, processes: int, threads: int, cap: int | None,
                artifacts: bool = False) -> dict[str, Any]:
    from srh_core.sweep import cells as sweep_cells
    from srh_core.sweep import load_sweep
    from srh_workers.store.client import redis_client
    from srh_workers.sweeps.control import submit_sweep
    from tests.support.openai_payloads import evaluating_reply
    from tests.support.openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        server.respond_with(evaluating_reply(FORMULAS, delay=REQUEST_SECONDS))
        cluster = Cluster()
        try:
            endpoints = cluster.dir / "endpoints.toml"
            quota = f"max_in_flight = {cap}\n" if cap else ""
            endpoints.write_text(f'[endpoints.bench]\nprovider = "openai"\nbase_url = '
                                 f'"{server.base_url}"\napi_key_env = "OPENAI_API_KEY"\n{quota}',
                                 encoding="utf-8")
            cluster.env.update(SRH_ENDPOINTS=str(endpoints), SRH_SWEEP_INTERVAL="0.2",
                               SRH_SWEEP_LEASE="5", SRH_BRANCH_SOFT_LIMIT="60",
                               SRH_BRANCH_HARD_LIMIT="70")
            if artifacts:  # finished runs written to disk, their Redis keys compacted
                cluster.env["SRH_ARTIFACTS"] = str(cluster.dir / "artifacts")
            os.environ.update(SRH_ENDPOINTS=str(endpoints), OPENAI_API_KEY="sk-bench")
            for _ in range(processes):
                cluster.start("branches", threads // processes)
            cluster.start("tools", 2)
            client = redis_client(cluster.url)
            name = f"scale{processes}"
            spec = load_sweep(scale_sweep(cluster.dir, name, cells))
            commands0, memory0 = redis_figures(client)
            submitted = time.monotonic()
            submit_sweep(client, spec)
            view = wait_over(client, name, 3600)
            wall = time.monotonic() - submitted
            commands1, memory1 = redis_figures(client)
            arrivals = [r.received_at for r in server.requests]
        finally:
            cluster.close()
    limit = cap or threads
    ideal = len(arrivals) * REQUEST_SECONDS / limit
    return {"cells": len(sweep_cells(spec)), "processes": processes, "threads": threads,
            "in_flight_cap": limit, "quota": cap is not None, "artifacts": artifacts,
            "status": view["status"],
            "done": view["cells"]["done"], "requests": len(arrivals), "wall_s": wall,
            "ideal_s": ideal, "wall_over_ideal": wall / ideal if ideal else None,
            "peak_in_flight": peak_in_flight(arrivals, REQUEST_SECONDS),
            "submit_to_first_request_s": (min(arrivals) - submitted) if arrivals else None,
            "redis_commands_per_cell": (commands1 - commands0) / cells,
            "redis_memory_per_cell_bytes": (memory1 - memory0) / cells}


def bench_overhead(seeds: list[int]) -> dict[str, Any]:
    from srh_core.sweep import EmbeddedSweepBackend, SweepRunner, load_sweep
    from srh_workers.store.client import redis_client
    from srh_workers.sweeps.control import submit_sweep

    cluster = Cluster()
    try:
        spec = load_sweep(sweep_file(cluster.dir, seeds))
        started = time.perf_counter()
        rows = SweepRunner(spec, cluster.dir / "jobs2", EmbeddedSweepBackend(jobs=2),
                           progress=lambda line: None).run()
        embedded = time.perf_counter() - started
        embedded_done = sum(r["status"] == "done" for r in rows)
        cluster.env.update(SRH_SWEEP_INTERVAL="0.2", SRH_SWEEP_LEASE="5")
        cluster.start("branches", 4)
        cluster.start("tools", 1)
        cluster.start("tools", 1)
        client = redis_client(cluster.url)
        started = time.perf_counter()
        submit_sweep(client, spec)
        view = wait_over(client, "bench", 3600)
        distributed = time.perf_counter() - started
    finally:
        cluster.close()
    return {"cells": len(rows), "problems": len(SWEEP_PROBLEMS), "seeds": len(seeds),
            "embedded_jobs2_s": embedded, "embedded_done": embedded_done,
            "cluster_s": distributed, "cluster_done": view["cells"]["done"],
            "cluster_over_jobs2": distributed / embedded}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--max-in-flight", type=int, default=None)
    parser.add_argument("--processes", default="1,2", help="branch worker processes per row")
    parser.add_argument("--artifacts", action="store_true",
                        help="workers write run directories to SRH_ARTIFACTS (and compact)")
    parser.add_argument("--only", default="s,c")
    parser.add_argument("--quick", action="store_true", help="40 cells; 6 overhead cells")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    cells = 40 if args.quick else args.cells
    report: dict[str, Any] = {}
    if "s" in parts:
        report["scale"] = [bench_scale(cells, int(processes), args.threads,
                                       args.max_in_flight, args.artifacts)
                           for processes in args.processes.split(",")]
    if "c" in parts:
        report["overhead"] = bench_overhead([0] if args.quick else [0, 1])
    for row in report.get("scale", []):
        print(f"(s) {row['cells']} cells, {row['processes']} process(es) x "
              f"{row['threads'] // row['processes']} threads, cap {row['in_flight_cap']}"
              f"{' (quota)' if row['quota'] else ''}"
              f"{', artifacts' if row['artifacts'] else ''}: {row['status']} {row['done']} done; "
              f"{row['requests']} requests; wall {row['wall_s']:.1f} s vs ideal "
              f"{row['ideal_s']:.1f} s = {row['wall_over_ideal']:.2f}x; peak in flight "
              f"{row['peak_in_flight']}; first request {row['submit_to_first_request_s']:.2f} s "
              f"after submit; Redis {row['redis_commands_per_cell']:.0f} commands and "
              f"{row['redis_memory_per_cell_bytes'] / 1024:.1f} KiB per cell")
    if "overhead" in report:
        row = report["overhead"]
        print(f"(c) {row['cells']} cells: embedded --jobs 2 {row['embedded_jobs2_s']:.1f} s "
              f"({row['embedded_done']} done), cluster {row['cluster_s']:.1f} s "
              f"({row['cluster_done']} done): {row['cluster_over_jobs2']:.2f}x")
    print(json.dumps(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
