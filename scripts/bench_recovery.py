"""Measure how long cluster runs take to recover from each fault, with no manual command.

Starts a private redis-server (AOF on, ``appendfsync always``), one branches
worker (threads, 4) and one tools worker (prefork, 2), and a local
OpenAI-compatible server (tests/support) that answers each request after
``--model-delay`` seconds. For each fault it submits a fresh run (C=2 L=4
K=2, early stop off), waits for its first node, injects the fault, and
measures the time from the fault to the run's result. Nobody sends
``srh kick``: the workers' watchdog and the broker's redelivery do the work.

Faults:
  kill-branches   SIGKILL of the branches worker's process group while it holds a task
                  unacknowledged (a new one is started at once, as systemd/Kubernetes would)
  kill-tools      SIGKILL of the tools worker's process group (the same)
  lost-message    the run's first task never reaches the broker (a send that failed)
  redis-restart   SIGKILL of redis-server, down --outage seconds, started again (AOF reloaded)
  redis-oom       ``maxmemory 1`` (every write refused) for --outage seconds, then lifted
  model-500       the endpoint answers every request with HTTP 500 (the run must end failed)
  model-hang      the endpoint never answers (the run must end failed)
  cancel          ``srh cancel`` while the model never answers (the run must end cancelled)

Profiles: ``default`` uses the deployment defaults (SRH_VISIBILITY_TIMEOUT 110,
limits 40/50 and 70/85 s, SRH_STALL_SECONDS 100, SRH_WATCHDOG_INTERVAL 10);
``test`` the short limits of tests/workers/test_recovery.py (stall 5 s).

Usage: python scripts/bench_recovery.py [--profile default|test] [--only a,b] [--json out.json]
Prints a table (seconds from the fault to the result, status, nodes expected /
recorded / missing / duplicated) and writes JSON. Needs redis-server on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.openai_payloads import evaluating_reply  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer, Reply  # noqa: E402
from tests.workers.cluster import Cluster  # noqa: E402
from tests.workers.conftest import RedisOptions, RedisServer, _redis_binary  # noqa: E402

FAULTS = ("kill-branches", "kill-tools", "lost-message", "redis-restart", "redis-oom",
          "model-500", "model-hang", "cancel")
SHAPE = {"max_restart_loop": 1, "global_width": 2, "max_refinement_depth": 4,
         "local_sample_size": 2}
FORMULAS = ("x1*x2**2", "x1*x2", "x1 + x2", "x2**2")
PROFILES: dict[str, dict[str, str]] = {
    "default": {},
    "test": {"SRH_VISIBILITY_TIMEOUT": "6", "SRH_RESTORE_INTERVAL": "1",
             "SRH_TOOL_SOFT_LIMIT": "3", "SRH_TOOL_HARD_LIMIT": "4",
             "SRH_BRANCH_SOFT_LIMIT": "3", "SRH_BRANCH_HARD_LIMIT": "4",
             "SRH_RETRY_BACKOFF_MAX": "1", "SRH_TASK_MAX_RETRIES": "1",
             "SRH_STALL_SECONDS": "5", "SRH_WATCHDOG_INTERVAL": "1"},
}
#: The cluster test's short limits are not the deployment's: drop them for "default".
TEST_ONLY = ("SRH_VISIBILITY_TIMEOUT", "SRH_RESTORE_INTERVAL", "SRH_TOOL_SOFT_LIMIT",
             "SRH_TOOL_HARD_LIMIT", "SRH_BRANCH_SOFT_LIMIT", "SRH_BRANCH_HARD_LIMIT",
             "SRH_RETRY_BACKOFF_MAX")


class Bench:
    def __init__(self, profile: str, model_delay: float, directory: Path) -> None:
        self.model = FakeOpenAIServer().start()
        self.model_delay = model_delay
        self.server = RedisServer(_redis_binary(), directory / "redis",
                                  RedisOptions(appendonly=True))
        self.server.start()
        self.cluster = Cluster(self.server.url, directory, OPENAI_API_KEY="sk-bench",
                               OPENAI_BASE_URL=self.model.base_url, **PROFILES[profile])
        if profile == "default":
            for name in TEST_ONLY:
                self.cluster.env.pop(name, None)
        self.settings = {k: v for k, v in self.cluster.env.items()
                         if k.startswith("SRH_") and k not in ("SRH_BROKER_URL", "SRH_RUNS_DIR")}
        self.branches = self.tools = None
        self.revive()

    def revive(self) -> None:
        if not self.server.running:
            self.server.start()
        started = []
        if self.branches is None or not self.branches.alive:
            self.branches = self.cluster.start("branches", concurrency=4, wait=False)
            started.append(self.branches)
        if self.tools is None or not self.tools.alive:
            self.tools = self.cluster.start("tools", concurrency=2, wait=False)
            started.append(self.tools)
        for worker in started:
            self.cluster.ready(worker)

    def close(self) -> None:
        self.cluster.close()
        self.server.stop()
        self.model.stop()

    # ------------------------------------------------------------------ runs
    def settings_for(self, run_id: str) -> Any:
        from srh_core.agent import SearchSettings

        return SearchSettings.build(llm_provider="openai", llm_model="bench", tool_parser="text",
                                    tools=["evaluate_formula"], early_stop=False, run_id=run_id,
                                    **SHAPE)

    def submit(self, run_id: str, send: Any = None) -> None:
        import numpy as np

        from srh_workers.flow.tasks import sender
        from srh_workers.submit import submit_run

        rng = np.random.default_rng(0)
        x1, x2 = rng.uniform(1, 5, (2, 300))
        submit_run(self.cluster.client, send or sender(self.cluster.app),
                   self.settings_for(run_id), {"x1": x1, "x2": x2}, {"y": x1 * x2**2}, "find y")

    def wait_first_node(self, run_id: str) -> None:
        from srh_workers.store import RedisRunStore

        end = time.monotonic() + 60
        while RedisRunStore.open(self.cluster.client, run_id).node_count < 1:
            if time.monotonic() > end:
                raise RuntimeError(f"{run_id}: no node after 60 s")
            time.sleep(0.05)

    def finish(self, run_id: str, fault_at: float, timeout: float = 600) -> dict[str, Any]:
        from srh_workers.store import RedisRunStore
        from srh_workers.submit import wait_for_result

        result = wait_for_result(self.cluster.client, run_id, timeout=timeout, poll=0.1)
        seconds = time.monotonic() - fault_at
        store = RedisRunStore.open(self.cluster.client, run_id)
        ids = Counter(record["node_id"] for record in store.records())
        expected = {store.node_id(1, C, L, K) for C in range(1, SHAPE["global_width"] + 1)
                    for L in range(1, SHAPE["max_refinement_depth"] + 1)
                    for K in range(1, SHAPE["local_sample_size"] + 1)}
        complete = result.status == "completed"
        return {"seconds": round(seconds, 1), "status": result.status,
                "stop_reason": result.stop_reason, "expected": len(expected) if complete else 0,
                "nodes": sum(ids.values()),
                "missing": len(expected - set(ids)) if complete else 0,
                "duplicated": sum(count - 1 for count in ids.values() if count > 1)}

    # ---------------------------------------------------------------- faults
    def run_fault(self, fault: str) -> dict[str, Any]:
        self.revive()
        self.model.respond_with(evaluating_reply(FORMULAS, delay=self.model_delay))
        run_id = f"{fault}-{int(time.time())}"
        if fault == "lost-message":
            self.submit(run_id, send=lambda action: None)
            return self.finish(run_id, time.monotonic())
        if fault in ("model-500", "model-hang"):
            self.model.respond_with(lambda request: _bad_reply(fault))
            at = time.monotonic()
            self.submit(run_id)
            return self.finish(run_id, at)
        if fault == "cancel":
            from srh_workers.submit import cancel_run

            self.model.respond_with(lambda request: _bad_reply("model-hang"))
            before = len(self.model.requests)
            self.submit(run_id)
            _wait(lambda: len(self.model.requests) > before, "a model request")
            cancel_run(self.cluster.client, run_id)
            return self.finish(run_id, time.monotonic())
        self.submit(run_id)
        self.wait_first_node(run_id)
        at = self.inject(fault)
        return self.finish(run_id, at)

    def inject(self, fault: str) -> float:
        if fault in ("kill-branches", "kill-tools"):
            queue = fault.removeprefix("kill-")
            worker = self.branches if queue == "branches" else self.tools
            # the worst case: the worker holds one of the run's tasks unacknowledged
            _wait(lambda: self.holds(queue), f"a task held by the {queue} worker")
            worker.stop(signal.SIGKILL)
            at = time.monotonic()
            self.revive()
            return at
        if fault == "redis-restart":
            self.server.stop(hard=True)
            at = time.monotonic()
            time.sleep(self.outage)
            self.server.start()
            return at
        if fault == "redis-oom":
            self.cluster.client.config_set("maxmemory", "1")
            at = time.monotonic()
            time.sleep(self.outage)
            self.cluster.client.config_set("maxmemory", "0")
            return at
        raise ValueError(fault)

    outage = 3.0

    def holds(self, queue: str) -> bool:
        for raw in self.cluster.client.hvals("unacked"):
            _message, _exchange, routing_key = json.loads(raw)
            if routing_key == queue:
                return True
        return False


def _bad_reply(fault: str) -> Reply:
    if fault == "model-500":
        return Reply.error(500, "always down", headers={"retry-after-ms": "5"})
    return Reply.json({}, delay=3600)


def _wait(predicate: Any, what: str, deadline: float = 60) -> None:
    end = time.monotonic() + deadline
    while not predicate():
        if time.monotonic() > end:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="default")
    parser.add_argument("--only", default=",".join(FAULTS))
    parser.add_argument("--outage", type=float, default=10.0,
                        help="seconds Redis stays down / full (default 10)")
    parser.add_argument("--model-delay", type=float, default=0.5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    faults = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(faults) - set(FAULTS))
    if unknown:
        parser.error(f"unknown faults {unknown}; choose from {', '.join(FAULTS)}")
    load = os.getloadavg()
    bench = Bench(args.profile, args.model_delay, Path(tempfile.mkdtemp(prefix="srh-recovery-")))
    bench.outage = args.outage
    rows: dict[str, Any] = {}
    try:
        for fault in faults:
            rows[fault] = bench.run_fault(fault)
            print(f"{fault}: {rows[fault]}", file=sys.stderr, flush=True)
    finally:
        bench.close()
    header = (f"{'fault':<15} {'s after fault':>13} {'status':<12} {'exp':>4} {'nodes':>5} "
              f"{'miss':>4} {'dup':>4}  reason")
    print(f"profile {args.profile}, outage {args.outage:g} s, load avg before "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(header)
    for fault, row in rows.items():
        print(f"{fault:<15} {row['seconds']:>13.1f} {row['status']:<12} {row['expected']:>4} "
              f"{row['nodes']:>5} {row['missing']:>4} {row['duplicated']:>4}  "
              f"{(row['stop_reason'] or '')[:70]}")
    report = {"profile": args.profile, "outage_seconds": args.outage,
              "model_delay_seconds": args.model_delay, "shape": SHAPE,
              "load_average": load, "settings": bench.settings, "faults": rows}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
