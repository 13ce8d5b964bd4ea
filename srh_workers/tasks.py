"""The Celery tasks of a distributed run: thin wrappers over :mod:`srh_workers.flow`.

Each task takes a run id and a coordinate (plain JSON), runs one flow
function against the run's Redis state, and enqueues the actions it
returns. No task waits for another task's result; there are no chords.

When a task is declared poison (its worker died every time it ran, see
:mod:`srh_workers.reliability`), :meth:`FlowTask.on_poison` keeps the run
moving: a tool task records its sample as failed calls so the step can
advance; a branch task ends its branch, so the restart barrier does not
wait forever.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from celery import Celery, shared_task

from srh_core.types import ToolCallResult
from srh_workers import flow
from srh_workers.reliability import PoisonRecord, SRHTask, app_settings, redis_client
from srh_workers.runtime import Action, runtime_for

logger = logging.getLogger("srh.workers.tasks")


def send_action(app: Celery, action: Action) -> None:
    """Enqueue one action; the app's routes pick its queue from the task name."""
    app.send_task(action.task, args=list(action.args))


def sender(app: Celery) -> Any:
    """A ``send`` callable for :func:`srh_workers.submit.submit_run`."""
    return lambda action: send_action(app, action)


def _client(task: SRHTask) -> Any:
    return redis_client(str(app_settings(task.app).redis_url))


def _runtime(task: SRHTask, run_id: str) -> Any:
    return runtime_for(_client(task), run_id, app_settings(task.app).runs_dir)


def _run(task: SRHTask, name: str, run_id: str, *coordinate: int) -> dict[str, Any]:
    runtime = _runtime(task, run_id)
    actions = flow.HANDLERS[name](runtime, *coordinate)
    for action in actions:
        send_action(task.app, action)
    return {"run_id": run_id, "coordinate": list(coordinate),
            "enqueued": [[action.task, *action.args[1:]] for action in actions]}


class FlowTask(SRHTask):
    """SRHTask whose poison handling keeps the run moving.

    Step tasks hand work on by enqueueing the next task and keep their state in
    the run's Redis keys; nobody reads their return value, so it is not stored
    (three result-backend commands per task saved). Failures still are, for
    ``celery result``/Flower.
    """

    ignore_result = True
    store_errors_even_if_ignored = True

    def on_poison(self, record: PoisonRecord) -> None:
        args: Sequence[Any] = self.request.args or ()
        if not args:
            return
        runtime = _runtime(self, str(args[0]))
        if self.name == "srh.tool.calls" and len(args) == 5:
            actions = _fail_sample(runtime, *args[1:], record)
        elif self.name in ("srh.branch.step", "srh.branch.advance") and len(args) >= 3:
            actions = _end_branch(runtime, int(args[1]), int(args[2]), record)
        else:
            return
        for action in actions:
            send_action(self.app, action)


def _fail_sample(runtime: Any, R: int, C: int, L: int, K: int,
                 record: PoisonRecord) -> list[Action]:
    plan = runtime.plan(R, C, L)
    if plan is None:
        return []
    calls = plan.responses[K - 1].tool_calls
    message = (f"The tool call crashed its worker {record.deliveries} times and was "
               "abandoned; try something else.")
    runtime.sample_results(R, C, L, K, [ToolCallResult.failure(message, tool=c.name)
                                        for c in calls])
    return flow.run_tool_calls(runtime, R, C, L, K)


def _end_branch(runtime: Any, R: int, C: int, record: PoisonRecord) -> list[Action]:
    branch = runtime.branch(R, C)
    if branch.finished:
        return []
    branch.status, branch.stop_reason = "stopped", f"poison task {record.task_name}"
    runtime.save_branch(branch)
    return flow.finish_branch(runtime, branch)


@shared_task(name="srh.branch.restart", bind=True, base=FlowTask)
def branch_restart(self: FlowTask, run_id: str, R: int) -> dict[str, Any]:
    """Create restart R's branches (seeded from the pool) and start them."""
    return _run(self, "srh.branch.restart", run_id, R)


@shared_task(name="srh.branch.step", bind=True, base=FlowTask)
def branch_step(self: FlowTask, run_id: str, R: int, C: int, L: int) -> dict[str, Any]:
    """Open one refinement step: request the K responses (once) and fan out."""
    return _run(self, "srh.branch.step", run_id, R, C, L)


@shared_task(name="srh.tool.calls", bind=True, base=FlowTask)
def tool_calls(self: FlowTask, run_id: str, R: int, C: int, L: int, K: int) -> dict[str, Any]:
    """Run one sample's tool calls and record its node and candidates."""
    return _run(self, "srh.tool.calls", run_id, R, C, L, K)


@shared_task(name="srh.branch.advance", bind=True, base=FlowTask)
def branch_advance(self: FlowTask, run_id: str, R: int, C: int, L: int) -> dict[str, Any]:
    """Update the conversation after a step; continue, finish, restart or finalize."""
    return _run(self, "srh.branch.advance", run_id, R, C, L)


@shared_task(name="srh.branch.finalize", bind=True, base=FlowTask)
def branch_finalize(self: FlowTask, run_id: str) -> dict[str, Any]:
    """Write the run's result to Redis and the run directory."""
    return _run(self, "srh.branch.finalize", run_id)


_PROBE_CONTEXTS: dict[int, Any] = {}


def _probe_context(samples: int) -> Any:
    """A small fixed dataset per process (y = x1 * x2**2 + noise-free), built once."""
    import numpy as np

    from srh_core.context import AgentContext

    if samples not in _PROBE_CONTEXTS:
        rng = np.random.default_rng(0)
        x1, x2, x3 = rng.uniform(1, 5, (3, samples))
        _PROBE_CONTEXTS[samples] = AgentContext(
            data={"x1": x1, "x2": x2, "x3": x3, "y": x1 * x2**2 + x3}, target="y")
    return _PROBE_CONTEXTS[samples]


@shared_task(name="srh.tool.probe", bind=True)
def tool_probe(self: SRHTask, tool: str = "evaluate_formula", params: dict[str, Any] | None = None,
               samples: int = 200) -> dict[str, Any]:
    """Run one tool call on a built-in dataset: a health check that tools really run
    on this worker, and the unit of the cluster benchmark."""
    import srh_core.tools.catalogue  # noqa: F401 - registers the tools
    from srh_core.tools.base import BaseTool

    samples = max(10, min(int(samples), 100_000))
    result = BaseTool.create(tool, _probe_context(samples))(**(params or {"f": "x1*x2**2"}))
    return {"ok": result.ok, "elapsed_s": result.meta_data.get("elapsed_s")}
