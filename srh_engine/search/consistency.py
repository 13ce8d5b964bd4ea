"""Dimensional consistency while candidates are built, not only once they are fitted.

With the units of the inputs known, a form that adds a length to a time, or
takes ``exp`` of a length, is wrong whatever its constants; so are all the
larger forms built on it. The rules are those of
:func:`srh_engine.check_dimensions` (PySR's: a constant is a *free* wildcard
that takes whatever dimension makes the formula consistent, a product or
quotient with a free factor is free), applied

* in the enumeration (:class:`FormDimensions`) to whole levels at once: each
  kept form's dimension (a vector of exponents over the SI base dimensions)
  and free flag are stored by form id, and a candidate of the next level is
  dropped before it is deduplicated or scored when its operands' dimensions
  break a rule; so the level caps hold consistent forms only;
* in the evolution (:class:`TreeDimensions`) to each child, memoised per tree:
  an inconsistent child gets an infinite error (it never enters the archive and
  loses every tournament).

Only the inside of a form is checked: the linear scaling ``a + b*f`` and the
target transforms put fitted constants around every form, and those carry
whatever dimension the target needs. The fitted formulas are still checked
against the target's units at the end (:func:`.core._consistent`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np

from ..dimensional import check_dimensions
from ..units import BASE_DIMENSIONS, Dimension
from .operators import Tree

__all__ = ["FormDimensions", "TreeDimensions", "input_dimensions", "tree_consistent"]

TOLERANCE = 1e-9
_WIDTH = len(BASE_DIMENSIONS)
_KEEP = frozenset({"abs", "neg"})
_POWERS = {"sqrt": 0.5, "square": 2.0, "cube": 3.0, "inv": -1.0}

Vector = tuple[float, ...]


def input_dimensions(inputs: Sequence, units: Mapping[str, Dimension] | None
                     ) -> tuple[Vector | None, ...] | None:
    """Each view input's dimension as a vector (None: free), or None when nothing is known.

    ``inputs`` are engine expressions of the original inputs (a pair ``x - y`` has ``x``'s
    dimension); an input no rule can place, or one with a constant in it, is free. When every
    input is free or dimensionless the filter could drop nothing, and None is returned.
    """
    if not units:
        return None
    found: list[Vector | None] = []
    for expression in inputs:
        check = check_dimensions(expression, units)
        if not check.consistent or check.free or check.dimension is None:
            found.append(None)
        else:
            found.append(tuple(float(e) for e in check.dimension.exponents))
    if all(v is None or not any(v) for v in found):
        return None
    return tuple(found)


class FormDimensions:
    """The dimension and free flag of every kept form of an enumeration, by form id.

    Args:
        leaves: One entry per leaf in id order (inputs, then constants): a vector of
            exponents, or None for a free leaf (a constant or an input without units).
        codes: The enumeration's operator names by code.
    """

    def __init__(self, leaves: Sequence[Vector | None], codes: Sequence[str]) -> None:
        self.codes = list(codes)
        self.dims = np.array([v if v is not None else (0.0,) * _WIDTH for v in leaves],
                             dtype=float).reshape(len(leaves), _WIDTH)
        self.free = np.array([v is None for v in leaves], dtype=bool)
        self.bad = np.zeros(len(leaves), dtype=bool)
        """Inconsistent forms (an enumeration with the filter keeps none)."""
        self.dropped = 0

    def of(self, recipes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(consistent, dims, free)`` of the forms built by ``recipes`` (all one operator)."""
        n = recipes.shape[0]
        if n == 0:
            return np.ones(0, bool), np.zeros((0, _WIDTH)), np.zeros(0, bool)
        name = self.codes[int(recipes[0, 0])]
        left = recipes[:, 1]
        a, a_free = self.dims[left], self.free[left]
        if recipes[0, 2] < 0:
            ok, dims, free = _unary(name, a, a_free)
            return ok & ~self.bad[left], dims, free
        right = recipes[:, 2]
        b, b_free = self.dims[right], self.free[right]
        sound = ~(self.bad[left] | self.bad[right])
        if name in ("+", "-"):
            same = np.all(np.abs(a - b) <= TOLERANCE, axis=1)
            ok = same | a_free | b_free
            dims = np.where(a_free[:, None], b, a)
            return ok & sound, dims, a_free & b_free
        dims = a + b if name == "*" else a - b
        return sound, dims, a_free | b_free

    def keep(self, recipes: np.ndarray) -> np.ndarray:
        """Which candidates (one operator's) are consistent; counts the dropped ones."""
        ok = self.of(recipes)[0]
        self.dropped += int(ok.size - np.count_nonzero(ok))
        return ok

    def add(self, recipes: np.ndarray) -> None:
        """Record a kept level (its forms get the next ids, in order)."""
        dims = np.zeros((recipes.shape[0], _WIDTH))
        free = np.zeros(recipes.shape[0], bool)
        ok = np.ones(recipes.shape[0], bool)
        for code in np.unique(recipes[:, 0]):
            pick = np.flatnonzero(recipes[:, 0] == code)
            ok[pick], dims[pick], free[pick] = self.of(recipes[pick])
        self.dims = np.vstack([self.dims, dims])
        self.free = np.concatenate([self.free, free])
        self.bad = np.concatenate([self.bad, ~ok])


def _unary(name: str, a: np.ndarray, a_free: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = a.shape[0]
    if name in _KEEP:
        return np.ones(n, bool), a, a_free
    if name in _POWERS:
        return np.ones(n, bool), a * _POWERS[name], a_free
    dimensionless = np.all(np.abs(a) <= TOLERANCE, axis=1)
    return dimensionless | a_free, np.zeros_like(a), np.zeros(n, bool)


MEMO_LIMIT = 1 << 16
"""Trees whose dimension a :class:`TreeDimensions` remembers (cleared when full)."""


class TreeDimensions:
    """The dimension of search trees over inputs of fixed dimensions, memoised per tree.

    One per evolution run: the inputs' dimensions are fixed there, so the memo is keyed by
    the tree alone (hashing a tree is as long as the tree; the dimensions were hashed with it
    on every lookup when one cache served every run), and a new child mostly reuses its
    subtrees' entries.

    Args:
        dims: Each input's dimension (None: free), as :func:`input_dimensions` gives them.
    """

    def __init__(self, dims: Sequence[Vector | None]) -> None:
        self.dims = tuple(dims)
        self.memo: dict[Tree, tuple[Vector, bool] | None] = {}

    def consistent(self, tree: Tree) -> bool:
        """Whether ``tree`` is dimensionally consistent inside."""
        return self.dimension(tree) is not None

    def dimension(self, tree: Tree) -> tuple[Vector, bool] | None:
        """``(dimension, free)`` of ``tree``, None when inconsistent."""
        memo = self.memo
        if tree in memo:
            return memo[tree]
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        kind = tree[0]
        if kind == "v":
            vector = self.dims[tree[1]]
            found = (_ZERO, True) if vector is None else (vector, False)
        elif kind == "k":
            found = (_ZERO, True)
        else:
            found = _combined(kind, [self.dimension(child) for child in tree[1:]])
        memo[tree] = found
        return found


def tree_consistent(tree: Tree, dims: tuple[Vector | None, ...]) -> bool:
    """Whether a search tree over inputs of dimensions ``dims`` is consistent inside."""
    return _checker(dims).consistent(tree)


@lru_cache(maxsize=8)
def _checker(dims: tuple[Vector | None, ...]) -> TreeDimensions:
    return TreeDimensions(dims)


_ZERO: Vector = (0.0,) * _WIDTH


def _combined(kind: str, parts: list[tuple[Vector, bool] | None]
              ) -> tuple[Vector, bool] | None:
    """``(dimension, free)`` of operator ``kind`` applied to its operands' (None: inconsistent)."""
    if any(part is None for part in parts):
        return None
    (a, a_free) = parts[0]
    if len(parts) == 1:
        if kind in _KEEP:
            return a, a_free
        if kind in _POWERS:
            return tuple(e * _POWERS[kind] for e in a), a_free
        if a_free or all(abs(e) <= TOLERANCE for e in a):
            return _ZERO, False
        return None
    (b, b_free) = parts[1]
    if kind in ("+", "-"):
        if all(abs(x - y) <= TOLERANCE for x, y in zip(a, b, strict=True)):
            return a, a_free and b_free
        if a_free:
            return b, b_free
        if b_free:
            return a, a_free
        return None
    sign = 1.0 if kind == "*" else -1.0
    return tuple(x + sign * y for x, y in zip(a, b, strict=True)), a_free or b_free
