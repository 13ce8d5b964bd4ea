"""Submitting a run to the cluster, and reading it back.

The run lives in Redis and the workers, not in the submitting process:
after :func:`submit_run` returns, the submitter may exit; :func:`run_status`
and :func:`run_result` read the run later by id, from any machine that
reaches the same Redis.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from redis import Redis

from srh_core.agent.settings import SearchSettings
from srh_core.errors import ConfigurationError, SearchStateError
from srh_core.types import SearchResult
from srh_workers.keys import RUNS_INDEX, RunKeys
from srh_workers.publish import RunSpec, load_spec, publish_run
from srh_workers.runtime import Action, restart_action
from srh_workers.store import RedisCandidateStore

Send = Callable[[Action], Any]


def submit_run(client: Redis, send: Send, settings: SearchSettings, X: Mapping[str, Any],
               y: Mapping[str, Any], description: str = "") -> RunSpec:
    """Publish a run's spec and data, then enqueue its first restart.

    Args:
        client: Redis holding the candidate store (``SRH_REDIS_URL``).
        send: Enqueues one action (the Celery app's ``send_action``).
        settings: The search settings; a run id is generated when missing.
        X: Feature arrays by name.
        y: ``{target: array}``.
        description: The problem description shown to the model.

    Returns:
        The published spec (its ``run_id`` names the run everywhere).

    Raises:
        ConfigurationError: The run id is already in use.
        DataError: The data is invalid (the error names the variable).
    """
    from srh_core.context import AgentContext
    from srh_core.context.structured import commit_run_data

    if len(y) != 1:
        raise ConfigurationError(f"y must name exactly one target; got {list(y)}.")
    settings = settings if settings.run_id else settings.replace(run_id=uuid.uuid4().hex[:12])
    target = next(iter(y))
    context = AgentContext(args=settings)
    commit_run_data(context, X, {target: np.asarray(y[target])})  # keeps a graph layout
    keys = RunKeys(settings.run_id)
    if client.exists(keys.spec):
        raise ConfigurationError(f"Run id {settings.run_id!r} is already used by a submitted "
                                 "run; choose another.", setting="run_id")
    now = time.time()
    spec = RunSpec(run_id=settings.run_id, settings=settings.model_dump(),
                   description=description, target=target, features=list(X), submitted_at=now,
                   deadline=None if settings.time_limit is None else now + settings.time_limit)
    RedisCandidateStore(client, settings.run_id, settings.ranking_metric,
                        settings.larger_is_better,
                        agent_metadata={"class": "SRAgent", **settings.model_dump()})
    publish_run(client, spec, context.to_payload())
    send(restart_action(settings.run_id, 1))
    return spec


def kick_run(client: Redis, send: Send, run_id: str) -> list[Action]:
    """Re-send what a stalled run's stored state says comes next (idempotent)."""
    from srh_workers.flow import repair_actions
    from srh_workers.runtime import runtime_for

    actions = repair_actions(runtime_for(client, run_id))
    for action in actions:
        send(action)
    return actions


def run_result(client: Redis, run_id: str) -> SearchResult | None:
    """The final result of a run, or None while it is still running."""
    load_spec(client, run_id)
    return RedisCandidateStore.open(client, run_id).stored_result()


def run_status(client: Redis, run_id: str) -> dict[str, Any]:
    """A JSON-ready view of a run: progress, branches, best formula, stop flag."""
    spec = load_spec(client, run_id)
    settings = spec.search_settings()
    store = RedisCandidateStore.open(client, run_id)
    keys = RunKeys(run_id)
    best = store.best_candidate()
    result = store.stored_result()
    return {
        "run_id": run_id,
        "status": result.status if result is not None else "running",
        "stop_reason": result.stop_reason if result is not None else _text(client.get(keys.stop)),
        "nodes": store.node_count, "max_nodes": settings.max_nodes,
        "model_requests": int(client.get(keys.requests) or 0),
        "branches": branch_summary(client, keys, settings),
        "best_formula": best.formula if best else None,
        "best_metric": best.metric(settings.ranking_metric, "train") if best else None,
        "submitted_at": spec.submitted_at,
        "elapsed_seconds": _finished_at(client, keys, result) - spec.submitted_at,
    }


def _finished_at(client: Redis, keys: RunKeys, result: SearchResult | None) -> float:
    """When the run's result was written (now while it runs, or for a result without a time)."""
    stamp = _text(client.hget(keys.meta, "finished_at")) if result is not None else None
    try:
        return float(stamp) if stamp else time.time()
    except ValueError:
        return time.time()


def branch_summary(client: Redis, keys: RunKeys, settings: SearchSettings) -> list[dict]:
    rows = []
    for R in range(1, settings.max_restart_loop + 1):
        for C in range(1, settings.global_width + 1):
            raw = client.get(keys.branch(R, C))
            if raw is not None:
                state = json.loads(raw)
                rows.append({"R": R, "C": C, "L": state["L"], "status": state["status"],
                             "stop_reason": state.get("stop_reason")})
    return rows


def list_runs(client: Redis, limit: int = 20) -> list[str]:
    """The most recently submitted run ids, newest first."""
    return [_text(run_id) for run_id in client.zrevrange(RUNS_INDEX, 0, limit - 1)]


def wait_for_result(client: Redis, run_id: str, *, timeout: float | None = None,
                    poll: float = 0.5, on_poll: Callable[[dict[str, Any]], None] | None = None
                    ) -> SearchResult:
    """Poll until the run has a result.

    Raises:
        SearchStateError: When ``timeout`` passes first.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        result = run_result(client, run_id)
        if result is not None:
            return result
        if on_poll is not None:
            on_poll(run_status(client, run_id))
        if deadline is not None and time.monotonic() > deadline:
            raise SearchStateError(f"Run {run_id} has no result after {timeout:g}s.")
        time.sleep(poll)


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value
