"""The delivery cap and transient retries, in process and against real worker processes.

Measured on a 2-core box (the integration tests print them; run with -s):

- a prefork child that kills itself: the pool notices at once or at its 5 s
  maintenance tick, and the task is re-queued at once, so with a cap of 2
  the task ends FAILURE 1-11 s after it was sent (3 s typical);
- a worker that dies whole (threads pool, so the task takes the process
  down): the task is re-delivered by the next worker's restore sweep once the
  visibility timeout has passed; with a 3 s timeout, a 1 s sweep and a cap of
  2 it ends FAILURE about 8-10 s after it was sent (3 worker starts).
"""

from __future__ import annotations

import os
import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from celery.exceptions import Reject, Retry, SoftTimeLimitExceeded, TimeLimitExceeded

from srh_core.errors import ModelRequestError
from srh_workers.app import make_app
from srh_workers.config import WorkerSettings
from srh_workers.reliability import (
    DELIVERY_TTL_SECONDS,
    DeliveryCounter,
    PoisonRecord,
    PoisonTaskError,
    SRHTask,
    TransientTaskError,
    is_transient,
    poison_records,
    retry_countdown,
)
from srh_workers.store import RunKeys
from tests.workers.support import (
    WORKER_START_DEADLINE,
    WorkerProcess,
    deliver,
    wait_until,
    worker_env,
)

EXECUTIONS_KEY = "test:executions:{task_id}"

if os.environ.get("SRH_TEST_TASKS") == "crash":  # imported by a worker of this module
    from srh_workers.app import app as _worker_app

    @_worker_app.task(name="srh.tool.test_crash", bind=True)
    def _crash(self: SRHTask, run_id: str, R: int, C: int, L: int, K: int) -> None:
        """Count the execution, then kill this process like a segfault would."""
        client = redis.Redis.from_url(os.environ["SRH_BROKER_URL"])
        client.incr(EXECUTIONS_KEY.format(task_id=self.request.id))
        os._exit(1)

    @_worker_app.task(name="srh.tool.test_hang", bind=True, soft_time_limit=0.5, time_limit=1.5)
    def _hang(self: SRHTask, run_id: str) -> None:
        """Ignore the soft limit and hang until the hard limit kills the process."""
        client = redis.Redis.from_url(os.environ["SRH_BROKER_URL"])
        client.incr(EXECUTIONS_KEY.format(task_id=self.request.id))
        try:
            time.sleep(30)
        except SoftTimeLimitExceeded:
            client.set(f"test:soft:{self.request.id}", 1)
            time.sleep(30)

    @_worker_app.task(name="srh.tool.test_refused", bind=True)
    def _refused(self: SRHTask, run_id: str, how: str) -> int:
        """Count the execution; the first makes Redis refuse writes, then fails ``how``."""
        client = redis.Redis.from_url(os.environ["SRH_BROKER_URL"])
        executions = client.incr(EXECUTIONS_KEY.format(task_id=self.request.id))
        if executions > 1:
            return executions
        client.config_set("maxmemory", "1")  # noeviction: every write is refused
        if how == "transient":
            raise TransientTaskError("an outage: worth a retry")
        raise Reject("dropped", requeue=False)


# ------------------------------------------------------------- in process
@pytest.fixture
def client(redis_server: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_server)
    connection.flushdb()
    yield connection
    connection.close()


def test_deliveries_are_counted_per_task_and_retry(client: redis.Redis) -> None:
    counter = DeliveryCounter(client, max_deliveries=2)
    assert [counter.record("run-1", "t1") for _ in range(3)] == [1, 2, 3]
    assert counter.record("run-1", "t1", retries=1) == 1
    assert counter.record("run-2", "t1") == 1
    assert [counter.is_poison(n) for n in (1, 2, 3)] == [False, False, True]
    key = RunKeys("run-1").delivery("t1", 0)
    assert key == "srh:{run-1}:delivery:t1:0"
    assert 0 < client.ttl(key) <= DELIVERY_TTL_SECONDS


def test_poison_records_live_in_the_run_and_expire_with_it(client: redis.Redis) -> None:
    counter = DeliveryCounter(client, max_deliveries=1)
    record = PoisonRecord("run-1", "t1", "srh.tool.calls", 2, 1, coordinate={"R": 1, "C": 2},
                          args='{"args": []}', hostname="tools@h", at=5.0)
    counter.report(record)
    counter.report(record)  # idempotent by task id
    assert poison_records(client, "run-1") == [record]
    assert client.sismember(RunKeys("run-1").registry, "srh:{run-1}:poison")


@pytest.mark.parametrize(("error", "transient"), [
    (redis.exceptions.ConnectionError("down"), True),
    (redis.exceptions.TimeoutError("slow"), True),
    (redis.exceptions.BusyLoadingError("loading"), True),
    (redis.exceptions.OutOfMemoryError("maxmemory"), True),
    (redis.exceptions.ReadOnlyError("replica"), True),
    (redis.exceptions.ResponseError("WRONGTYPE"), False),
    (TransientTaskError("later"), True),
    (ModelRequestError("429", status=429, retryable=True), True),
    (ModelRequestError("400", status=400, retryable=False), False),
    (ValueError("bad input"), False),
    (PoisonTaskError("poison"), False),
], ids=["redis-down", "redis-timeout", "redis-loading", "redis-full", "redis-read-only",
        "redis-wrong-type", "marker", "rate-limit", "bad-request",
        "value-error", "poison"])
def test_only_transient_errors_are_retried(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


def test_retry_countdown_is_bounded() -> None:
    rng = random.Random(7)
    for retries in range(12):
        countdown = retry_countdown(retries, 20.0, rng)
        assert 0.0 <= countdown <= min(20.0, 2.0 ** retries)


@pytest.fixture
def guarded_app(redis_server: str, client: redis.Redis) -> Celery:
    """An app on the in-memory broker whose delivery counters live in the private Redis."""
    settings = WorkerSettings(broker_url="memory://", result_backend="cache+memory://",
                              redis_url=redis_server, task_modules=(), max_deliveries=2,
                              max_retries=2, retry_backoff_max=1.0)
    return make_app(settings)


def test_a_task_delivered_too_often_fails_without_running(guarded_app: Celery,
                                                          client: redis.Redis) -> None:
    runs: list[tuple[str, int]] = []

    @guarded_app.task(name="srh.tool.counted")
    def counted(run_id: str, R: int, C: int, L: int, K: int) -> int:
        """Record each execution."""
        runs.append((run_id, K))
        return len(runs)

    task_id = str(uuid.uuid4())
    assert [deliver(counted, task_id, "run-9", 1, 2, 3, 4) for _ in range(2)] == [1, 2]
    with pytest.raises(PoisonTaskError, match="delivered 3 times") as caught:
        deliver(counted, task_id, "run-9", 1, 2, 3, 4)
    assert len(runs) == 2
    assert caught.value.task_id == task_id and caught.value.deliveries == 3
    [record] = poison_records(client, "run-9")
    assert (record.task_id, record.task_name, record.deliveries) == (task_id, "srh.tool.counted", 3)
    assert record.coordinate == {"R": 1, "C": 2, "L": 3, "K": 4}
    assert record.hostname == "test@host" and '"run-9"' in record.args
    assert deliver(counted, task_id, "run-9", 1, 2, 3, 4, retries=1) == 3  # a retry starts over


def test_on_poison_hook_is_called_once(guarded_app: Celery, client: redis.Redis) -> None:
    seen: list[PoisonRecord] = []

    class Reporting(SRHTask):
        def on_poison(self, record: PoisonRecord) -> None:
            seen.append(record)
            raise RuntimeError("a broken hook must not hide the poison")

    @guarded_app.task(name="srh.branch.reported", base=Reporting)
    def reported(run_id: str) -> None:
        """Nothing."""

    for _ in range(2):
        deliver(reported, "t-hook", "run-h")
    with pytest.raises(PoisonTaskError):
        deliver(reported, "t-hook", "run-h")
    assert [record.task_id for record in seen] == ["t-hook"]


def test_transient_errors_are_retried_with_backoff(guarded_app: Celery) -> None:
    @guarded_app.task(name="srh.tool.flaky")
    def flaky(run_id: str) -> None:
        """Redis is down."""
        raise redis.exceptions.ConnectionError("connection refused")

    with pytest.raises(Retry) as caught:
        deliver(flaky, "t-flaky", "run-r")
    assert caught.value.when is not None
    with pytest.raises(redis.exceptions.ConnectionError):  # retries exhausted: the error itself
        deliver(flaky, "t-flaky", "run-r", retries=2)


def test_other_errors_fail_at_once(guarded_app: Celery) -> None:
    @guarded_app.task(name="srh.tool.wrong")
    def wrong(run_id: str) -> None:
        """A programming error."""
        raise KeyError("missing")

    with pytest.raises(KeyError):
        deliver(wrong, "t-wrong", "run-w")


def test_eager_and_direct_calls_skip_the_guard(guarded_app: Celery, client: redis.Redis) -> None:
    @guarded_app.task(name="srh.tool.plain", bind=True)
    def plain(self: SRHTask, run_id: str) -> float | None:
        """Return the time budget."""
        return self.time_budget()

    assert plain("run-p") is None  # a plain call: no request, no limit known
    budget = plain.apply(args=("run-p",)).get()
    assert 39.0 < budget <= 40.0  # the tool soft limit
    assert client.keys("srh:{run-p}:delivery:*") == []


# -------------------------------------------------------- real workers
def crash_settings(**overrides: str) -> dict[str, str]:
    return {"SRH_TASK_MODULES": "tests.workers.test_reliability", "SRH_TEST_TASKS": "crash",
            **overrides}


def wait_for_poison(producer: Celery, task_id: str, deadline: float) -> Any:
    result = producer.AsyncResult(task_id)
    wait_until(lambda: result.state == "FAILURE", deadline, f"task {task_id} to fail")
    return result


@pytest.mark.integration
def test_a_task_that_kills_its_prefork_child_is_capped(redis_server_factory, tmp_path: Path,
                                                       ) -> None:
    server = redis_server_factory()
    env = worker_env(server.url, SRH_MAX_DELIVERIES="2", **crash_settings())
    producer = make_app(WorkerSettings(broker_url=server.url, task_modules=()))
    worker = WorkerProcess.celery(env, tmp_path / "prefork.log", pool="prefork")
    try:
        producer.send_task("srh.tool.ping").get(timeout=WORKER_START_DEADLINE)  # it started
        began = time.monotonic()
        task_id = producer.send_task("srh.tool.test_crash", args=["run-x", 1, 1, 1, 1]).id
        result = wait_for_poison(producer, task_id, 60)
        elapsed = time.monotonic() - began
        print(f"prefork: poison task failed {elapsed:.2f} s after it was sent")
        assert isinstance(result.result, PoisonTaskError), result.result
        assert "delivered 3 times" in str(result.result)
        assert int(server.client().get(EXECUTIONS_KEY.format(task_id=task_id))) == 2
        [record] = poison_records(server.client(), "run-x")
        assert (record.task_id, record.deliveries) == (task_id, 3)
        # the message is acked: nothing waits or is in flight, and the worker still works
        assert producer.send_task("srh.tool.ping").get(timeout=30)["pong"]
        assert server.client().llen("tools") == 0
        wait_until(lambda: server.client().hlen("unacked") == 0, 10, "the last ack")
        assert "PoisonTaskError" in worker.log_text()

        # a task that ignores its soft limit is killed at its hard limit, failed and acked
        hung = producer.send_task("srh.tool.test_hang", args=["run-x"])
        wait_for_poison(producer, hung.id, 30)
        assert isinstance(hung.result, TimeLimitExceeded), hung.result
        assert server.client().get(f"test:soft:{hung.id}") == b"1"
        wait_until(lambda: server.client().hlen("unacked") == 0, 10, "the timed-out task's ack")
        assert producer.send_task("srh.tool.ping").get(timeout=30)["pong"]
        assert int(server.client().get(EXECUTIONS_KEY.format(task_id=hung.id))) == 1
    finally:
        worker.stop()


@pytest.mark.integration
def test_a_task_that_kills_its_whole_worker_is_capped(redis_server_factory, tmp_path: Path) -> None:
    server = redis_server_factory()
    env = worker_env(server.url, SRH_MAX_DELIVERIES="2", SRH_VISIBILITY_TIMEOUT="3",
                     SRH_RESTORE_INTERVAL="1", SRH_TOOL_SOFT_LIMIT="0.5",
                     SRH_TOOL_HARD_LIMIT="1", SRH_BRANCH_SOFT_LIMIT="0.5",
                     SRH_BRANCH_HARD_LIMIT="1", SRH_RETRY_BACKOFF_MAX="0.5", **crash_settings())
    producer = make_app(WorkerSettings.from_env(env))
    result = producer.AsyncResult(
        producer.send_task("srh.tool.test_crash", args=["run-y", 1, 2, 1, 1]).id)
    began, restarts = time.monotonic(), 0
    worker: WorkerProcess | None = None
    try:
        # A service manager's job: restart the (threads pool) worker whenever it dies.
        def failed_or_restarted() -> bool:
            nonlocal worker, restarts
            if result.state == "FAILURE":
                return True
            if worker is None or not worker.alive:
                restarts += 1
                worker = WorkerProcess.celery(env, tmp_path / f"threads-{restarts}.log",
                                              pool="threads")
            return False

        # three deliveries, each to a worker started for it
        wait_until(failed_or_restarted, 3 * WORKER_START_DEADLINE, "the poison task to fail")
        elapsed = time.monotonic() - began
        print(f"threads: poison task failed {elapsed:.2f} s after it was sent "
              f"({restarts} worker starts)")
        assert isinstance(result.result, PoisonTaskError)
        assert int(server.client().get(EXECUTIONS_KEY.format(task_id=result.id))) == 2
        assert restarts == 3  # two deaths, then the worker that refused to run it
        assert elapsed >= 2 * 3  # each redelivery waited for the visibility timeout
    finally:
        if worker is not None:
            worker.stop()


@pytest.mark.integration
@pytest.mark.parametrize("how", ["transient", "reject"])
def test_a_failure_redis_cannot_record_does_not_stall_the_worker(
        redis_server_factory, tmp_path: Path, how: str) -> None:
    """A task fails while Redis refuses writes: its message is kept, the worker goes on.

    "transient": the retry cannot be published (Celery rejects the message
    without requeue: the call would be lost); "reject": Celery stores the
    failure before it rejects, the store raises, and the message used to keep
    the worker's only prefetch slot (it never fetched again).
    """
    server = redis_server_factory()
    env = worker_env(server.url, SRH_MAX_DELIVERIES="3", SRH_VISIBILITY_TIMEOUT="3",
                     SRH_RESTORE_INTERVAL="1", SRH_TOOL_SOFT_LIMIT="0.5",
                     SRH_TOOL_HARD_LIMIT="1", SRH_BRANCH_SOFT_LIMIT="0.5",
                     SRH_BRANCH_HARD_LIMIT="1", SRH_RETRY_BACKOFF_MAX="0.5",
                     SRH_TASK_MAX_RETRIES="3", **crash_settings())
    producer = make_app(WorkerSettings.from_env(env))
    worker = WorkerProcess.celery(env, tmp_path / f"{how}.log", pool="prefork")
    client = server.client()
    try:
        producer.send_task("srh.tool.ping").get(timeout=WORKER_START_DEADLINE)  # it started
        task_id = producer.send_task("srh.tool.test_refused", args=["run-oom", how]).id
        executions = EXECUTIONS_KEY.format(task_id=task_id)
        wait_until(lambda: client.get(executions) == b"1", 30, "the first execution")
        # the worker's parent handled the failure while Redis still refused writes
        wait_until(lambda: any(sign in worker.log_text() for sign in (
            "refused the reject", "Pool callback raised", "could not re-queue")), 30,
            "the worker to handle the failure")
        client.config_set("maxmemory", "0")
        assert producer.send_task("srh.tool.ping").get(timeout=30)["pong"]  # still fetching
        # the failed call was kept: it comes back after the visibility timeout and runs again
        wait_until(lambda: client.get(executions) == b"2", 30, "the call to run again")
        wait_until(lambda: client.hlen("unacked") == 0, 10, "the last ack")
        log = worker.log_text()
        if how == "transient":  # no failure to store: the message is put back at once
            assert "put back instead" in log and "Pool callback raised" not in log
        else:  # the store's error is still logged, and the message let go
            assert "its message is re-queued" in log
    finally:
        client.config_set("maxmemory", "0")
        worker.stop()
