"""Submitting a run to the cluster, and reading it back.

The run lives in Redis and the workers, not in the submitting process:
after :func:`submit_run` returns, the submitter may exit; :func:`run_status`
and :func:`run_result` read the run later by id, from any machine that
reaches the same Redis.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import redis
from redis import Redis

from srh_core.agent import SRAgent, agent_class_path
from srh_core.agent.outcome import STOP_CANCELLED
from srh_core.agent.settings import SearchSettings
from srh_core.context import AgentContext
from srh_core.context.structured import commit_run_data
from srh_core.errors import ConfigurationError, SearchStateError
from srh_core.evaluator import load_custom_evaluator
from srh_core.evaluator.sandboxed import EvaluatorSource
from srh_core.ranking import select_best
from srh_core.skills.bundle import pack_skills
from srh_core.types import CandidateRecord, SearchResult
from srh_workers.control.parking import release_stopped
from srh_workers.endpoints import submit_access
from srh_workers.errors import BrokerSendError
from srh_workers.flow.names import Action, restart_action, whole_run_action
from srh_workers.flow.run_view import resolve_granularity, run_view_for
from srh_workers.flow.steps import repair_actions
from srh_workers.spec import RunSpec, load_spec
from srh_workers.store import RedisRunStore
from srh_workers.store.cluster import ClusterIndex

Send = Callable[[Action], Any]
#: What a follower waits out: Redis restarting, unreachable or loading its AOF.
REDIS_OUTAGE: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
    redis.exceptions.BusyLoadingError)
MAX_OUTAGE_BACKOFF_SECONDS = 5.0


def submit_run(client: Redis, send: Send, settings: SearchSettings, X: Mapping[str, Any],
               y: Mapping[str, Any], description: str = "", *,
               agent_class: type[SRAgent] = SRAgent, api_key: str | None = None) -> RunSpec:
    """Publish a run's spec and data, then enqueue its first task.

    A run whose first task cannot be sent (the broker is down) is removed again,
    so no run is left "running" with nothing to run it.

    Args:
        client: Redis holding the candidate store (``SRH_REDIS_URL``).
        send: Enqueues one action (:func:`srh_workers.flow.tasks.sender`).
        settings: The search settings; a run id is generated when missing.
        X: Feature arrays by name.
        y: ``{target: array}``.
        description: The problem description shown to the model.
        agent_class: The SRAgent (sub)class the workers run; it must be
            importable by name on the workers.
        api_key: The run's own model key: the only key workers send to the run's
            ``base_url``. It is stored with the spec in Redis.

    Returns:
        The published spec (its ``run_id`` names the run everywhere).

    Raises:
        ConfigurationError: The run id is already in use, the agent class
            cannot be imported by name, or a tool is unknown (:func:`check_tools`).
        SkillError: A skill the run names is unknown.
        EndpointAccessError: The run asks for a model endpoint the workers would
            refuse (a base URL not on the operator's list, without its own key).
        DataError: The data is invalid (the error names the variable).
        BrokerSendError: The first task could not be sent (the run was removed).
    """
    if len(y) != 1:
        raise ConfigurationError(f"y must name exactly one target; got {list(y)}.")
    class_path = agent_class_path(agent_class)
    shipped = shipped_evaluator(settings)
    submit_access(client, api_key).check_run(settings)
    check_tools(agent_class, settings)
    settings = settings if settings.run_id else settings.replace(run_id=uuid.uuid4().hex[:12])
    target = next(iter(y))
    context = AgentContext(args=settings)
    commit_run_data(context, X, {target: np.asarray(y[target])})  # keeps a graph layout
    probe = RedisRunStore(client, settings.run_id, register=False)
    if probe.spec_json() is not None:
        raise ConfigurationError(f"Run id {settings.run_id!r} is already used by a submitted "
                                 "run; choose another.", setting="run_id")
    now = time.time()
    skills = None
    if settings.skills_dir is not None:  # the workers have not got the folder: ship it
        skills = pack_skills(settings.skills_dir)
    spec = RunSpec(run_id=settings.run_id, settings=settings.model_dump(), skills_bundle=skills,
                   evaluator_source=shipped,
                   description=description, target=target, features=list(X),
                   agent_class=class_path, submitted_at=now,
                   deadline=wall_deadline(settings, now),
                   api_key=api_key)
    store = RedisRunStore(client, settings.run_id, settings.ranking_metric,
                          settings.larger_is_better,
                          agent_metadata={"class": class_path, **settings.model_dump()})
    store.publish(spec.model_dump_json(), context.to_payload(), now)
    first = (whole_run_action(settings.run_id) if resolve_granularity(settings) == "run"
             else restart_action(settings.run_id, 1))
    try:
        send(first)
    except Exception as error:  # the broker refused or is unreachable: leave no orphan run
        store.delete_run()
        store.cluster.unindex_run(settings.run_id)
        raise BrokerSendError(f"The run's first task could not be sent to the broker "
                              f"({type(error).__name__}: {error}); the run was not created. "
                              f"Check SRH_BROKER_URL and that the broker is up.") from error
    return spec


def wall_deadline(settings: SearchSettings, submitted_at: float) -> float | None:
    """The spec's deadline: ``time_limit`` after the submission for a "wall" clock; None
    without a limit or for a "fit" clock (its first task starts it: queueing is not fit
    time)."""
    if settings.time_limit is None or settings.time_limit_clock == "fit":
        return None
    return submitted_at + settings.time_limit


def shipped_evaluator(settings: SearchSettings) -> Any:
    """The run's custom evaluator file as the spec ships it (None: the default evaluator).

    The file is loaded here first, as an embedded run would load it (it is the
    submitter's own code, in the submitter's process), so a broken file is
    refused before the run exists.

    Raises:
        EvaluatorLoadError: The file is missing, too large, or does not load.
    """
    if settings.evaluator is None:
        return None
    shipped = EvaluatorSource.read(settings.evaluator)
    load_custom_evaluator(settings.evaluator)
    return shipped


def check_tools(agent_class: type[SRAgent], settings: SearchSettings) -> list[str]:
    """The tools the run's agent will offer, found the way a worker finds them when it builds
    the agent (``enabled_tool_names``: the ``tools`` setting checked against the built-in
    tools and the custom tools its skills declare), so a bad name is refused here, with a
    "did you mean", rather than on a worker.

    Raises:
        ConfigurationError: A tool name is unknown or a skill's tool file is invalid.
        SkillError: A skill name is unknown.
    """
    return agent_class(settings=settings).enabled_tool_names()


def kick_run(client: Redis, send: Send, run_id: str) -> list[Action]:
    """Re-send what a stalled run's stored state says comes next (idempotent)."""
    actions = repair_actions(run_view_for(client, run_id))
    for action in actions:
        send(action)
    return actions


def refresh_run_data(client: Redis, run_id: str, data: Mapping[str, Any], *,
                     target: str | None = None, features: list[str] | None = None,
                     variable_descriptions: Mapping[str, str] | None = None) -> int:
    """Change a running run's data: its branches see it from their next step on.

    The run's current data version is loaded, ``data`` committed into it
    (``AgentContext.commit_data``: validated, the revision bumped) and published
    as the run's next version (:meth:`RedisRunStore.publish_data`); each
    branch's model is told at its next step (see :mod:`srh_core.agent.data_refresh`).

    Args:
        client: The run's Redis.
        run_id: The run.
        data: Every column of the new data (features and target) by name.
        target: The target (default: the run's).
        features: The features, in order (default: every column but the target).
        variable_descriptions: Descriptions of the new columns.

    Returns:
        The published data revision.

    Raises:
        SearchStateError: The run is unknown.
        DataError: The new data is invalid (the error names the variable).
    """
    store = RedisRunStore(client, run_id, register=False)
    load_spec(store)  # a clear error for an unknown run
    context = AgentContext.from_payload(store.payload(store.data_revision()))
    context.commit_data(data, target=target or str(context.target), features=features,
                        variable_descriptions=variable_descriptions)
    return store.publish_data(context.to_payload())


def _store(client: Redis, run_id: str) -> tuple[RunSpec, RedisRunStore]:
    spec = load_spec(RedisRunStore(client, run_id, register=False))
    settings = spec.search_settings()
    return spec, RedisRunStore(client, run_id, settings.ranking_metric,
                               settings.larger_is_better, register=False)


def run_result(client: Redis, run_id: str) -> SearchResult | None:
    """The final result of a run, or None while it is still running."""
    return _store(client, run_id)[1].stored_result()


def run_status(client: Redis, run_id: str) -> dict[str, Any]:
    """A JSON-ready view of a run: progress, branches, best formula, stop flag."""
    spec, store = _store(client, run_id)
    settings = spec.search_settings()
    result = store.stored_result()
    elapsed = _finished_at(store, result) - spec.submitted_at
    best = result.best if result is not None else _best_so_far(store, settings)
    return {
        "run_id": run_id,
        "status": result.status if result is not None else "running",
        "stop_reason": result.stop_reason if result is not None else store.flow.stop_reason(),
        "granularity": resolve_granularity(settings),
        "nodes": store.node_count, "max_nodes": settings.max_nodes,
        "model_requests": store.flow.model_requests(),
        "branches": branch_summary(store, settings),
        "best_formula": best.formula if best else None,
        "best_metric": best.metric(settings.ranking_metric, "train") if best else None,
        "submitted_at": spec.submitted_at,
        "elapsed_seconds": elapsed,
        "totals": run_totals(store, result, elapsed),
    }


def _best_so_far(store: RedisRunStore, settings: SearchSettings) -> CandidateRecord | None:
    """The candidate the run would report now, by its ``selection`` rule."""
    ranked = store.ranked_candidates()
    index = select_best(ranked, store.policy, settings.selection)
    return None if index is None else ranked[index]


def run_totals(store: RedisRunStore, result: SearchResult | None,
               elapsed: float | None = None) -> dict[str, Any]:
    """The finished run's totals, or the live ones (one GET: tool time is None until the end)."""
    if result is not None and result.totals is not None:
        return dict(result.totals)
    live = store.spend().with_times(wall_seconds=elapsed).to_dict()
    return {**live, "tool_seconds": None}


def _finished_at(store: RedisRunStore, result: SearchResult | None) -> float:
    """When the run's result was written (now while it runs, or for a result without a time)."""
    stamp = store.run_summary().get("finished_at") if result is not None else None
    try:
        return float(stamp) if stamp else time.time()
    except ValueError:
        return time.time()


def branch_summary(store: RedisRunStore, settings: SearchSettings) -> list[dict[str, Any]]:
    rows = []
    for R in range(1, max(1, store.flow.latest_restart()) + 1):
        for branch in store.flow.load_branches(R, settings.global_width):
            if branch is not None:
                rows.append({"R": R, "C": branch.C, "L": branch.L, "status": branch.status,
                             "stop_reason": branch.stop_reason})
    return rows


def list_runs(client: Redis, limit: int = 20) -> list[str]:
    """The most recently submitted run ids, newest first."""
    return ClusterIndex(client).recent_runs(limit)


def cancel_run(client: Redis, run_id: str, send: Send | None = None) -> list[Action]:
    """Ask a run to stop at its branches' next steps (it ends "interrupted", "cancelled").

    A paused interactive run holds its branches parked in Redis, with no task to
    reach a next step: with ``send``, those steps are re-sent now and end their
    branches at once, so the run gets its result without a resume or a kick.

    Args:
        client: Redis of the run store.
        run_id: The run.
        send: Enqueues one action (:func:`srh_workers.flow.tasks.sender`); without
            it a parked run ends only when its steps are sent (``srh kick``).

    Returns:
        The parked steps re-sent.

    Raises:
        SearchStateError: The run is unknown.
    """
    store = _store(client, run_id)[1]
    store.flow.request_stop(STOP_CANCELLED)
    if send is None:
        return []
    actions = release_stopped(store)
    for action in actions:
        send(action)
    return actions


def wait_for_result(client: Redis, run_id: str, *, timeout: float | None = None,
                    poll: float = 0.5, on_poll: Callable[[dict[str, Any]], None] | None = None,
                    on_outage: Callable[[BaseException], None] | None = None) -> SearchResult:
    """Poll until the run has a result; a Redis outage is waited out, not raised.

    Args:
        on_outage: Called with the error each time Redis cannot be read (the
            poll backs off up to :data:`MAX_OUTAGE_BACKOFF_SECONDS` and goes on).

    Raises:
        SearchStateError: When ``timeout`` passes first.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    failures = 0
    while True:
        try:
            result = run_result(client, run_id)
            if result is not None:
                return result
            if on_poll is not None:
                on_poll(run_status(client, run_id))
            failures = 0
        except REDIS_OUTAGE as error:
            failures += 1
            if on_outage is not None:
                on_outage(error)
        if deadline is not None and time.monotonic() > deadline:
            raise SearchStateError(f"Run {run_id} has no result after {timeout:g}s.")
        time.sleep(poll if not failures else min(MAX_OUTAGE_BACKOFF_SECONDS, poll * 2**failures))
