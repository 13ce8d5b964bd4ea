"""Benchmark the distributed runtime on this machine (starts its own Redis and workers).

(a) dispatch overhead: round trip of a trivial tool call (``srh.tool.probe``:
    ``evaluate`` on 200 samples) through Celery + Redis, against a bare no-op
    task (``srh.tool.ping``): median and p99;
(b) throughput scaling: the same batch of CPU-bound tool calls (``sindy`` on
    10^5 samples, about 0.1 s each, so worker time dominates dispatch) on 1 and
    2 tool workers, and the ratio;
(c) a sweep's wall time (12 cells: 6 problems x 2 seeds, C=2 L=6 K=2 on 10^4
    samples, no early stop), embedded (one process) against distributed with
    2 tool workers and one branches worker (threads pool, as deployed).

Usage: python scripts/bench_cluster.py [--json out.json] [--quick]
Prints a table and writes JSON. Needs redis-server on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CPU_TOOL = {"tool": "call_sindy", "params": {"poly_degree": 4}, "samples": 100_000}
SWEEP_PROBLEMS = ["feynman-I.12.4", "feynman-I.14.4", "feynman-I.25.13", "feynman-II.34.2",
                  "feynman-I.39.1", "feynman-I.29.4"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    """A private redis-server and worker processes in a temporary directory."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="srh-bench-"))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", str(self.dir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("SRH_")},
                    "SRH_BROKER_URL": self.url, "SRH_LOG_FORMAT": "text",
                    "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
                    "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        self.workers: list[subprocess.Popen[bytes]] = []
        self._wait(lambda: self._ping(), "redis")
        os.environ.update({k: v for k, v in self.env.items() if k.startswith("SRH_")})
        from srh_workers.app import make_app
        from srh_workers.config import WorkerSettings

        self.app = make_app(WorkerSettings.from_env({"SRH_BROKER_URL": self.url,
                                                     "SRH_TASK_MODULES": "none"}))

    def _ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url).ping())
        except redis.exceptions.ConnectionError:
            return False

    @staticmethod
    def _wait(predicate: Any, what: str, deadline: float = 60.0) -> None:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if predicate():
                return
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {what}")

    def start(self, queue: str, concurrency: int = 1) -> None:
        pool = "prefork" if queue == "tools" else "threads"
        log = self.dir / f"{queue}-{len(self.workers)}.log"
        argv = [sys.executable, "-m", "celery", "-A", "srh_workers.app", "worker", "-Q", queue,
                "-P", pool, "-c", str(concurrency), "--prefetch-multiplier", "1",
                "-n", f"{queue}{len(self.workers)}@%h", "--without-mingle", "--without-gossip",
                "-l", "INFO"]
        with log.open("wb") as stream:
            self.workers.append(subprocess.Popen(argv, env=self.env, stdout=stream,
                                                 stderr=subprocess.STDOUT,
                                                 start_new_session=True))
        self._wait(lambda: "ready." in log.read_text(errors="replace"), f"{queue} worker")

    def stop_workers(self) -> None:
        for worker in self.workers:
            os.killpg(worker.pid, signal.SIGTERM)
        for worker in self.workers:
            worker.wait(timeout=30)
        self.workers.clear()

    def close(self) -> None:
        self.stop_workers()
        self.redis.terminate()
        self.redis.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def round_trips(cluster: Cluster, name: str, kwargs: dict[str, Any], n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        cluster.app.send_task(name, kwargs=kwargs).get(timeout=60)
        times.append(time.perf_counter() - started)
    return times


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def bench_dispatch(cluster: Cluster, n: int) -> dict[str, Any]:
    round_trips(cluster, "srh.tool.probe", {}, 5)  # warm the worker's imports and data
    bare = round_trips(cluster, "srh.tool.ping", {}, n)
    probe = round_trips(cluster, "srh.tool.probe", {}, n)
    return {"n": n,
            "noop_ms": {"median": statistics.median(bare) * 1e3,
                        "p99": percentile(bare, 0.99) * 1e3},
            "tool_call_ms": {"median": statistics.median(probe) * 1e3,
                             "p99": percentile(probe, 0.99) * 1e3}}


def batch_seconds(cluster: Cluster, n: int) -> float:
    started = time.perf_counter()
    pending = [cluster.app.send_task("srh.tool.probe", kwargs=CPU_TOOL) for _ in range(n)]
    for result in pending:
        assert result.get(timeout=600)["ok"]
    return time.perf_counter() - started


def bench_scaling(cluster: Cluster, n: int) -> dict[str, Any]:
    cluster.start("tools", 1)
    batch_seconds(cluster, 4)  # warm up
    one = batch_seconds(cluster, n)
    cluster.start("tools", 1)
    batch_seconds(cluster, 4)
    two = batch_seconds(cluster, n)
    return {"tasks": n, "tool": CPU_TOOL, "one_worker_s": one, "two_workers_s": two,
            "speedup": one / two}


def sweep_file(directory: Path, seeds: list[int]) -> Path:
    path = directory / "bench-sweep.toml"
    path.write_text(f'[sweep]\nname = "bench"\nproblems = {json.dumps(SWEEP_PROBLEMS)}\n'
                    f"seeds = {seeds}\nsamples = 10000\nmax_parallel = 32\n\n"
                    "[settings]\nmax_refinement_depth = 6\nlocal_sample_size = 2\n"
                    "global_width = 2\nearly_stop = false\n", encoding="utf-8")
    return path


def bench_sweep(cluster: Cluster, seeds: list[int]) -> dict[str, Any]:
    from srh_workers.reliability import redis_client
    from srh_workers.sweep import CelerySweepBackend, EmbeddedSweepBackend, SweepRunner
    from srh_workers.sweep_spec import load_sweep
    from srh_workers.tasks import sender

    spec = load_sweep(sweep_file(cluster.dir, seeds))
    quiet = {"progress": lambda line: None}
    started = time.perf_counter()
    embedded = SweepRunner(spec, cluster.dir / "embedded", EmbeddedSweepBackend(), **quiet).run()
    embedded_s = time.perf_counter() - started
    cluster.start("branches", 4)
    backend = CelerySweepBackend(redis_client(cluster.url), sender(cluster.app))
    started = time.perf_counter()
    distributed = SweepRunner(spec, cluster.dir / "celery", backend, **quiet).run()
    distributed_s = time.perf_counter() - started
    return {"cells": len(embedded), "embedded_s": embedded_s, "distributed_s": distributed_s,
            "speedup": embedded_s / distributed_s,
            "embedded_done": sum(r["status"] == "done" for r in embedded),
            "distributed_done": sum(r["status"] == "done" for r in distributed)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--quick", action="store_true", help="smaller batches")
    args = parser.parse_args()
    cluster = Cluster()
    try:
        cluster.start("tools", 1)
        dispatch = bench_dispatch(cluster, 50 if args.quick else 200)
        cluster.stop_workers()
        scaling = bench_scaling(cluster, 16 if args.quick else 40)
        sweep = bench_sweep(cluster, [0] if args.quick else [0, 1])
    finally:
        cluster.close()
    report = {"dispatch": dispatch, "scaling": scaling, "sweep": sweep,
              "cpus": os.cpu_count()}
    print_table(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


def print_table(report: dict[str, Any]) -> None:
    d, s, w = report["dispatch"], report["scaling"], report["sweep"]
    print(f"(a) dispatch round trip over {d['n']} calls      median     p99")
    print(f"    bare no-op task (srh.tool.ping)        {d['noop_ms']['median']:7.2f} ms "
          f"{d['noop_ms']['p99']:7.2f} ms")
    print(f"    trivial tool call (srh.tool.probe)     {d['tool_call_ms']['median']:7.2f} ms "
          f"{d['tool_call_ms']['p99']:7.2f} ms")
    print(f"    tool call / no-op (median)             "
          f"{d['tool_call_ms']['median'] / d['noop_ms']['median']:7.2f}x")
    print(f"(b) {s['tasks']} x {s['tool']['tool']}({s['tool']['params']}, "
          f"{s['tool']['samples']} samples)")
    print(f"    1 tool worker {s['one_worker_s']:7.2f} s | 2 tool workers "
          f"{s['two_workers_s']:7.2f} s | speedup {s['speedup']:.2f}x")
    print(f"(c) sweep of {w['cells']} cells: embedded {w['embedded_s']:.1f} s "
          f"({w['embedded_done']} done) | distributed, 2 tool workers "
          f"{w['distributed_s']:.1f} s ({w['distributed_done']} done) | "
          f"speedup {w['speedup']:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
