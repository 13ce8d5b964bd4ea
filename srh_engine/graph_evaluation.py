"""Evaluation of indexed (graph and hypergraph) expressions.

Semantics (the reference engine's, implemented with vectorised kernels):

* an expression's free indices become trailing dense output axes in order of
  first appearance: ``x[i]`` gives ``(..., N)``, ``x[i] + x[j]`` gives
  ``(..., N, N)``; ``num_nodes`` must be given, it is never inferred;
* inside an indexed expression the last axis of every array is structural:
  node fields ``(..., N)`` must be indexed (``x[i]``), edge fields
  ``(..., E)`` indexed with the relation's indices (``w[i, j]``); a bare array
  must be a scalar or end in a singleton axis ``(..., 1)``, except next to a
  ``gather`` result, where bare edge fields align with its rows;
* ``sum[j](A[i, j], f)`` is evaluated on the relation's entries only; the
  one-argument ``sum[j](f)`` enumerates all ``N`` values of ``j``;
* nested sums may not rebind an index that is still in scope.

The handlers are shared by plain evaluation and by the forward-mode Jacobian:
each takes a :class:`Mode` (the handler table to recurse with, and how to map
its results).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import EvaluationError
from .graph_analysis import StructureInfo, analyse, is_structural
from .graph_nodes import Gather, Indexed, Reduction
from .graph_plans import UNIT, Demand, GatherPlan, dense_plan, grid, relation_plan, to_points
from .graph_relations import (
    CompiledTable,
    compile_relation,
    is_relation_table,
    lookup_positions,
    raw_value,
    table_of,
)
from .nodes import Expression, Symbol

__all__ = ["GraphState", "Mode", "StructureInfo", "analyse", "handlers", "is_structural"]


class GraphState:
    """Per-environment state: node count, analyses, plans and compiled tables."""

    __slots__ = ("num_nodes", "infos", "plans", "tables", "info", "kinds")

    def __init__(self, num_nodes: int) -> None:
        self.num_nodes = num_nodes
        self.infos: dict[int, tuple[Expression, StructureInfo]] = {}
        self.plans: dict[tuple[int, int], Any] = {}
        self.tables: dict[int, CompiledTable] = {}
        self.info = StructureInfo()
        self.kinds: dict[int, tuple[Expression, bool]] = {}

    def structural(self, expression: Expression) -> bool:
        """Whether ``expression`` uses indices (cached per tree)."""
        cached = self.kinds.get(id(expression))
        if cached is None or cached[0] is not expression:
            cached = self.kinds[id(expression)] = (expression, is_structural(expression))
        return cached[1]

    def analysis(self, expression: Expression) -> StructureInfo:
        cached = self.infos.get(id(expression))
        if cached is None or cached[0] is not expression:
            cached = self.infos[id(expression)] = (expression, analyse(expression))
        self.info = cached[1]
        return cached[1]

    def plan(self, node: Expression, demand: Demand, build: Callable[[], Any]) -> Any:
        key = (id(node), id(demand))
        plan = self.plans.get(key)
        if plan is None or plan[0] is not node or plan[1] is not demand:
            plan = self.plans[key] = (node, demand, build())
        return plan[2]


@dataclass(frozen=True, slots=True)
class Mode:
    """How handlers recurse: plain values or (value, gradient) pairs.

    Attributes:
        table: Node type -> handler, used for children.
        lift: Applies a linear map to a child's result.
        leaf: Turns a data value into a result (no gradient).
        array: Symbol -> float array (the evaluator's converted-symbol cache).
    """

    table: dict[type, Callable[[Any, Any], Any]]
    lift: Callable[[Any, Callable[[Any], Any]], Any]
    leaf: Callable[[Any], Any]
    array: Callable[[Symbol, Any], Any]


def _state(env: Any) -> GraphState:
    state = env.graph
    if state is None or env.demand is None:
        raise EvaluationError("this formula uses indices (x[i], sum[j](...), gather): pass "
                              "num_nodes=N, the number of graph nodes", reason="missing num_nodes")
    return state


def _child(mode: Mode, node: Expression, env: Any, demand: Demand) -> Any:
    saved = env.demand
    env.demand = demand
    try:
        return mode.table[type(node)](node, env)
    finally:
        env.demand = saved


def _reduction(mode: Mode, node: Reduction, env: Any) -> Any:
    state = _state(env)
    demand = env.demand

    def build() -> Any:
        free = state.info.free[id(node)]
        reduced = tuple(index.name for index in node.indices)
        if node.relation is None:
            return dense_plan(free, reduced, demand, state.num_nodes)
        entries = compile_relation(node.relation, env.values, state.num_nodes, state.tables,
                                   unique=True)
        return relation_plan(free, entries, demand, state.num_nodes)

    plan = state.plan(node, demand, build)
    return mode.lift(_child(mode, node.operand, env, plan.child), plan.apply)


def _gather(mode: Mode, node: Gather, env: Any) -> Any:
    state = _state(env)
    if env.demand.size != 1 or env.demand.names:
        raise EvaluationError(f"{node} gives an entry field: index it, e.g. "
                              "gather(A[i, j], f)[i, j], before using it with indexed terms",
                              reason="index scope")
    plan = state.plan(node, env.demand, lambda: GatherPlan.of(compile_relation(
        node.relation, env.values, state.num_nodes, state.tables, unique=False)))
    return mode.lift(_child(mode, node.operand, env, plan.child), plan.apply)


def _indexed(mode: Mode, node: Indexed, env: Any) -> Any:
    base = node.base
    state = _state(env)
    if isinstance(base, Symbol):
        return mode.leaf(_symbol_field(mode, node, base, env))
    demand = env.demand
    domain = state.info.domain.get(id(base))
    if domain is not None:
        plan = state.plan(node, demand, lambda: _entry_lookup(domain, node, env))
        return mode.lift(_child(mode, base, env, UNIT), plan)
    inner = state.info.free[id(base)][0]
    source = node.indices[0].name
    child = state.plan(node, demand, lambda: Demand(
        (inner,), {inner: demand.columns[source]}, demand.size,
        demand.complete and demand.names == (source,)))
    return _child(mode, base, env, child)


def _names(node: Indexed) -> tuple[str, ...]:
    return tuple(index.name for index in node.indices)


def _symbol_field(mode: Mode, node: Indexed, symbol: Symbol, env: Any) -> np.ndarray:
    state: GraphState = env.graph
    names, demand = _names(node), env.demand
    raw = raw_value(env.values, symbol)
    if is_relation_table(raw, len(names)):
        return state.plan(node, demand, lambda: _membership(node, env))
    array = mode.array(symbol, env)
    if len(names) == 1:
        if np.ndim(array) == 0 or np.shape(array)[-1] != state.num_nodes:
            raise EvaluationError(f"node field {symbol.name!r} must have shape (..., "
                                  f"{state.num_nodes}) (num_nodes); got {np.shape(array)}",
                                  name=symbol.name, reason="shape mismatch")
        if demand.complete and demand.names == names:
            return array
        return np.take(array, demand.columns[names[0]], axis=-1)  # faster than array[..., idx]
    pick = state.plan(node, demand, lambda: _field_rows(node, symbol, array, env))
    return pick(array)


def _membership(node: Indexed, env: Any) -> np.ndarray:
    state: GraphState = env.graph
    demand, names = env.demand, _names(node)
    symbol = node.base
    if demand.provenance is not None and demand.provenance.binds(symbol.name, names):
        return np.ones(demand.size)
    compiled = table_of(node, env.values, state.num_nodes, state.tables)
    _, found = lookup_positions(compiled.keys, demand.keys(names, state.num_nodes))
    return found.astype(np.float64)


def _field_relation(symbol: Symbol, array: Any, arity: int, env: Any) -> str:
    given = env.values.get(symbol.name)
    if given is not None and hasattr(given, "relation") and hasattr(given, "values"):
        return str(given.relation)
    length = np.shape(array)[-1] if np.ndim(array) else None
    candidates = [name for name, value in env.values.items()
                  if is_relation_table(raw_value(env.values, Symbol(name)), arity)
                  and len(raw_value(env.values, Symbol(name))) == length]
    if len(candidates) != 1:
        found = f"{len(candidates)} relations fit ({', '.join(sorted(candidates))})" \
            if candidates else "no relation of that length and arity"
        raise EvaluationError(f"cannot tell which relation the edge field {symbol.name!r} "
                              f"(shape {np.shape(array)}) belongs to: {found}; pass "
                              f"RelationField(values, relation='A') or declare its structure",
                              name=symbol.name, reason="relation unknown")
    return candidates[0]


def _field_rows(node: Indexed, symbol: Symbol, array: Any, env: Any,
                ) -> Callable[[Any], np.ndarray]:
    """How to read an edge field at the demand's points (0 where a point is no entry)."""
    state: GraphState = env.graph
    demand, names = env.demand, _names(node)
    relation = _field_relation(symbol, array, len(names), env)
    table = Indexed(Symbol(relation), node.indices)
    compiled = table_of(table, env.values, state.num_nodes, state.tables)
    if np.shape(array)[-1] != len(compiled.table):
        raise EvaluationError(f"edge field {symbol.name!r} must end in {len(compiled.table)} "
                              f"entries (the rows of {relation!r}); got {np.shape(array)}",
                              name=symbol.name, reason="shape mismatch")
    if demand.provenance is not None and demand.provenance.binds(relation, names):
        return _rows_picker(demand.provenance.rows)
    if compiled.keys.size == 0:
        return lambda values: np.zeros((*np.shape(values)[:-1], demand.size))
    position, found = lookup_positions(compiled.keys, demand.keys(names, state.num_nodes))
    return _rows_picker(compiled.first_rows[position], None if bool(found.all()) else found)


def _rows_picker(rows: np.ndarray | None, found: np.ndarray | None = None,
                 ) -> Callable[[Any], np.ndarray]:
    if rows is None:
        return lambda values: values
    if found is None:
        return lambda values: np.take(values, rows, axis=-1)
    return lambda values: np.where(found, np.take(values, rows, axis=-1), 0.0)


def _entry_lookup(domain: Expression, node: Indexed, env: Any) -> Callable[[Any], Any]:
    """Map an entry field of ``domain`` (gather order) to the demand's points."""
    state: GraphState = env.graph
    demand, names = env.demand, _names(node)
    entries = compile_relation(domain, env.values, state.num_nodes, state.tables, unique=False)
    if len(names) != len(entries.names):
        raise EvaluationError(f"{node} needs {len(entries.names)} indices, got {len(names)}",
                              reason="index scope")
    if entries.size == 0:
        return lambda value: np.zeros((*np.shape(value)[:-1], demand.size))
    if entries.table is not None and demand.provenance is not None and \
            demand.provenance.binds(entries.table, names):
        pick = _rows_picker(demand.provenance.rows)
    elif entries.table is not None:
        compiled = table_of(Indexed(Symbol(entries.table), node.indices), env.values,
                            state.num_nodes, state.tables)
        position, hit = lookup_positions(compiled.keys, demand.keys(names, state.num_nodes))
        pick = _rows_picker(compiled.first_rows[position], None if bool(hit.all()) else hit)
    else:  # relation algebra: unique sorted entries, in gather order
        position, hit = lookup_positions(entries.keys, demand.keys(names, state.num_nodes))
        pick = _rows_picker(position, None if bool(hit.all()) else hit)
    return lambda value: pick(to_points(value, entries.size))


def root_demand(state: GraphState, free: tuple[str, ...]) -> Demand:
    """The grid of the root's free indices (cached so plans are reused)."""
    key = (-1, len(free))
    cached = state.plans.get(key)
    if cached is None or cached[0] != free:
        cached = state.plans[key] = (free, None, grid(free, state.num_nodes))
    return cached[2]


def finish_root(value: Any, free: tuple[str, ...], has_domain: bool, num_nodes: int) -> Any:
    """Dense output axes for free indices; drop the unit point axis otherwise."""
    if free:
        points = to_points(value, num_nodes ** len(free))
        return np.reshape(points, (*points.shape[:-1], *(num_nodes,) * len(free)))
    if has_domain or not np.ndim(value):
        return value
    array = np.asarray(value)
    return array[..., 0] if array.shape[-1] == 1 else array


def handlers(mode: Mode) -> dict[type, Callable[[Any, Any], Any]]:
    """The structural node handlers for one mode."""
    return {
        Indexed: lambda node, env: _indexed(mode, node, env),
        Reduction: lambda node, env: _reduction(mode, node, env),
        Gather: lambda node, env: _gather(mode, node, env),
    }


def check_bare(symbol: Symbol, array: Any, env: Any) -> None:
    """A bare array in an indexed tree must broadcast over the structural points."""
    if np.ndim(array) and np.shape(array)[-1] != 1 and \
            id(symbol) not in env.graph.info.entry_symbols:
        raise EvaluationError(
            f"{symbol.name!r} has shape {np.shape(array)}; in an indexed formula the last axis "
            f"is structural: index it ({symbol.name}[i] for a node field, {symbol.name}[i, j] "
            "for an edge field) or give a per-sample value the shape (..., 1)",
            name=symbol.name, reason="shape mismatch")
