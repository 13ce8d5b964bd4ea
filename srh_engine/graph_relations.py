"""Relation tables and relation algebra, compiled to sorted integer keys.

A relation of arity ``r`` over ``N`` nodes is an integer table ``(E, r)``.
Each row is encoded as one int64 key, ``sum(row[c] * N**(r-1-c))``, so that
membership, deduplication and joins are ``np.unique``/``np.searchsorted`` on
one array: no Python loop over rows. Compiling a table (validation, unique
sorted keys, first row of each key) is cached per table for the lifetime of
the evaluation environment, and across evaluations for read-only arrays (the
arrays of an ``AgentContext`` are read-only), so repeated evaluation, as in
fitting, pays it once.

Relation algebra (the first argument of ``sum[...]``/``gather``) is sparse
with a zero background: ``+``/``-`` of relations add weights on the union of
their entries, ``*`` multiplies on the intersection, and a relation may be
scaled by a number. Anything that would be nonzero away from the entries
(``A[i, j] + 1``, ``exp(A[i, j])``) is rejected: it would be dense (N**r).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import EvaluationError
from .graph_nodes import Indexed, RelationField
from .nodes import Binary, Expression, Number, Symbol, Unary

__all__ = ["CompiledTable", "Entries", "MAX_KEY", "compile_relation", "compile_table",
           "encode", "is_relation_table", "lookup_positions", "raw_value"]

MAX_KEY = 2**62
"""Keys must stay below this: N**arity may not exceed it."""

GLOBAL_CACHE_SIZE = 8
"""Read-only tables whose compiled form is kept across evaluations (each entry holds the
table and its sorted copy alive, so the cache is small)."""


def raw_value(values: Mapping[str, Any], symbol: Symbol) -> Any:
    """The value given for a symbol (a RelationField is unwrapped)."""
    if symbol.name in values:
        value = values[symbol.name]
    elif symbol.value is not None:
        value = symbol.value
    else:
        known = ", ".join(sorted(map(str, values))) or "none"
        raise EvaluationError(f"unknown symbol {symbol.name!r}: no values were given for it "
                              f"(known symbols: {known})", name=symbol.name,
                              reason="unknown symbol")
    return value.values if isinstance(value, RelationField) else value


def is_relation_table(value: Any, arity: int) -> bool:
    """An integer array of shape ``(E, arity)`` with ``arity >= 2``."""
    return isinstance(value, np.ndarray) and value.ndim == 2 and arity >= 2 and \
        value.shape[1] == arity and value.dtype.kind in "iu"


def encode(columns: list[np.ndarray], num_nodes: int) -> np.ndarray:
    """Mixed-radix int64 keys of coordinate columns (first column most significant)."""
    if not columns:
        return np.zeros(1, dtype=np.int64)
    if num_nodes ** len(columns) > MAX_KEY:
        raise EvaluationError(f"{num_nodes} nodes ** {len(columns)} indices is too large to "
                              "index", reason="too many nodes")
    key = columns[0].astype(np.int64, copy=True)
    for column in columns[1:]:
        key *= num_nodes
        key += column
    return key


@dataclass(frozen=True, slots=True)
class CompiledTable:
    """A validated relation table with its sorted unique keys.

    Attributes:
        table: The ``(E, r)`` table as given.
        keys: Sorted unique row keys ``(K,)``.
        first_rows: For each unique key, the first table row holding it.
        row_keys: The key of every table row ``(E,)``.
        unique_rows: Whether no row repeats (then ``K == E``).
        columns: The coordinate columns of the unique entries, in key order.
        table_columns: The coordinate columns in table order.
        derived: Plans derived from the table alone (shared by every evaluation).
    """

    table: np.ndarray
    keys: np.ndarray
    first_rows: np.ndarray
    row_keys: np.ndarray
    unique_rows: bool
    columns: tuple[np.ndarray, ...]
    table_columns: tuple[np.ndarray, ...]
    derived: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


_GLOBAL: OrderedDict[tuple[int, int], tuple[weakref.ref, CompiledTable]] = OrderedDict()
_GLOBAL_LOCK = threading.Lock()


def _cached(table: np.ndarray, num_nodes: int) -> CompiledTable | None:
    if table.flags.writeable:
        return None
    with _GLOBAL_LOCK:
        entry = _GLOBAL.get((id(table), num_nodes))
        if entry is not None and entry[0]() is table:
            _GLOBAL.move_to_end((id(table), num_nodes))
            return entry[1]
    return None


def _remember(table: np.ndarray, num_nodes: int, compiled: CompiledTable) -> None:
    if table.flags.writeable:
        return
    with _GLOBAL_LOCK:
        _GLOBAL[(id(table), num_nodes)] = (weakref.ref(table), compiled)
        while len(_GLOBAL) > GLOBAL_CACHE_SIZE:
            _GLOBAL.popitem(last=False)


def compile_table(name: str, table: np.ndarray, num_nodes: int) -> CompiledTable:
    """Validate a relation table and compute its keys (cached for read-only tables).

    Raises:
        EvaluationError: An endpoint outside ``[0, num_nodes)``.
    """
    cached = _cached(table, num_nodes)
    if cached is not None:
        return cached
    if table.size and (int(table.min()) < 0 or int(table.max()) >= num_nodes):
        raise EvaluationError(f"relation {name!r} has an endpoint outside [0, {num_nodes}); "
                              "node indices are zero-based and below num_nodes", name=name,
                              reason="bad relation")
    row_keys = encode([table[:, c] for c in range(table.shape[1])], num_nodes)
    if row_keys.size < 2 or bool(np.all(row_keys[1:] > row_keys[:-1])):
        keys, first_rows = row_keys, np.arange(row_keys.size)
    else:
        keys, first_rows = np.unique(row_keys, return_index=True)
    table_columns = tuple(table[:, c].astype(np.intp) for c in range(table.shape[1]))
    columns = tuple(c[first_rows] for c in table_columns) if keys is not row_keys else \
        table_columns
    compiled = CompiledTable(table, keys, first_rows, row_keys, keys.size == row_keys.size,
                             columns, table_columns)
    _remember(table, num_nodes, compiled)
    return compiled


def lookup_positions(keys: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position of each query in sorted ``keys`` and whether it is there."""
    if keys.size == 0:
        return np.zeros(queries.shape, dtype=np.intp), np.zeros(queries.shape, dtype=bool)
    position = np.searchsorted(keys, queries)
    np.minimum(position, keys.size - 1, out=position)
    return position, keys[position] == queries


@dataclass(frozen=True, slots=True)
class Entries:
    """The entries of a relation expression, ready for a reduction or a gather.

    Attributes:
        names: Index names, in the order the key uses.
        columns: One coordinate array per name, ``(K,)`` each.
        weights: Relation value of each entry, or None when every value is 1.
        keys: Entry keys (sorted and unique unless ``table_rows`` come from
            a gather over a table with repeated rows).
        table: Name of the relation symbol when the entries are rows of one
            table (then ``rows`` are table rows and ``bound`` maps each name to
            its table column), else None.
        rows: Table row of each entry; None for algebra, and for the table's
            own rows in order (then ``identity`` is set).
        bound: Index name -> table column, for a table.
        identity: The entries are exactly the table's rows, in table order.
        derived: The table's plan cache, for a table.
    """

    names: tuple[str, ...]
    columns: tuple[np.ndarray, ...]
    weights: np.ndarray | None
    keys: np.ndarray
    table: str | None = None
    rows: np.ndarray | None = None
    bound: tuple[tuple[str, int], ...] = ()
    identity: bool = False
    derived: dict[Any, Any] | None = None

    @property
    def size(self) -> int:
        return int(self.keys.size)


class _Sparse:
    """Intermediate of relation algebra: sorted unique keys and weights."""

    def __init__(self, names: tuple[str, ...], keys: np.ndarray, weights: np.ndarray) -> None:
        self.names, self.keys, self.weights = names, keys, weights


def compile_relation(expression: Expression, values: Mapping[str, Any], num_nodes: int,
                     tables: dict[int, CompiledTable], *, unique: bool) -> Entries:
    """Entries of a relation expression (a table ``A[i, j]`` or algebra of tables).

    Args:
        expression: The relation argument of a reduction or gather.
        values: The evaluation values (relation tables among them).
        num_nodes: Node count.
        tables: Per-environment cache of compiled tables, by array id.
        unique: Deduplicate the rows of a single table (reductions); a gather
            keeps every row in table order.

    Raises:
        EvaluationError: Not a relation, or algebra that would be dense.
    """
    if isinstance(expression, Indexed) and isinstance(expression.base, Symbol):
        return _table_entries(expression, values, num_nodes, tables, unique)
    sparse = _algebra(expression, values, num_nodes, tables)
    if not isinstance(sparse, _Sparse):
        raise EvaluationError(f"the relation argument {expression} has no relation in it: "
                              "write a relation table indexed as A[i, j]", reason="bad relation")
    keep = sparse.weights != 0
    keys, weights = sparse.keys[keep], sparse.weights[keep]
    columns = _decode(keys, len(sparse.names), num_nodes)
    return Entries(sparse.names, columns, weights, keys)


def _decode(keys: np.ndarray, arity: int, num_nodes: int) -> tuple[np.ndarray, ...]:
    columns = []
    rest = keys
    for _ in range(arity):
        rest, column = np.divmod(rest, num_nodes)
        columns.append(column.astype(np.intp))
    return tuple(reversed(columns))


def table_of(node: Indexed, values: Mapping[str, Any], num_nodes: int,
             tables: dict[int, CompiledTable]) -> CompiledTable:
    """The compiled table of ``A[i, j]`` (``node.base`` is the relation symbol)."""
    symbol = node.base
    if not isinstance(symbol, Symbol):
        raise EvaluationError(f"{node} is not a relation table", reason="bad relation")
    raw = raw_value(values, symbol)
    table = raw if isinstance(raw, np.ndarray) else np.asarray(raw)
    if not is_relation_table(table, len(node.indices)):
        raise EvaluationError(
            f"{symbol.name!r} is used as a relation with {len(node.indices)} indices, so it must "
            f"be an integer table of shape (E, {len(node.indices)}); got shape "
            f"{np.shape(table)}, dtype {table.dtype}", name=symbol.name, reason="bad relation")
    compiled = tables.get(id(table))
    if compiled is None or compiled.table is not table:
        compiled = tables[id(table)] = compile_table(symbol.name, table, num_nodes)
    return compiled


def _table_entries(node: Indexed, values: Mapping[str, Any], num_nodes: int,
                   tables: dict[int, CompiledTable], unique: bool) -> Entries:
    compiled = table_of(node, values, num_nodes, tables)
    names = tuple(index.name for index in node.indices)
    bound = tuple((name, column) for column, name in enumerate(names))
    name = node.base.name  # type: ignore[attr-defined]
    if unique and not compiled.unique_rows:  # deduplicate: each distinct row once
        return Entries(names, compiled.columns, None, compiled.keys, name, compiled.first_rows,
                       bound, derived=compiled.derived)
    return Entries(names, compiled.table_columns, None, compiled.row_keys, name, None, bound,
                   identity=True, derived=compiled.derived)


def _algebra(node: Expression, values: Mapping[str, Any], num_nodes: int,
             tables: dict[int, CompiledTable]) -> _Sparse | float:
    if isinstance(node, Number):
        return float(node.value)
    if isinstance(node, Indexed) and isinstance(node.base, Symbol):
        compiled = table_of(node, values, num_nodes, tables)
        names = tuple(index.name for index in node.indices)
        return _Sparse(names, compiled.keys, np.ones(compiled.keys.size))
    if isinstance(node, Unary):
        operand = _algebra(node.operand, values, num_nodes, tables)
        return -operand if isinstance(operand, float) else \
            _Sparse(operand.names, operand.keys, -operand.weights)
    if isinstance(node, Binary) and node.operator in ("+", "-", "*", "/"):
        left = _algebra(node.left, values, num_nodes, tables)
        right = _algebra(node.right, values, num_nodes, tables)
        return _combine(node, left, right, num_nodes)
    raise EvaluationError(
        f"relation argument {node} is not relation algebra: use relation tables A[i, j], "
        "+, -, * between them and numbers as factors; move other factors into the summand",
        reason="bad relation")


def _combine(node: Binary, left: _Sparse | float, right: _Sparse | float,
             num_nodes: int) -> _Sparse | float:
    operator = node.operator
    if isinstance(left, float) and isinstance(right, float):
        return {"+": left + right, "-": left - right, "*": left * right,
                "/": left / right if right else float("nan")}[operator]
    if operator in ("*", "/") and isinstance(right, float):
        scale = right if operator == "*" else (1.0 / right if right else float("nan"))
        return _Sparse(left.names, left.keys, left.weights * scale)  # type: ignore[union-attr]
    if operator == "*" and isinstance(left, float):
        return _Sparse(right.names, right.keys, right.weights * left)  # type: ignore[union-attr]
    if isinstance(left, float) or isinstance(right, float) or operator == "/":
        raise EvaluationError(f"relation algebra {node} would be nonzero away from the "
                              "relation's entries (dense); only +, - and * of relations and "
                              "scaling by numbers are allowed", reason="dense relation")
    right = _aligned(right, left.names, num_nodes, node)
    if operator == "*":
        keys, at_left, at_right = np.intersect1d(left.keys, right.keys, assume_unique=True,
                                                 return_indices=True)
        return _Sparse(left.names, keys, left.weights[at_left] * right.weights[at_right])
    sign = 1.0 if operator == "+" else -1.0
    keys, inverse = np.unique(np.concatenate([left.keys, right.keys]), return_inverse=True)
    weights = np.bincount(inverse, np.concatenate([left.weights, sign * right.weights]),
                          minlength=keys.size)
    return _Sparse(left.names, keys, weights)


def _aligned(sparse: _Sparse, names: tuple[str, ...], num_nodes: int,
             node: Binary) -> _Sparse:
    """Re-key ``sparse`` to the index order ``names`` (``A[j, i]`` against ``B[i, j]``)."""
    if sparse.names == names:
        return sparse
    if sorted(sparse.names) != sorted(names):
        raise EvaluationError(f"relations combined in {node} use different indices "
                              f"({list(names)} and {list(sparse.names)})", reason="bad relation")
    columns = dict(zip(sparse.names, _decode(sparse.keys, len(names), num_nodes), strict=True))
    keys = encode([columns[name] for name in names], num_nodes)
    order = np.argsort(keys, kind="stable")
    return _Sparse(names, keys[order], sparse.weights[order])
