"""Benchmark the distributed runtime on this machine (starts its own Redis and workers).

(a) dispatch overhead: round trip of a trivial tool call (``srh.tool.probe``:
    ``evaluate_formula`` on 200 samples) through Celery + Redis, against a bare no-op
    task (``srh.tool.ping``): median and p99 (target: at most 1.5x);
(b) throughput scaling: the same batch of CPU-bound tool calls (``sindy`` on
    10^5 samples, about 0.1 s each, so worker time dominates dispatch) on 1 and
    2 tool workers, and the ratio (target: at least 1.8x);
(c) a sweep's wall time (12 cells: 6 problems x 2 seeds, C=2 L=6 K=2 on 10^4
    samples, no early stop): embedded in one process, embedded ``--jobs 2``, and
    distributed on 2 tool workers (target: at least 1.7x one process, within 10 %
    of ``--jobs 2``);
(d) model latency: C=8 L=3 K=2 against a local OpenAI-compatible server that
    answers each request after 1 s, embedded (8 branch threads) and on Celery
    (a threads branches worker, concurrency 8): wall time against the 3 s
    critical path of one branch (target: at most 1.3x each);
(e) control-plane scaling: a tools worker with W = 4, 16, 64 threads runs
    ``sleep_probe`` calls (50 ms of sleep, no CPU) for real runs (many branches,
    K = 4 samples of 4 calls each); achieved calls per second against the ideal
    W / 0.05 and against this machine's ceiling, the rate of bare no-op tasks on
    the same worker; plus the Redis commands each step costs;
(f) Redis commands per step of an offline C=2 L=6 K=2 run in step granularity
    (INFO commandstats before and after; the figure the runtime issue compares).

Usage: python scripts/bench_cluster.py [--json out.json] [--quick] [--only a,b,...]
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
                    "SRH_TASK_MODULES": "srh_workers.flow.tasks,scripts.bench_plugins",
                    "SRH_RUNS_DIR": str(self.dir / "runs"), "OPENAI_API_KEY": "sk-bench",
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

    def start(self, queue: str, concurrency: int = 1, pool: str | None = None) -> None:
        pool = pool or ("prefork" if queue == "tools" else "threads")
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
    """(c): one process, --jobs 2, and 2 tool workers (the ones (b) left running)."""
    from srh_core.sweep import EmbeddedSweepBackend, SweepRunner, load_sweep
    from srh_workers.flow.tasks import sender
    from srh_workers.store.client import redis_client
    from srh_workers.sweeps import CelerySweepBackend

    spec = load_sweep(sweep_file(cluster.dir, seeds))
    quiet = {"progress": lambda line: None}
    figures: dict[str, Any] = {}
    for name, backend in (("embedded_1", EmbeddedSweepBackend(jobs=1)),
                          ("embedded_2", EmbeddedSweepBackend(jobs=2))):
        started = time.perf_counter()
        rows = SweepRunner(spec, cluster.dir / name, backend, **quiet).run()
        figures[f"{name}_s"] = time.perf_counter() - started
        figures[f"{name}_done"] = sum(r["status"] == "done" for r in rows)
    cluster.start("branches", 4)
    backend = CelerySweepBackend(redis_client(cluster.url), sender(cluster.app))
    started = time.perf_counter()
    rows = SweepRunner(spec, cluster.dir / "celery", backend, **quiet).run()
    figures.update(cells=len(rows), distributed_s=time.perf_counter() - started,
                   distributed_done=sum(r["status"] == "done" for r in rows))
    figures["speedup_vs_one"] = figures["embedded_1_s"] / figures["distributed_s"]
    figures["distributed_over_jobs2"] = figures["distributed_s"] / figures["embedded_2_s"]
    return figures


def small_data(n: int = 300) -> tuple[dict[str, Any], dict[str, Any]]:
    import numpy as np

    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, n))
    return {"x1": x1, "x2": x2}, {"y": x1 * x2**2}


LATENCY = {"global_width": 8, "max_refinement_depth": 3, "local_sample_size": 2,
           "early_stop": False, "tool_parser": "openai", "tools": ["evaluate_formula"]}


def bench_latency(cluster: Cluster) -> dict[str, Any]:
    """(d): 1 s per model request; C=8 L=3 K=2, embedded threads and Celery."""
    import srh_core.tools.catalogue  # noqa: F401 - imports as warm as the workers' (one-off cost)
    from srh_core.agent import SearchSettings, SRAgent
    from srh_workers.flow.tasks import sender
    from srh_workers.store.client import redis_client
    from srh_workers.submit import submit_run, wait_for_result
    from tests.support.openai_payloads import evaluating_reply
    from tests.support.openai_server import FakeOpenAIServer

    X, y = small_data()
    formulas = ("x1*x2", "x1 + x2", "x2**2", "x1**2")
    with FakeOpenAIServer() as server:
        server.respond_with(evaluating_reply(formulas, delay=1.0))
        model = {"llm_provider": "openai", "llm_model": "bench", "base_url": server.base_url}
        os.environ["OPENAI_API_KEY"] = "sk-bench"
        started = time.perf_counter()
        SRAgent(**model, **LATENCY, branch_threads=8).run(X, y, "find y")
        embedded = time.perf_counter() - started
        embedded_requests = len(server.requests)
        cluster.stop_workers()
        cluster.start("branches", 8)
        cluster.start("tools", 2)
        client = redis_client(cluster.url)
        settings = SearchSettings.build(run_id="latency", **model, **LATENCY)
        started = time.perf_counter()
        first = len(server.requests)
        submit_run(client, sender(cluster.app), settings, X, y, "find y", api_key="sk-bench")
        wait_for_result(client, "latency", timeout=120, poll=0.05)
        distributed = time.perf_counter() - started
        origin = time.monotonic() - distributed
        arrivals = sorted(round(r.received_at - origin, 2) for r in server.requests[first:])
    critical = LATENCY["max_refinement_depth"] * 1.0
    return {"C": 8, "L": 3, "K": 2, "request_seconds": 1.0, "critical_path_s": critical,
            "requests": embedded_requests, "embedded_s": embedded,
            "embedded_ratio": embedded / critical, "distributed_s": distributed,
            "distributed_ratio": distributed / critical, "distributed_arrivals_s": arrivals}


def command_counts(client: Any) -> dict[str, int]:
    """Commands Redis has executed since its start, by command (INFO commandstats)."""
    return {name.removeprefix("cmdstat_"): int(value["calls"])
            for name, value in client.info("commandstats").items()}


def commands_total(client: Any) -> int:
    return sum(command_counts(client).values())


def noop_rate(cluster: Cluster, n: int) -> float:
    """Bare no-op tasks per second through the running tools worker."""
    started = time.perf_counter()
    pending = [cluster.app.send_task("srh.tool.ping") for _ in range(n)]
    for result in pending:
        result.get(timeout=300)
    return n / (time.perf_counter() - started)


def bench_control_plane(cluster: Cluster, widths: list[int]) -> list[dict[str, Any]]:
    """(e): W worker threads, 50 ms sleep tool, many branches, K=4 samples of 4 calls."""
    from srh_core.agent import SearchSettings
    from srh_workers.flow.tasks import sender
    from srh_workers.store.client import redis_client
    from srh_workers.submit import submit_run, wait_for_result

    client = redis_client(cluster.url)
    X, y = small_data(100)
    rows = []
    for W in widths:
        cluster.stop_workers()
        cluster.start("tools", W, pool="threads")
        cluster.start("branches", 32)
        noop_rate(cluster, 100)  # warm up
        ceiling = noop_rate(cluster, 1500 if W >= 16 else 600)
        C, K, calls = max(4, W // 2), 4, 4
        L = max(3, round(10 * W / C))
        settings = SearchSettings.build(
            run_id=f"plane-{W}", llm_provider="bench-sleep", tool_parser="text",
            tools=["sleep_probe"], global_width=C, max_refinement_depth=L,
            local_sample_size=K, early_stop=False, granularity="step", tool_timeout=30)
        before = commands_total(client)
        started = time.perf_counter()
        submit_run(client, sender(cluster.app), settings, X, y, "sleep")
        wait_for_result(client, f"plane-{W}", timeout=600, poll=0.05)
        seconds = time.perf_counter() - started
        commands = commands_total(client) - before
        total_calls = C * L * K * calls
        rate = total_calls / seconds
        ideal = W / 0.05
        rows.append({"W": W, "C": C, "L": L, "K": K, "calls_per_sample": calls,
                     "tool_calls": total_calls, "seconds": seconds, "calls_per_s": rate,
                     "ideal_per_s": ideal, "noop_tasks_per_s": ceiling,
                     "vs_ideal": rate / ideal, "vs_ceiling": rate / ceiling,
                     "redis_commands_per_step": commands / (C * L)})
    return rows


def bench_commands_per_step(cluster: Cluster) -> dict[str, Any]:
    """(f): the offline model, C=2 L=6 K=2, one step at a time as tasks."""
    from srh_core.agent import SearchSettings
    from srh_core.problems import load_suite
    from srh_workers.flow.tasks import sender
    from srh_workers.store.client import redis_client
    from srh_workers.submit import submit_run, wait_for_result

    cluster.stop_workers()
    cluster.start("branches", 4)
    cluster.start("tools", 2)
    client = redis_client(cluster.url)
    problem = load_suite().get("feynman-I.12.4")
    X, y = problem.sample(400, seed=0)
    settings = SearchSettings.build(run_id="commands", global_width=2, max_refinement_depth=6,
                                    local_sample_size=2, early_stop=False, granularity="step")
    before = command_counts(client)
    submit_run(client, sender(cluster.app), settings, X, {problem.output: y}, "find")
    wait_for_result(client, "commands", timeout=300, poll=0.2)
    time.sleep(1.0)  # the finalizing task's last writes and acks
    after = command_counts(client)
    by_command = {name: after[name] - before.get(name, 0) for name in after
                  if after[name] != before.get(name, 0)}
    commands = sum(by_command.values())
    return {"steps": 12, "commands": commands, "commands_per_step": commands / 12,
            "by_command": dict(sorted(by_command.items(), key=lambda item: -item[1]))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--quick", action="store_true", help="smaller batches")
    parser.add_argument("--only", default="a,b,c,d,e,f", help="which parts to run")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    cluster = Cluster()
    report: dict[str, Any] = {"cpus": os.cpu_count(), "loadavg_before": os.getloadavg()}
    try:
        if "a" in parts:
            cluster.start("tools", 1)
            report["dispatch"] = bench_dispatch(cluster, 50 if args.quick else 200)
        if "b" in parts or "c" in parts:
            cluster.stop_workers()
            report["scaling"] = bench_scaling(cluster, 16 if args.quick else 40)
        if "c" in parts:
            report["sweep"] = bench_sweep(cluster, [0] if args.quick else [0, 1])
        if "d" in parts:
            report["latency"] = bench_latency(cluster)
        if "e" in parts:
            report["control_plane"] = bench_control_plane(
                cluster, [4, 16] if args.quick else [4, 16, 64])
        if "f" in parts:
            report["commands"] = bench_commands_per_step(cluster)
    finally:
        cluster.close()
    report["loadavg_after"] = os.getloadavg()
    print_table(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


def print_table(report: dict[str, Any]) -> None:
    print(f"load average before {report['loadavg_before']}, after {report['loadavg_after']}")
    if "dispatch" in report:
        d = report["dispatch"]
        print(f"(a) dispatch round trip over {d['n']} calls      median     p99")
        print(f"    bare no-op task (srh.tool.ping)        {d['noop_ms']['median']:7.2f} ms "
              f"{d['noop_ms']['p99']:7.2f} ms")
        print(f"    trivial tool call (srh.tool.probe)     {d['tool_call_ms']['median']:7.2f} ms "
              f"{d['tool_call_ms']['p99']:7.2f} ms")
        print(f"    tool call / no-op (median)             "
              f"{d['tool_call_ms']['median'] / d['noop_ms']['median']:7.2f}x   (target <= 1.5x)")
    if "scaling" in report:
        s = report["scaling"]
        print(f"(b) {s['tasks']} x {s['tool']['tool']}({s['tool']['params']}, "
              f"{s['tool']['samples']} samples)")
        print(f"    1 tool worker {s['one_worker_s']:7.2f} s | 2 tool workers "
              f"{s['two_workers_s']:7.2f} s | speedup {s['speedup']:.2f}x   (target >= 1.8x)")
    if "sweep" in report:
        w = report["sweep"]
        print(f"(c) sweep of {w['cells']} cells: embedded 1 process {w['embedded_1_s']:.1f} s "
              f"({w['embedded_1_done']} done) | embedded --jobs 2 {w['embedded_2_s']:.1f} s "
              f"({w['embedded_2_done']} done) | 2 tool workers {w['distributed_s']:.1f} s "
              f"({w['distributed_done']} done)")
        print(f"    distributed vs one process {w['speedup_vs_one']:.2f}x (target >= 1.7x); "
              f"distributed / --jobs 2 {w['distributed_over_jobs2']:.2f} (target <= 1.10)")
    if "latency" in report:
        m = report["latency"]
        print(f"(d) model latency, C={m['C']} L={m['L']} K={m['K']}, {m['request_seconds']:.0f} s "
              f"per request, critical path {m['critical_path_s']:.0f} s, "
              f"{m['requests']} requests")
        print(f"    embedded {m['embedded_s']:.2f} s ({m['embedded_ratio']:.2f}x) | Celery "
              f"{m['distributed_s']:.2f} s ({m['distributed_ratio']:.2f}x)   (target <= 1.3x)")
    if "control_plane" in report:
        print("(e) control plane: sleep_probe 50 ms, K=4 samples x 4 calls per step")
        print("      W    C    L   calls   seconds   calls/s    ideal  no-op/s  vs ideal  "
              "vs ceiling  cmds/step")
        for row in report["control_plane"]:
            print(f"    {row['W']:3d} {row['C']:4d} {row['L']:4d} {row['tool_calls']:7d} "
                  f"{row['seconds']:9.2f} {row['calls_per_s']:9.1f} {row['ideal_per_s']:8.0f} "
                  f"{row['noop_tasks_per_s']:8.0f} {row['vs_ideal']:9.2f} "
                  f"{row['vs_ceiling']:11.2f} {row['redis_commands_per_step']:10.1f}")
    if "commands" in report:
        c = report["commands"]
        print(f"(f) Redis commands, offline C=2 L=6 K=2 step granularity: {c['commands']} for "
              f"{c['steps']} steps = {c['commands_per_step']:.1f} per step")


if __name__ == "__main__":
    sys.exit(main())
