"""Running the flow's actions in this process: the task kinds' bodies by task name.

:data:`HANDLERS` maps each task name to its body (:mod:`srh_workers.flow.steps`,
and :mod:`srh_workers.flow.whole_run` for a whole run); the Celery tasks
(:mod:`srh_workers.flow.tasks`) call them, and :func:`run_inline` drives a
run through them in one process (tests, debugging).
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

from redis import Redis

from srh_workers.flow.names import ADVANCE, FINALIZE, RESTART, SAMPLE, STEP, WHOLE_RUN, Action
from srh_workers.flow.run_view import WorkerRunView, run_view_for
from srh_workers.flow.steps import close_step, finalize_run, run_sample, run_step, start_restart
from srh_workers.flow.whole_run import run_whole


def _finalize(rt: WorkerRunView) -> list[Action]:
    finalize_run(rt)
    return []


def _whole_run(rt: WorkerRunView) -> list[Action]:
    return run_whole(rt, owner="inline", budget=lambda: None)


HANDLERS = {
    RESTART: start_restart,
    STEP: run_step,
    SAMPLE: run_sample,
    ADVANCE: close_step,
    FINALIZE: _finalize,
    WHOLE_RUN: _whole_run,
}


def dispatch(client: Redis, action: Action, runs_dir: Path | None = None) -> list[Action]:
    """Run one action's body in this process; the actions it asks for next."""
    run_id, *coordinate = action.args
    return HANDLERS[action.task](run_view_for(client, run_id, runs_dir), *coordinate)


def run_inline(client: Redis, first: Action, *, max_actions: int = 1_000_000,
               runs_dir: Path | None = None) -> int:
    """Drive a run to its end in this process, FIFO (for tests and debugging).

    Returns:
        How many actions ran.
    """
    queue, done = deque([first]), 0
    while queue and done < max_actions:
        queue.extend(dispatch(client, queue.popleft(), runs_dir))
        done += 1
    return done
