"""The embedded runtime: one process, no services.

``run_search`` binds a run's parts to the agent (context, store, executor,
run directory), then loops over restarts; :class:`LocalBranchRunner` runs
each restart's branches, up to ``branch_threads`` at once on threads (model
requests are I/O), checkpointing after every step; ``resume_search``
continues a run directory from its last snapshot.

A step here is the agent's three step functions (``open_step``,
``run_sample`` for K = 1..K, ``close_step``), the same the Celery tasks
call; what runs next is the shared scheduler's answer
(:mod:`srh_core.agent.scheduler`: this runner drains its actions; on a
``Hold``, a pause asked through the agent's :meth:`~SRAgent.pause_gate`, it
waits on its thread once no step is in flight, then asks again), and how
the run ends is :mod:`srh_core.agent.outcome`'s. With one thread, branches run
in branch order (level by level when early stop is on, which the stop rule
needs); with more, in any order: the nodes are the same.

Ends of a run: all budgets used ("completed"); an exact fit
("early_stopped"); Ctrl-C or the time limit ("interrupted", resumable, with
``stop_reason`` saying which); an exception ("failed", everything recorded
so far kept, the traceback logged).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from srh_core.agent.branch import BranchState
from srh_core.agent.outcome import (
    INTERRUPTED_BY_USER,
    STOP_INTERRUPTED,
    RunOutcome,
    resumable,
    run_outcome,
)
from srh_core.agent.scheduler import (
    FinishRun,
    Hold,
    OpenStep,
    StopBranch,
    next_steps,
    on_restart_ended,
)
from srh_core.agent.steps import opened_step, sample_results
from srh_core.context import AgentContext
from srh_core.context.structured import commit_run_data
from srh_core.embedded.executor import ProcessToolExecutor, SerialToolExecutor
from srh_core.embedded.run_dir import (
    RunDirectory,
    clock_record,
    resumed_inputs,
    run_inputs,
)
from srh_core.errors import ConfigurationError, SearchStateError, ToolRunAbort
from srh_core.state import SearchRunState
from srh_core.types import SearchResult

if TYPE_CHECKING:
    from srh_core.agent.sragent import SRAgent
    from srh_core.seams import PauseGate, RunControl

logger = logging.getLogger("srh.agent")

Checkpoint = Callable[[int, Sequence[BranchState]], None]

#: After Ctrl-C, how long the steps in flight get to end before they are left out.
INTERRUPT_SECONDS = 5.0


def run_branch_step(agent: SRAgent, branch: BranchState) -> BranchState:
    """One whole refinement step of ``branch`` in this process: its next state."""
    plan = opened_step(agent, branch)
    if plan is None:
        return branch
    runs = [sample_results(agent, plan, K) for K in range(1, plan.K + 1)]
    return agent.close_step(branch, plan, [run.results for run in runs],
                            candidates=[run.candidates for run in runs])


class StopFlag:
    """The embedded :class:`~srh_core.seams.RunControl`: set on Ctrl-C; held by a pause.

    Args:
        pause: The agent's pause gate (:meth:`SRAgent.pause_gate`), if it pauses.
    """

    def __init__(self, pause: PauseGate | None = None) -> None:
        self.reason: str | None = None
        self.pause = pause

    def stop_reason(self) -> str | None:
        return self.reason

    def paused(self) -> bool:
        return self.pause is not None and self.pause.paused()

    def wait_release(self) -> bool:
        if self.pause is None:
            return False
        self.pause.wait_release()  # a paused run holds its thread here, no step in flight
        return True


class LocalBranchRunner:
    """Runs the branches of a restart, up to ``threads`` at once, a step at a time.

    Args:
        agent: The bound agent.
        checkpoint: Called with (R, branch states) after every step.
        control: Asked before every step whether the run must stop.
        threads: Most branches stepping at once (1: in this thread, in order).
    """

    def __init__(self, agent: SRAgent, checkpoint: Checkpoint, control: RunControl,
                 threads: int = 1) -> None:
        self.agent = agent
        self.checkpoint = checkpoint
        self.control = control
        self.threads = max(1, threads)
        self._lock = threading.Lock()

    def run_restart(self, branches: Sequence[BranchState]) -> list[BranchState]:
        states = {branch.C: branch for branch in branches}
        if self.threads == 1:
            self._run_inline(states)
        else:
            self._run_threads(states)
        return [states[C] for C in sorted(states)]

    def _next(self, states: dict[int, BranchState], busy: set[int]
              ) -> BranchState | Hold | None:
        """The first branch (by C) the scheduler opens a step of, a Hold (a pause), or
        None (nothing to open now); ends the branches the gate stops."""
        actions = next_steps(list(states.values()), early_stop=self.agent.settings.early_stop,
                             stop_reason=self.control.stop_reason(),
                             paused=self.control.paused, busy=busy)
        opened: BranchState | Hold | None = None
        for action in actions:
            if isinstance(action, StopBranch):
                self._stepped(states, action.branch.stop(action.reason))
            elif isinstance(action, (OpenStep, Hold)) and opened is None:
                opened = action.branch if isinstance(action, OpenStep) else action
        return opened

    def _released(self, hold: Hold) -> bool:
        """A pause holds ``hold.branch`` and no step is in flight: wait for the release.

        True once released (the gate is asked again); False when the control
        keeps no thread for a held run (the restart returns unfinished).
        """
        self.agent.emit("held", R=hold.branch.R, C=hold.branch.C, L=hold.branch.L)
        return self.control.wait_release()

    def _stepped(self, states: dict[int, BranchState], branch: BranchState) -> None:
        with self._lock:
            states[branch.C] = branch
            self.checkpoint(branch.R, [states[C] for C in sorted(states)])
        store = self.agent.require_store()
        self.agent.emit("step", R=branch.R, C=branch.C, L=branch.L,
                        nodes=store.node_count, status=branch.status,
                        best=branch.front[0]["formula"] if branch.front else None)

    def _run_inline(self, states: dict[int, BranchState]) -> None:
        while True:
            try:
                branch = self._next(states, set())
                if isinstance(branch, Hold):
                    if self._released(branch):
                        continue
                    return
                if branch is None:
                    return
                after = run_branch_step(self.agent, branch.copy())
            except KeyboardInterrupt:  # in a step, or while a pause holds the run
                self._interrupt(states)
                raise
            self._stepped(states, after)

    def _run_threads(self, states: dict[int, BranchState]) -> None:
        running: dict[Future[BranchState], int] = {}
        pool = ThreadPoolExecutor(self.threads, thread_name_prefix="srh-branch")
        try:
            while True:
                held = None
                while len(running) < self.threads:
                    branch = self._next(states, set(running.values()))
                    if branch is None or isinstance(branch, Hold):
                        held = branch
                        break
                    running[pool.submit(run_branch_step, self.agent, branch.copy())] = branch.C
                if not running:
                    if held is not None and self._released(held):
                        continue
                    return
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    del running[future]
                    self._stepped(states, future.result())
        except KeyboardInterrupt:
            self._interrupt(states)
            self._finish_running(states, running)
            raise
        finally:
            # Never wait here for a step still in flight after an interrupt: its thread
            # ends with its tool call, and the branch is resumable from before that step.
            pool.shutdown(wait=False, cancel_futures=True)

    def _finish_running(self, states: dict[int, BranchState],
                        running: Mapping[Future[BranchState], int]) -> None:
        """After Ctrl-C: record the steps in flight that end within INTERRUPT_SECONDS.

        The executor is closed first, so tool calls in worker processes end at once;
        a step that does not end in time (a tool running in its thread) is left out,
        and its branch resumes from before it. A second Ctrl-C stops waiting.
        """
        self.agent.executor.close()
        done, _ = wait(running, timeout=INTERRUPT_SECONDS)
        for future in done:
            try:
                after = future.result()
            except ToolRunAbort:  # cut by the interrupt: the branch stays where it was
                logger.info("A branch step was cut by the interrupt; it resumes from before it.")
                continue
            except Exception:  # the step failed: its branch stays where it was
                logger.exception("A branch step failed while the run was being interrupted.")
                continue
            self._stepped(states, after if after.finished else after.stop(STOP_INTERRUPTED))
        if len(done) < len(running):
            logger.warning("%d branch step(s) still running were left out; they resume "
                           "from their last recorded step.", len(running) - len(done))

    def _interrupt(self, states: dict[int, BranchState]) -> None:
        if isinstance(self.control, StopFlag):
            self.control.reason = STOP_INTERRUPTED
        for C in sorted(states):
            if not states[C].finished:
                states[C] = states[C].copy().stop(STOP_INTERRUPTED)
        with self._lock:
            self.checkpoint(next(iter(states.values())).R, [states[C] for C in sorted(states)])


# ------------------------------------------------------------------ a run
def make_context(agent: SRAgent, X: Mapping[str, Any], y: Mapping[str, Any] | Any,
                 layout: Mapping[str, Any] | None = None) -> Any:
    """The agent's context (a new one unless it was given) holding ``X`` and ``y``.

    ``layout`` is a resumed run's recorded layout (:func:`resumed_inputs`).
    """
    targets = dict(y) if isinstance(y, Mapping) else {"y": np.asarray(y)}
    if len(targets) != 1:
        raise ConfigurationError(f"y must name exactly one target; got {list(targets)}.")
    context = agent.context
    if context is None:
        context = AgentContext(args=agent.settings, evaluator=agent.evaluator)
    if layout is not None:
        context.commit_context_data({"data": {**dict(X), **targets}, "target": next(iter(targets)),
                                     **layout})
    else:
        commit_run_data(context, X, targets)  # keeps a StructuredData's graph layout
    return context


def executor_factory(agent: SRAgent, context: Any) -> Callable[[Mapping[str, Any]], Any]:
    """Serial by default; a process pool for ``max_workers > 0`` or a time limit.

    A time limit needs calls in separate processes: only there can a call
    that overruns be cut.
    """
    settings = agent.settings

    def build(tools: Mapping[str, Any]) -> Any:
        if settings.max_workers == 0 and settings.time_limit is None:
            return SerialToolExecutor(tools)

        return ProcessToolExecutor(tools, max(1, settings.max_workers),
                                   AgentContext.from_payload, context.to_payload())

    return build


def _deadline(agent: SRAgent) -> float | None:
    limit = agent.settings.time_limit
    return None if limit is None else time.monotonic() + limit


def start_clock(agent: SRAgent, store: SearchRunState) -> None:
    """Warm the bound run up and start its time limit by its ``time_limit_clock``.

    "wall": the limit counts from the run's start (``bind_run``'s deadline): the
    tool processes start now, beside the first step, not waited for. "fit": the
    run waits until its tool processes are ready, and the limit counts from then.
    The run directory's ``timeline.jsonl`` records when and how long it took (a
    cluster's run records its submission, or its first task's start for a "fit" clock).
    """
    fit = agent.settings.time_limit_clock == "fit"
    seconds = agent.warm_up(wait=fit)
    if fit:
        agent.deadline = _deadline(agent)
    if store.run_dir is not None:
        store.run_dir.append("timeline", [clock_record(agent.settings, agent.seconds_left(),
                                                       seconds)])


def agent_metadata(agent: SRAgent) -> dict[str, Any]:
    """What ``run.json`` records of the agent: its class (an import path) and settings."""
    try:
        path = type(agent).import_path()
    except ConfigurationError:
        path = type(agent).__qualname__
    return {"class": path, **agent.settings.model_dump()}


def run_search(agent: SRAgent, X: Mapping[str, Any], y: Any, problem_description: str,
               ) -> SearchResult:
    """Bind and run a whole search; never raises for a failed run."""
    settings = agent.settings
    store = SearchRunState(settings.save_path, settings.ranking_metric,
                           settings.larger_is_better, run_id=settings.run_id,
                           agent_metadata=agent_metadata(agent))
    context = make_context(agent, X, y)
    agent.bind_run(context, store, executor_factory(agent, context), problem_description,
                   deadline=_deadline(agent))
    if store.run_dir is not None:
        problem, arrays = run_inputs(context, problem_description, store.run_id)
        store.run_dir.write_start(settings, problem, arrays)
    return _guarded(agent, store, 1, None)


def resume_search(path: str | Path, agent_class: type[SRAgent], **overrides: Any
                  ) -> SearchResult:
    """Continue a run directory from its last snapshot.

    Finished steps are never repeated: the store, the branch states, the
    restart index and every opened step's responses come back from the run
    directory. A run stopped by its time limit, by Ctrl-C or by a crash
    continues (with a fresh time limit: the one given, else the run's own).
    The data is the latest the run recorded: the last refresh's
    (``data_revisions/``), else the data it started with.

    Raises:
        SearchStateError: The directory is not a resumable run.
    """
    run_dir = RunDirectory(path)
    snapshot = run_dir.snapshot()
    runtime = snapshot.get("runtime") or {}
    if runtime.get("status") in ("completed", "early_stopped") and run_dir.has_result():
        return run_dir.result()
    settings = run_dir.settings(save_path=str(run_dir.path), **overrides)
    agent = agent_class(settings=settings)
    problem, arrays = run_dir.latest_data()  # a refresh's data when the run had one
    X, y, layout = resumed_inputs(problem, arrays)
    store = SearchRunState.from_state(snapshot, run_dir.path)
    context = make_context(agent, X, y, layout)
    if problem.get("data_revision") is not None:  # the revision the records name
        context.restore_revision(int(problem["data_revision"]))
    if problem.get("refreshed"):
        logger.info("Resuming on the data refreshed during the run (data revision %s).",
                    problem["data_revision"])
    agent.bind_run(context, store, executor_factory(agent, context), problem["description"],
                   deadline=_deadline(agent))
    restart, branches = _resume_point(runtime, agent.settings)
    logger.info("Resuming run %s at restart %d with %d node(s) recorded",
                store.run_id, restart, store.node_count)
    return _guarded(agent, store, restart, branches)


def _resume_point(runtime: Mapping[str, Any], settings: Any
                  ) -> tuple[int, list[BranchState] | None]:
    if "restart" not in runtime:
        raise SearchStateError("state.json has no branch states; the run cannot be resumed.")
    restart = int(runtime["restart"])
    branches = [resumable(BranchState.from_dict(b)) for b in runtime.get("branches") or []]
    if branches and all(branch.finished for branch in branches):
        if isinstance(on_restart_ended(branches, restart, max_restart=settings.max_restart_loop,
                                       early_stop=settings.early_stop), FinishRun):
            return restart, branches
        return restart + 1, None
    return restart, branches or None


def _guarded(agent: SRAgent, store: SearchRunState, restart: int,
             branches: list[BranchState] | None) -> SearchResult:
    outcome = RunOutcome("failed", "the search did not start")

    def checkpoint(R: int, states: Sequence[BranchState]) -> None:
        store.save_snapshot({"restart": R, "status": "running",
                             "branches": [branch.to_dict() for branch in states]})

    try:
        try:
            start_clock(agent, store)
            outcome = search_loop(agent, restart, branches, checkpoint,
                                  StopFlag(agent.pause_gate()),
                                  agent.settings.branch_threads) or outcome
        except KeyboardInterrupt:
            outcome = RunOutcome("interrupted", INTERRUPTED_BY_USER)
            logger.warning("Interrupted; the run can be resumed from its run directory.")
        except Exception as error:  # the run boundary: record, report, end as failed
            outcome = RunOutcome("failed", f"{type(error).__name__}: {error}")
            logger.exception("The search failed; everything recorded so far is kept.")
        return finish_run(agent, store, outcome)  # the result first, then the cleanup
    finally:
        agent.release_run()  # the executors, then prepare_tool_context's exit


def search_loop(agent: SRAgent, restart: int, branches: list[BranchState] | None,
                checkpoint: Checkpoint, control: RunControl, threads: int
                ) -> RunOutcome | None:
    """The restarts from ``restart`` on (its ``branches`` when it is under way).

    Returns:
        How the run ended, or None when ``control`` paused it with branches
        still running (their states are in the last checkpoint).
    """
    settings = agent.settings
    runner = LocalBranchRunner(agent, checkpoint, control, threads)
    states: list[BranchState] = []
    for R in range(restart, settings.max_restart_loop + 1):
        states = branches or agent.start_restart(R=R)
        branches = None
        checkpoint(R, states)
        states = runner.run_restart(states)
        if not all(branch.finished for branch in states):
            return None
        if isinstance(on_restart_ended(states, R, max_restart=settings.max_restart_loop,
                                       early_stop=settings.early_stop), FinishRun):
            break
    return run_outcome(states, early_stop=settings.early_stop, time_limit=settings.time_limit,
                       settings=settings)


def finish_run(agent: SRAgent, store: SearchRunState, outcome: RunOutcome) -> SearchResult:
    """Build, save and plot the final result; mark the snapshot final."""
    result = agent.build_search_result(outcome.status, stop_reason=outcome.reason)
    if store.run_dir is not None:
        runtime = {}
        if (store.run_dir.path / "state.json").exists():
            runtime = store.run_dir.snapshot().get("runtime") or {}
        store.save_snapshot({**runtime, "status": outcome.status})
        store.run_dir.plot_pareto(result, agent.settings.ranking_metric)
    agent.emit("finished", status=outcome.status, reason=outcome.reason)
    return result
