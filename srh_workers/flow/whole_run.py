"""``granularity = "run"``: a whole run as one task on the tools queue, in chunks.

For steps too cheap to be worth distributing (the offline model answers in
milliseconds), the run's task runs the embedded runtime's loop
(:func:`srh_core.embedded.runner.search_loop`, the same step functions)
against the run's Redis store, checkpointing every branch state to Redis
after every step. It stops opening steps shortly before its soft time limit
and sends itself again, so no task outlives its limits; a task that dies
(worker killed) is re-delivered and continues from the last checkpoint,
and any step whose model responses were stored is not sampled again.
A lock (``lock``, SET NX with a TTL, held by the task id) keeps a second
copy of the task from running the same run at the same time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from srh_core.agent.branch import BranchState
from srh_core.embedded.runner import search_loop
from srh_workers.control.parking import park_run
from srh_workers.flow.names import Action, whole_run_action
from srh_workers.flow.run_view import Budget, WorkerRunView
from srh_workers.flow.steps import finalize_run, log_run_started

logger = logging.getLogger("srh.workers")

#: Stop opening steps when less than this share of the soft limit is left.
CHUNK_MARGIN_FRACTION = 0.25
MIN_CHUNK_MARGIN_SECONDS = 2.0
#: How long the run's lock lasts without renewal (renewed after every step).
LOCK_SECONDS = 120.0


class ChunkControl:
    """RunControl of a whole-run task: the run's stop flag, and a pause before the time limit."""

    def __init__(self, rt: WorkerRunView, owner: str, budget: Budget) -> None:
        self.rt = rt
        self.owner = owner
        self.budget = budget
        self.parked = False
        self.released: list[Action] = []  # parked continuations a stop let go
        first = budget()
        self.margin = None if first is None else max(MIN_CHUNK_MARGIN_SECONDS,
                                                     CHUNK_MARGIN_FRACTION * first)

    def stop_reason(self) -> str | None:
        return self.rt.store.flow.stop_reason()

    def paused(self) -> bool:
        left = self.budget()
        if self.margin is not None and left is not None and left < self.margin:
            return True
        if not self.rt.store.flow.hold_lock(self.owner, LOCK_SECONDS):
            return True
        # asked by the scheduler's gate only when no stop is set (a stopped run never parks)
        self.parked, self.released = park_run(self.rt, self.owner)  # a paused run parks here
        return self.parked

    def wait_release(self) -> bool:
        return False  # a held chunk ends: a release (or a stop) sends its continuation


def run_whole(rt: WorkerRunView, owner: str, budget: Budget) -> list[Action]:
    """Run (or continue) the run in this task until it ends or the chunk's time is up.

    Args:
        rt: The run.
        owner: Who holds the run's lock (the task id; a re-delivery has the same).
        budget: Seconds left before this task's soft time limit (None: no limit).

    Returns:
        ``[]`` once the run has its result (or another task holds it), else
        the action that continues it.
    """
    store = rt.store
    if store.stored_result() is not None:
        finalize_run(rt)  # completes a run directory an interrupted finalizer left unwritten
        return []
    if not store.flow.hold_lock(owner, LOCK_SECONDS):
        return []
    agent = rt.agent()
    if not store.flow.latest_restart():
        log_run_started(rt)
    restart = max(1, store.flow.latest_restart())
    loaded = store.flow.load_branches(restart, rt.width) if store.flow.latest_restart() else []
    branches = [b for b in loaded if b is not None] or None
    control = ChunkControl(rt, owner, budget)

    def checkpoint(R: int, states: Sequence[BranchState]) -> None:
        store.flow.save_branches(states)

    started = time.monotonic()
    try:
        outcome = search_loop(agent, restart, branches, checkpoint, control, threads=1)
        if outcome is not None:
            finalize_run(rt)
            return []
    finally:
        store.flow.release_lock(owner)
    if control.parked:  # a release of the pause (or a stop) sends the continuation
        return control.released
    logger.info("run %s: chunk of %.1f s done; continuing in a new task", rt.run_id,
                time.monotonic() - started)
    return [whole_run_action(rt.run_id)]
