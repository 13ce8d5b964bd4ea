"""PySR's ``nested_constraints`` and size ``constraints`` while the enumeration builds forms.

A form that nests ``cos`` in ``sin`` against ``{"sin": {"cos": 0}}``, or gives ``sin``
an argument larger than its size limit, breaks the limits whatever its constants, and so
does every larger form built on it (an argument's size and a path's nesting only grow when
a form becomes part of a larger one). :class:`FormConstraints` keeps, by form id, what the
check of :func:`srh_engine.constraints.constraint_violations` needs of each kept form: its
node count in the engine and, for every operator named inside a nested constraint, the
most of those operators along one path down. A candidate of the next level is then checked
from its operands' entries alone, a whole operator's batch at once, before it is
deduplicated or scored (so an allowed twin of the same values is the one kept), the way
:class:`.consistency.FormDimensions` checks dimensions. The leaves are the view's inputs:
an input ``a - b`` counts its three nodes and its ``-``.

Only the inside of a form is checked: the linear scaling and the target transforms put
operators around it that the fitted formula is checked for at the end
(:func:`.core._within`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..constraints import constraint_violations, nesting, pysr_names
from ..nodes import Expression, Symbol
from ..transform import complexity
from .operators import UNARY, to_expression

__all__ = ["FormConstraints"]

_PLACEHOLDERS = (Symbol("_left"), Symbol("_right"))


@dataclass(frozen=True, slots=True)
class _Rule:
    """What one operator checks and adds.

    ``operands``: per operand of the engine node, the form it is (0 left, 1 right) or a
    fixed ``(size, depths)`` (the ``2`` of ``x**2``); ``nested``: ``(inner index, most)``;
    ``sizes``: ``(operand position, most)``; ``adds``: 1 per inner name the node is.
    """

    operands: tuple[int | tuple[int, tuple[int, ...]], ...]
    nested: tuple[tuple[int, int], ...]
    sizes: tuple[tuple[int, int], ...]
    adds: tuple[int, ...]


class FormConstraints:
    """Node count, nesting and breach flag of every kept form of an enumeration, by form id.

    Args:
        leaves: One engine expression per leaf in id order (the view's inputs, then the
            constants).
        codes: The enumeration's operator names by code.
        nested, constraints: PySR's limits (:mod:`srh_engine.constraints`).
    """

    def __init__(self, leaves: Sequence[Expression], codes: Sequence[str],
                 nested: Mapping[str, Mapping[str, int]] | None,
                 constraints: Mapping[str, Any] | None) -> None:
        self.inner = sorted({name for limits in (nested or {}).values() for name in limits})
        self.size = np.array([complexity(leaf) for leaf in leaves], dtype=np.int64)
        self.depth = np.array([[nesting(leaf, name) for name in self.inner] for leaf in leaves],
                              dtype=np.int64).reshape(len(leaves), len(self.inner))
        self.bad = np.array([bool(constraint_violations(leaf, nested, constraints))
                             for leaf in leaves], dtype=bool)
        self.rules = [self._rule(name, nested or {}, constraints or {}) for name in codes]
        self.dropped = 0

    def _rule(self, name: str, nested: Mapping[str, Mapping[str, int]],
              constraints: Mapping[str, Any]) -> _Rule:
        arity = 1 if name in UNARY else 2
        node = to_expression((name, *(("v", k) for k in range(arity))), _PLACEHOLDERS)
        operands = tuple(_PLACEHOLDERS.index(child) if child in _PLACEHOLDERS else
                         (complexity(child), tuple(nesting(child, n) for n in self.inner))
                         for child in node.operands)
        names = pysr_names(node)
        checks = [(self.inner.index(inner), most) for outer in names
                  for inner, most in nested.get(outer, {}).items() if most >= 0]
        sizes = []
        for outer in names:
            limit = constraints.get(outer)
            if limit is None:
                continue
            limits = list(limit) if isinstance(limit, list | tuple) else [limit]
            count = len(node.operands) if len(limits) == len(node.operands) else 1
            sizes += [(position, most) for position, most in zip(range(count), limits,
                                                                 strict=False) if most >= 0]
        return _Rule(operands, tuple(checks), tuple(sizes),
                     tuple(int(inner in names) for inner in self.inner))

    def of(self, recipes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(allowed, sizes, depths)`` of the forms built by ``recipes`` (one operator's)."""
        n = recipes.shape[0]
        if n == 0:
            return np.ones(0, bool), np.zeros(0, np.int64), np.zeros((0, len(self.inner)),
                                                                     np.int64)
        rule = self.rules[int(recipes[0, 0])]
        ok = ~self.bad[recipes[:, 1]]
        if recipes[0, 2] >= 0:
            ok &= ~self.bad[recipes[:, 2]]
        sizes, depths = [], []
        for operand in rule.operands:
            if isinstance(operand, int):
                ids = recipes[:, 1 + operand]
                sizes.append(self.size[ids])
                depths.append(self.depth[ids])
            else:
                sizes.append(np.full(n, operand[0], dtype=np.int64))
                depths.append(np.tile(np.array(operand[1], dtype=np.int64), (n, 1)))
        deepest = np.max(np.stack(depths), axis=0)  # (n, inner)
        for inner, most in rule.nested:
            ok &= deepest[:, inner] <= most
        for position, most in rule.sizes:
            ok &= sizes[position] <= most
        return ok, 1 + np.sum(sizes, axis=0), deepest + np.array(rule.adds, dtype=np.int64)

    def keep(self, recipes: np.ndarray) -> np.ndarray:
        """Which candidates (one operator's) keep the limits; counts the dropped ones."""
        ok = self.of(recipes)[0]
        self.dropped += int(ok.size - np.count_nonzero(ok))
        return ok

    def add(self, recipes: np.ndarray) -> None:
        """Record a kept level (its forms get the next ids, in order)."""
        sizes = np.zeros(recipes.shape[0], np.int64)
        depths = np.zeros((recipes.shape[0], len(self.inner)), np.int64)
        ok = np.ones(recipes.shape[0], bool)
        for code in np.unique(recipes[:, 0]):
            pick = np.flatnonzero(recipes[:, 0] == code)
            ok[pick], sizes[pick], depths[pick] = self.of(recipes[pick])
        self.size = np.concatenate([self.size, sizes])
        self.depth = np.vstack([self.depth, depths])
        self.bad = np.concatenate([self.bad, ~ok])
