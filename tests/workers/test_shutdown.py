"""A stopping worker ends in seconds, leaves no process and loses no task (srh_workers.shutdown).

Real workers on a private redis-server run ``expression_search`` (the
``srh.tool.probe`` task, a 20 s budget on a target it cannot fit exactly) and
are stopped mid-search the way a service manager or a terminal does: SIGTERM
to the main process, Ctrl-C twice, SIGKILL. Each test then walks ``/proc``
for the worker's session (it leads one: pool children, search islands and
their helpers are in it) and checks where the task's message went: handed
back to the ``tools`` queue, then run by a second worker.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from srh_workers.shutdown import HARD_EXIT_SECONDS
from tests.workers.cluster import Cluster
from tests.workers.support import (
    WORKER_START_DEADLINE,
    WorkerProcess,
    session_processes,
    wait_until,
    worker_env,
)

pytestmark = pytest.mark.integration

GRACE = 2.0
#: Limits that let a 20 s search run (the cluster's tool limits are 6/8 s).
LONG_TOOLS = {"SRH_TOOL_SOFT_LIMIT": "30", "SRH_TOOL_HARD_LIMIT": "35",
              "SRH_VISIBILITY_TIMEOUT": "42", "SRH_SHUTDOWN_GRACE": f"{GRACE:g}"}
SEARCH = {"time_budget": 20, "operators": ["+", "*", "-"], "max_complexity": 25,
          "y": "tanh(x1*x3)*x2**x1 + abs(x3 - x2)**1.37"}
ISLAND = "multiprocessing.spawn"
GONE_SECONDS = 3.0  # a child of a dead worker: PR_SET_PDEATHSIG at once, an island in 0.25 s


def start_search(cluster: Cluster, **params: Any) -> Any:
    result = cluster.app.send_task("srh.tool.probe", kwargs={
        "tool": "expression_search", "params": {**SEARCH, **params}})
    wait_until(lambda: result.state == "STARTED", WORKER_START_DEADLINE, "the search to start")
    return result


def stopped_within(worker: WorkerProcess, seconds: float) -> float:
    """Seconds until ``worker``'s main process exited (fails after ``seconds``)."""
    began = time.monotonic()
    wait_until(lambda: not worker.alive, seconds, "the worker to exit")
    return time.monotonic() - began


def assert_nothing_left(worker: WorkerProcess) -> None:
    wait_until(lambda: not session_processes(worker.process.pid), GONE_SECONDS,
               "every process the worker started to end")


def test_sigterm_hands_a_running_search_back_to_another_worker(cluster: Cluster) -> None:
    first = cluster.start("tools", **LONG_TOOLS)
    result = start_search(cluster)
    assert len(session_processes(first.process.pid)) >= 2      # the pool's child searches
    os.kill(first.process.pid, signal.SIGTERM)                  # as systemd and Kubernetes do
    second = cluster.start("tools", wait=False, **LONG_TOOLS)  # starts while the first stops
    took = stopped_within(first, GRACE + HARD_EXIT_SECONDS + 2)
    print(f"SIGTERM mid-search (prefork): exited {took:.1f} s later (grace {GRACE:g} s)")
    assert_nothing_left(first)
    assert "Restoring 1 unacknowledged message(s)" in first.log_text()
    wait_until(lambda: (result.info or {}).get("hostname", "").startswith("tools-tools-1@"),
               WORKER_START_DEADLINE, "the second worker to run the handed-back task")
    # Celery stores STARTED before the task's __call__ counts the delivery: wait for the count

    def deliveries() -> list[int]:
        return [int(cluster.client.get(key))
                for key in cluster.client.scan_iter("srh:{_workers}:delivery:*")]
    wait_until(lambda: deliveries() == [2], 10, "the second delivery to be counted")
    assert deliveries() == [2]
    # SIGKILL of the main process alone: its pool child, mid-search, dies with it
    os.kill(second.process.pid, signal.SIGKILL)
    second.process.wait(timeout=5)
    assert_nothing_left(second)


@pytest.mark.parametrize(("signals", "bound"), [
    pytest.param(("SIGTERM",), GRACE + 1, id="sigterm-after-the-grace"),
    pytest.param(("SIGINT", "SIGINT"), 1.0, id="ctrl-c-twice-at-once")])
def test_a_worker_with_islands_hands_its_search_back(cluster: Cluster, signals: tuple[str, ...],
                                                     bound: float) -> None:
    worker = cluster.start("tools", pool="threads", **LONG_TOOLS)
    start_search(cluster, workers=2)                 # islands: processes of the worker's own
    wait_until(lambda: any(ISLAND in command for command in
                           session_processes(worker.process.pid).values()),
               WORKER_START_DEADLINE, "an island process")
    for index, name in enumerate(signals):
        if index:
            time.sleep(0.3)  # two separate key presses, not one signal seen twice
        os.kill(worker.process.pid, getattr(signal, name))
    took = stopped_within(worker, bound)
    print(f"{'+'.join(signals)} mid-search (threads, islands): exited {took:.1f} s later")
    assert_nothing_left(worker)
    assert cluster.client.llen("tools") == 1 and cluster.client.hlen("unacked") == 0
    assert "handed 1 message(s) back to the broker" in worker.log_text()


def srh_worker(env: dict[str, str], log: Path) -> WorkerProcess:
    srh = Path(sys.executable).with_name("srh")
    if not srh.exists():
        pytest.skip("the srh console script is not installed next to this interpreter")
    return WorkerProcess.start([str(srh), "worker", "--concurrency", "1"], env, log)


@pytest.mark.parametrize("signals", [pytest.param(("SIGTERM",), id="sigterm"),
                                     pytest.param(("SIGINT", "SIGINT"), id="ctrl-c-twice")])
def test_srh_worker_ends_within_ten_seconds_with_nothing_left(
        cluster: Cluster, tmp_path: Path, signals: tuple[str, ...]) -> None:
    env = worker_env(cluster.url, **{**cluster.env, **LONG_TOOLS})
    del env["SRH_SHUTDOWN_GRACE"]                    # the default grace, as users run it
    supervisor = srh_worker(env, tmp_path / "srh-worker.log")
    cluster.workers.append(supervisor)
    wait_until(lambda: supervisor.log_text().count("ready.") == 2 or not supervisor.alive,
               WORKER_START_DEADLINE, "both workers to start")
    start_search(cluster)
    began = time.monotonic()
    for index, name in enumerate(signals):
        if index:
            time.sleep(0.3)
            began = time.monotonic()                 # a second Ctrl-C: at once from here
        os.kill(supervisor.process.pid, getattr(signal, name))
    took = stopped_within(supervisor, 10 if len(signals) == 1 else 4)
    print(f"srh worker, {'+'.join(signals)} mid-search: exited {took:.1f} s later")
    assert_nothing_left(supervisor)
    assert time.monotonic() - began < 10
    assert cluster.client.llen("tools") == 1          # the search was handed back
