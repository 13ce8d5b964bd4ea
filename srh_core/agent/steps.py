"""StepPlan: one opened refinement step, as plain JSON.

``SRAgent.open_step`` produces it: the prompt, the K model responses, their
usage, the parent links the K nodes will carry, and the branch's buffer as
the opening left it (``prepare_model_messages`` may add to it, e.g. the
forced initial diagnostics). Every runtime stores the plan before running
tools (the embedded runtime in its run directory, the Celery runtime in
Redis), so a step whose responses arrived is never sampled again: a resumed
run or a re-delivered task reads the plan back and goes on from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from srh_core.api import ModelResponse
from srh_core.types import (
    CandidateRecord,
    ParentLink,
    SearchNode,
    ToolCall,
    ToolCallResult,
    json_value,
)

if TYPE_CHECKING:
    from srh_core.agent.branch import BranchState
    from srh_core.agent.sragent import SRAgent
    from srh_core.seams import CandidateStore


@dataclass(slots=True)
class StepPlan:
    """The opened step (R, C, L) of a branch and its K model responses.

    Attributes:
        R, C, L: The step's coordinate.
        prompt: The messages sent to the model.
        responses: The K responses, in sample order (``response.sample`` is K).
        parents: Parent links of the step's K nodes.
        usage: Token usage of the request.
        route: Which model answered (tier, provider, model, reason).
        buffer: The branch buffer after the opening hooks; None when it equals
            ``prompt`` (the common case, stored once).
    """

    R: int
    C: int
    L: int
    prompt: list[dict[str, Any]]
    responses: list[ModelResponse]
    parents: list[ParentLink]
    usage: dict[str, Any] = field(default_factory=dict)
    route: dict[str, Any] = field(default_factory=dict)
    buffer: list[dict[str, Any]] | None = None

    @property
    def K(self) -> int:
        return len(self.responses)

    def branch_buffer(self) -> list[dict[str, Any]]:
        """The branch buffer after the step's opening (a copy)."""
        source = self.prompt if self.buffer is None else self.buffer
        return [dict(message) for message in source]

    def to_dict(self) -> dict[str, Any]:
        return {
            "R": self.R, "C": self.C, "L": self.L,
            "prompt": json_value(self.prompt),
            "responses": [response.to_dict() for response in self.responses],
            "parents": [link.to_dict() for link in self.parents],
            "usage": json_value(self.usage), "route": json_value(self.route),
            "buffer": None if self.buffer is None else json_value(self.buffer),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepPlan:
        buffer = data.get("buffer")
        return cls(
            R=int(data["R"]), C=int(data["C"]), L=int(data["L"]),
            prompt=list(data.get("prompt") or []),
            responses=[ModelResponse.from_dict(r) for r in data.get("responses") or []],
            parents=[ParentLink.from_dict(link) for link in data.get("parents") or []],
            usage=dict(data.get("usage") or {}), route=dict(data.get("route") or {}),
            buffer=None if buffer is None else list(buffer))


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
        scope.keep_results(run.results)
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


class SampleScope:
    """What a store's ``sample()`` scope yields: the sample's results, once run."""

    def __init__(self) -> None:
        self.results: list[ToolCallResult] = []

    def keep_results(self, results: list[ToolCallResult]) -> None:
        self.results = list(results)
