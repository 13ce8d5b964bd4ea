"""Domain types every agent, tool and worker shares.

All of them cross process boundaries (tool workers, branch tasks, run
directories), so each has ``to_dict()`` and, where it is read back,
``from_dict()``; both speak plain JSON values only.

JSON policy (one rule, everywhere): :func:`json_value` turns numpy scalars
and arrays into Python numbers and lists, and non-finite floats (nan, inf,
-inf) into ``null``. A ``null`` metric therefore means "not finite", and
readers treat it as unrankable.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Literal, get_args

ParentRelation = Literal["continuation", "restart_seed", "context_merge"]
SearchStatus = Literal["completed", "early_stopped", "interrupted", "failed"]
SPLITS: tuple[str, ...] = ("train", "validation")
_LIFTED_DETAILS = frozenset({"metrics", "complexity"})


def json_value(value: Any) -> Any:
    """Convert a runtime value into a standards-compliant JSON value.

    numpy scalars and arrays become Python numbers and (nested) lists;
    nan, inf and -inf become ``None``; tuples and sets become lists; objects
    with ``to_dict()`` and dataclasses become dicts; paths and enums become
    strings; anything else that JSON cannot hold becomes its ``str()``.

    Args:
        value: Any runtime value.

    Returns:
        A value ``json.dumps(..., allow_nan=False)`` accepts.
    """
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    numpy = sys.modules.get("numpy")  # a NumPy value exists only once NumPy is imported
    if numpy is not None and isinstance(value, numpy.generic):
        return json_value(value.item())
    if numpy is not None and isinstance(value, numpy.ndarray):
        return json_value(value.tolist())
    if isinstance(value, Mapping):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_value(item) for item in value]
    return _json_object(value)


def _json_object(value: Any) -> Any:
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return json_value(value.to_dict())
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: json_value(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Enum):
        return json_value(value.value)
    if isinstance(value, Path):
        return str(value)
    return str(value)


def finite_float(value: Any) -> float | None:
    """Return ``value`` as a finite float, or None when it is not one."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


@dataclass(slots=True)
class ToolCall:
    """One normalised tool call emitted by a model adapter or parser.

    Attributes:
        name: Registered tool name.
        params: Arguments as decoded from the model output.
        id: Provider call id (native function calling) or a parser-made id.
        raw: The provider-native object, when there was one (not serialised).
        raw_str: The exact text the call was parsed from, when known.
        conversation: The calling branch's recent messages, for a tool that works from
            the conversation (``BaseTool.call_conversation``); it travels with the call to
            the process that runs it and is not serialised (the run logs the prompts).
        deadline: When the call must have ended, in epoch seconds (``time.time()``): set
            by the executor from its batch's time limit (the tool timeout, or the run's
            time left), so a tool that can stop early (``expression_search``) ends its
            work in time and returns what it found instead of being cut with nothing.
            Travels with the call; not serialised.
    """

    name: str
    params: dict[str, Any]
    id: str | None = None
    raw: Any = None
    raw_str: str | None = None
    conversation: list[dict[str, str]] | None = field(default=None, repr=False, compare=False)
    deadline: float | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": json_value(self.params),
            "id": self.id,
            "raw_str": self.raw_str,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        return cls(
            name=str(data["name"]),
            params=dict(data.get("params") or {}),
            id=data.get("id"),
            raw_str=data.get("raw_str"),
        )


@dataclass(slots=True)
class ToolCallResult:
    """What the tool execution boundary returns for one call.

    ``result`` keeps the complete machine-readable value; ``result_str`` is
    the bounded text shown to the model.
    """

    ok: bool
    result: dict[str, Any]
    result_str: str
    meta_data: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        """Return ``result[key]``, falling back to ``meta_data[key]``, then default."""
        if key in self.result:
            return self.result[key]
        return self.meta_data.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "result": json_value(self.result),
            "result_str": self.result_str,
            "meta_data": json_value(self.meta_data),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCallResult:
        return cls(
            ok=bool(data["ok"]),
            result=dict(data.get("result") or {}),
            result_str=str(data.get("result_str", "")),
            meta_data=dict(data.get("meta_data") or {}),
        )

    @classmethod
    def failure(cls, message: str, **meta: Any) -> ToolCallResult:
        """Build an ``ok=False`` result whose text is ``message``."""
        return cls(ok=False, result={"error": message}, result_str=message, meta_data=meta)


@dataclass(frozen=True, slots=True)
class ToolMetadata:
    """Description and JSON parameter schema a tool exposes to the model.

    ``description`` and ``parameters`` may be omitted: the tool base class
    infers them from ``execute()``'s signature and docstring.
    """

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "parameters": json_value(self.parameters)}


@dataclass(frozen=True, slots=True, order=True)
class SearchCoordinate:
    """One-based coordinate of a search sample: restart, branch, step, sample."""

    R: int
    C: int
    L: int
    K: int

    @property
    def label(self) -> str:
        return f"R{self.R}-C{self.C}-L{self.L}-K{self.K}"

    def to_dict(self) -> dict[str, int]:
        return {"R": self.R, "C": self.C, "L": self.L, "K": self.K}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchCoordinate:
        return cls(R=int(data["R"]), C=int(data["C"]), L=int(data["L"]), K=int(data["K"]))


@dataclass(frozen=True, slots=True)
class ParentLink:
    """Typed link from a search node to one of its parents."""

    parent_node_id: str
    relation: ParentRelation

    def __post_init__(self) -> None:
        if self.relation not in get_args(ParentRelation):
            raise ValueError(
                f"ParentLink.relation must be one of {get_args(ParentRelation)}; "
                f"got {self.relation!r}."
            )

    def to_dict(self) -> dict[str, str]:
        return {"parent_node_id": self.parent_node_id, "relation": self.relation}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ParentLink:
        return cls(parent_node_id=str(data["parent_node_id"]), relation=data["relation"])


@dataclass(slots=True)
class SearchNode:
    """The recorded state of one search-tree node (one model response).

    ``core`` holds the compact summary (content, tool calls, ok flags,
    candidate formulas); ``detail`` the full payload (prompt, results,
    usage), which listings may leave out.
    """

    run_id: str
    node_id: str
    node_label: str
    coordinate: SearchCoordinate
    parents: tuple[ParentLink, ...]
    created_at: str
    core: dict[str, Any]
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, include_detail: bool = True) -> dict[str, Any]:
        record = {
            "run_id": self.run_id,
            "node_id": self.node_id,
            "node_label": self.node_label,
            "coordinate": self.coordinate.to_dict(),
            "parents": [parent.to_dict() for parent in self.parents],
            "created_at": self.created_at,
            "core": json_value(self.core),
        }
        if include_detail:
            record["detail"] = json_value(self.detail)
        return record

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchNode:
        return cls(
            run_id=str(data["run_id"]),
            node_id=str(data["node_id"]),
            node_label=str(data["node_label"]),
            coordinate=SearchCoordinate.from_dict(data["coordinate"]),
            parents=tuple(ParentLink.from_dict(p) for p in data.get("parents", [])),
            created_at=str(data["created_at"]),
            core=dict(data.get("core") or {}),
            detail=dict(data.get("detail") or {}),
        )


@dataclass(slots=True)
class CandidateRecord:
    """A candidate formula, the node that produced it, and its evaluation.

    ``details`` layout (the keys the harness relies on):

    - ``metrics``: ``{split: {metric_name: value}}`` for "train" and, when a
      validation split exists, "validation";
    - ``complexity``: node count of the engine expression, computed by the
      harness (never taken from a tool);
    - ``canonical_key``: the engine's canonical key, used to deduplicate;
    - anything else a tool reported (``tool``, ``parameters``, ``submitted``...).
    """

    formula: str
    node_id: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def complexity(self) -> int | None:
        value = self.details.get("complexity")
        return int(value) if value is not None else None

    @property
    def canonical_key(self) -> str:
        return str(self.details.get("canonical_key") or self.formula)

    def split_metrics(self, split: str) -> dict[str, Any]:
        """Return the metric dict of ``split`` ("train" or "validation"), or {}."""
        return dict(self.details.get("metrics", {}).get(split) or {})

    def metric(self, name: str, split: str) -> Any:
        """Return one metric value of one split, or None when absent."""
        return self.split_metrics(split).get(name)

    def to_dict(self) -> dict[str, Any]:
        """Return the public JSON shape: formula, node_id, complexity, metrics, details.

        ``complexity`` and ``metrics`` are lifted out of ``details`` (and put
        back by :meth:`from_dict`), so the shape carries each value once.
        """
        return {
            "formula": self.formula,
            "node_id": self.node_id,
            "complexity": self.complexity,
            "metrics": json_value(self.details.get("metrics", {})),
            "details": json_value(
                {k: v for k, v in self.details.items() if k not in _LIFTED_DETAILS}
            ),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CandidateRecord:
        details = dict(data.get("details") or {})
        details["metrics"] = dict(data.get("metrics") or details.get("metrics") or {})
        if data.get("complexity") is not None:
            details["complexity"] = data["complexity"]
        return cls(formula=str(data["formula"]), node_id=str(data["node_id"]), details=details)

    def display_dict(self) -> dict[str, Any]:
        """Flattened view for tables: formula, complexity, split, and its metrics."""
        split = "validation" if self.split_metrics("validation") else "train"
        return {
            "formula": self.formula,
            "node_id": self.node_id,
            "complexity": self.complexity,
            "split": split,
            **json_value(self.split_metrics(split)),
        }


@dataclass(slots=True)
class SearchResult:
    """Final snapshot of one run.

    ``candidates`` are ranked (best first); ``pareto_front`` and
    ``best_candidate`` are indices into that list.
    """

    status: SearchStatus
    progress: str
    candidates: list[CandidateRecord]
    pareto_front: list[int]
    best_candidate: int | None
    run_id: str | None = None
    stop_reason: str | None = None
    totals: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.status not in get_args(SearchStatus):
            raise ValueError(
                f"SearchResult.status must be one of {get_args(SearchStatus)}; "
                f"got {self.status!r}."
            )

    @property
    def best(self) -> CandidateRecord | None:
        return None if self.best_candidate is None else self.candidates[self.best_candidate]

    def front(self) -> list[CandidateRecord]:
        return [self.candidates[index] for index in self.pareto_front]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "stop_reason": self.stop_reason,
            "progress": self.progress,
            "candidates": [candidate.to_dict() for candidate in self.candidates],
            "pareto_front": list(self.pareto_front),
            "best_candidate": self.best_candidate,
            "totals": None if self.totals is None else json_value(dict(self.totals)),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchResult:
        return cls(
            status=data["status"],
            progress=str(data.get("progress", "")),
            candidates=[CandidateRecord.from_dict(c) for c in data.get("candidates", [])],
            pareto_front=[int(i) for i in data.get("pareto_front", [])],
            best_candidate=data.get("best_candidate"),
            run_id=data.get("run_id"),
            stop_reason=data.get("stop_reason"),
            totals=None if data.get("totals") is None else dict(data["totals"]),
        )
