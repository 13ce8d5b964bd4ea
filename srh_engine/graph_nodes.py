"""Structured expression nodes: indices, relations, reductions, gathers, delays.

Graphs and hypergraphs are written with explicit symbolic indices, as in the
reference's engine:

* a relation is an integer coordinate table: ``A.shape == (E, 2)`` with
  columns ``(target, source)``, ``T.shape == (H, 3)`` with columns
  ``(target, source1, source2)``; ``A[i, j]`` binds index ``i`` to column 0
  and ``j`` to column 1;
* a node field has shape ``(..., N)`` and is written ``x[i]``; an edge
  (hyperedge) field has shape ``(..., E)`` and is written with the full
  relation indices, ``w[i, j]``;
* ``sum[j](A[i, j], f)`` (:class:`Reduction` with a relation) sums ``f`` over
  the relation's entries, grouped by the indices that stay free (``i``);
  ``sum[j](f)`` sums over all ``N`` values of ``j``;
* ``gather(A[i, j], f)`` (:class:`Gather`) evaluates ``f`` at the relation's
  rows: an ``(..., E)`` edge field;
* ``aggr``/``sour``/``targ`` (:class:`Aggregate`, :class:`RelationLift`) are
  convenience syntax that :func:`srh_engine.desugar` lowers to indexed sums;
* ``delay(x, tau)`` (:class:`Delay`) reads ``x(t - tau)`` along the leading
  (time) axis.

Evaluation semantics are in :mod:`srh_engine.graph_evaluation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .errors import ExpressionError
from .nodes import Expression

__all__ = [
    "Aggregate",
    "Delay",
    "Gather",
    "Index",
    "Indexed",
    "Reduction",
    "RelationField",
    "RelationLift",
    "STRUCTURAL_TYPES",
]

LiftRole = Literal["source", "target"]


def _check_child(child: Any, node_type: str, field_name: str) -> None:
    if not isinstance(child, Expression):
        raise ExpressionError(
            f"{node_type}.{field_name} must be an Expression, got {type(child).__name__}",
            node_type=node_type, field=field_name)


def _index_tuple(indices: Any, node_type: str) -> tuple[Index, ...]:
    items = (indices,) if isinstance(indices, Index | str) else tuple(indices)
    normalised = tuple(Index(item) if isinstance(item, str) else item for item in items)
    if not normalised or not all(isinstance(item, Index) for item in normalised):
        raise ExpressionError(f"{node_type}.indices must be a non-empty tuple of Index, got "
                              f"{indices!r}", node_type=node_type, field="indices")
    names = [index.name for index in normalised]
    if len(set(names)) != len(names):
        raise ExpressionError(f"{node_type} repeats an index in {names}; each index may appear "
                              "once", node_type=node_type, field="indices")
    return normalised


@dataclass(frozen=True, slots=True)
class Index:
    """A symbolic structural index such as ``i`` (not an expression).

    Attributes:
        name: Identifier; index names live in their own namespace, so ``x[i]``
            never reads a data variable called ``i``.
    """

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier() or \
                self.name.startswith("__"):
            raise ExpressionError(f"Index.name must be an identifier such as 'i', got "
                                  f"{self.name!r}", node_type="Index", field="name")


@dataclass(frozen=True, slots=True)
class Indexed(Expression):
    """``base[i, ...]``: a node field, relation, edge field or re-indexed expression.

    Attributes:
        base: Usually a :class:`Symbol`; a computed expression is re-indexed
            when it carries a relation's entry axis (a gather) or exactly one
            free index.
        indices: The indices, bound in order to the base's structural columns.
    """

    base: Expression
    indices: tuple[Index, ...]

    def __post_init__(self) -> None:
        _check_child(self.base, "Indexed", "base")
        object.__setattr__(self, "indices", _index_tuple(self.indices, "Indexed"))

    @property
    def operands(self) -> tuple[Expression, ...]:
        return (self.base,)

    def with_operands(self, operands: tuple[Expression, ...]) -> Expression:
        return Indexed(operands[0], self.indices)


@dataclass(frozen=True, slots=True)
class Reduction(Expression):
    """``sum[indices](operand)`` or, with a relation, ``sum[indices](relation, operand)``.

    With a relation, ``sum[j](A[i, j], f)`` means ``sum[j](A[i, j] * f)`` but
    only the relation's entries are evaluated (O(E), not O(N^2)). Every summed
    index must then be bound by the relation. Duplicate relation rows count
    once (set semantics).

    Attributes:
        indices: The summed indices.
        operand: The summand.
        relation: Optional relation expression binding the indices.
    """

    indices: tuple[Index, ...]
    operand: Expression
    relation: Expression | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "indices", _index_tuple(self.indices, "Reduction"))
        _check_child(self.operand, "Reduction", "operand")
        if self.relation is not None:
            _check_child(self.relation, "Reduction", "relation")

    @property
    def operands(self) -> tuple[Expression, ...]:
        return (self.operand,) if self.relation is None else (self.relation, self.operand)

    def with_operands(self, operands: tuple[Expression, ...]) -> Expression:
        if self.relation is None:
            return Reduction(self.indices, operands[0])
        return Reduction(self.indices, operands[1], operands[0])


@dataclass(frozen=True, slots=True)
class Gather(Expression):
    """``gather(relation, operand)``: ``operand`` at every relation row, times its weight.

    The result is an entry field ``(..., E)``: rows in table order for a
    relation table, lexicographic entry order for relation algebra.
    """

    relation: Expression
    operand: Expression

    def __post_init__(self) -> None:
        _check_child(self.relation, "Gather", "relation")
        _check_child(self.operand, "Gather", "operand")

    @property
    def operands(self) -> tuple[Expression, ...]:
        return (self.relation, self.operand)

    def with_operands(self, operands: tuple[Expression, ...]) -> Expression:
        return Gather(operands[0], operands[1])


@dataclass(frozen=True, slots=True)
class Aggregate(Expression):
    """``aggr(relation, operand)``: convenience syntax, lowered by :func:`desugar`.

    ``aggr(A, targ(x) * sour(x))`` becomes ``sum[j](A[i, j], x[i] * x[j])``.
    """

    relation: Expression
    operand: Expression

    def __post_init__(self) -> None:
        _check_child(self.relation, "Aggregate", "relation")
        _check_child(self.operand, "Aggregate", "operand")

    @property
    def operands(self) -> tuple[Expression, ...]:
        return (self.relation, self.operand)

    def with_operands(self, operands: tuple[Expression, ...]) -> Expression:
        return Aggregate(operands[0], operands[1])


@dataclass(frozen=True, slots=True)
class RelationLift(Expression):
    """``sour(x)`` / ``targ(x)`` inside ``aggr``: a node field read at an edge endpoint.

    Attributes:
        role: ``"source"`` (column 1) or ``"target"`` (column 0).
        operand: The node-valued expression.
        relation: Optional explicit relation; it must match the enclosing ``aggr``.
    """

    role: LiftRole
    operand: Expression
    relation: Expression | None = None

    def __post_init__(self) -> None:
        if self.role not in ("source", "target"):
            raise ExpressionError(f"RelationLift.role must be 'source' or 'target', got "
                                  f"{self.role!r}", node_type="RelationLift", field="role")
        _check_child(self.operand, "RelationLift", "operand")
        if self.relation is not None:
            _check_child(self.relation, "RelationLift", "relation")

    @property
    def operands(self) -> tuple[Expression, ...]:
        return (self.operand,) if self.relation is None else (self.relation, self.operand)

    def with_operands(self, operands: tuple[Expression, ...]) -> Expression:
        if self.relation is None:
            return RelationLift(self.role, operands[0])
        return RelationLift(self.role, operands[1], operands[0])


@dataclass(frozen=True, slots=True)
class Delay(Expression):
    """``delay(value, delta)``: ``value`` read at ``t - delta`` along the leading axis.

    The default resolver interpolates linearly on the sample times (``time=``
    of :func:`srh_engine.evaluate`, else ``0, 1, 2, ...``); times before the
    first sample give nan. ``delay_resolver=`` replaces the interpolation.
    """

    value: Expression
    delta: Expression

    def __post_init__(self) -> None:
        _check_child(self.value, "Delay", "value")
        _check_child(self.delta, "Delay", "delta")

    @property
    def operands(self) -> tuple[Expression, ...]:
        return (self.value, self.delta)

    def with_operands(self, operands: tuple[Expression, ...]) -> Expression:
        return Delay(operands[0], operands[1])


@dataclass(frozen=True, slots=True)
class RelationField:
    """Values stored on the entries of a named relation (a value wrapper, not a node).

    Pass it in the ``values`` of :func:`srh_engine.evaluate` when an edge
    field's relation cannot be inferred (several relations of the same
    length): ``{"w": RelationField(w, relation="A")}``.

    Attributes:
        values: Array whose last dimension enumerates the relation's rows.
        relation: Name of the coordinate-table symbol defining those rows.
    """

    values: Any
    relation: str

    def __post_init__(self) -> None:
        if not isinstance(self.relation, str) or not self.relation.isidentifier():
            raise ExpressionError(f"RelationField.relation must name a relation, got "
                                  f"{self.relation!r}", node_type="RelationField",
                                  field="relation")


STRUCTURAL_TYPES: tuple[type, ...] = (Indexed, Reduction, Gather, Aggregate, RelationLift, Delay)
"""Node types that need the structured evaluator (num_nodes, time, relations)."""
