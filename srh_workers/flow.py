"""The task bodies of a distributed run, one function per task kind.

Each takes a :class:`~srh_workers.runtime.RunRuntime` and coordinates, and
returns the actions to enqueue (see the flow in :mod:`srh_workers.runtime`).
All of them are idempotent: called twice with the same arguments they
change nothing the second time and return the actions that keep the run
moving (duplicates of idempotent tasks are harmless).
"""

from __future__ import annotations

import logging
from collections import deque
from pathlib import Path

from redis import Redis

from srh_core.agent import BranchState
from srh_core.agent.run_dir import RunDirectory
from srh_core.jsonio import atomic_write_json
from srh_core.state import SearchRunState
from srh_core.types import SearchResult
from srh_workers.runtime import (
    STOP_EARLY,
    STOP_TIME_LIMIT,
    Action,
    RunRuntime,
    advance_action,
    finalize_action,
    restart_action,
    runtime_for,
    step_action,
    tool_action,
)

logger = logging.getLogger("srh.workers")


def start_restart(rt: RunRuntime, R: int) -> list[Action]:
    """Create the C branches of restart R (once) and start their first steps."""
    rt.refresh_deadline()
    if rt.client.exists(rt.keys.branch(R, 1)):
        branches = [rt.branch(R, C) for C in range(1, rt.settings.global_width + 1)]
    else:
        branches = rt.agent.start_restart(R)
        for branch in branches:
            rt.save_branch(branch, only_new=True)
        branches = [rt.branch(R, b.C) for b in branches]
    actions: list[Action] = []
    for branch in branches:
        actions += continue_branch(rt, branch)
    return actions


def continue_branch(rt: RunRuntime, branch: BranchState) -> list[Action]:
    """What keeps a branch moving from its stored state."""
    if not branch.finished:
        return [step_action(rt.spec.run_id, branch.R, branch.C, branch.L)]
    return finish_branch(rt, branch)


def run_step(rt: RunRuntime, R: int, C: int, L: int) -> list[Action]:
    """Open step L (sample the model once, cached) and fan out its K samples."""
    rt.refresh_deadline()
    branch = rt.branch(R, C)
    if branch.finished or branch.L != L:
        return continue_branch(rt, branch) if branch.L > L or branch.finished else []
    plan = rt.plan(R, C, L)
    if plan is None:
        stop = rt.stop_reason()
        if stop is not None:
            branch.status, branch.stop_reason = "stopped", stop
            rt.save_branch(branch)
            return finish_branch(rt, branch)
        plan = rt.agent.open_step(branch)
        if plan is None:
            rt.request_stop(branch.stop_reason or STOP_TIME_LIMIT)
            rt.save_branch(branch)
            return finish_branch(rt, branch)
        rt.client.incr(rt.keys.requests)
        rt.save_branch(branch)  # prepare_model_messages may have extended the buffer
        plan = rt.save_plan(plan)
    return [tool_action(rt.spec.run_id, R, C, L, k) for k in range(1, len(plan.responses) + 1)]


def run_tool_calls(rt: RunRuntime, R: int, C: int, L: int, K: int) -> list[Action]:
    """Run sample K's calls, record its node and candidates; the last sample advances."""
    plan = rt.plan(R, C, L)
    if plan is None:
        logger.warning("R%d-C%d-L%d-K%d: no step plan; nothing to do", R, C, L, K)
        return []
    response = plan.responses[K - 1]
    results = rt.sample_results(R, C, L, K)
    if results is None:
        fresh = rt.agent.run_calls(list(response.tool_calls))
        rt.agent.record_tool_calls(list(response.tool_calls), fresh, R, L, C)
        results = rt.sample_results(R, C, L, K, fresh)
    node = rt.store.build_node(response, results, tuple(plan.parents), R=R, C=C, L=L, K=K,
                              prompt=plan.prompt if K == 1 else None, usage=plan.usage)
    candidates = rt.agent.sample_candidates(response, results, R, C, L, K)
    outcome = rt.store.record_sample(node, candidates, samples=len(plan.responses))
    if outcome.complete and rt.store.claim_advance(R, C, L, claimant=K):
        return [advance_action(rt.spec.run_id, R, C, L)]
    return []


def advance_branch(rt: RunRuntime, R: int, C: int, L: int) -> list[Action]:
    """Update the conversation after step L and decide what the branch does next."""
    rt.refresh_deadline()
    branch = rt.branch(R, C)
    if branch.finished or branch.L != L:
        return continue_branch(rt, branch)
    plan = rt.plan(R, C, L)
    results = [rt.sample_results(R, C, L, k) for k in range(1, len(plan.responses) + 1)]
    if any(r is None for r in results):
        logger.warning("R%d-C%d-L%d: advance before every sample was recorded", R, C, L)
        return []
    after = rt.agent.advance(branch, plan, results)
    if after.status == "stopped":
        rt.request_stop(after.stop_reason or STOP_EARLY)
    rt.save_branch(after)
    return continue_branch(rt, after)


def finish_branch(rt: RunRuntime, branch: BranchState) -> list[Action]:
    """Count the finished branch; the last branch of a restart moves the run on."""
    width = rt.settings.global_width
    count = rt.store.finish_branch(branch.R, branch.C, branch.to_dict())
    if count < width or not rt.store.claim_restart(branch.R, claimant=branch.C):
        return []
    if rt.stop_reason() is not None or branch.R >= rt.settings.max_restart_loop:
        return [finalize_action(rt.spec.run_id)]
    return [restart_action(rt.spec.run_id, branch.R + 1)]


def final_status(stop: str | None, time_limit: float | None) -> tuple[str, str]:
    if stop is None:
        return "completed", "search budget used"
    if stop == STOP_EARLY:
        return "early_stopped", "a candidate reached the exact-fit threshold"
    if stop == STOP_TIME_LIMIT:
        return "interrupted", f"time limit of {time_limit:g}s reached"
    return "interrupted", stop


def finalize_run(rt: RunRuntime) -> SearchResult:
    """Write the result to Redis (starting the TTL) and to the run directory."""
    existing = rt.store.stored_result()
    if existing is not None:
        return existing
    status, reason = final_status(rt.stop_reason(), rt.settings.time_limit)
    result = rt.agent.build_search_result(status, stop_reason=reason)
    if rt.run_dir is not None:
        write_run_directory(rt, result, rt.run_dir)
    return result


def write_run_directory(rt: RunRuntime, result: SearchResult, path: Path) -> None:
    """Best effort: the run directory (settings, data, nodes, candidates, result).

    It is written on the disk of the worker that finalizes the run: point
    ``save_path`` (or the workers' ``SRH_RUNS_DIR``) at shared storage to
    collect runs in one place.
    """
    try:
        context = rt.agent.context
        problem = {"description": rt.spec.description, "target": rt.spec.target,
                   "features": rt.spec.features, "run_id": rt.spec.run_id}
        arrays = {name: context.data[name] for name in [*rt.spec.features, rt.spec.target]}
        RunDirectory(path).write_start(rt.settings, problem, arrays)
        local = SearchRunState.from_state(rt.store.export_state(), save_path=path)
        local.save_snapshot({"status": result.status, "backend": "celery"})
        atomic_write_json(path / "result.json", result.to_dict())
        RunDirectory(path).plot_pareto(result, rt.settings.ranking_metric)
    except OSError as error:
        logger.warning("Run %s: could not write the run directory: %s", rt.spec.run_id, error)


def repair_actions(rt: RunRuntime) -> list[Action]:
    """The actions that move a stalled run on from its stored state.

    A message can be lost outside the tasks' control (e.g. popped from the
    broker list an instant before the broker died). Every task is
    idempotent, so re-sending what the stored state says comes next is
    safe: duplicates of queued tasks change nothing.
    """
    if rt.store.stored_result() is not None:
        return []
    restart = 0
    while rt.client.exists(rt.keys.branch(restart + 1, 1)):
        restart += 1
    if restart == 0:
        return [restart_action(rt.spec.run_id, 1)]
    actions: list[Action] = []
    for C in range(1, rt.settings.global_width + 1):
        if not rt.client.exists(rt.keys.branch(restart, C)):
            return [restart_action(rt.spec.run_id, restart)]
        actions += continue_branch(rt, rt.branch(restart, C))
    return actions


def _finalize(rt: RunRuntime) -> list[Action]:
    finalize_run(rt)
    return []


HANDLERS = {
    "srh.branch.restart": start_restart,
    "srh.branch.step": run_step,
    "srh.tool.calls": run_tool_calls,
    "srh.branch.advance": advance_branch,
    "srh.branch.finalize": _finalize,
}


def dispatch(client: Redis, action: Action) -> list[Action]:
    """Run one action's body in this process; the actions it asks for next."""
    run_id, *coordinate = action.args
    return HANDLERS[action.task](runtime_for(client, run_id), *coordinate)


def run_inline(client: Redis, first: Action, *, max_actions: int = 1_000_000) -> int:
    """Drive a run to its end in this process, FIFO (for tests and debugging).

    Returns:
        How many actions ran.
    """
    queue, done = deque([first]), 0
    while queue and done < max_actions:
        queue.extend(dispatch(client, queue.popleft()))
        done += 1
    return done
