"""A bounded step's model request is cut by the one watcher: at the task's time, or at a stop.

The run is stored in a private redis-server; the model is ``test-cancellable``
(tests/workers/cluster_plugins.py), whose request waits on its cancel token,
so only a cut ends it early. The step is opened by the step task's own body.
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np
import pytest
import redis

import tests.workers.cluster_plugins  # noqa: F401 - registers the test-cancellable model
from srh_core.agent import SearchSettings
from srh_core.agent.outcome import STOP_CANCELLED
from srh_core.errors import ModelRequestCancelledError, ModelRequestError
from srh_workers.flow.handlers import dispatch
from srh_workers.flow.names import Action
from srh_workers.flow.run_view import RequestCut, forget_run, run_view_for
from srh_workers.flow.steps import run_step
from srh_workers.submit import submit_run

pytestmark = pytest.mark.integration

#: The model's wait: far longer than any cut below, so only a cut ends a request.
WAIT = "wait-120"


@pytest.fixture
def client(redis_server: str):
    client = redis.Redis.from_url(redis_server)
    yield client
    client.close()


def submitted(client: redis.Redis, run_id: str) -> None:
    """A one-branch run stored, its first restart started (its step 1 ready to open)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(1, 2, 50)
    settings = SearchSettings.build(run_id=run_id, llm_provider="test-cancellable",
                                    llm_model=WAIT, granularity="step", global_width=1,
                                    max_restart_loop=1, max_refinement_depth=1,
                                    local_sample_size=1)
    queue: deque[Action] = deque()
    submit_run(client, queue.append, settings, {"x": x}, {"y": 2 * x}, "find y",
               api_key="sk-test")
    queue.extend(dispatch(client, queue.popleft()))  # the restart task: it sends step 1
    forget_run(run_id)


def test_a_step_whose_model_does_not_answer_is_cut_at_the_task_time(client):
    submitted(client, "cut-time")
    rt = run_view_for(client, "cut-time")
    with pytest.raises(ModelRequestError, match="no answer within the step task's time "
                                                "limit") as raised:
        run_step(rt, 1, 1, 1, budget=lambda: 0.2)
    assert raised.value.retryable is False
    assert isinstance(raised.value.__cause__, ModelRequestCancelledError)


def test_a_stop_cuts_a_bounded_request_and_says_so(client):
    submitted(client, "cut-stop")
    rt = run_view_for(client, "cut-stop")
    agent = rt.agent(bounded=True)
    prompt = [{"role": "user", "content": "find y"}]
    with pytest.raises(ModelRequestError, match=f"cut: {STOP_CANCELLED}") as raised:
        with rt.bounded_requests(agent, lambda: 600.0):
            rt.store.flow.request_stop(STOP_CANCELLED)  # `srh cancel` while it waits
            agent.request_llm(prompt, 1, 1, 1)
    assert raised.value.retryable is False


def test_a_cancel_that_is_not_the_cut_passes_through(client):
    submitted(client, "cut-other")
    rt = run_view_for(client, "cut-other")
    agent = rt.agent(bounded=True)
    done = threading.Event()

    def force_pause() -> None:  # a force-pause's cancel: neither the task's time nor a stop
        while not done.wait(0.05):
            agent.api.cancel()

    canceller = threading.Thread(target=force_pause, daemon=True)
    canceller.start()
    try:
        with pytest.raises(ModelRequestCancelledError), \
                rt.bounded_requests(agent, lambda: 600.0):
            agent.request_llm([{"role": "user", "content": "find y"}], 1, 1, 1)
    finally:
        done.set()
        canceller.join(timeout=5)


def test_the_cut_records_which_reason_ended_it(client):
    submitted(client, "cut-reason")
    rt = run_view_for(client, "cut-reason")
    running = RequestCut(rt, 600.0)
    assert running() is False and running.reason is None
    timed_out = RequestCut(rt, 0.0)
    assert timed_out() is True and "time limit (0 s left" in (timed_out.reason or "")
    rt.store.flow.request_stop(STOP_CANCELLED)
    assert running() is True and running.reason == STOP_CANCELLED
