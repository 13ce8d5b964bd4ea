"""The three seams between the agent loop and a runtime.

The agent loop is written once against these protocols. ``srh_core`` ships
the in-process implementations (the embedded default); ``srh_workers``
implements the same protocols on Celery and Redis.

- :class:`ToolExecutor` runs a batch of tool calls for one context and
  returns the results in call order.
- :class:`CandidateStore` holds nodes and candidates, and answers ranked
  top-k and Pareto-front queries; every write is idempotent.
- :class:`BranchRunner` runs the C branches of one restart to completion
  (the barrier before restart r+1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from srh_core.types import CandidateRecord, SearchNode, SearchResult, ToolCall, ToolCallResult

if TYPE_CHECKING:
    from srh_core.agent.branch import BranchState


@runtime_checkable
class ToolExecutor(Protocol):
    """Runs tool calls; results come back in the order of ``calls``."""

    def run(self, calls: Sequence[ToolCall], *, timeout: float | None = None
            ) -> list[ToolCallResult]:
        """Execute ``calls``; a call that fails or overruns ``timeout`` gets ok=False."""
        ...

    def close(self) -> None:
        """Release workers or processes the executor holds."""
        ...


@runtime_checkable
class CandidateStore(Protocol):
    """Nodes, candidates, ranking and Pareto front of one run."""

    run_id: str

    def node_id(self, R: int, C: int, L: int, K: int) -> str: ...

    def record_node(self, node: SearchNode) -> bool:
        """Add a node; False when its id is already recorded."""
        ...

    def push_candidate(self, candidate: CandidateRecord) -> bool:
        """Add a candidate; False when unrankable or already recorded."""
        ...

    def ranked_candidates(self) -> list[CandidateRecord]: ...

    def top_k(self, k: int) -> list[CandidateRecord]: ...

    def best_candidate(self) -> CandidateRecord | None: ...

    def pareto_front(self) -> list[CandidateRecord]: ...

    @property
    def node_count(self) -> int: ...

    def result(self, status: str, progress: str, *, stop_reason: str | None = None
               ) -> SearchResult: ...


@runtime_checkable
class BranchRunner(Protocol):
    """Runs every branch of one restart; returns when all of them are done."""

    def run_restart(self, branches: Sequence[BranchState]) -> list[BranchState]:
        """Advance each branch until it finishes; return their final states."""
        ...


RunSnapshot = Mapping[str, Any]
