"""The recovery rules without worker processes: the watchdog's choices, the failure rule,
the settings that bound them, the transport's ack during a refused write, the follower.

The same rules with real workers and real faults are in tests/workers/test_recovery.py.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import redis
from kombu import Connection
from redis.backoff import NoBackoff
from redis.retry import Retry

from srh_core.agent import SearchSettings
from srh_core.agent.branch import BranchState
from srh_core.agent.outcome import STOP_CANCELLED, failed_reason, is_failure, run_outcome
from srh_core.errors import ConfigurationError, ModelRequestError, SearchStateError
from srh_workers.config import WorkerSettings
from srh_workers.flow.handlers import dispatch
from srh_workers.flow.names import FINALIZE, STEP, Action
from srh_workers.flow.run_view import forget_run, run_view_for
from srh_workers.flow.steps import fail_branch
from srh_workers.store import ACTIVE_PROGRESS, ACTIVE_RUNS, WATCHDOG_LOCK, RedisRunStore
from srh_workers.submit import submit_run, wait_for_result
from srh_workers.transport import TRANSPORT_PATH
from srh_workers.watchdog import Watchdog

STALL = 100.0


@pytest.fixture
def client(redis_server: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_server)
    yield connection
    connection.close()


def submitted(client: redis.Redis, **values: Any) -> tuple[str, list[Action]]:
    """A published run whose tasks are only collected (no worker runs them)."""
    run_id = f"wd-{uuid.uuid4().hex[:8]}"
    sent: list[Action] = []
    x1 = np.linspace(1, 5, 40)
    settings = SearchSettings.build(run_id=run_id, granularity="step", max_restart_loop=1,
                                    global_width=2, max_refinement_depth=2,
                                    local_sample_size=1, early_stop=False, **values)
    submit_run(client, sent.append, settings, {"x1": x1}, {"y": 2 * x1}, "find y")
    return run_id, sent


def watchdog(client: redis.Redis, sent: list[Action]) -> Watchdog:
    return Watchdog(client, sent.append, STALL, 1.0, owner="test")


def test_a_run_is_watched_from_submission_to_result(client: redis.Redis) -> None:
    run_id, _ = submitted(client)
    store = RedisRunStore.open(client, run_id)
    assert client.zscore(ACTIVE_RUNS, run_id) is not None
    store.result("completed", "done")
    assert client.zscore(ACTIVE_RUNS, run_id) is None
    assert client.hget(ACTIVE_PROGRESS, run_id) is None


def test_only_a_run_without_progress_is_kicked(client: redis.Redis) -> None:
    run_id, first = submitted(client)
    since = float(client.zscore(ACTIVE_RUNS, run_id))
    sent: list[Action] = []
    dog = watchdog(client, sent)
    mine = lambda kicks: [k for k in kicks if k.run_id == run_id]  # noqa: E731
    assert mine(dog.check_runs(now=since + 1)) == []  # first look: the marker is new
    assert client.zscore(ACTIVE_RUNS, run_id) == pytest.approx(since + 1)
    assert mine(dog.check_runs(now=since + STALL)) == []  # quiet, not for long enough
    kicks = mine(dog.check_runs(now=since + STALL + 2))
    assert len(kicks) == 1 and kicks[0].quiet_seconds == pytest.approx(STALL + 1)
    assert [a for a in sent if a.args[0] == run_id] == first  # what `srh kick` sends
    assert mine(dog.check_runs(now=since + STALL + 3)) == []  # its clock restarted


def test_after_an_outage_a_run_without_progress_is_kicked_once_at_once(
        client: redis.Redis) -> None:
    run_id, first = submitted(client)
    dog, other = watchdog(client, []), watchdog(client, [])
    t0 = float(client.zscore(ACTIVE_RUNS, run_id))
    dog.check_runs(now=t0)
    dispatch(client, first[0])  # progress (say, by one branch) does not hide a lost message
    # Redis went away at t0 + 1 and came back: no stall threshold to wait for
    assert [k.run_id for k in dog.check_runs(now=t0 + 5, outage_began=t0 + 1)].count(run_id) == 1
    assert [k.run_id for k in other.check_runs(now=t0 + 6, outage_began=t0 + 1)].count(run_id) == 0
    assert [k.run_id for k in dog.check_runs(now=t0 + 7)].count(run_id) == 0


def test_progress_restarts_the_clock_and_deliveries_do_not(client: redis.Redis) -> None:
    run_id, first = submitted(client)
    store = RedisRunStore.open(client, run_id)
    dog = watchdog(client, [])
    since = float(client.zscore(ACTIVE_RUNS, run_id))
    dog.check_runs(now=since)
    store.delivery.count_delivery("a-duplicate", 0, 60)  # a re-delivered task that changes nothing
    assert [k.run_id for k in dog.check_runs(now=since + STALL + 1)].count(run_id) == 1
    dispatch(client, first[0])  # restart 1 ran: branches stored, keys registered
    assert [k.run_id for k in dog.check_runs(now=since + 3 * STALL)].count(run_id) == 0
    assert client.zscore(ACTIVE_RUNS, run_id) == pytest.approx(since + 3 * STALL)


def test_kicked_steps_continue_from_the_stored_state(client: redis.Redis) -> None:
    run_id, first = submitted(client)
    steps = dispatch(client, first[0])  # restart 1 ran; its step messages were lost
    assert [a.task for a in steps] == [STEP, STEP]
    sent: list[Action] = []
    dog = watchdog(client, sent)
    dog.check_runs(now=time.time())
    dog.check_runs(now=time.time() + STALL + 1)
    assert sorted(a.args for a in sent if a.args[0] == run_id) == sorted(a.args for a in steps)


def test_finished_gone_and_paused_runs_are_not_kicked(client: redis.Redis) -> None:
    done, _ = submitted(client)
    RedisRunStore.open(client, done).result("completed", "done")
    client.zadd(ACTIVE_RUNS, {done: 0})  # e.g. a result written by an older worker
    gone = f"gone-{uuid.uuid4().hex[:6]}"
    client.zadd(ACTIVE_RUNS, {gone: 0})
    paused, _ = submitted(client)
    store = RedisRunStore.open(client, paused)
    client.set(store.keys.control, json.dumps({"manager": {"state": "paused"}}))
    client.zadd(ACTIVE_RUNS, {paused: 0})
    sent: list[Action] = []
    dog = watchdog(client, sent)
    dog.check_runs(now=time.time())
    kicks = dog.check_runs(now=time.time() + STALL + 1)
    assert not {k.run_id for k in kicks} & {done, gone, paused}
    assert not [a for a in sent if a.args[0] in (done, gone, paused)]
    assert client.zscore(ACTIVE_RUNS, done) is None and client.zscore(ACTIVE_RUNS, gone) is None
    assert client.zscore(ACTIVE_RUNS, paused) is not None  # still watched once released


def test_a_paused_run_asked_to_stop_is_kicked(client: redis.Redis) -> None:
    run_id, _ = submitted(client)
    store = RedisRunStore.open(client, run_id)
    client.set(store.keys.control, json.dumps({"manager": {"state": "paused"}}))
    store.flow.request_stop("cancelled")         # its parked steps must run to end the run
    client.zadd(ACTIVE_RUNS, {run_id: 0})
    sent: list[Action] = []
    dog = watchdog(client, sent)
    dog.check_runs(now=time.time())
    kicks = dog.check_runs(now=time.time() + STALL + 1)
    assert run_id in {k.run_id for k in kicks} and [a for a in sent if a.args[0] == run_id]


def test_one_worker_checks_per_interval(client: redis.Redis) -> None:
    client.delete(WATCHDOG_LOCK)
    first, second = watchdog(client, []), Watchdog(client, lambda a: None, STALL, 1.0, "other")
    assert first.check() is not None
    assert second.check() is None
    assert client.get(WATCHDOG_LOCK) == b"test"


def test_the_watchdog_thread_survives_redis_errors() -> None:
    dead = _dead_redis()
    dog = Watchdog(dead, lambda a: None, STALL, 0.01, "test").start()
    time.sleep(0.1)
    assert dog._thread is not None and dog._thread.is_alive()
    dog.stop()
    assert not dog._thread.is_alive()


def test_a_failed_step_fails_the_run_with_its_reason(client: redis.Redis) -> None:
    run_id, first = submitted(client)
    forget_run(run_id)
    steps = dispatch(client, first[0])
    rt = run_view_for(client, run_id)
    reason = failed_reason(ModelRequestError("endpoint down after 5 attempts"))
    assert fail_branch(rt, 1, 1, reason) == []  # branch 2 is still running
    assert fail_branch(rt, 1, 1, reason) == []  # idempotent
    after = dispatch(client, steps[1])  # branch 2's next step sees the stop flag
    assert [a.task for a in after] == [FINALIZE]
    dispatch(client, after[0])
    result = rt.store.stored_result()
    assert result.status == "failed"
    assert result.stop_reason == "ModelRequestError: endpoint down after 5 attempts"


def test_a_cancel_that_came_first_wins_over_a_failure(client: redis.Redis) -> None:
    run_id, first = submitted(client)
    forget_run(run_id)
    dispatch(client, first[0])
    rt = run_view_for(client, run_id)
    rt.store.flow.request_stop(STOP_CANCELLED)
    fail_branch(rt, 1, 1, failed_reason("ModelRequestError: cut"))
    assert rt.store.flow.load_branch(1, 1).stop_reason == STOP_CANCELLED


@pytest.mark.parametrize(("reasons", "expected"), [
    (["failed: X: boom", "failed: X: boom"], ("failed", "X: boom")),
    (["failed: X: boom", STOP_CANCELLED], ("interrupted", "cancelled")),
    ([None, "failed: Y: bad"], ("failed", "Y: bad")),
], ids=["all-failed", "cancel-wins", "one-failed"])
def test_the_failure_rule(reasons: list[str | None], expected: tuple[str, str]) -> None:
    branches = [BranchState(run_id="r", R=1, C=c, L=3, buffer=[])
                for c in range(1, len(reasons) + 1)]
    for branch, reason in zip(branches, reasons, strict=True):
        branch.stop(reason) if reason else branch.stop("depth", status="done")
    outcome = run_outcome(branches, early_stop=False, time_limit=None)
    assert (outcome.status, outcome.reason) == expected


def test_failure_reasons_are_one_bounded_line() -> None:
    reason = failed_reason(RuntimeError("a\nb " + "x" * 2000))
    assert is_failure(reason) and "\n" not in reason and len(reason) < 600
    assert not is_failure("depth") and not is_failure(None)


def test_the_stall_threshold_follows_the_longest_task_hold() -> None:
    assert WorkerSettings().stall_seconds == 85 + 10 + 5
    longer = WorkerSettings(branch_soft_limit=200, branch_hard_limit=240, visibility_timeout=300)
    assert longer.check().stall_seconds == 240 + 10 + 5
    with pytest.raises(ConfigurationError, match="SRH_STALL_SECONDS .* at least"):
        WorkerSettings(stall_seconds=30).check()
    with pytest.raises(ConfigurationError, match="SRH_WATCHDOG_INTERVAL"):
        WorkerSettings(stall_seconds=100, watchdog_interval=100).check()
    assert WorkerSettings(stall_seconds=0).check().stall_seconds == 0  # off


def test_an_ack_refused_by_a_full_redis_frees_the_prefetch_slot(redis_server_factory) -> None:
    server = redis_server_factory()
    with Connection(server.url, transport=TRANSPORT_PATH) as connection:
        queue = connection.SimpleQueue("srh-test-acks")
        queue.channel.basic_qos(0, 1, False)  # the workers' prefetch: one message at a time
        queue.put({"n": 1})
        message = queue.get(timeout=5)
        channel = queue.channel
        assert not channel.qos.can_consume()
        server.client().config_set("maxmemory", "1")
        try:
            message.ack()  # kombu's own transport raises OutOfMemoryError here
        finally:
            server.client().config_set("maxmemory", "0")
        assert channel.qos.can_consume()  # freed: the worker fetches again
        assert server.client().hlen("unacked") == 1  # restored after the visibility timeout
        queue.close()


def _dead_redis() -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=_free_port(), socket_connect_timeout=0.1,
                       retry=Retry(NoBackoff(), 0))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_follower_waits_out_an_outage_until_its_timeout() -> None:
    dead = _dead_redis()
    seen: list[BaseException] = []
    with pytest.raises(SearchStateError, match="no result after"):
        wait_for_result(dead, "any", timeout=0.5, poll=0.05, on_outage=seen.append)
    assert seen and isinstance(seen[0], redis.exceptions.ConnectionError)
