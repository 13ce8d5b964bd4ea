"""The task bodies of a distributed run, one function per task kind, free of Celery.

Each takes a :class:`~srh_workers.flow.run_view.WorkerRunView` and coordinates,
does one short piece of the search with the agent's step functions (the
same the embedded runtime calls), writes its result idempotently through
the run's store, and returns the :class:`~srh_workers.flow.names.Action`\\ s
to enqueue next. Nothing here blocks on another task. Called twice with the
same arguments (a re-delivered message) a function changes nothing the
second time and returns what keeps the run moving: the step plan is stored
so a step never re-samples the model, tool results are first-write-wins,
nodes and candidates are idempotent, and SET NX claims let exactly one
caller advance a step, release a level or move past a restart.

Flow of one run with ``granularity = "step"``::

    restart(R)       -> step(R, C, 1) for every branch C
    step(R, C, L)    -> sample(R, C, L, K) for K in 1..K       (queue "branches")
    sample(...)      the sample that completes the K-set closes the step itself:
                     -> step(R, C, L+1) | branch ended          (queue "tools")
    early stop on:   a branch waits at each level; the last one done with the
                     level sends the next steps (or ends them: see outcome.py)
    last branch of R -> restart(R+1) | finalize
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from redis import Redis

from srh_core.agent.branch import BranchState
from srh_core.agent.outcome import (
    STOP_CANCELLED,
    STOP_FAILED,
    RunOutcome,
    is_failure,
    run_outcome,
)
from srh_core.agent.scheduler import (
    EndBranch,
    FinishRun,
    LevelDone,
    OpenStep,
    SchedulerAction,
    StartRestart,
    StopBranch,
    gate,
    next_steps,
    on_branch_ended,
    on_level_done,
    on_restart_ended,
    on_step_closed,
)
from srh_core.agent.settings import SearchSettings
from srh_core.agent.steps import opened_step, sample_results
from srh_core.embedded.run_dir import RunDirectory, clock_record, run_inputs
from srh_core.errors import ConfigurationError, SearchStateError
from srh_core.types import SearchResult
from srh_workers.control.parking import (
    finish_controls,
    is_interactive,
    park_step,
    release_stopped,
)
from srh_workers.errors import AgentBuildError
from srh_workers.flow.names import (
    Action,
    finalize_action,
    restart_action,
    sample_action,
    step_action,
    whole_run_action,
)
from srh_workers.flow.run_view import BUILD_ERRORS, Budget, WorkerRunView
from srh_workers.spec import load_spec
from srh_workers.store import RedisRunStore

logger = logging.getLogger("srh.workers")


def start_restart(rt: WorkerRunView, R: int) -> list[Action]:
    """Create the C branches of restart R (once) and start their first steps."""
    if rt.store.stored_result() is not None:
        return []
    branches = rt.store.flow.load_branches(R, rt.width)
    if any(branch is None for branch in branches):
        if R == 1 and all(branch is None for branch in branches):
            log_run_started(rt)
        rt.store.flow.save_branches(rt.agent().start_restart(R=R), only_new=True)
        branches = rt.store.flow.load_branches(R, rt.width)
    states = [branch for branch in branches if branch is not None]
    return scheduled(rt, next_steps(states, early_stop=rt.settings.early_stop))


def continue_branch(rt: WorkerRunView, branch: BranchState,
                    siblings: list[BranchState] | None = None) -> list[Action]:
    """What moves a branch on from its stored state (idempotent: safe to send twice)."""
    if not branch.finished and rt.settings.early_stop and siblings is None:
        siblings = [b for b in rt.store.flow.load_branches(branch.R, rt.width) if b is not None]
    return scheduled(rt, next_steps([branch], early_stop=rt.settings.early_stop,
                                    siblings=siblings or [branch]))


def scheduled(rt: WorkerRunView, actions: list[SchedulerAction]) -> list[Action]:
    """The scheduler's actions as this flow carries them out: tasks to send, store writes."""
    sent: list[Action] = []
    for action in actions:
        if isinstance(action, OpenStep):
            sent.append(step_action(rt.run_id, action.branch.R, action.branch.C,
                                    action.branch.L))
        elif isinstance(action, StopBranch):
            action.branch.stop(action.reason)
            rt.store.flow.save_branches([action.branch])
            sent += end_branch(rt, action.branch)
        elif isinstance(action, EndBranch):
            sent += end_branch(rt, action.branch)
        elif isinstance(action, LevelDone):
            sent += level_done(rt, action.R, action.L, action.C)
        elif isinstance(action, StartRestart):
            sent.append(restart_action(rt.run_id, action.R))
        elif isinstance(action, FinishRun):
            sent.append(finalize_action(rt.run_id))
        # Hold: the step task parked the step (park_step); its release re-sends it
    return sent


def run_step(rt: WorkerRunView, R: int, C: int, L: int, budget: Budget | None = None
             ) -> list[Action]:
    """Open step L (sample the model once, stored) and fan out its K samples.

    ``budget`` (seconds left before the task's soft limit) cuts the model request.
    """
    branch, plan, stop = rt.store.flow.step_state(R, C, L)
    if branch.finished or branch.L > L:
        return continue_branch(rt, branch)
    if branch.L < L:
        return []
    released: list[Action] = []
    if plan is None:
        def paused() -> bool:  # interactive: a paused run parks the step
            parked, let_go = park_step(rt, R, C, L)
            released.extend(let_go)  # what a stop sent while it parked (this step included)
            return parked

        # the early-stop part of the gate passed where the step was sent (continue_branch)
        verdict = gate(branch, None, early_stop=rt.settings.early_stop, stop_reason=stop,
                       paused=paused)
        if verdict.verdict == "stop":
            return scheduled(rt, [StopBranch(branch, verdict.reason or stop or "")])
        if verdict.verdict == "hold":
            return released
        agent = rt.agent(bounded=budget is not None)
        plan = opened_step(agent, branch, stored=None,
                           requests=rt.bounded_requests(agent, budget))
        if plan is None:
            rt.store.flow.save_branches([branch])
            return released + end_branch(rt, branch)
    return released + [sample_action(rt.run_id, R, C, L, k) for k in range(1, plan.K + 1)]


def run_sample(rt: WorkerRunView, R: int, C: int, L: int, K: int) -> list[Action]:
    """Run sample K: its tool calls, node and candidates; the K-set's last one closes the step."""
    plan, stored = rt.store.flow.sample_state(R, C, L, K)
    if plan is None:
        logger.warning("R%d-C%d-L%d-K%d: no step plan; nothing to do", R, C, L, K)
        return []
    known = {rt.store.node_id(R, C, L, K): stored} if stored is not None else {}
    run = sample_results(rt.agent(known, revision=plan.data_revision), plan, K)
    if run.outcome is not None and run.outcome.claimed:
        return close_step(rt, R, C, L)
    return []


def close_step(rt: WorkerRunView, R: int, C: int, L: int) -> list[Action]:
    """Close step L of a branch from its K samples' results; what the branch does next."""
    branch, plan, results = rt.store.flow.close_state(R, C, L)
    if branch.finished or branch.L != L:
        return continue_branch(rt, branch) if branch.L > L or branch.finished else []
    if plan is None or any(k not in results for k in range(1, plan.K + 1)):
        logger.warning("R%d-C%d-L%d: closing before every sample was recorded", R, C, L)
        return []
    samples = [results[k] for k in range(1, plan.K + 1)]  # their candidates found once
    after = rt.agent(revision=plan.data_revision).close_step(
        branch, plan, [sample.results for sample in samples],
        candidates=[sample.candidates for sample in samples])
    rt.store.flow.save_branches([after])
    return scheduled(rt, on_step_closed(after, early_stop=rt.settings.early_stop))


def level_done(rt: WorkerRunView, R: int, L: int, C: int) -> list[Action]:
    """Branch C is done with level L; the last branch done with it moves the others on."""
    if not rt.store.flow.level_done(R, L, C, rt.width):
        return []
    siblings = [b for b in rt.store.flow.load_branches(R, rt.width) if b is not None]
    return scheduled(rt, on_level_done(siblings, L, early_stop=rt.settings.early_stop))


def end_branch(rt: WorkerRunView, branch: BranchState) -> list[Action]:
    """Count the ended branch; the last branch of a restart moves the run on."""
    count = rt.store.flow.finish_branch(branch)
    actions = scheduled(rt, on_branch_ended(branch, early_stop=rt.settings.early_stop))
    if count >= rt.width and rt.store.flow.claim_restart(branch.R, claimant=branch.C):
        siblings = [b for b in rt.store.flow.load_branches(branch.R, rt.width) if b is not None]
        settings = rt.settings
        actions += scheduled(rt, [on_restart_ended(siblings, branch.R,
                                                   max_restart=settings.max_restart_loop,
                                                   early_stop=settings.early_stop)])
    return actions


def fail_branch(rt: WorkerRunView, R: int, C: int, reason: str) -> list[Action]:
    """A step of branch C raised for good: end the branch with ``reason``, stop the run.

    The failure rule of :mod:`srh_core.agent.outcome`: the run's stop flag is
    set to the reason, so the other branches end at their next step and the
    run ends "failed" with it. Idempotent (an ended branch is left as it is).
    """
    rt.store.flow.request_stop(reason)
    reason = rt.store.flow.stop_reason() or reason  # a cancel (or a failure) that came first wins
    # a paused run's parked siblings end now, not at a resume
    released = release_stopped(rt.store) if is_interactive(rt) else []
    branch = rt.store.flow.load_branch(R, C)
    if branch.finished:
        return released
    branch.stop(reason)
    rt.store.flow.save_branches([branch])
    return released + end_branch(rt, branch)


def finalize_run(rt: WorkerRunView, failure: str | None = None) -> SearchResult:
    """Write the result (Redis, starting the TTL, and the run directory); once.

    The status comes from :func:`srh_core.agent.outcome.run_outcome` over the
    last restart's branches, as in the embedded runtime.
    """
    existing = rt.store.stored_result()
    path = checked_run_dir(rt)
    if existing is not None:
        # the result is stored before the run directory is written: finish the directory
        if path is not None and not RunDirectory(path).has_result() \
                and not rt.store.is_compacted():
            write_finished_directory(rt, existing, path)
        finish_controls(rt, existing)
        return existing
    last = rt.store.flow.latest_restart()
    branches = [b for b in rt.store.flow.load_branches(last, rt.width)
                if b is not None] if last else []
    settings = rt.settings
    outcome = run_outcome(branches, early_stop=settings.early_stop,
                          time_limit=settings.time_limit, failure=failure, settings=settings)
    result = rt.agent().build_search_result(outcome.status, stop_reason=outcome.reason)
    finish_controls(rt, result)
    log_run_finished(rt, result)
    if path is not None:
        write_finished_directory(rt, result, path)
    return result


def write_finished_directory(rt: WorkerRunView, result: SearchResult, path: Path) -> None:
    """The run directory (best effort); under an artifact root, then the run's keys shrink."""
    if write_run_directory(rt, result, path) and rt.artifacts:
        rt.store.compact(exported_to=str(path))


def log_run_started(rt: WorkerRunView) -> None:
    """One ``event=run_started`` line per run (its first restart's first task)."""
    logger.info("run %s started", rt.run_id, extra={
        "event": "run_started", "run_id": rt.run_id,
        "queued_seconds": round(time.time() - rt.spec.submitted_at, 3)})


def log_run_finished(rt: WorkerRunView, result: SearchResult) -> None:
    """One ``event=run_finished`` line per run (when its result is made)."""
    logger.info("run %s finished: %s", rt.run_id, result.status, extra={
        "event": "run_finished", "run_id": rt.run_id, "status": result.status,
        "stop_reason": result.stop_reason,
        "seconds": round(time.time() - rt.spec.submitted_at, 3)})


def checked_run_dir(rt: WorkerRunView) -> Path | None:
    """The run directory to write, or None (none configured, or it would leave SRH_RUNS_DIR:
    then the result stays in Redis only, and the refusal is logged)."""
    try:
        return rt.run_dir
    except ConfigurationError as error:
        logger.error("run %s: the run directory is not written: %s", rt.run_id, error)
        return None


def refuse_run(rt: WorkerRunView, reason: str) -> SearchResult:
    """End a run that may not run here (e.g. it asks for an endpoint the operator did
    not allow) as failed, with the reason; once."""
    existing = rt.store.stored_result()
    if existing is not None:
        return existing
    outcome = run_outcome([], early_stop=rt.settings.early_stop,
                          time_limit=rt.settings.time_limit, failure=reason)
    result = rt.store.result(outcome.status, "refused before its first step",
                             stop_reason=outcome.reason)
    finish_controls(rt, result)
    log_run_finished(rt, result)
    return result


def end_unbuilt_run(client: Redis, error: AgentBuildError,
                    rt: WorkerRunView | None = None) -> SearchResult | None:
    """End a run whose agent cannot be built (:class:`AgentBuildError`) as failed; once.

    The error is deterministic, so nothing retries it: the run's stop flag is set to
    its reason (branches in flight end at their next step), and the result is written
    at once with what the run recorded and the error's type and message as its stop
    reason, without an agent (:func:`finalize_run` builds one). A cancel or a failure
    that came first wins. The result stays in Redis (``srh export`` writes a directory).

    Args:
        client: Redis of the run.
        error: The build failure.
        rt: The run's view, when it could be built (only the agent could not).

    Returns:
        The run's result, or None when the run is gone (its spec expired).
    """
    store, settings = (rt.store, rt.settings) if rt is not None else _bare_run(client,
                                                                              error.run_id)
    if store is None:
        return None
    store.flow.request_stop(error.reason)
    existing = store.stored_result()
    if existing is not None:
        return existing
    stop = store.flow.stop_reason() or error.reason
    outcome = (RunOutcome("interrupted", STOP_CANCELLED) if stop == STOP_CANCELLED else
               RunOutcome("failed", (stop if is_failure(stop) else error.reason)
                          .removeprefix(f"{STOP_FAILED}: ")))
    result = store.result(outcome.status, f"the agent could not be built; "
                          f"{store.node_count} nodes", stop_reason=outcome.reason,
                          selection=settings.selection)
    if rt is not None:
        finish_controls(rt, result)
    logger.info("run %s finished: %s", error.run_id, result.status, extra={
        "event": "run_finished", "run_id": error.run_id, "status": result.status,
        "stop_reason": result.stop_reason})
    return result


def _bare_run(client: Redis, run_id: str) -> tuple[RedisRunStore | None, SearchSettings]:
    """The store and settings of a run whose view cannot be built (defaults for settings
    that do not load here); no store when the run is gone."""
    probe = RedisRunStore(client, run_id, register=False)
    try:
        settings = SearchSettings.build(**load_spec(probe).settings)
    except SearchStateError:
        return None, SearchSettings.build()
    except BUILD_ERRORS:
        settings = SearchSettings.build()
    return RedisRunStore(client, run_id, settings.ranking_metric, settings.larger_is_better,
                         register=False), settings


def write_run_directory(rt: WorkerRunView, result: SearchResult, path: Path) -> bool:
    """Best effort: the run directory, the same files an embedded run leaves; True if written.

    It is written on the disk of the worker that finalizes the run, inside
    its ``SRH_RUNS_DIR`` (a run's ``save_path`` is taken relative to it), or
    under the operator's artifact root (``SRH_ARTIFACTS``, shared storage). A
    failure is logged and loses nothing: the result is in Redis already, and
    ``srh export`` writes the directory later.
    """
    try:
        write_run_files(rt, result, path)
    except OSError as error:
        logger.error("Run %s: could not write the run directory %s: %s", rt.run_id, path, error)
        return False
    return True


def write_run_files(rt: WorkerRunView, result: SearchResult, path: Path) -> None:
    """The run directory's files (raises OSError)."""
    spec = rt.spec
    problem, arrays = run_inputs(rt.context, spec.description, spec.run_id)
    last = rt.store.flow.latest_restart()
    branches = rt.store.flow.load_branches(last, rt.width) if last else []
    snapshot = rt.store.save_snapshot({
        "restart": last, "status": result.status, "backend": "celery",
        "branches": [b.to_dict() for b in branches if b is not None]})
    # the workers are started already: a wall clock counts from the submission, a fit
    # clock from the run's first task (queueing is not fit time)
    clock = clock_record(rt.settings, rt.settings.time_limit,
                         at=rt.clock_start() or spec.submitted_at)
    logs = {"tool_calls": rt.store.tool_log(), "plans": rt.store.flow.plans(),
            "timeline": [clock]}
    RunDirectory(path).write_finished(rt.settings, problem, arrays, snapshot, logs, result)


def repair_actions(rt: WorkerRunView) -> list[Action]:
    """The actions that move a stalled run on from its stored state.

    A message can be lost outside the tasks' control (e.g. popped from the
    broker list an instant before the broker died). Every task is
    idempotent, so re-sending what the stored state says comes next is
    safe: duplicates of queued tasks change nothing.
    """
    if rt.store.stored_result() is not None:
        return []
    if rt.granularity == "run":
        return [whole_run_action(rt.run_id)]
    restart = rt.store.flow.latest_restart()
    if restart == 0:
        return [restart_action(rt.run_id, 1)]
    branches = rt.store.flow.load_branches(restart, rt.width)
    if any(branch is None for branch in branches):
        return [restart_action(rt.run_id, restart)]
    states = [branch for branch in branches if branch is not None]
    return scheduled(rt, next_steps(states, early_stop=rt.settings.early_stop))
