"""SearchRunState: the authoritative in-process record of one run.

It holds the search tree (one :class:`SearchNode` per model response, keyed
by ``{run_id}:R{R}-C{C}-L{L}-K{K}``), the candidate pool, and the ranking and
Pareto front computed by :mod:`srh_core.ranking`. It is the embedded
implementation of the ``CandidateStore`` seam; the distributed runtime keeps
the same records in Redis.

Every write is idempotent: recording a node id twice, or the same formula
(canonical key) for the same node twice, changes nothing and returns False.

It also keeps the run's opened steps (:class:`~srh_core.records.StepPlan`,
first write wins) and its tool-call log. With a ``save_path`` every record
goes to the run directory as it is made (crash-safely; the layout belongs
to :class:`srh_core.embedded.run_dir.RunDirectory`).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from srh_core.embedded.run_dir import RunDirectory, run_inputs
from srh_core.errors import SearchStateError
from srh_core.ranking import (
    RankingPolicy,
    Selection,
    pareto_front,
    pareto_indices,
    rank_candidates,
    ranked_result,
)
from srh_core.records import (
    RunTotals,
    SampleScope,
    StepPlan,
    call_seconds,
    node_id,
    node_label,
    plan_spend,
    response_records,
    tool_call_record,
    tool_seconds,
)
from srh_core.types import (
    CandidateRecord,
    ParentLink,
    ParentRelation,
    SearchCoordinate,
    SearchNode,
    SearchResult,
    ToolCall,
    ToolCallResult,
    json_value,
)

SNAPSHOT_VERSION = 1
CONTENT_PREVIEW_CHARS = 2_000
RESULT_PREVIEW_CHARS = 600


class SearchRunState:
    """Nodes, parent links, candidates, ranking and Pareto front of one run.

    Args:
        save_path: Run directory, or None to keep everything in memory.
        ranking_metric: Metric that ranks candidates (e.g. "mse").
        larger_is_better: Whether larger metric values rank higher.
        agent_metadata: Settings and facts recorded in ``run.json``.
        run_id: Stable run identifier; a random one when None.
    """

    def __init__(
        self,
        save_path: str | Path | None,
        ranking_metric: str,
        larger_is_better: bool,
        agent_metadata: dict[str, Any] | None = None,
        run_id: str | None = None,
    ) -> None:
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.policy = RankingPolicy(metric=ranking_metric, larger_is_better=larger_is_better)
        self.agent_metadata = dict(agent_metadata or {})
        self.nodes: dict[str, SearchNode] = {}
        # Each node's JSON record, made once when it is recorded (nodes do not
        # change after that): a snapshot then costs no re-serialisation of the
        # tree it already wrote, so checkpointing every step stays O(new nodes).
        self._node_records: dict[str, dict[str, Any]] = {}
        self._candidates: dict[tuple[str, str], CandidateRecord] = {}
        self._ranked: list[CandidateRecord] | None = None
        self.plans: dict[tuple[int, int, int], dict[str, Any]] = {}

        self._spend = RunTotals()
        self._started = time.monotonic()
        self._lock = threading.RLock()
        self.run_dir: RunDirectory | None = None
        if save_path is not None:
            self._open_directory(Path(save_path))
            self.run_dir.write_run_record(self.run_id, self.agent_metadata)

    def _open_directory(self, save_path: Path) -> None:
        self.run_dir = RunDirectory(save_path)

    @property
    def save_path(self) -> Path | None:
        return None if self.run_dir is None else self.run_dir.path

    @property
    def ranking_metric(self) -> str:
        return self.policy.metric

    @property
    def larger_is_better(self) -> bool:
        return self.policy.larger_is_better

    # -------------------------------------------------------------- naming
    @staticmethod
    def now() -> str:
        return datetime.now(UTC).isoformat(timespec="milliseconds")

    node_label = staticmethod(node_label)

    def node_id(self, R: int, C: int, L: int, K: int) -> str:
        return node_id(self.run_id, R, C, L, K)

    @staticmethod
    def parent_link(parent_node_id: str, relation: ParentRelation) -> ParentLink:
        return ParentLink(parent_node_id=parent_node_id, relation=relation)

    # --------------------------------------------------------------- nodes
    def record_node(self, node: SearchNode, *, batch: SampleScope | None = None) -> bool:
        """Add one node; False (and no change) when its id is already recorded.

        ``batch`` is ignored: in memory every write applies at once.
        """
        with self._lock:
            if node.node_id in self.nodes:
                return False
            self.nodes[node.node_id] = node
            record = self._node_records[node.node_id] = node.to_dict(include_detail=True)
            if self.run_dir is not None:
                self.run_dir.append("nodes", [record])
            return True

    def register_iteration(
        self,
        response_list: Sequence[Any],
        results_list: Sequence[Sequence[Any]],
        parents: tuple[ParentLink, ...],
        prompt: list[dict[str, Any]],
        usage: Mapping[str, Any] | None,
        R: int,
        L: int,
        C: int,
    ) -> list[SearchNode]:
        """Record the K responses of one step as nodes sharing ``parents``."""
        recorded: list[SearchNode] = []
        for k, (response, results) in enumerate(zip(response_list, results_list, strict=True), 1):
            node = self.build_node(response, results, parents, R=R, C=C, L=L, K=k,
                                   prompt=prompt if k == 1 else None, usage=usage)
            if self.record_node(node):
                recorded.append(node)
        return recorded

    def build_node(
        self,
        response: Any,
        results: Sequence[Any],
        parents: tuple[ParentLink, ...],
        *,
        R: int,
        C: int,
        L: int,
        K: int,
        prompt: list[dict[str, Any]] | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> SearchNode:
        """Build (without recording) the node of one response and its tool results.

        The prompt is stored on the K=1 node of a step only; its siblings
        point at it with ``prompt_node``, which keeps the log linear in size.
        """
        content, calls, message = response_parts(response)
        coordinate = SearchCoordinate(R=R, C=C, L=L, K=K)
        detail: dict[str, Any] = {
            "content": content,
            "message": json_value(message),
            "tool_calls": [json_value(call) for call in calls],
            "tool_results": [json_value(result) for result in results],
            "usage": json_value(node_usage(usage, K)),
        }
        if prompt is not None:
            detail["prompt"] = json_value(prompt)
        else:
            detail["prompt_node"] = self.node_id(R, C, L, 1)
        return SearchNode(
            run_id=self.run_id, node_id=self.node_id(R, C, L, K), node_label=coordinate.label,
            coordinate=coordinate, parents=tuple(parents), created_at=self.now(),
            core=node_core(content, calls, results), detail=detail)

    @property
    def node_count(self) -> int:
        with self._lock:
            return len(self.nodes)

    @property
    def latest_coordinate(self) -> SearchCoordinate | None:
        """The furthest coordinate recorded (by R, L, C, K), whatever order nodes came in."""
        with self._lock:
            coordinates = [node.coordinate for node in self.nodes.values()]
        return max(coordinates, key=coordinate_order, default=None)

    def node_record(self, node_id: str) -> dict[str, Any] | None:
        with self._lock:
            node = self.nodes.get(node_id)
        return node.to_dict() if node is not None else None

    def records(self, *, include_detail: bool = False) -> list[dict[str, Any]]:
        with self._lock:
            nodes = list(self.nodes.values())
        return [node.to_dict(include_detail=include_detail) for node in nodes]

    # ---------------------------------------------------------- candidates
    def push_candidate(self, candidate: CandidateRecord, *,
                       batch: SampleScope | None = None) -> bool:
        """Add a candidate to the pool (``batch`` is ignored: applied at once).

        Returns:
            False, without raising, when the candidate is unrankable (missing
            or non-finite metric or complexity) or already recorded for the
            same node with the same canonical key; True when added.
        """
        if self.policy.sort_key(candidate) is None:
            return False
        key = (candidate.node_id, candidate.canonical_key)
        with self._lock:
            if key in self._candidates:
                return False
            self._candidates[key] = candidate
            self._ranked = None
            if self.run_dir is not None:
                self.run_dir.append("candidates", [candidate.to_dict()])
        return True

    def log_tool_calls(self, coordinate: Mapping[str, int], calls: Sequence[ToolCall],
                       results: Sequence[ToolCallResult], forced: bool, *,
                       batch: SampleScope | None = None) -> None:
        """Append executed calls to ``tool_calls.jsonl`` (nothing is kept in memory)."""
        seconds = sum(call_seconds(result.meta_data) for result in results)
        with self._lock:
            self._spend += RunTotals(tool_seconds=seconds)
        if self.run_dir is not None:
            self.run_dir.append("tool_calls", [tool_call_record(coordinate, call, result, forced)
                                               for call, result in zip(calls, results,
                                                                       strict=False)])

    @contextlib.contextmanager
    def sample(self, R: int, C: int, L: int, K: int, samples: int) -> Iterator[SampleScope]:
        """One sample's writes: applied as they are made (nothing to batch in memory)."""
        yield SampleScope()

    # --------------------------------------------------------------- plans
    def save_plan(self, plan: StepPlan) -> StepPlan:
        """Keep an opened step unless one is kept for its coordinate; return the kept one."""
        key = (plan.R, plan.C, plan.L)
        with self._lock:
            if key not in self.plans:
                self.plans[key] = plan.to_dict()
                self._spend += plan_spend(plan)
                if self.run_dir is not None:
                    self.run_dir.append("plans", [self.plans[key]])
                    self.run_dir.append("response", response_records(self.run_id, plan))
            return StepPlan.from_dict(self.plans[key])

    # ---------------------------------------------------------- accounting
    def spend(self) -> RunTotals:
        """The run's totals so far: tokens, cost, model, tool and wall time."""
        with self._lock:
            return self._spend.with_times(
                wall_seconds=self._spend.wall_seconds + time.monotonic() - self._started)

    run_totals = spend

    def load_plan(self, R: int, C: int, L: int) -> StepPlan | None:
        with self._lock:
            stored = self.plans.get((R, C, L))
        return None if stored is None else StepPlan.from_dict(stored)

    def candidates(self) -> list[CandidateRecord]:
        """Every pooled candidate in insertion order (duplicates across nodes kept)."""
        with self._lock:
            return list(self._candidates.values())

    def ranked_candidates(self) -> list[CandidateRecord]:
        """Ranked pool, best first, one entry per canonical key."""
        with self._lock:
            if self._ranked is None:
                self._ranked = rank_candidates(self._candidates.values(), self.policy)
            return list(self._ranked)

    def top_k(self, k: int) -> list[CandidateRecord]:
        return self.ranked_candidates()[: max(0, k)]

    def best_candidate(self) -> CandidateRecord | None:
        ranked = self.ranked_candidates()
        return ranked[0] if ranked else None

    def pareto_indices(self, candidates: list[CandidateRecord] | None = None) -> list[int]:
        """Indices of the Pareto front in ``candidates`` (default: the ranked pool)."""
        return pareto_indices(self.ranked_candidates() if candidates is None else candidates)

    def pareto_front(self) -> list[CandidateRecord]:
        return pareto_front(self.ranked_candidates())

    get_pareto_front = pareto_front

    def update_diagnostics(self, formula: str, diagnostics: Mapping[str, Any]) -> None:
        """Attach diagnostics (e.g. from ``eic``) to every pooled record of ``formula``."""
        with self._lock:
            for candidate in self._candidates.values():
                if candidate.formula == formula:
                    candidate.details["diagnostics"] = json_value(dict(diagnostics))

    # -------------------------------------------------------------- result
    def result(self, status: str, progress: str, *, stop_reason: str | None = None,
               selection: Selection = "best") -> SearchResult:
        """Build the result from the ranked pool; written to ``result.json`` when saving.

        ``selection`` picks the reported best candidate (:func:`srh_core.ranking.select_best`).
        """
        result = ranked_result(self.ranked_candidates(), self.policy, selection, status=status,
                               progress=progress, run_id=self.run_id, stop_reason=stop_reason,
                               totals=self.spend().to_dict())
        if self.run_dir is not None:
            self.run_dir.write_result(result)
        return result

    # ------------------------------------------------------ snapshot/resume
    def export_state(self) -> dict[str, Any]:
        """Everything needed to rebuild this run without replaying work."""
        with self._lock:
            return {
                "version": SNAPSHOT_VERSION,
                "run_id": self.run_id,
                "ranking_metric": self.policy.metric,
                "larger_is_better": self.policy.larger_is_better,
                "agent_metadata": json_value(self.agent_metadata),
                "nodes": [self._node_record(node) for node in self.nodes.values()],
                "candidates": [candidate.to_dict() for candidate in self._candidates.values()],
                "spend": self.spend().to_dict(),
            }

    def _node_record(self, node: SearchNode) -> dict[str, Any]:
        record = self._node_records.get(node.node_id)
        if record is None:
            record = self._node_records[node.node_id] = node.to_dict(include_detail=True)
        return record

    @classmethod
    def from_state(
        cls, snapshot: Mapping[str, Any], save_path: str | Path | None = None
    ) -> SearchRunState:
        """Rebuild a run from :meth:`export_state`.

        With ``save_path``, the node and candidate logs are rewritten to hold
        exactly the snapshot's records, dropping any written after it (a step
        that will be re-run on resume); step plans come back from the run
        directory's ``plans.jsonl``, so no step whose responses arrived is
        sampled again.

        Raises:
            SearchStateError: When the snapshot is malformed or of another version.
        """
        if snapshot.get("version") != SNAPSHOT_VERSION:
            raise SearchStateError(f"Snapshot version {snapshot.get('version')!r} is not "
                                   f"supported; expected {SNAPSHOT_VERSION}.")
        try:
            state = cls(None, snapshot["ranking_metric"], bool(snapshot["larger_is_better"]),
                        agent_metadata=snapshot.get("agent_metadata"), run_id=snapshot["run_id"])
            for node in snapshot.get("nodes", []):
                state.nodes[node["node_id"]] = SearchNode.from_dict(node)
            for record in snapshot.get("candidates", []):
                candidate = CandidateRecord.from_dict(record)
                state._candidates[(candidate.node_id, candidate.canonical_key)] = candidate
            state._spend = type(state._spend).from_dict(snapshot.get("spend"))
        except (KeyError, TypeError, ValueError) as error:
            raise SearchStateError(f"Malformed run snapshot: {error!r}.") from error
        if save_path is not None:
            state._attach(Path(save_path))
        return state

    def _attach(self, save_path: Path) -> None:
        self._open_directory(save_path)
        run_dir = self.run_dir
        run_dir.rewrite("nodes", [n.to_dict() for n in self.nodes.values()])
        run_dir.rewrite("candidates", [c.to_dict() for c in self._candidates.values()])
        for record in run_dir.records("plans"):
            self.plans.setdefault((int(record["R"]), int(record["C"]), int(record["L"])), record)
        self._account_directory()

    def _account_directory(self) -> None:
        """Totals and ``response.jsonl`` from the kept plans and the tool log (on resume).

        The plans are what was paid for, also the steps after the snapshot;
        the tool log holds every call that ran, re-runs included.
        """

        run_dir = self.run_dir
        plans = [StepPlan.from_dict(record) for record in self.plans.values()]
        spent = sum((plan_spend(plan) for plan in plans), RunTotals())
        spent = spent.with_times(tool_seconds=tool_seconds(run_dir.records("tool_calls")),
                                 wall_seconds=self._spend.wall_seconds)
        self._spend = spent
        run_dir.rewrite("response", [line for plan in plans
                                     for line in response_records(self.run_id, plan)])

    def record_data(self, context: Any, description: str) -> None:
        """Keep ``context``'s data (a refresh) in the run directory, so resume runs on it.

        Nothing to do in memory, or when the run directory holds this revision already.
        """
        if self.run_dir is None or context.revision in self.run_dir.data_revisions():
            return
        problem, arrays = run_inputs(context, description, self.run_id)
        self.run_dir.write_data_revision(problem, arrays)

    def save_snapshot(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Write ``state.json`` atomically (with ``extra`` under "runtime"); return it."""
        snapshot = self.export_state()
        if extra is not None:
            snapshot["runtime"] = json_value(dict(extra))
        if self.run_dir is not None:
            self.run_dir.write_snapshot(snapshot)
        return snapshot

    @classmethod
    def load_nodes(cls, save_path: str | Path) -> list[dict[str, Any]]:
        """Read the node log of a run directory (last record of an id wins)."""
        records: dict[str, dict[str, Any]] = {}
        for record in RunDirectory(save_path).records("nodes"):
            records[record["node_id"]] = record
        return list(records.values())


def node_usage(usage: Mapping[str, Any] | None, K: int) -> dict[str, Any]:
    """A step's usage as node K keeps it: the step's fields and K's own share (``sample``)."""
    kept = dict(usage or {})
    samples = kept.pop("samples", None)
    if samples:
        kept["sample"] = next((s for s in samples if s.get("K") == K), None)
    return kept


def coordinate_order(coordinate: SearchCoordinate) -> tuple[int, int, int, int]:
    """Order of coordinates in a run: restart, then step, then branch, then sample."""
    return (coordinate.R, coordinate.L, coordinate.C, coordinate.K)


def response_parts(response: Any) -> tuple[str, list[Any], dict[str, Any]]:
    """(content, tool calls, assistant message) of a ModelResponse-like value or tuple."""
    if isinstance(response, (tuple, list)):
        content, calls, message = (list(response) + [None, None, None])[:3]
    else:
        content = getattr(response, "content", "")
        calls = getattr(response, "tool_calls", [])
        message = getattr(response, "message", None)
    return str(content or ""), list(calls or []), dict(message or {})


def node_core(content: str, calls: Sequence[Any], results: Sequence[Any]) -> dict[str, Any]:
    """The compact per-node summary shown in listings and progress views."""
    outcomes = []
    for call, result in zip(calls, results, strict=False):
        outcomes.append({
            "tool": getattr(call, "name", None),
            "ok": bool(getattr(result, "ok", False)),
            "summary": str(getattr(result, "result_str", ""))[:RESULT_PREVIEW_CHARS],
        })
    return {
        "content": content[:CONTENT_PREVIEW_CHARS],
        "n_tool_calls": len(calls),
        "n_errors": sum(1 for outcome in outcomes if not outcome["ok"]),
        "tools": outcomes,
    }
