"""The cluster backend of a sweep: every cell a distributed run, polled in Redis.

The sweep runner itself (progress, retries, resume, the results table) is
:class:`srh_core.sweep.SweepRunner`; this backend submits cells with
:func:`srh_workers.submit.submit_run`, reads their results, kicks a run that
stalls, and turns a Redis outage into :class:`~srh_core.sweep.BackendUnavailable`
(the runner backs off and tries again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis

from srh_core.errors import SearchStateError
from srh_core.sweep import BackendUnavailable, Cell, CellData, RunLost
from srh_core.sweep.runner import RunExists
from srh_core.types import SearchResult
from srh_workers.store import RedisRunStore
from srh_workers.submit import cancel_run, kick_run, run_result, submit_run

POLL_SECONDS = 0.2


@contextmanager
def _reachable() -> Iterator[None]:
    try:
        yield
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as error:
        raise BackendUnavailable(f"Redis: {error}") from error


class CelerySweepBackend:
    """Submits cells as distributed runs and polls Redis for their results."""

    poll_seconds = POLL_SECONDS

    def __init__(self, client: redis.Redis, send: Callable[..., Any]) -> None:
        self.client = client
        self.send = send

    def submit(self, run_id: str, cell: Cell, data: CellData) -> None:
        with _reachable():
            if RedisRunStore(self.client, run_id, register=False).spec_json() is not None:
                raise RunExists(f"run {run_id} was already submitted")
            submit_run(self.client, self.send, data.settings.replace(run_id=run_id), data.X,
                       data.y, data.description, agent_class=data.agent_class)

    def poll(self, run_id: str) -> SearchResult | None:
        with _reachable():
            try:
                return run_result(self.client, run_id)
            except SearchStateError as error:
                raise RunLost(str(error)) from None

    def progress(self, run_id: str) -> int:
        with _reachable():
            return RedisRunStore(self.client, run_id, register=False).node_count

    def kick(self, run_id: str) -> None:
        with _reachable():
            kick_run(self.client, self.send, run_id)

    def cancel(self, run_id: str) -> None:
        """Cancel one cell's run (it ends at its branches' next steps)."""
        with _reachable():
            try:
                cancel_run(self.client, run_id, self.send)
            except SearchStateError:  # not published yet: its poll reports it lost
                return

    def interrupt(self) -> None:
        """Nothing to stop here: the cells are cluster runs, they go on without this shell."""
        return None

    def close(self) -> None:
        return None
