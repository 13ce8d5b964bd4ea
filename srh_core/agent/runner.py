"""The embedded runtime: one process, no services.

``run_search`` prepares a run (context, tools, parser, model, store,
executor, run directory), then loops over restarts; ``LocalBranchRunner``
runs each restart's branches step by step, checkpointing after every step;
``resume_search`` continues a run directory from its last snapshot.

Ends of a run: all budgets used ("completed"); an exact fit
("early_stopped"); Ctrl-C or the time limit ("interrupted", resumable, with
``stop_reason`` saying which); an exception ("failed", everything recorded
so far kept, the traceback logged).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from srh_core.agent.branch import BranchState
from srh_core.agent.executor import ProcessToolExecutor, SerialToolExecutor
from srh_core.agent.run_dir import RunDirectory
from srh_core.errors import ConfigurationError, SearchStateError
from srh_core.state import SearchRunState
from srh_core.types import SearchResult

if TYPE_CHECKING:
    from srh_core.agent.sragent import SRAgent

logger = logging.getLogger("srh.agent")

Checkpoint = Callable[[int, Sequence[BranchState]], None]


class LocalBranchRunner:
    """Runs the branches of a restart one after another, a step at a time."""

    def __init__(self, agent: SRAgent, checkpoint: Checkpoint) -> None:
        self.agent = agent
        self.checkpoint = checkpoint

    def run_restart(self, branches: Sequence[BranchState]) -> list[BranchState]:
        states = list(branches)
        for index, branch in enumerate(states):
            while not branch.finished:
                branch = self.agent.run_step(branch)
                states[index] = branch
                self.checkpoint(branch.R, states)
            if branch.status == "stopped":
                break
        return states


def prepare_run(agent: SRAgent, X: Mapping[str, Any], y: Mapping[str, Any] | Any,
                problem_description: str, store: SearchRunState) -> None:
    """Bind data, tools, parser, model, ``store`` and executor to ``agent``."""
    from srh_core.context import AgentContext
    from srh_core.context.structured import commit_run_data

    targets = dict(y) if isinstance(y, Mapping) else {"y": np.asarray(y)}
    if len(targets) != 1:
        raise ConfigurationError(f"y must name exactly one target; got {list(targets)}.")
    if agent.context is None:
        agent.context = AgentContext(args=agent.settings)
    commit_run_data(agent.context, X, targets)  # keeps a StructuredData's graph layout
    agent.problem_description = problem_description
    agent.initialize_tools(agent.context)
    agent.store = store
    agent.executor = make_executor(agent)
    if agent.settings.time_limit is not None:
        agent.deadline = time.monotonic() + agent.settings.time_limit


def make_executor(agent: SRAgent) -> Any:
    """Serial by default; a process pool for ``max_workers > 0`` or a time limit.

    A time limit needs calls in separate processes: only there can a call
    that overruns be cut.
    """
    settings = agent.settings
    if settings.max_workers == 0 and settings.time_limit is None:
        return SerialToolExecutor(agent.tools)
    from srh_core.context import AgentContext

    return ProcessToolExecutor(agent.tools, max(1, settings.max_workers),
                               AgentContext.from_payload, agent.context.to_payload())


def run_search(agent: SRAgent, X: Mapping[str, Any], y: Any, problem_description: str,
               ) -> SearchResult:
    """Prepare and run a whole search; never raises for a failed run."""
    settings = agent.settings
    store = SearchRunState(settings.save_path, settings.ranking_metric,
                           settings.larger_is_better, run_id=settings.run_id,
                           agent_metadata={"class": type(agent).__name__,
                                           **settings.model_dump()})
    prepare_run(agent, X, y, problem_description, store)
    run_dir = _start_run_directory(agent, problem_description)
    return _guarded(agent, run_dir, 1, None)


def _start_run_directory(agent: SRAgent, problem_description: str) -> RunDirectory | None:
    if agent.settings.save_path is None:
        return None
    run_dir = RunDirectory(agent.settings.save_path)
    context = agent.context
    problem = {"description": problem_description, "target": context.target,
               "features": list(context.feature_names()), "run_id": agent.store.run_id}
    arrays = {name: context.data[name] for name in [*context.feature_names(), context.target]}
    run_dir.write_start(agent.settings, problem, arrays)
    return run_dir


def _tool_call_logger(run_dir: RunDirectory) -> Callable[[Mapping[str, Any]], None]:
    def observe(event: Mapping[str, Any]) -> None:
        if event.get("event") == "tool_calls":
            run_dir.log_tool_calls(event["coordinate"], event["calls"], event["results"],
                                   event["forced"])

    return observe


def resume_search(path: str | Path, agent_class: type[SRAgent] | None = None,
                  **overrides: Any) -> SearchResult:
    """Continue an interrupted run directory from its last snapshot.

    Finished steps are never repeated: the store, the branch states and the
    restart index come back from ``state.json``.

    Raises:
        SearchStateError: The directory is not a resumable run.
    """
    from srh_core.agent.sragent import SRAgent

    run_dir = RunDirectory(path)
    snapshot = run_dir.snapshot()
    runtime = snapshot.get("runtime") or {}
    if runtime.get("status") in ("completed", "early_stopped"):
        return run_dir.result()
    settings = run_dir.settings(save_path=str(run_dir.path), **overrides)
    agent = (agent_class or SRAgent)(settings)
    problem, arrays = run_dir.problem(), run_dir.arrays()
    X = {name: arrays[name] for name in problem["features"]}
    prepare_run(agent, X, {problem["target"]: arrays[problem["target"]]},
                problem["description"], SearchRunState.from_state(snapshot, run_dir.path))
    restart, branches = _resume_point(runtime, agent.settings.max_restart_loop)
    logger.info("Resuming run %s at restart %d with %d node(s) recorded",
                agent.store.run_id, restart, agent.store.node_count)
    return _guarded(agent, run_dir, restart, branches)


def _resume_point(runtime: Mapping[str, Any], max_restart: int
                  ) -> tuple[int, list[BranchState] | None]:
    if "restart" not in runtime:
        raise SearchStateError("state.json has no branch states; the run cannot be resumed.")
    restart = int(runtime["restart"])
    branches = [BranchState.from_dict(b) for b in runtime.get("branches") or []]
    if branches and all(branch.finished for branch in branches):
        if any(branch.status == "stopped" for branch in branches):
            return restart, branches
        return restart + 1, None
    return restart, branches or None


def _guarded(agent: SRAgent, run_dir: RunDirectory | None, restart: int,
             branches: list[BranchState] | None) -> SearchResult:
    status, reason = "failed", None
    logger_ = _tool_call_logger(run_dir) if run_dir is not None else None
    if logger_ is not None:
        agent.observers.append(logger_)
    try:
        status, reason = _search_loop(agent, restart, branches)
    except KeyboardInterrupt:
        status, reason = "interrupted", "interrupted by the user"
        logger.warning("Interrupted; the run can be resumed from its run directory.")
    except Exception as error:  # the run boundary: record, report, end as failed
        reason = f"{type(error).__name__}: {error}"
        logger.exception("The search failed; everything recorded so far is kept.")
    finally:
        agent.executor.close()
        if logger_ is not None:
            agent.observers.remove(logger_)
    return finish_run(agent, run_dir, status, reason)


def _search_loop(agent: SRAgent, restart: int, branches: list[BranchState] | None
                 ) -> tuple[str, str | None]:
    settings = agent.settings
    runner = LocalBranchRunner(agent, lambda r, states: checkpoint(agent, r, states))
    for R in range(restart, settings.max_restart_loop + 1):
        states = branches or agent.start_restart(R)
        branches = None
        checkpoint(agent, R, states)
        states = runner.run_restart(states)
        stopped = next((b for b in states if b.status == "stopped"), None)
        if stopped is not None:
            if stopped.stop_reason == "early_stopped":
                return "early_stopped", "a candidate reached the exact-fit threshold"
            return "interrupted", _stop_text(stopped.stop_reason, settings.time_limit)
    return "completed", "search budget used"


def _stop_text(reason: str | None, time_limit: float | None) -> str:
    if reason == "time_limit":
        return f"time limit of {time_limit:g}s reached"
    return reason or "stopped"


def checkpoint(agent: SRAgent, restart: int, branches: Sequence[BranchState],
               status: str = "running") -> None:
    """Snapshot the run (store + branch states) after a step."""
    store = agent.store
    if isinstance(store, SearchRunState):
        store.save_snapshot({"restart": restart, "status": status,
                             "branches": [branch.to_dict() for branch in branches]})


def finish_run(agent: SRAgent, run_dir: RunDirectory | None, status: str,
               reason: str | None) -> SearchResult:
    """Build, save and plot the final result; mark the snapshot final."""
    result = agent.build_search_result(status, stop_reason=reason)
    store = agent.store
    if isinstance(store, SearchRunState) and store.save_path is not None:
        snapshot = store.save_path / "state.json"
        runtime = {}
        if snapshot.exists():
            runtime = RunDirectory(store.save_path).snapshot().get("runtime") or {}
        store.save_snapshot({**runtime, "status": status})
    if run_dir is not None:
        run_dir.plot_pareto(result, agent.settings.ranking_metric)
    agent.emit("finished", status=status, reason=reason)
    return result
