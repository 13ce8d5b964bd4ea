"""Demands and reduction plans: where structural subtrees are evaluated, and how sums fold.

A *demand* is a set of ``M`` points in index space (one int array per index
name). Every value computed under a demand carries a trailing axis of
length ``M`` (or 1, broadcasting). The root of an expression with free
indices ``(i, j)`` is evaluated on the complete grid ``N x N`` (C order);
without free indices on the unit demand (one point, no names).

A relation reduction ``sum[j](A[i, j], f)`` evaluates ``f`` on the relation's
entries that match the requested points only (``O(E)`` points), and folds
them with one ``np.bincount`` (over flattened offsets when there are leading
sample axes), or ``np.add.reduceat`` when the entries come sorted by output
point, so no Python loop ever runs over nodes or edges. A table without
repeated rows is used in table order (edge fields are then read without a
gather). Plans are built once per (node, demand) and cached in the
evaluation environment; plans on the complete grid depend on the table alone
and are cached with its compiled form, so repeated evaluations reuse them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import EvaluationError
from .graph_relations import Entries, encode, lookup_positions

__all__ = ["Demand", "GatherPlan", "ReductionPlan", "UNIT", "grid", "to_points"]


@dataclass(frozen=True, slots=True)
class Provenance:
    """The points of a demand are rows of one relation table.

    Attributes:
        table: Name of the relation symbol.
        rows: Table row of each point; None when point ``k`` is row ``k``.
        bound: Index name -> table column.
    """

    table: str
    rows: np.ndarray | None
    bound: tuple[tuple[str, int], ...]

    def binds(self, table: str, names: tuple[str, ...]) -> bool:
        """Whether ``names`` read this table's columns 0, 1, ... in order."""
        if table != self.table:
            return False
        bound = dict(self.bound)
        return all(bound.get(name) == column for column, name in enumerate(names))


@dataclass(frozen=True, slots=True, eq=False)
class Demand:
    """Points at which a structural subtree is evaluated.

    Attributes:
        names: Index names.
        columns: Index name -> int coordinates ``(size,)``.
        size: Number of points.
        complete: The points are the whole grid over ``names`` in C order.
        provenance: Set when the points are rows of one relation table.
    """

    names: tuple[str, ...]
    columns: dict[str, np.ndarray]
    size: int
    complete: bool = False
    provenance: Provenance | None = None

    def keys(self, names: tuple[str, ...], num_nodes: int) -> np.ndarray:
        """Mixed-radix keys of the points over ``names``."""
        return encode([self.columns[name] for name in names], num_nodes)


UNIT = Demand((), {}, 1, True)
"""One point and no index: the demand of a subtree without free indices."""


@functools.lru_cache(maxsize=64)
def grid(names: tuple[str, ...], num_nodes: int) -> Demand:
    """The complete grid over ``names`` (C order); the unit demand for no names (cached)."""
    if not names:
        return UNIT
    size = num_nodes ** len(names)
    if size > 50_000_000:
        raise EvaluationError(f"{len(names)} free indices over {num_nodes} nodes would need "
                              f"{size} points; restrict the sum to a relation",
                              reason="too many points")
    axes = np.unravel_index(np.arange(size), (num_nodes,) * len(names))
    columns = {name: axis.astype(np.intp) for name, axis in zip(names, axes, strict=True)}
    for column in columns.values():
        column.setflags(write=False)
    return Demand(names, columns, size, True)


def to_points(value: Any, size: int) -> np.ndarray:
    """``value`` with a trailing axis of exactly ``size`` points (broadcast view)."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim and array.shape[-1] == size:
        return array
    if array.ndim and array.shape[-1] != 1:
        raise EvaluationError(f"a value of shape {array.shape} does not align with {size} "
                              "structural points", reason="shape mismatch")
    return np.broadcast_to(array, (*array.shape[:-1], size) if array.ndim else (size,))


@dataclass(frozen=True, slots=True)
class _Requested:
    """The distinct points a reduction must produce, and how to expand back."""

    columns: dict[str, np.ndarray]
    keys: np.ndarray
    inverse: np.ndarray | None
    complete: bool

    @property
    def size(self) -> int:
        return int(self.keys.size)


def requested(free: tuple[str, ...], outer: Demand, num_nodes: int) -> _Requested:
    """Project ``outer`` onto ``free``: the distinct output points of a reduction."""
    if not free:
        return _Requested({}, np.zeros(1, dtype=np.int64), None, True)
    if outer.complete and set(free) <= set(outer.names):
        square = grid(free, num_nodes)
        inverse = None if outer.names == free else outer.keys(free, num_nodes)
        return _Requested(square.columns, np.arange(square.size, dtype=np.int64), inverse, True)
    keys, inverse = np.unique(outer.keys(free, num_nodes), return_inverse=True)
    columns = {name: outer.columns[name] for name in free}
    if keys.size == outer.size and bool(np.all(inverse == np.arange(outer.size))):
        return _Requested(columns, keys, None, False)
    first = np.zeros(keys.size, dtype=np.intp)
    first[inverse[::-1]] = np.arange(outer.size)[::-1]
    return _Requested({name: c[first] for name, c in columns.items()}, keys, inverse, False)


class ReductionPlan:
    """How one reduction node folds its operand for one outer demand."""

    __slots__ = ("child", "weights", "groups", "starts", "present", "out_size", "inverse",
                 "dense", "offsets")

    def __init__(self, child: Demand, out_size: int, inverse: np.ndarray | None,
                 weights: np.ndarray | None = None, groups: np.ndarray | None = None,
                 dense: int = 0) -> None:
        self.child, self.out_size, self.inverse = child, out_size, inverse
        self.weights, self.dense, self.groups = weights, dense, groups
        self.starts = self.present = None
        self.offsets: dict[int, np.ndarray] = {}
        if groups is not None and groups.size and bool(np.all(groups[1:] >= groups[:-1])):
            boundary = np.empty(groups.size, dtype=bool)
            boundary[0] = True
            np.not_equal(groups[1:], groups[:-1], out=boundary[1:])
            self.starts = np.flatnonzero(boundary)
            self.present = groups[self.starts] if self.starts.size != out_size else None

    def apply(self, value: Any) -> np.ndarray:
        """Fold point values ``(..., child.size)`` into ``(..., out_size)``."""
        points = to_points(value, self.child.size)
        if self.weights is not None:
            points = points * self.weights
        if self.dense:
            folded = points.reshape(*points.shape[:-1], self.out_size, self.dense).sum(axis=-1)
        elif self.groups is None or not self.groups.size:
            folded = np.zeros((*points.shape[:-1], self.out_size))
        elif self.starts is not None:
            folded = np.add.reduceat(points, self.starts, axis=-1)
            if self.present is not None:
                full = np.zeros((*points.shape[:-1], self.out_size))
                full[..., self.present] = folded
                folded = full
        else:
            folded = self._bincount(points)
        return folded if self.inverse is None else np.take(folded, self.inverse, axis=-1)

    def _bincount(self, points: np.ndarray) -> np.ndarray:
        lead = points.shape[:-1]
        count = int(np.prod(lead)) if lead else 1
        if count == 1:
            folded = np.bincount(self.groups, weights=points.reshape(-1),
                                 minlength=self.out_size)
            return folded.reshape(*lead, self.out_size)
        offsets = self.offsets.get(count)
        if offsets is None:
            offsets = self.offsets[count] = (
                self.groups + self.out_size * np.arange(count)[:, None]).reshape(-1)
        folded = np.bincount(offsets, weights=points.reshape(-1),
                             minlength=count * self.out_size)
        return folded.reshape(*lead, self.out_size)


def dense_plan(free: tuple[str, ...], reduced: tuple[str, ...], outer: Demand,
               num_nodes: int) -> ReductionPlan:
    """``sum[j](f)``: every requested point times all ``N**len(reduced)`` values."""
    wanted = requested(free, outer, num_nodes)
    inner = grid(reduced, num_nodes)
    columns = {name: np.repeat(c, inner.size) for name, c in wanted.columns.items()}
    columns.update({name: np.tile(c, wanted.size) for name, c in inner.columns.items()})
    child = Demand(free + reduced, columns, wanted.size * inner.size, wanted.complete)
    return ReductionPlan(child, wanted.size, wanted.inverse, dense=inner.size)


def relation_plan(free: tuple[str, ...], entries: Entries, outer: Demand,
                  num_nodes: int) -> ReductionPlan:
    """``sum[j](A[i, j], f)``: ``f`` on the entries matching the requested points."""
    wanted = requested(free, outer, num_nodes)
    outside = tuple(name for name in free if name not in entries.names)
    if outside:
        return _joined_plan(free, outside, entries, wanted, num_nodes)
    shared = entries.derived is not None and wanted.complete and wanted.inverse is None \
        and entries.weights is None
    key = ("sum", entries.names, free, entries.identity)
    if shared and key in entries.derived:  # type: ignore[operator]
        return entries.derived[key]  # type: ignore[index]
    index = {name: k for k, name in enumerate(entries.names)}
    chosen = None
    if not free:
        groups = np.zeros(entries.size, dtype=np.intp)
    else:
        groups = encode([entries.columns[index[name]] for name in free], num_nodes)
        if not wanted.complete:
            groups, found = lookup_positions(wanted.keys, groups)
            chosen = np.flatnonzero(found)
            groups = groups[chosen]
    child = _entry_demand(entries, chosen, {})
    weights = None if entries.weights is None else _pick(entries.weights, chosen)
    plan = ReductionPlan(child, wanted.size, wanted.inverse, weights, groups)
    if shared:
        entries.derived[key] = plan  # type: ignore[index]
    return plan


def _pick(array: np.ndarray, selection: np.ndarray | None) -> np.ndarray:
    return array if selection is None else array[selection]


def _entry_demand(entries: Entries, selection: np.ndarray | None,
                  extra: dict[str, np.ndarray]) -> Demand:
    columns = {name: _pick(column, selection)
               for name, column in zip(entries.names, entries.columns, strict=True)}
    columns.update(extra)
    size = entries.size if selection is None else int(selection.size)
    provenance = None
    if entries.table is not None:
        rows = entries.rows if not entries.identity else None
        if selection is not None:
            rows = selection if rows is None else rows[selection]
        provenance = Provenance(entries.table, rows, entries.bound)
    return Demand(tuple(columns), columns, size, False, provenance)


def _joined_plan(free: tuple[str, ...], outside: tuple[str, ...], entries: Entries,
                 wanted: _Requested, num_nodes: int) -> ReductionPlan:
    """Requested points x entries agreeing on the shared indices (a sort-merge join)."""
    shared = tuple(name for name in free if name in entries.names)
    index = {name: k for k, name in enumerate(entries.names)}
    entry_keys = encode([entries.columns[index[name]] for name in shared], num_nodes) \
        if shared else np.zeros(entries.size, dtype=np.int64)
    order = np.argsort(entry_keys, kind="stable")
    point_keys = encode([wanted.columns[name] for name in shared], num_nodes) if shared else \
        np.zeros(wanted.size, dtype=np.int64)
    low = np.searchsorted(entry_keys[order], point_keys, side="left")
    counts = np.searchsorted(entry_keys[order], point_keys, side="right") - low
    groups = np.repeat(np.arange(wanted.size), counts)
    offsets = np.arange(groups.size) - np.repeat(np.cumsum(counts) - counts, counts)
    selection = order[np.repeat(low, counts) + offsets]
    extra = {name: wanted.columns[name][groups] for name in outside}
    child = _entry_demand(entries, selection, extra)
    weights = None if entries.weights is None else entries.weights[selection]
    return ReductionPlan(child, wanted.size, wanted.inverse, weights, groups)


class GatherPlan:
    """``gather(A[i, j], f)``: ``f`` at every entry, times the entry weights."""

    __slots__ = ("child", "weights")

    def __init__(self, entries: Entries) -> None:
        self.child = _entry_demand(entries, None, {})
        self.weights = entries.weights

    @classmethod
    def of(cls, entries: Entries) -> GatherPlan:
        """The plan, shared through the table's cache when there is one."""
        if entries.derived is None:
            return cls(entries)
        key = ("gather", entries.names, entries.identity)
        plan = entries.derived.get(key)
        if plan is None:
            plan = entries.derived[key] = cls(entries)
        return plan

    def apply(self, value: Any) -> np.ndarray:
        points = to_points(value, self.child.size)
        return points if self.weights is None else points * self.weights
