"""The Celery tasks of a distributed run: thin wrappers over :mod:`srh_workers.flow.steps`.

Each task takes a run id and a coordinate (plain JSON), runs one flow
function against the run's Redis state, and enqueues the actions it
returns. No task waits for another task's result; there are no chords.

When a task is declared poison (its worker died every time it ran, see
:mod:`srh_workers.reliability`), :meth:`FlowTask.on_poison` keeps the run
moving: a sample task records its sample as failed calls so the step can
close; a branch task ends its branch, so the restart barrier does not wait
forever; a whole-run task ends the run as failed.

When a task fails for good (:meth:`FlowTask.on_failure`: an error that is not
transient, or a model request that still failed after the task's retries),
the run ends by the failure rule of :mod:`srh_core.agent.outcome`: a step or
restart task ends its branch ``failed: <error>`` and stops the run, a sample
task records its calls as failed, a whole-run task ends the run failed. A
task that ran out of retries during a Redis outage is left to the workers'
watchdog (:mod:`srh_workers.watchdog`), which re-sends it once Redis is back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from celery import Celery, shared_task
from celery.exceptions import SoftTimeLimitExceeded

from srh_core.agent.outcome import failed_reason
from srh_core.api.endpoints import EndpointAccessError
from srh_core.context import AgentContext
from srh_core.errors import ModelRequestError
from srh_core.tools.base import BaseTool
from srh_core.types import ToolCallResult
from srh_workers.errors import AgentBuildError, PoisonTaskError
from srh_workers.flow import names, steps
from srh_workers.flow.handlers import HANDLERS
from srh_workers.flow.names import Action, whole_run_action
from srh_workers.flow.run_view import Budget, WorkerRunView, run_view_for
from srh_workers.flow.whole_run import run_whole
from srh_workers.reliability import PoisonRecord, SRHTask, app_settings, is_transient
from srh_workers.store.client import redis_client

logger = logging.getLogger("srh.workers.tasks")


def send_action(app: Celery, action: Action) -> None:
    """Enqueue one action; the app's routes pick its queue from the task name."""
    app.send_task(action.task, args=list(action.args))


def sender(app: Celery) -> Any:
    """A ``send`` callable for :func:`srh_workers.submit.submit_run`."""
    return lambda action: send_action(app, action)


def _runtime(task: SRHTask, run_id: str) -> WorkerRunView:
    settings = app_settings(task.app)
    runtime = run_view_for(redis_client(str(settings.redis_url)), run_id,
                          settings.run_directories)
    runtime.artifacts = settings.artifacts is not None
    return runtime


def _send_all(task: SRHTask, actions: Sequence[Action]) -> dict[str, Any]:
    for action in actions:
        send_action(task.app, action)
    return {"enqueued": [[action.task, *action.args[1:]] for action in actions]}


def _run(task: SRHTask, name: str, run_id: str, *coordinate: int,
         budget: Budget | None = None) -> dict[str, Any]:
    runtime = _built_runtime(task, run_id)
    if runtime is None:
        return {"run_id": run_id, "coordinate": list(coordinate), "enqueued": []}
    try:
        handler = HANDLERS[name]
        actions = (handler(runtime, *coordinate, budget=budget) if budget is not None
                   else handler(runtime, *coordinate))
    except EndpointAccessError as error:  # the run asks for an endpoint it may not use
        logger.error("run %s refused: %s", run_id, error)
        steps.refuse_run(runtime, str(error))
        actions = []
    except AgentBuildError as error:
        _end_unbuilt(task, error, runtime)
        actions = []
    return {"run_id": run_id, "coordinate": list(coordinate), **_send_all(task, actions)}


def _built_runtime(task: SRHTask, run_id: str) -> WorkerRunView | None:
    """The run's view; None once a run whose view cannot be built here has been ended."""
    try:
        return _runtime(task, run_id)
    except AgentBuildError as error:
        _end_unbuilt(task, error)
        return None


def _end_unbuilt(task: SRHTask, error: AgentBuildError,
                 runtime: WorkerRunView | None = None) -> None:
    """The run's agent cannot be built here (deterministic): end the run failed, no retry."""
    logger.error("%s", error, extra={"event": "agent_build_failed"})
    steps.end_unbuilt_run(redis_client(str(app_settings(task.app).redis_url)), error, runtime)


class FlowTask(SRHTask):
    """SRHTask whose poison handling keeps the run moving.

    Step tasks hand work on by enqueueing the next task and keep their state in
    the run's Redis keys; nobody reads their return value, so it is not stored
    (result-backend commands saved). Failures still are, for Flower.
    """

    ignore_result = True
    store_errors_even_if_ignored = True

    def on_poison(self, record: PoisonRecord) -> None:
        args: Sequence[Any] = self.request.args or ()
        if not args:
            return
        try:
            self._on_poison(args, record)
        except AgentBuildError as error:
            _end_unbuilt(self, error)

    def _on_poison(self, args: Sequence[Any], record: PoisonRecord) -> None:
        runtime = _runtime(self, str(args[0]))
        if self.name == names.SAMPLE and len(args) == 5:
            actions = _fail_sample(runtime, *args[1:], record)
        elif self.name in (names.STEP, names.ADVANCE) and len(args) >= 3:
            actions = _end_branch(runtime, int(args[1]), int(args[2]), record)
        elif self.name == names.WHOLE_RUN:
            steps.finalize_run(runtime, failure=f"poison task {record.task_name}: its worker "
                                                f"died {record.deliveries} times")
            actions = []
        else:
            return
        _send_all(self, actions)

    def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any,
                   einfo: Any) -> None:
        if isinstance(exc, PoisonTaskError) or not args:
            return  # on_poison moved the run on already
        if is_transient(exc) and not isinstance(exc, ModelRequestError):
            logger.warning("%s[%s] gave up during an outage (%r); the watchdog re-sends it",
                           self.name, task_id, exc)
            return
        try:
            _send_all(self, _after_failure(self, list(args), exc))
        except AgentBuildError as error:  # moving the run on needs its agent: end it
            _end_unbuilt(self, error)
        except Exception:  # the run cannot be told now (Redis down?): the watchdog retries
            logger.exception("%s[%s]: could not record the failure in its run", self.name,
                             task_id)


def _after_failure(task: FlowTask, args: list[Any], exc: BaseException) -> list[Action]:
    runtime = _runtime(task, str(args[0]))
    reason = failed_reason(exc)
    logger.error("run %s: %s%s failed for good: %s", runtime.run_id, task.name, args[1:], reason)
    if task.name == names.SAMPLE and len(args) == 5:
        return _fail_sample(runtime, *args[1:], f"The tool calls failed ({reason}); try "
                                                "something else.")
    if task.name in (names.STEP, names.ADVANCE) and len(args) >= 4:
        return steps.fail_branch(runtime, int(args[1]), int(args[2]), reason)
    if task.name in (names.RESTART, names.WHOLE_RUN):
        steps.finalize_run(runtime, failure=reason.removeprefix("failed: "))
    return []


def _fail_sample(runtime: WorkerRunView, R: int, C: int, L: int, K: int,
                 record: PoisonRecord | str) -> list[Action]:
    plan = runtime.store.load_plan(R, C, L)
    if plan is None:
        return []
    calls = plan.responses[K - 1].tool_calls
    message = record if isinstance(record, str) else (
        f"The tool call crashed its worker {record.deliveries} times and was "
        "abandoned; try something else.")
    runtime.store.flow.store_results(R, C, L, K, [ToolCallResult.failure(message, tool=c.name)
                                             for c in calls])
    return steps.run_sample(runtime, R, C, L, K)


def _end_branch(runtime: WorkerRunView, R: int, C: int, record: PoisonRecord) -> list[Action]:
    branch = runtime.store.flow.load_branch(R, C)
    if branch.finished:
        return []
    branch.stop(f"poison task {record.task_name}")
    runtime.store.flow.save_branches([branch])
    return steps.end_branch(runtime, branch)


@shared_task(name=names.RESTART, bind=True, base=FlowTask)
def branch_restart(self: FlowTask, run_id: str, R: int) -> dict[str, Any]:
    """Create restart R's branches (seeded from the pool) and start them."""
    return _run(self, names.RESTART, run_id, R)


@shared_task(name=names.STEP, bind=True, base=FlowTask)
def branch_step(self: FlowTask, run_id: str, R: int, C: int, L: int) -> dict[str, Any]:
    """Open one refinement step: request the K responses (once) and fan out."""
    return _run(self, names.STEP, run_id, R, C, L, budget=self.time_budget)


@shared_task(name=names.SAMPLE, bind=True, base=FlowTask)
def tool_calls(self: FlowTask, run_id: str, R: int, C: int, L: int, K: int) -> dict[str, Any]:
    """Run one sample's tool calls, record its node and candidates; the last closes the step."""
    return _run(self, names.SAMPLE, run_id, R, C, L, K)


@shared_task(name=names.ADVANCE, bind=True, base=FlowTask)
def branch_advance(self: FlowTask, run_id: str, R: int, C: int, L: int) -> dict[str, Any]:
    """Close a step whose samples are all recorded (sent by ``srh kick``, and by old clients)."""
    return _run(self, names.ADVANCE, run_id, R, C, L)


@shared_task(name=names.FINALIZE, bind=True, base=FlowTask)
def branch_finalize(self: FlowTask, run_id: str) -> dict[str, Any]:
    """Write the run's result to Redis and the run directory."""
    return _run(self, names.FINALIZE, run_id)


@shared_task(name=names.WHOLE_RUN, bind=True, base=FlowTask)
def whole_run(self: FlowTask, run_id: str) -> dict[str, Any]:
    """Run a whole run (granularity "run") until it ends or this task's time is up."""
    runtime = _built_runtime(self, run_id)
    if runtime is None:
        return {"run_id": run_id, "enqueued": []}
    try:
        actions = run_whole(runtime, owner=str(self.request.id), budget=self.time_budget)
    except EndpointAccessError as error:
        logger.error("run %s refused: %s", run_id, error)
        steps.refuse_run(runtime, str(error))
        actions = []
    except AgentBuildError as error:
        _end_unbuilt(self, error, runtime)
        actions = []
    except SoftTimeLimitExceeded:  # a step overran the chunk: continue from the checkpoint
        logger.warning("run %s: soft time limit inside a step; continuing in a new task", run_id)
        actions = [whole_run_action(run_id)]
    try:
        return {"run_id": run_id, **_send_all(self, actions)}
    except SoftTimeLimitExceeded:  # raised once: the hard limit leaves time to send again
        return {"run_id": run_id, **_send_all(self, actions)}


_PROBE_CONTEXTS: dict[int, Any] = {}


def _probe_context(samples: int) -> Any:
    """A small fixed dataset per process (y = x1 * x2**2 + x3), built once."""
    import numpy as np

    if samples not in _PROBE_CONTEXTS:
        rng = np.random.default_rng(0)
        x1, x2, x3 = rng.uniform(1, 5, (3, samples))
        _PROBE_CONTEXTS[samples] = AgentContext(
            data={"x1": x1, "x2": x2, "x3": x3, "y": x1 * x2**2 + x3}, target="y")
    return _PROBE_CONTEXTS[samples]


@shared_task(name=names.PROBE, bind=True)
def tool_probe(self: SRHTask, tool: str = "evaluate_formula",
               params: dict[str, Any] | None = None,
               samples: int = 200) -> dict[str, Any]:
    """Run one tool call on a built-in dataset: a health check that tools really run
    on this worker, and the unit of the cluster benchmark."""
    samples = max(10, min(int(samples), 100_000))
    result = BaseTool.create(tool, _probe_context(samples))(**(params or {"f": "x1*x2**2"}))
    return {"ok": result.ok, "elapsed_s": result.meta_data.get("elapsed_s")}


__all__ = ["FlowTask", "send_action", "sender"]
