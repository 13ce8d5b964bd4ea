"""The flow state of a distributed run: branches, plans, sample results, claims, levels, locks.

:class:`FlowState` (``RedisRunStore.flow``) owns the keys the Celery flow
moves a run with (see the "flow" rows of
:data:`~srh_workers.store.keys.KEY_SCHEMA`): what a step task reads in one
round trip, the first-write-wins results of the samples, the SET NX claims
that let one task advance a step, a level or a restart, the stop flag and the
whole-run task's lock. Writers of a coordinate key add its name to the run's
``keys`` set in the same atomic step, so retention finds it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from srh_core.agent.branch import BranchState
from srh_core.agent.steps import StepPlan
from srh_core.errors import SearchStateError
from srh_core.jsonio import dumps
from srh_core.types import CandidateRecord, ToolCallResult
from srh_workers.store.scripts import reply_text

if TYPE_CHECKING:
    from redis import Redis

    from srh_workers.store.keys import RunKeys
    from srh_workers.store.scripts import RunScripts

__all__ = ["FlowState", "StoredSample", "sample_record"]


@dataclass(frozen=True, slots=True)
class StoredSample:
    """One sample's stored record: its tool results and, when its task found them, its
    candidates (None in a record written before they were kept: the closer computes them)."""

    results: list[ToolCallResult]
    candidates: list[CandidateRecord] | None = None


def sample_record(results: Sequence[ToolCallResult],
                  candidates: Sequence[CandidateRecord] | None) -> str:
    """A sample's results field: ``{"results": [...], "candidates": [...]}`` as JSON text.

    Records written before the candidates were kept are a bare results list;
    :func:`_stored_sample` reads both, so a run in flight during an upgrade closes.
    """
    return dumps({"results": [r.to_dict() for r in results],
                  "candidates": None if candidates is None else [c.to_dict()
                                                                 for c in candidates]})


class FlowState:
    """The flow keys of one run, read and written through :class:`RunKeys`.

    Args:
        client: A redis-py client.
        keys: The run's key names.
        scripts: The store's registered Lua scripts.
    """

    def __init__(self, client: Redis, keys: RunKeys, scripts: RunScripts) -> None:
        self.client = client
        self.keys = keys
        self._scripts = scripts

    @property
    def run_id(self) -> str:
        return self.keys.run_id

    def sample_keys(self, R: int, C: int, L: int) -> tuple[str, str, str]:
        """The flow KEYS of a sample's write: the K-set, the results hash, the advance flag."""
        return self.keys.done(R, C, L), self.keys.results(R, C, L), self.keys.advanced(R, C, L)

    def plan_keys(self, R: int, C: int, L: int) -> tuple[str, str, str]:
        """The flow KEYS of a plan's write: the plan, the registry, the request counter."""
        return self.keys.plan(R, C, L), self.keys.registry, self.keys.requests

    # ------------------------------------------------------------- branches
    def load_branch(self, R: int, C: int) -> BranchState:
        raw = self.client.get(self.keys.branch(R, C))
        if raw is None:
            raise SearchStateError(f"Run {self.run_id}: branch R{R}-C{C} has no state.")
        return BranchState.from_dict(json.loads(raw))

    def load_branches(self, R: int, width: int) -> list[BranchState | None]:
        """The states of branches 1..width of restart R (None where none is stored)."""
        values = self.client.mget([self.keys.branch(R, C) for C in range(1, width + 1)])
        return [None if v is None else BranchState.from_dict(json.loads(v)) for v in values]

    def save_branches(self, branches: Iterable[BranchState], *, only_new: bool = False) -> None:
        """Store branch states (with ``only_new``, only where none is stored yet).

        Each branch's state is one SET, whole by itself; the states of several
        branches need not change together (every reader takes each as it is).
        """
        pipe = self.client.pipeline(transaction=False)
        for branch in branches:
            key = self.keys.branch(branch.R, branch.C)
            pipe.sadd(self.keys.registry, key)
            pipe.set(key, dumps(branch.to_dict()), nx=only_new)
        pipe.execute()

    def latest_restart(self) -> int:
        """The highest restart with stored branches (0 before the first)."""
        restart = 0
        while self.client.exists(self.keys.branch(restart + 1, 1)):
            restart += 1
        return restart

    # ---------------------------------------------------------- step reads
    def step_state(self, R: int, C: int, L: int) -> tuple[BranchState, StepPlan | None,
                                                           str | None]:
        """A branch step task's reads, in one round trip: branch, plan, stop reason."""
        pipe = self.client.pipeline(transaction=False)
        pipe.get(self.keys.branch(R, C))
        pipe.get(self.keys.plan(R, C, L))
        pipe.get(self.keys.stop)
        branch, plan, stop = pipe.execute()
        if branch is None:
            raise SearchStateError(f"Run {self.run_id}: branch R{R}-C{C} has no state.")
        return (BranchState.from_dict(json.loads(branch)), _plan(plan),
                None if stop is None else reply_text(stop))

    def sample_state(self, R: int, C: int, L: int, K: int
                     ) -> tuple[StepPlan | None, list[ToolCallResult] | None]:
        """A tool task's reads, in one round trip: the step plan and sample K's stored results."""
        pipe = self.client.pipeline(transaction=False)
        pipe.get(self.keys.plan(R, C, L))
        pipe.hget(self.keys.results(R, C, L), str(K))
        plan, results = pipe.execute()
        return _plan(plan), None if results is None else _results(results)

    def close_state(self, R: int, C: int, L: int
                    ) -> tuple[BranchState, StepPlan | None, dict[int, StoredSample]]:
        """A step's closing reads, in one round trip: branch, plan and every sample's record
        (its results and the candidates its task found)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.get(self.keys.branch(R, C))
        pipe.get(self.keys.plan(R, C, L))
        pipe.hgetall(self.keys.results(R, C, L))
        branch, plan, results = pipe.execute()
        if branch is None:
            raise SearchStateError(f"Run {self.run_id}: branch R{R}-C{C} has no state.")
        by_sample = {int(reply_text(k)): _stored_sample(v) for k, v in results.items()}
        return BranchState.from_dict(json.loads(branch)), _plan(plan), by_sample

    def load_plan(self, R: int, C: int, L: int) -> StepPlan | None:
        return _plan(self.client.get(self.keys.plan(R, C, L)))

    def plans(self) -> list[dict[str, Any]]:
        """Every stored step plan, by coordinate (for ``plans.jsonl``)."""
        names = sorted(reply_text(k) for k in self.client.smembers(self.keys.registry)
                       if ":plan:" in reply_text(k))
        values = self.client.mget(names) if names else []
        plans = [json.loads(value) for value in values if value is not None]
        return sorted(plans, key=lambda p: (p["R"], p["L"], p["C"]))

    def store_results(self, R: int, C: int, L: int, K: int,
                      results: Sequence[ToolCallResult],
                      candidates: Sequence[CandidateRecord] | None = None) -> None:
        """Store sample K's results (and candidates) unless stored (first write wins)."""
        key = self.keys.results(R, C, L)
        pipe = self.client.pipeline(transaction=True)
        pipe.sadd(self.keys.registry, key)
        pipe.hsetnx(key, str(K), sample_record(results, candidates))
        pipe.execute()

    # -------------------------------------------------------- coordination
    def stop_reason(self) -> str | None:
        raw = self.client.get(self.keys.stop)
        return None if raw is None else reply_text(raw)

    def request_stop(self, reason: str) -> None:
        self.client.set(self.keys.stop, reason, nx=True)

    def model_requests(self) -> int:
        return int(self.client.get(self.keys.requests) or 0)

    def finish_branch(self, branch: BranchState) -> int:
        """Store the branch's final state and count it finished; how many of its restart are.

        Idempotent: a re-delivered call counts the branch once. Whoever sees
        the count reach the number of branches calls :meth:`claim_restart`.
        """
        keys = (self.keys.restart_finished(branch.R), self.keys.registry,
                self.keys.branch(branch.R, branch.C))
        return int(self._scripts.call("finish_branch", keys,
                                      [branch.C, dumps(branch.to_dict())]))

    def level_done(self, R: int, L: int, C: int, width: int) -> bool:
        """Branch C is done with step level L; True for the one caller that releases the level."""
        keys = (self.keys.level(R, L), self.keys.restart_finished(R),
                self.keys.level_released(R, L), self.keys.registry)
        return bool(self._scripts.call("level_done", keys, [C, width]))

    def _claim(self, flag: str, claimant: str | int) -> bool:
        return bool(self._scripts.call("claim", (flag, self.keys.registry), [str(claimant)]))

    def claim_advance(self, R: int, C: int, L: int, claimant: str | int) -> bool:
        """SET NX the step's advanced flag: True for one claimant only (and its re-deliveries)."""
        return self._claim(self.keys.advanced(R, C, L), claimant)

    def claim_restart(self, R: int, claimant: str | int) -> bool:
        """SET NX the flag that moves the run past restart R; True for one claimant (branch C)."""
        return self._claim(self.keys.restart_advanced(R), claimant)

    # ---------------------------------------------------------------- lock
    @property
    def lock_key(self) -> str:
        """The whole-run task's lock (a control change WATCHes it)."""
        return self.keys.lock

    def hold_lock(self, owner: str, seconds: float) -> bool:
        """Take or renew the run's lock for ``owner``; False while another owner holds it."""
        key, ms = self.keys.lock, max(1, int(seconds * 1000))
        pipe = self.client.pipeline(transaction=False)
        pipe.set(key, owner, nx=True, px=ms)
        pipe.get(key)
        _, holder = pipe.execute()
        if holder is not None and reply_text(holder) == owner:
            self.client.pexpire(key, ms)
            return True
        return False

    def release_lock(self, owner: str) -> bool:
        """Give the run's lock up, if ``owner`` holds it."""
        return bool(self._scripts.call("release", (self.keys.lock,), [owner]))

    def queue_unlock(self, pipe: Any) -> None:
        """Queue the lock's deletion on a caller's MULTI (a control change that releases it)."""
        pipe.delete(self.keys.lock)


def _plan(raw: Any) -> StepPlan | None:
    return None if raw is None else StepPlan.from_dict(json.loads(raw))


def _results(raw: bytes | str) -> list[ToolCallResult]:
    return _stored_sample(raw).results


def _stored_sample(raw: bytes | str) -> StoredSample:
    data = json.loads(raw)
    if isinstance(data, list):  # written before the candidates were kept
        return StoredSample([ToolCallResult.from_dict(item) for item in data])
    found = data.get("candidates")
    return StoredSample([ToolCallResult.from_dict(item) for item in data["results"]],
                        None if found is None else [CandidateRecord.from_dict(c)
                                                    for c in found])
