"""A worker that cannot build a run's agent: a deterministic error ends the run failed at
once (typed, recorded), a transient one is retried as any task's.

The real restart task body runs one delivery at a time (as a worker runs it) against a run
stored in a private redis-server; the agent class below fails its build as told. The
watchdog, which kicks stalled runs, ends one whose view cannot be built too.
"""

from __future__ import annotations

import json
import uuid
from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import redis
from celery import Celery
from celery.exceptions import Retry

import srh_workers.flow.tasks  # noqa: F401 - registers the flow tasks with every app
from srh_core.agent import SearchSettings, SRAgent
from srh_core.errors import ConfigurationError
from srh_core.skills import SkillError
from srh_workers.app import make_app
from srh_workers.config import WorkerSettings
from srh_workers.errors import AgentBuildError, TransientTaskError
from srh_workers.flow import names
from srh_workers.flow.names import Action
from srh_workers.flow.run_view import build_failure, forget_run
from srh_workers.store import ACTIVE_RUNS, RedisRunStore
from srh_workers.submit import run_status, submit_run
from srh_workers.watchdog import Watchdog
from tests.workers.support import deliver

pytestmark = pytest.mark.integration
STALL = 100.0


class BuildFailingAgent(SRAgent):
    """An SRAgent whose next builds raise the queued errors (then build as usual)."""

    failures: deque[Exception] = deque()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.failures:
            raise self.failures.popleft()
        super().__init__(*args, **kwargs)


@pytest.fixture
def client(redis_server: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server)
    yield client
    client.close()


@pytest.fixture
def app(redis_server: str) -> Celery:
    """An app on the in-memory broker whose run store is the private Redis."""
    return make_app(WorkerSettings(broker_url="memory://", result_backend="cache+memory://",
                                   redis_url=redis_server, task_modules=(), max_deliveries=2,
                                   max_retries=2, retry_backoff_max=1.0))


def submitted(client: redis.Redis, *failures: Exception) -> str:
    """A one-branch run stored (its restart task not run yet) whose next builds fail."""
    BuildFailingAgent.failures.clear()
    run_id = f"unbuilt-{uuid.uuid4().hex[:8]}"
    x = np.random.default_rng(0).uniform(1, 2, 40)
    settings = SearchSettings.build(run_id=run_id, granularity="step", global_width=1,
                                    max_restart_loop=1, max_refinement_depth=1,
                                    local_sample_size=1)
    queue: deque[Action] = deque()
    submit_run(client, queue.append, settings, {"x": x}, {"y": 2 * x}, "find y",
               agent_class=BuildFailingAgent)
    forget_run(run_id)
    BuildFailingAgent.failures.extend(failures)
    return run_id


CLASSES = {
    "configuration": (ConfigurationError("The 'tools' setting names 'nope'."), True),
    "skill": (SkillError("No skill 'x'."), True),
    "user_code": (TypeError("__init__() got an unexpected keyword"), True),
    "redis_down": (redis.exceptions.ConnectionError("Connection refused"), False),
    "transient_marker": (TransientTaskError("later"), False),
    "machine": (OSError("No space left on device"), False),
}


@pytest.mark.parametrize(("error", "deterministic"), CLASSES.values(), ids=CLASSES.keys())
def test_only_deterministic_build_errors_end_the_run(error: Exception,
                                                     deterministic: bool) -> None:
    from srh_workers.flow.run_view import BUILD_ERRORS

    failure = build_failure("r1", error) if isinstance(error, BUILD_ERRORS) else None
    assert (failure is not None) is deterministic
    if failure is not None:
        assert failure.run_id == "r1"
        assert failure.reason == f"failed: {type(error).__name__}: {error}"


def test_a_configuration_error_ends_the_run_failed_without_a_retry(
        app: Celery, client: redis.Redis) -> None:
    error = ConfigurationError("Unknown tool 'product_law'. Did you mean 'product_rule'?")
    run_id = submitted(client, error)
    deliver(app.tasks[names.RESTART], "t-restart", run_id, 1)  # no Retry raised, nothing sent
    report = run_status(client, run_id)
    assert report["status"] == "failed"
    assert report["stop_reason"] == f"ConfigurationError: {error}"
    deliver(app.tasks[names.RESTART], "t-restart", run_id, 1)  # a redelivery changes nothing
    assert run_status(client, run_id)["stop_reason"] == report["stop_reason"]


def test_a_transient_error_while_building_is_retried(app: Celery, client: redis.Redis) -> None:
    run_id = submitted(client, redis.exceptions.ConnectionError("Connection reset by peer"))
    with pytest.raises(Retry):
        deliver(app.tasks[names.RESTART], "t-flaky", run_id, 1)
    assert run_status(client, run_id)["status"] == "running"  # the run goes on
    deliver(app.tasks[names.RESTART], "t-flaky", run_id, 1, retries=1)  # the retry builds it
    report = run_status(client, run_id)
    assert report["status"] == "running" and [b["R"] for b in report["branches"]] == [1]


def test_a_build_error_is_typed_with_its_cause() -> None:
    failure = build_failure("r2", SkillError("No skill 'pendulum'."))
    assert isinstance(failure, AgentBuildError)
    assert "SkillError: No skill 'pendulum'." in str(failure)


def test_the_watchdog_ends_a_stalled_run_whose_view_cannot_be_built(client: redis.Redis) -> None:
    run_id = submitted(client)
    # the run's class as a worker deployed without its module sees it
    store = RedisRunStore(client, run_id, register=False)
    spec = json.loads(store.spec_json() or "{}")
    client.set(store.keys.spec, json.dumps({**spec, "agent_class": "lab_agents:LabAgent"}))
    since = float(client.zscore(ACTIVE_RUNS, run_id))
    dog = Watchdog(client, lambda action: None, STALL, 1.0, owner="test")
    dog.check_runs(now=since + 1)
    assert [k for k in dog.check_runs(now=since + STALL + 2) if k.run_id == run_id] == []
    report = run_status(client, run_id)
    assert report["status"] == "failed"
    assert report["stop_reason"].startswith(
        "ConfigurationError: The agent class 'lab_agents:LabAgent' cannot be imported here")
    assert client.zscore(ACTIVE_RUNS, run_id) is None  # no longer watched
