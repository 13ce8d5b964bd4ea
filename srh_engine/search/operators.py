"""The search's operator table and its compact trees.

The search works on plain nested tuples, not on :mod:`srh_engine.nodes`: a
tuple tree hashes and compares in C, so subtree values can be memoised and
populations deduplicated cheaply. A tree is one of

* ``("v", i)``: input column ``i``;
* ``("k", value)``: a numeric constant;
* ``(name, child)``: a unary operator of :data:`UNARY`;
* ``(name, left, right)``: a binary operator of :data:`BINARY`.

:func:`to_expression` turns a tree into engine nodes (``square`` becomes
``x**2``), so everything the search returns renders and parses like any
formula. ``COST`` is each operator's node count in the engine's tree, so the
search's sizes are the engine's :func:`~srh_engine.transform.complexity`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ..nodes import Binary, Expression, Function, Number, Symbol, Unary
from ..rendering import to_str

__all__ = ["BINARY", "COST", "DEFAULT_OPERATORS", "OPERATORS", "UNARY", "Tree", "evaluate_tree",
           "resolve_operators", "size", "to_expression", "tree_text"]

Tree = tuple[Any, ...]

BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide,
}
COMMUTATIVE = frozenset({"+", "*"})

UNARY: dict[str, Callable[[Any], Any]] = {
    "sqrt": np.sqrt, "square": np.square, "cube": lambda x: x * x * x, "exp": np.exp,
    "log": np.log, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "abs": np.abs,
    "inv": lambda x: np.divide(1.0, x), "neg": np.negative,
}
OPERATORS: tuple[str, ...] = (*BINARY, *UNARY)
"""Every operator name the search accepts."""

DEFAULT_OPERATORS: tuple[str, ...] = ("+", "-", "*", "/", "sqrt", "square", "exp", "log",
                                      "sin", "cos")
"""The operators searched when the caller names none."""

COST: dict[str, int] = {**{name: 1 for name in OPERATORS}, "square": 2, "cube": 2}
"""Nodes each operator adds in the engine's tree (``square(x)`` is ``x**2``: 2 nodes)."""


def resolve_operators(operators: Sequence[str] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(binary, unary)`` operator names; ValueError names any unknown one."""
    names = list(DEFAULT_OPERATORS if operators is None else operators)
    unknown = [name for name in names if name not in OPERATORS]
    if unknown or not names:
        raise ValueError(f"unknown operator(s) {unknown}; choose from {list(OPERATORS)}"
                         if unknown else "the search needs at least one operator")
    binary = tuple(dict.fromkeys(n for n in names if n in BINARY))
    unary = tuple(dict.fromkeys(n for n in names if n in UNARY))
    if not binary:
        raise ValueError("the search needs at least one binary operator (+, -, * or /)")
    return binary, unary


@lru_cache(maxsize=1 << 17)
def size(tree: Tree) -> int:
    """The tree's node count in the engine (``square`` counts 2)."""
    kind = tree[0]
    if kind in ("v", "k"):
        return 1
    return COST[kind] + sum(size(child) for child in tree[1:])


def evaluate_tree(tree: Tree, columns: Sequence[np.ndarray], memo: dict[Tree, Any] | None
                  ) -> Any:
    """Values of ``tree`` on ``columns`` (call under ``np.errstate``); ``memo`` caches subtrees."""
    if memo is not None:
        cached = memo.get(tree)
        if cached is not None:
            return cached
    kind = tree[0]
    if kind == "v":
        value = columns[tree[1]]
    elif kind == "k":
        value = np.float64(tree[1])
    elif len(tree) == 2:
        value = UNARY[kind](evaluate_tree(tree[1], columns, memo))
    else:
        value = BINARY[kind](evaluate_tree(tree[1], columns, memo),
                             evaluate_tree(tree[2], columns, memo))
    if memo is not None:
        memo[tree] = value
    return value


_FUNCTION_NAMES = {"sqrt", "exp", "log", "sin", "cos", "tanh", "abs", "inv"}


def to_expression(tree: Tree, inputs: Sequence[Expression]) -> Expression:
    """The engine expression of ``tree``; ``inputs[i]`` stands for column ``i``."""
    kind = tree[0]
    if kind == "v":
        return inputs[tree[1]]
    if kind == "k":
        return Number(float(tree[1]))
    children = [to_expression(child, inputs) for child in tree[1:]]
    if kind in BINARY:
        return Binary(kind, children[0], children[1])
    if kind == "square":
        return Binary("**", children[0], Number(2))
    if kind == "cube":
        return Binary("**", children[0], Number(3))
    if kind == "neg":
        return Unary("-", children[0])
    if kind in _FUNCTION_NAMES:
        return Function(kind, (children[0],))
    raise ValueError(f"unknown operator {kind!r} in a search tree")


def tree_text(tree: Tree, names: Sequence[str]) -> str:
    """A readable text of ``tree`` (for logs and tests)."""
    return to_str(to_expression(tree, [Symbol(name) for name in names]))
