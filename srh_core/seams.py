"""The seams between the agent loop and a runtime, one protocol each.

The agent loop (:class:`srh_core.agent.SRAgent`'s step functions) is written
once against these protocols. ``srh_core`` ships the in-process
implementations (the embedded default); ``srh_workers`` implements the same
protocols on Celery and Redis. Nothing in the loop reaches past them.

- :class:`ToolExecutor` runs a batch of tool calls for one context and
  returns the results in call order.
- :class:`CandidateStore` holds a run's nodes, candidates, step plans and
  tool-call log, and answers ranked top-k and Pareto-front queries; every
  write is idempotent (keyed by node id, or coordinate).
- :class:`BranchRunner` runs the C branches of one restart to completion
  (the barrier before restart r+1).
- :class:`ModelAdapter` is a model endpoint as the agent calls it
  (every ``srh_core.api.BaseAPI``; tests pass scripted ones).
- :class:`Evaluator` fits and scores a formula on a context
  (``srh_core.evaluator.DefaultEvaluator``, or the user's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from srh_core.types import (
    CandidateRecord,
    ParentLink,
    SearchCoordinate,
    SearchNode,
    SearchResult,
    ToolCall,
    ToolCallResult,
)

if TYPE_CHECKING:
    from srh_core.agent.branch import BranchState
    from srh_core.api.call_result import APICallResult
    from srh_core.context import AgentContext
    from srh_core.ranking import Selection
    from srh_core.records import RunTotals, SampleScope, StepPlan


@runtime_checkable
class ToolExecutor(Protocol):
    """Runs tool calls; results come back in the order of ``calls``."""

    def run(self, calls: Sequence[ToolCall], *, timeout: float | None = None,
            key: str | None = None) -> list[ToolCallResult]:
        """Execute ``calls``; a call that fails or overruns ``timeout`` gets ok=False.

        ``key`` names the batch (the node id of the sample): an executor may
        answer a batch it already ran under the same key with the stored
        results instead of running it again (the Celery executor does).
        """
        ...

    def close(self) -> None:
        """Release workers or processes the executor holds."""
        ...


@runtime_checkable
class CandidateStore(Protocol):
    """Nodes, candidates, plans, ranking and Pareto front of one run."""

    run_id: str

    def node_id(self, R: int, C: int, L: int, K: int) -> str: ...

    def build_node(self, response: Any, results: Sequence[ToolCallResult],
                   parents: tuple[ParentLink, ...], *, R: int, C: int, L: int, K: int,
                   prompt: list[dict[str, Any]] | None = None,
                   usage: Mapping[str, Any] | None = None) -> SearchNode:
        """Build (without recording) the node of one sample."""
        ...

    def record_node(self, node: SearchNode, *, batch: SampleScope | None = None) -> bool:
        """Add a node; False when its id is known to be recorded already.

        With ``batch`` (a scope from :meth:`sample`) a store may queue the
        write: it then answers True, and the batch's outcome says whether the
        node was new (the Redis store's, so a sample costs one round trip).
        """
        ...

    def push_candidate(self, candidate: CandidateRecord, *,
                       batch: SampleScope | None = None) -> bool:
        """Add a candidate; False when unrankable or already recorded (queued: True)."""
        ...

    def log_tool_calls(self, coordinate: Mapping[str, int], calls: Sequence[ToolCall],
                       results: Sequence[ToolCallResult], forced: bool, *,
                       batch: SampleScope | None = None) -> None:
        """Append executed calls to the run's tool-call log (with ``batch``: maybe queued)."""
        ...

    def sample(self, R: int, C: int, L: int, K: int, samples: int
               ) -> AbstractContextManager[SampleScope]:
        """A scope around sample K's writes (of ``samples``): the batch its writers get."""
        ...

    def save_plan(self, plan: StepPlan) -> StepPlan:
        """Store an opened step unless one is stored; return the stored one (first wins)."""
        ...

    def load_plan(self, R: int, C: int, L: int) -> StepPlan | None: ...

    def spend(self) -> RunTotals:
        """The run's totals so far (tokens, cost, model and wall time; what budgets read)."""
        ...

    def candidates(self) -> list[CandidateRecord]: ...

    def ranked_candidates(self) -> list[CandidateRecord]: ...

    def top_k(self, k: int) -> list[CandidateRecord]: ...

    def best_candidate(self) -> CandidateRecord | None: ...

    def pareto_front(self) -> list[CandidateRecord]: ...

    @property
    def node_count(self) -> int: ...

    @property
    def latest_coordinate(self) -> SearchCoordinate | None: ...

    def export_state(self) -> dict[str, Any]: ...

    def result(self, status: str, progress: str, *, stop_reason: str | None = None,
               selection: Selection = "best") -> SearchResult: ...


@runtime_checkable
class ModelAdapter(Protocol):
    """A model endpoint: K samples of a conversation per call, cancellable from a thread."""

    model: str | None

    def __call__(self, messages: str | Sequence[Mapping[str, Any]], n: int = 1,
                 **options: Any) -> APICallResult:
        """Request ``n`` samples (``options``: ``max_tokens``, ``temperature``, ``seed``...)."""
        ...

    def cancel(self) -> None:
        """Cancel every call in flight; they raise ``ModelRequestCancelledError``."""
        ...


@runtime_checkable
class Evaluator(Protocol):
    """Fits a formula's parameters and scores it on a context (one split)."""

    def fit(self, f: Any, y: Any, context: AgentContext, *,
            fit_constants: bool | None = None) -> Any:
        """``f`` with its parameters fitted so that it approximates ``y`` on ``context``."""
        ...

    def evaluate(self, f: Any, y: Any, context: AgentContext) -> Mapping[str, float]:
        """The metrics of ``y = f`` on ``context`` (mse, r2, ...)."""
        ...


@runtime_checkable
class BranchRunner(Protocol):
    """Runs every branch of one restart; returns when all of them are done."""

    def run_restart(self, branches: Sequence[BranchState]) -> list[BranchState]:
        """Advance each branch until it finishes; return their final states."""
        ...


@runtime_checkable
class RunControl(Protocol):
    """What a runtime asks before a branch opens a step: stop, hold, or go on?"""

    def stop_reason(self) -> str | None:
        """A stop reason (:mod:`srh_core.agent.outcome`) once the run must stop, else None."""
        ...

    def paused(self) -> bool:
        """True while no new step may open (the run is held; its branches stay as they are)."""
        ...

    def wait_release(self) -> bool:
        """After a hold with no step in flight: wait for the release, then True (ask again).

        False when this runtime keeps no thread for a held run (a whole-run
        task parks it): the runner returns with its branches as they are.
        """
        ...


@runtime_checkable
class PauseGate(Protocol):
    """A pause the embedded runtime holds its branches for (an interactive run's controls).

    The scheduler's gate asks :meth:`paused` before a step opens; the runner
    holds the branch with :meth:`wait_release` and asks again.
    """

    def paused(self) -> bool:
        """True while a pause is asked (input queued releases it): no step may open."""
        ...

    def wait_release(self) -> None:
        """Block until the pause is released (resume, a message, a transition, the run's end)."""
        ...


RunSnapshot = Mapping[str, Any]
