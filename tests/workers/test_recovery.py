"""Runs recover by themselves: one fault per test, a private redis-server, real workers.

The module shares one cluster (AOF on, short limits, the workers' watchdog
checking every second with a 5 s stall threshold): each test leaves it with a
live branches and tools worker and Redis up. No test sends ``srh kick``; each
asserts that the run ends (completed, or failed/cancelled with its reason)
with every node once. Recovery times are printed; the figures of record come
from ``scripts/bench_recovery.py``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from srh_core.agent import SearchSettings
from srh_core.errors import SearchStateError
from srh_workers.store import ACTIVE_RUNS, RedisRunStore
from srh_workers.submit import cancel_run, run_status, submit_run
from tests.support import leftovers
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.workers.cluster import Cluster
from tests.workers.conftest import RedisOptions, RedisServer, _redis_binary
from tests.workers.support import ROOT, WorkerProcess, wait_until
from tests.workers.test_cluster import assert_complete, power_law_data

pytestmark = pytest.mark.integration

STALL_SECONDS = 5
RECOVERY_ENV = {
    "SRH_VISIBILITY_TIMEOUT": "6", "SRH_RESTORE_INTERVAL": "1",
    "SRH_TOOL_SOFT_LIMIT": "3", "SRH_TOOL_HARD_LIMIT": "4",
    "SRH_BRANCH_SOFT_LIMIT": "3", "SRH_BRANCH_HARD_LIMIT": "4",
    "SRH_RETRY_BACKOFF_MAX": "1", "SRH_TASK_MAX_RETRIES": "1",
    "SRH_STALL_SECONDS": str(STALL_SECONDS), "SRH_WATCHDOG_INTERVAL": "1",
    "OPENAI_API_KEY": "sk-test-operator",
}
RESULT_TIMEOUT = 60
OUTAGE_SECONDS = 3
REPORT_LOG_LINES = 40


class RecoveryCluster(Cluster):
    """The module's cluster: keeps one branches and one tools worker alive."""

    server: RedisServer
    branches: WorkerProcess
    tools: WorkerProcess

    def revive(self) -> None:
        """Restart what a test killed; the module's fixture owns the new processes."""
        if not self.server.running:
            self.server.start()
            leftovers.adopt(self.server.process.pid)
        if not getattr(self, "branches", None) or not self.branches.alive:
            self.branches = self.start("branches", concurrency=2, wait=False)
            leftovers.adopt(self.branches.process.pid)
        if not getattr(self, "tools", None) or not self.tools.alive:
            self.tools = self.start("tools", concurrency=1, wait=False)
            leftovers.adopt(self.tools.process.pid)
        self.ready(self.branches, "branches")
        self.ready(self.tools, "tools")

    def result(self, run_id: str, timeout: float = RESULT_TIMEOUT) -> Any:
        """The run's result; a run that has none in time fails with the cluster's state."""
        try:
            return super().result(run_id, timeout)
        except SearchStateError as error:
            pytest.fail(f"{error}\n{self.state_report(run_id)}", pytrace=False)

    def state_report(self, run_id: str) -> str:
        """What a stalled run needs to be explained: workers, queues, the run, the logs."""
        client = self.client
        lines = [f"workers alive: branches={self.branches.alive} tools={self.tools.alive}",
                 f"queues: branches={client.llen('branches')} tools={client.llen('tools')} "
                 f"unacked={client.hlen('unacked')} unacked_mutex={client.get('unacked_mutex')!r}",
                 f"watched since: {client.zscore(ACTIVE_RUNS, run_id)!r} (now {time.time():.1f})"]
        try:
            status = run_status(client, run_id)
            lines.append(f"run: {status['status']} nodes={status['nodes']} "
                         f"branches={status['branches']}")
        except Exception as error:  # the report must not hide the failure it explains
            lines.append(f"run status unreadable: {error!r}")
        for worker in (self.branches, self.tools):
            tail = [line[:300] for line in worker.log_text().splitlines()
                    if line.startswith("20")][-REPORT_LOG_LINES:]
            lines += [f"--- {worker.log.name} (last {len(tail)} lines)", *tail]
        return "\n".join(lines)


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def recovery(tmp_path_factory: pytest.TempPathFactory,
             model_server: FakeOpenAIServer) -> Iterator[RecoveryCluster]:
    directory = tmp_path_factory.mktemp("recovery")
    server = RedisServer(_redis_binary(), directory / "redis", RedisOptions(appendonly=True))
    server.start()
    made = RecoveryCluster(server.url, directory, **RECOVERY_ENV,
                           OPENAI_BASE_URL=model_server.base_url)
    made.server = server
    made.revive()
    yield made
    made.close()
    server.stop()


@pytest.fixture
def cluster(recovery: RecoveryCluster) -> RecoveryCluster:
    recovery.revive()
    return recovery


def slow_run(run_id: str, **values: Any) -> SearchSettings:
    return SearchSettings.build(llm_provider="test-slow", tool_parser="text",
                                tools=["evaluate_formula", "slow_probe"], early_stop=False,
                                run_id=run_id, **values)


def nodes(client: redis.Redis, run_id: str) -> int:
    return RedisRunStore.open(client, run_id).node_count


def test_killed_workers_are_recovered_without_a_kick(cluster: RecoveryCluster) -> None:
    settings = slow_run("kill-both", global_width=2, max_refinement_depth=2,
                        local_sample_size=1)
    run_id = cluster.submit(settings, *power_law_data())
    wait_until(lambda: nodes(cluster.client, run_id) >= 1, 30, "the first node")
    # the worst case: a task held unacknowledged dies with its worker
    wait_until(lambda: cluster.client.hlen("unacked") > 0, 30, "a task in flight")
    for worker in (cluster.branches, cluster.tools):
        worker.stop(signal.SIGKILL)  # the whole node: main process and children
    killed = time.monotonic()
    cluster.revive()  # as systemd would: new processes, the old messages are in Redis
    result = cluster.result(run_id, RESULT_TIMEOUT)
    print(f"both workers killed: finished {time.monotonic() - killed:.1f} s after the kill")
    assert result.status == "completed"
    assert_complete(cluster.client, run_id, settings)
    assert not cluster.client.zscore(ACTIVE_RUNS, run_id)  # no longer watched


def test_a_lost_message_is_re_sent_by_the_watchdog(cluster: RecoveryCluster) -> None:
    settings = slow_run("lost", max_refinement_depth=2, local_sample_size=1)
    dropped: list[Any] = []
    # the run is published but its first task never reaches the broker (a send that failed)
    submit_run(cluster.client, dropped.append, settings, *power_law_data(), "find y")
    lost = time.monotonic()
    result = cluster.result("lost", RESULT_TIMEOUT)
    print(f"lost first message: finished {time.monotonic() - lost:.1f} s after submission")
    assert [action.task for action in dropped] == ["srh.branch.restart"]
    assert result.status == "completed"
    assert_complete(cluster.client, "lost", settings)
    log = cluster.branches.log_text() + cluster.tools.log_text()
    assert "run lost: no progress for" in log


def _srh(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "srh_core", *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_redis_restart_is_survived_by_workers_and_follower(cluster: RecoveryCluster) -> None:
    follower = _srh(cluster.env, "run", "--backend", "celery", "--llm", "test-slow",
                    "--problem", "feynman-I.12.4", "-C", "1", "-L", "3", "-K", "1",
                    "--run-id", "follow", "--samples", "200", "--json")
    try:
        wait_until(lambda: _has_node(cluster.client, "follow"), 40, "the first node")
        cluster.server.stop(hard=True)  # SIGKILL; the AOF (fsync always) is reloaded
        time.sleep(OUTAGE_SECONDS)  # longer than the clients' own reconnect retries
        cluster.server.start()
        leftovers.adopt(cluster.server.process.pid)  # the module's server, restarted
        restarted = time.monotonic()
        out, err = follower.communicate(timeout=RESULT_TIMEOUT)
    finally:
        follower.kill()
    print(f"redis restart: follower done {time.monotonic() - restarted:.1f} s after it")
    assert follower.returncode == 0, err[-3000:]
    assert "Redis is unreachable" in err and "Traceback" not in err
    result = json.loads(out)
    assert result["status"] == "completed" and result["run_id"] == "follow"
    settings = SearchSettings.build(max_restart_loop=1, global_width=1,
                                    max_refinement_depth=3, local_sample_size=1)
    assert_complete(cluster.client, "follow", settings)
    assert cluster.branches.alive and cluster.tools.alive


def _has_node(client: redis.Redis, run_id: str) -> bool:
    try:
        return nodes(client, run_id) >= 1
    except Exception:
        return False


def test_workers_survive_redis_out_of_memory(cluster: RecoveryCluster) -> None:
    settings = slow_run("oom", max_refinement_depth=3, local_sample_size=1)
    run_id = cluster.submit(settings, *power_law_data())
    wait_until(lambda: nodes(cluster.client, run_id) >= 1, 30, "the first node")
    cluster.client.config_set("maxmemory", "1")  # every write is refused (noeviction)
    time.sleep(3)
    cluster.client.config_set("maxmemory", "0")
    freed = time.monotonic()
    result = cluster.result(run_id, RESULT_TIMEOUT)
    print(f"redis OOM for 3 s: finished {time.monotonic() - freed:.1f} s after memory came back")
    assert result.status == "completed"
    assert_complete(cluster.client, run_id, settings)
    assert cluster.branches.alive and cluster.tools.alive


def openai_run(run_id: str, **values: Any) -> SearchSettings:
    return SearchSettings.build(llm_provider="openai", llm_model="fake", tool_parser="text",
                                tools=["evaluate_formula"], early_stop=False, run_id=run_id,
                                global_width=2, max_refinement_depth=2, local_sample_size=1,
                                **values)


@pytest.mark.parametrize("reply", [
    pytest.param(Reply.error(500, "always down", headers={"retry-after-ms": "5"}), id="500"),
    pytest.param(Reply.json({}, delay=600), id="never-answers"),
])
def test_a_failing_model_ends_the_run_failed_with_its_reason(
        cluster: RecoveryCluster, model_server: FakeOpenAIServer, reply: Reply) -> None:
    model_server.respond_with(lambda request: reply)
    run_id = f"model-{int(time.time() * 1000)}"
    started = time.monotonic()
    result = cluster.result(cluster.submit(openai_run(run_id), *power_law_data()),
                            RESULT_TIMEOUT)
    print(f"model fault: run ended {time.monotonic() - started:.1f} s after submission")
    assert result.status == "failed"
    assert "model" in (result.stop_reason or "").lower() or "500" in (result.stop_reason or "")
    assert all(b["status"] == "stopped" for b in run_status(cluster.client, run_id)["branches"])
    assert RedisRunStore.open(cluster.client, run_id).node_count == 0


def test_cancel_ends_a_run_whose_model_never_answers(
        cluster: RecoveryCluster, model_server: FakeOpenAIServer) -> None:
    model_server.respond_with(lambda request: Reply.json({}, delay=600))
    before = len(model_server.requests)
    run_id = cluster.submit(openai_run(f"cancel-{int(time.time() * 1000)}"), *power_law_data())
    wait_until(lambda: len(model_server.requests) > before, 20, "a model request in flight")
    cancel_run(cluster.client, run_id)
    cancelled = time.monotonic()
    result = cluster.result(run_id, RESULT_TIMEOUT)
    print(f"cancel: run ended {time.monotonic() - cancelled:.1f} s after srh cancel")
    assert (result.status, result.stop_reason) == ("interrupted", "cancelled")
    path = cluster.directory / "runs" / run_id / "result.json"
    wait_until(path.exists, 20, "the run directory")
    assert json.loads(path.read_text())["stop_reason"] == "cancelled"
    assert run_status(cluster.client, run_id)["status"] == "interrupted"

