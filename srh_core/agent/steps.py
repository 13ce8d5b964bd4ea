"""What a runtime calls around the agent's step functions, the same in both runtimes.

- :func:`opened_step`: the plan of a branch's next step, the stored one (a
  resumed run, a re-delivered task) or a new one, stored before any tool
  runs, so a step whose responses arrived is never sampled again;
- :func:`sample_results`: one sample run inside its store's sample scope,
  its writes given the scope's batch (:class:`SampleStore`), its candidates
  computed once (:class:`SampleRun`).

The records they pass (:class:`~srh_core.records.StepPlan`, the sample
scope) live in :mod:`srh_core.records`, below every layer that keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from srh_core.records import SampleScope, StepPlan
from srh_core.types import CandidateRecord, SearchNode, ToolCall, ToolCallResult

if TYPE_CHECKING:
    from srh_core.agent.branch import BranchState
    from srh_core.agent.sragent import SRAgent
    from srh_core.seams import CandidateStore


#: ``opened_step``'s ``stored`` when the caller did not read the stored plan.
UNREAD: Any = object()


def opened_step(agent: SRAgent, branch: BranchState, *, stored: StepPlan | None = UNREAD,
                requests: AbstractContextManager[Any] | None = None) -> StepPlan | None:
    """The plan of the branch's next step: the stored one, else a new one, stored first.

    None when ``prepare_iteration`` stopped the branch (the branch says why).

    Args:
        agent: The bound agent.
        branch: The branch about to open step ``branch.L``.
        stored: The stored plan when the caller read it already (None: there is none).
        requests: Entered around the opening (a Celery step bounds its model request).
    """
    store = agent.require_store()
    plan = store.load_plan(branch.R, branch.C, branch.L) if stored is UNREAD else stored
    if plan is not None:
        return plan
    with requests or nullcontext():
        plan = agent.open_step(branch)
    return None if plan is None else store.save_plan(plan)


def sample_results(agent: SRAgent, plan: StepPlan, K: int) -> SampleRun:
    """Run sample K of ``plan`` inside the store's sample scope: its results and candidates.

    A store may batch the sample's writes into one (the Redis store does);
    the run's ``outcome`` then says what that write did.
    """
    store = agent.require_store()
    with store.sample(plan.R, plan.C, plan.L, K, plan.K) as scope:
        run = agent.writing_to(SampleStore(store, scope)).run_sample(plan, K)
        scope.keep_results(run.results, run.candidates)
    run.outcome = getattr(scope, "outcome", None)
    return run


class SampleStore:
    """A run's store as the hooks of one sample see it: its writes carry the sample's batch.

    Reads go to the store; ``record_node``, ``push_candidate`` and
    ``log_tool_calls`` pass ``batch`` explicitly, so a store may send the
    sample's writes at once (the Redis store does) with no ambient state.
    """

    def __init__(self, store: CandidateStore, batch: SampleScope) -> None:
        self.store = store
        self.batch = batch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def record_node(self, node: SearchNode, *, batch: SampleScope | None = None) -> bool:
        return self.store.record_node(node, batch=batch or self.batch)

    def push_candidate(self, candidate: CandidateRecord, *,
                       batch: SampleScope | None = None) -> bool:
        return self.store.push_candidate(candidate, batch=batch or self.batch)

    def log_tool_calls(self, coordinate: Mapping[str, int], calls: Sequence[ToolCall],
                       results: Sequence[ToolCallResult], forced: bool, *,
                       batch: SampleScope | None = None) -> None:
        self.store.log_tool_calls(coordinate, calls, results, forced, batch=batch or self.batch)


@dataclass(slots=True)
class SampleRun:
    """One sample of a step, run: its tool results and its candidates (computed once).

    Attributes:
        results: The sample's tool results, in call order.
        candidates: Its eligible candidates (``SRAgent.sample_candidates``), in call order.
        outcome: What the store's batched write did (the Redis store's), else None.
    """

    results: list[ToolCallResult]
    candidates: list[CandidateRecord]
    outcome: Any = None


