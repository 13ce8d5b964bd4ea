"""The distributed runtime's logic, free of Celery: one function per task.

Each function loads what it needs from Redis, does one short piece of the
search with the same SRAgent hooks as the embedded runtime, writes its
result idempotently, and returns the :class:`Action`\\ s (tasks) to enqueue
next; :mod:`srh_workers.tasks` only wraps them. Nothing here blocks on
another task. Every function is safe to run twice for the same arguments
(a re-delivered message): the step plan is cached so a step never
re-samples the model, tool results are first-write-wins, nodes and
candidates are idempotent, and the advance/restart claims let exactly one
caller move on.

Flow of one run::

    restart(R) -> step(R, C, 1) for each branch C
    step(R, C, L) -> tool_calls(R, C, L, K) for K in 1..K
    tool_calls(...) -> advance(R, C, L)            (the call completing the K-set)
    advance(R, C, L) -> step(R, C, L+1) | branch finished
    last branch of R -> restart(R+1) | finalize
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redis import Redis

from srh_core.agent import BranchState, SRAgent, StepPlan
from srh_core.agent.executor import SerialToolExecutor
from srh_core.errors import SearchStateError
from srh_core.types import ToolCallResult
from srh_workers.keys import RunKeys
from srh_workers.publish import RunSpec, load_payload, load_spec
from srh_workers.store import RedisCandidateStore

logger = logging.getLogger("srh.workers")

RUN_CACHE_SIZE = 8
STOP_TIME_LIMIT = "time_limit"
STOP_EARLY = "early_stopped"
STOP_CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Action:
    """A task to enqueue: its registered name and its JSON arguments."""

    task: str
    args: tuple[Any, ...]


def restart_action(run_id: str, R: int) -> Action:
    return Action("srh.branch.restart", (run_id, R))


def step_action(run_id: str, R: int, C: int, L: int) -> Action:
    return Action("srh.branch.step", (run_id, R, C, L))


def tool_action(run_id: str, R: int, C: int, L: int, K: int) -> Action:
    return Action("srh.tool.calls", (run_id, R, C, L, K))


def advance_action(run_id: str, R: int, C: int, L: int) -> Action:
    return Action("srh.branch.advance", (run_id, R, C, L))


def finalize_action(run_id: str) -> Action:
    return Action("srh.branch.finalize", (run_id,))


class RunRuntime:
    """One run as a worker sees it: spec, agent (tools, model, context) and store.

    Args:
        client: Redis of the candidate store.
        spec: The run's specification.
        runs_dir: Where finished runs are written when their settings name no
            ``save_path`` (the worker's ``SRH_RUNS_DIR``); None writes nothing.
    """

    def __init__(self, client: Redis, spec: RunSpec, runs_dir: Path | None = None) -> None:
        from srh_core.context import AgentContext

        self.client = client
        self.spec = spec
        self.runs_dir = runs_dir
        self.keys = RunKeys(spec.run_id)
        settings = spec.search_settings()
        self.agent = SRAgent(settings)
        self.agent.context = AgentContext.from_payload(load_payload(client, spec.run_id))
        self.agent.problem_description = spec.description
        self.agent.initialize_tools(self.agent.context)
        self.agent.store = RedisCandidateStore(
            client, spec.run_id, settings.ranking_metric, settings.larger_is_better,
            agent_metadata={"class": "SRAgent", **settings.model_dump()})
        self.agent.executor = SerialToolExecutor(self.agent.tools)

    @property
    def run_dir(self) -> Path | None:
        """The run directory: the settings' save_path, else ``runs_dir/run_id``."""
        if self.settings.save_path:
            return Path(self.settings.save_path)
        return None if self.runs_dir is None else self.runs_dir / self.spec.run_id

    @property
    def store(self) -> RedisCandidateStore:
        return self.agent.store

    @property
    def settings(self) -> Any:
        return self.agent.settings

    def refresh_deadline(self) -> None:
        """The agent's monotonic deadline from the run's wall-clock deadline."""
        if self.spec.deadline is not None:
            self.agent.deadline = time.monotonic() + (self.spec.deadline - time.time())

    # ---------------------------------------------------------- state I/O
    def branch(self, R: int, C: int) -> BranchState:
        raw = self.client.get(self.keys.branch(R, C))
        if raw is None:
            raise SearchStateError(f"Run {self.spec.run_id}: branch R{R}-C{C} has no state.")
        return BranchState.from_dict(json.loads(raw))

    def save_branch(self, branch: BranchState, *, only_new: bool = False) -> bool:
        key = self.keys.branch(branch.R, branch.C)
        pipe = self.client.pipeline(transaction=True)
        pipe.sadd(self.keys.registry, key)
        pipe.set(key, json.dumps(branch.to_dict(), allow_nan=False), nx=only_new)
        return bool(pipe.execute()[1])

    def plan(self, R: int, C: int, L: int) -> StepPlan | None:
        raw = self.client.get(self.keys.plan(R, C, L))
        return None if raw is None else StepPlan.from_dict(json.loads(raw))

    def save_plan(self, plan: StepPlan) -> StepPlan:
        """Store the plan unless one exists; return the stored one (first write wins)."""
        key = self.keys.plan(plan.R, plan.C, plan.L)
        pipe = self.client.pipeline(transaction=True)
        pipe.sadd(self.keys.registry, key)
        pipe.set(key, json.dumps(plan.to_dict(), allow_nan=False), nx=True)
        pipe.get(key)
        stored = pipe.execute()[2]
        return StepPlan.from_dict(json.loads(stored))

    def sample_results(self, R: int, C: int, L: int, K: int,
                       fresh: list[ToolCallResult] | None = None) -> list[ToolCallResult] | None:
        """Results of sample K; with ``fresh``, stores them unless already stored."""
        key = self.keys.results(R, C, L)
        if fresh is not None:
            payload = json.dumps([r.to_dict() for r in fresh], allow_nan=False)
            pipe = self.client.pipeline(transaction=True)
            pipe.sadd(self.keys.registry, key)
            pipe.hsetnx(key, str(K), payload)
            pipe.execute()
        raw = self.client.hget(key, str(K))
        return None if raw is None else [ToolCallResult.from_dict(r) for r in json.loads(raw)]

    def stop_reason(self) -> str | None:
        raw = self.client.get(self.keys.stop)
        return None if raw is None else raw.decode() if isinstance(raw, bytes) else str(raw)

    def request_stop(self, reason: str) -> None:
        self.client.set(self.keys.stop, reason, nx=True)


_CACHE: OrderedDict[str, RunRuntime] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def runtime_for(client: Redis, run_id: str, runs_dir: Path | None = None) -> RunRuntime:
    """The cached runtime of ``run_id`` in this process (data loaded once per process)."""
    with _CACHE_LOCK:
        cached = _CACHE.get(run_id)
        if cached is not None:
            _CACHE.move_to_end(run_id)
            return cached
    runtime = RunRuntime(client, load_spec(client, run_id), runs_dir)
    with _CACHE_LOCK:
        _CACHE[run_id] = runtime
        while len(_CACHE) > RUN_CACHE_SIZE:
            _CACHE.popitem(last=False)
    return runtime


def forget_run(run_id: str) -> None:
    with _CACHE_LOCK:
        _CACHE.pop(run_id, None)
