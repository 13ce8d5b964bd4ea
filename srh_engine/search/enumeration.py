"""Bottom-up enumeration of small forms, vectorised over expressions, deduplicated by value.

Every form of size ``s`` is an operator applied to forms of smaller sizes, so
the forms of one size are computed at once: a whole level of operands at a
time, as NumPy arrays of shape ``(forms, rows)`` on a small subsample of the
rows. Forms with the same values (up to float32 rounding) are one form:
``x*y`` and ``y*x``, ``x/(1/y)`` and ``x*y`` are kept once, which is the
canonical deduplication of :mod:`srh_engine.canonical` done on meaning
rather than on syntax, and much stronger. Non-finite and constant forms are
dropped.

A form is scored against every target at once with linear scaling: the
best ``a + b*f`` fit of a target has normalised error ``1 - r**2`` (``r``
the correlation of the form with the target), one matrix product per level.
Levels larger than ``level_cap`` keep half their forms by correlation with
the targets and half at random (seeded), so the enumeration stays bounded
in memory and time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..nodes import Expression, Number, Symbol
from .consistency import FormDimensions, Vector
from .form_constraints import FormConstraints
from .operators import BINARY, COMMUTATIVE, COST, UNARY, Tree

__all__ = ["Enumeration", "Scored", "unit_rows"]

CHUNK_ELEMENTS = 2_000_000
"""Most float64 values one vectorised operator application produces at once."""

MAX_ABS = 1e12
"""Forms with a larger value on the subsample are dropped (overflow, near poles)."""

TINY = 1e-200
"""Smaller values are zero in :meth:`Enumeration.values_on` (no subnormal arithmetic)."""

KEEP_PER_LEVEL = 24
"""Best forms kept per level and target for the caller."""

CONSTANTS = (1.0, 2.0, math.pi)
"""Constant leaves. Linear scaling fits the outer constants of a form for free, but not the
inner ones: ``sin(pi*x)``, ``cos(y/2)``, ``exp(-2*E/T)`` need a constant inside a function,
and one that a fit started from the enumerated form reaches (``sin(x)`` does not turn into
``sin(pi*x)``). These are the commonest structural constants; others are built from them
(``3*x`` is ``x + 2*x``; ``pi*x/2``)."""


@dataclass(frozen=True, slots=True)
class Scored:
    """A form and its normalised linear-scaling error on one target.

    ``recipe`` is ``(operator code, left id, right id)`` over kept forms (see
    :meth:`Enumeration.tree`); the form itself may have been dropped by a cap.
    """

    nmse: float
    target: int
    size: int
    recipe: np.ndarray = field(compare=False)


@dataclass(slots=True)
class _Level:
    values: np.ndarray
    recipes: np.ndarray  # (n, 3): operator code, left id, right id (-1 for none)
    first_id: int


@dataclass
class Enumeration:
    """The enumeration state over one problem view.

    Args:
        columns: ``(rows, inputs)`` subsample of the inputs.
        targets: ``(targets, rows)`` target values on the same rows.
        binary, unary: Operator names.
        level_cap: Most forms kept per size.
        seed: Seed of the random part of capped levels.
        constants: The constant leaves (not scored themselves: a constant form is dropped).
        dimensions: Each input's dimension (:func:`.consistency.input_dimensions`); with
            them, forms inconsistent inside are dropped as they are built.
        limits: PySR's ``(nested_constraints, constraints)``; with them, forms that break
            them are dropped as they are built (:mod:`.form_constraints`).
        inputs: The inputs as engine expressions (what the limits count; default: plain
            variables).
    """

    columns: np.ndarray
    targets: np.ndarray
    binary: Sequence[str]
    unary: Sequence[str]
    level_cap: int = 20_000
    seed: int = 0
    constants: Sequence[float] = CONSTANTS
    dimensions: Sequence[Vector | None] | None = None
    limits: tuple[Any, Any] | None = None
    inputs: Sequence[Expression] | None = None
    levels: dict[int, _Level] = field(default_factory=dict)
    best: list[Scored] = field(default_factory=list)
    evaluated: int = 0
    _codes: list[str] = field(default_factory=list)
    _leaves: list[Tree] = field(default_factory=list)
    _keys: np.ndarray = field(default_factory=lambda: np.empty(0))
    _next_id: int = 0

    def __post_init__(self) -> None:
        self._codes = [*self.binary, *self.unary]
        rng = np.random.default_rng([self.seed, 7])
        self._weights = rng.normal(size=self.columns.shape[0])
        self._rng = np.random.default_rng([self.seed, 8])
        self._normalised_targets = np.stack([_normalised(t) for t in self.targets])
        leaves = [self.columns[:, i] for i in range(self.columns.shape[1])]
        self._leaves = [("v", i) for i in range(len(leaves))] + \
            [("k", float(c)) for c in self.constants]
        values = np.vstack([*leaves, *(np.full(self.columns.shape[0], float(c))
                                       for c in self.constants)])
        recipes = np.array([[-1, i, -1] for i in range(len(self._leaves))], dtype=np.int64)
        self._keys = np.sort(self._key(values))
        self.levels[1] = _Level(values, recipes, 0)
        self._next_id = len(self._leaves)
        self._forms = None if self.dimensions is None else FormDimensions(
            [*self.dimensions, *(None for _ in self.constants)], self._codes)
        self._limits = None if self.limits is None else FormConstraints(
            [*(self.inputs or [Symbol(f"x{i}") for i in range(len(leaves))]),
             *(Number(float(c)) for c in self.constants)], self._codes, *self.limits)
        self._filters = [f for f in (self._forms, self._limits) if f is not None]
        scored = np.arange(len(leaves)) if self._limits is None else \
            np.flatnonzero(~self._limits.bad[:len(leaves)])  # an input that breaks them
        if scored.size:
            self._score(values[scored], recipes[scored], 1)

    # ------------------------------------------------------------- building
    def grow(self, size: int, over: Callable[[int], bool]) -> bool:
        """Build the level of ``size``; False when the budget cut it short.

        ``over(evaluated)`` says whether the budget is spent after ``evaluated`` forms.
        """
        kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        count, complete = 0, True
        for code, name in enumerate(self._codes):
            for values, recipes in self._candidates(code, name, size):
                if over(self.evaluated):
                    complete = False
                    break
                values, recipes = self._filter(values, recipes)
                if values.shape[0] == 0:
                    continue
                relevance = self._score(values, recipes, size)
                kept.append((values, recipes, relevance))
                count += values.shape[0]
                if count > 2 * self.level_cap:
                    kept = [self._capped(kept)]
                    count = kept[0][0].shape[0]
            if not complete:
                break
        if kept:
            values, recipes, _ = self._capped(kept)
            self.levels[size] = _Level(values, recipes, self._next_id)
            self._next_id += values.shape[0]
            for form_filter in self._filters:
                form_filter.add(recipes)
        return complete

    def _candidates(self, code: int, name: str, size: int):
        if name in UNARY:
            operand = self.levels.get(size - COST[name])
            if operand is not None:
                rows = _real_rows(operand, name)
                yield self._unary(code, name, operand, rows)
            return
        for left_size in range(1, size - 1):
            right_size = size - 1 - left_size
            if name in COMMUTATIVE and left_size > right_size:
                continue
            left, right = self.levels.get(left_size), self.levels.get(right_size)
            if left is None or right is None:
                continue
            yield from self._binary(code, name, left, right, left_size == right_size)

    def _unary(self, code: int, name: str, operand: _Level, rows: np.ndarray):
        with np.errstate(all="ignore"):
            values = UNARY[name](operand.values[rows])
        recipes = np.column_stack([np.full(rows.size, code), operand.first_id + rows,
                                   np.full(rows.size, -1)])
        return values, recipes

    def _binary(self, code: int, name: str, left: _Level, right: _Level, same: bool):
        n_right, width = right.values.shape
        step = max(1, CHUNK_ELEMENTS // max(n_right * width, 1))
        for start in range(0, left.values.shape[0], step):
            block = left.values[start:start + step]
            with np.errstate(all="ignore"):
                values = BINARY[name](block[:, None, :], right.values[None, :, :])
            li, ri = np.meshgrid(np.arange(start, start + block.shape[0]), np.arange(n_right),
                                 indexing="ij")
            values = values.reshape(-1, width)
            li, ri = li.reshape(-1), ri.reshape(-1)
            if same and name in COMMUTATIVE:
                keep = li <= ri
                values, li, ri = values[keep], li[keep], ri[keep]
            recipes = np.column_stack([np.full(li.size, code), left.first_id + li,
                                       right.first_id + ri])
            yield values, recipes

    def _filter(self, values: np.ndarray, recipes: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        self.evaluated += values.shape[0]
        for form_filter in self._filters:  # before the deduplication: a good twin is kept
            good = form_filter.keep(recipes)
            values, recipes = values[good], recipes[good]
        with np.errstate(all="ignore"):
            keys = self._key(values)  # nan for any non-finite value
        rows = np.flatnonzero(np.isfinite(keys))
        order = rows[np.argsort(keys[rows], kind="stable")]
        ordered = keys[order]
        first = np.ones(order.size, dtype=bool)
        first[1:] = ordered[1:] != ordered[:-1]
        first &= ~_member(ordered, self._keys)
        rows = np.sort(order[first])
        values, recipes = values[rows], recipes[rows]
        with np.errstate(all="ignore"):
            high, low = values.max(axis=1), values.min(axis=1)
            scale = np.maximum(np.abs(high), np.abs(low))
            good = (scale < MAX_ABS) & (high - low > 1e-9 * (scale + 1e-300))
        self._keys = np.sort(np.concatenate([self._keys, keys[rows]]))
        return values[good], recipes[good]

    def _key(self, values: np.ndarray) -> np.ndarray:
        # float32 rounding makes values equal up to float noise key alike
        return values.astype(np.float32).astype(np.float64) @ self._weights

    def _capped(self, kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """At most ``level_cap`` forms: half the most relevant, half at random."""
        values = np.vstack([k[0] for k in kept]) if len(kept) > 1 else kept[0][0]
        recipes = np.vstack([k[1] for k in kept]) if len(kept) > 1 else kept[0][1]
        relevance = np.concatenate([k[2] for k in kept])
        n = values.shape[0]
        if n <= self.level_cap:
            return values, recipes, relevance
        half = self.level_cap // 2
        best = np.argpartition(-relevance, half)[:half]
        mask = np.ones(n, dtype=bool)
        mask[best] = False
        rest = np.flatnonzero(mask)
        chosen = np.sort(np.concatenate([best, self._rng.choice(rest, self.level_cap - half,
                                                                  replace=False)]))
        return values[chosen], recipes[chosen], relevance[chosen]

    # -------------------------------------------------------------- scoring
    def _score(self, values: np.ndarray, recipes: np.ndarray, size: int) -> np.ndarray:
        """Record the best forms of this batch per target; their relevance (max |r|)."""
        with np.errstate(all="ignore"):
            r = unit_rows(values) @ self._normalised_targets.T
        nmse = np.clip(1.0 - r * r, 0.0, 1.0)
        for target in range(nmse.shape[1]):
            column = nmse[:, target]
            count = min(KEEP_PER_LEVEL, column.size)
            top = np.argpartition(column, count - 1)[:count]
            self.best += [Scored(float(column[i]), target, size, recipes[i].copy())
                          for i in top]
        if len(self.best) > 40 * KEEP_PER_LEVEL * nmse.shape[1]:
            self.best.sort(key=lambda s: (s.nmse, s.size))
            del self.best[20 * KEEP_PER_LEVEL * nmse.shape[1]:]
        return np.max(np.abs(r), axis=1)

    def best_nmse(self) -> float:
        return min((s.nmse for s in self.best), default=1.0)

    # ---------------------------------------------------------------- trees
    def tree(self, recipe: np.ndarray | int) -> Tree:
        """The tree of a recipe (or of a kept form's id)."""
        if not isinstance(recipe, np.ndarray):
            level = next(lv for lv in self.levels.values()
                         if lv.first_id <= recipe < lv.first_id + lv.values.shape[0])
            recipe = level.recipes[recipe - level.first_id]
        code, left, right = (int(v) for v in recipe)
        if code < 0:
            return self._leaves[left]
        name = self._codes[code]
        if right < 0:
            return (name, self.tree(left))
        return (name, self.tree(left), self.tree(right))

    def values_on(self, columns: np.ndarray, max_size: int, limit: int,
                  over: Callable[[], bool] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Kept forms of size ``<= max_size`` (at most ``limit``, smallest first) on new rows.

        Returns ``(ids, values)``: form ids (for :meth:`tree`) and their ``(forms, rows)``
        values on ``columns``, recomputed level by level from the recipes (operands are kept
        forms of smaller levels), vectorised per operator. The constant leaves are left out.
        ``over()`` is checked before each level (the levels so far are returned). Values
        below ``TINY`` in magnitude are set to 0: subnormal numbers (``exp(-exp(x))``) make
        every later operation on them about a hundred times slower.
        """
        rows = columns.shape[0]
        total = sum(lv.values.shape[0] for s, lv in self.levels.items() if s <= max_size)
        values = np.empty((min(total, self._next_id, limit), rows))
        ids: list[np.ndarray] = []
        count = 0
        for level_size in sorted(self.levels):
            level = self.levels[level_size]
            if level_size > max_size or count >= limit or (over is not None and over()):
                break
            n = min(level.values.shape[0], limit - count)
            recipes = level.recipes[:n]
            if level_size == 1:
                block = np.vstack([columns[:, leaf[1]] if leaf[0] == "v" else
                                   np.full(rows, leaf[1])
                                   for leaf in (self._leaves[i] for i in recipes[:, 1])])
            else:
                block = np.empty((n, rows))
                with np.errstate(all="ignore"):
                    for code in np.unique(recipes[:, 0]):
                        pick = np.flatnonzero(recipes[:, 0] == code)
                        name = self._codes[int(code)]
                        left = values[self._position(recipes[pick, 1], ids)]
                        if name in UNARY:
                            block[pick] = UNARY[name](left)
                        else:
                            block[pick] = BINARY[name](
                                left, values[self._position(recipes[pick, 2], ids)])
            with np.errstate(all="ignore"):
                block[np.abs(block) < TINY] = 0.0
            values[count:count + n] = block
            ids.append(np.arange(level.first_id, level.first_id + n))
            count += n
        all_ids = np.concatenate(ids) if ids else np.empty(0, dtype=np.int64)
        constants = [i for i, leaf in enumerate(self._leaves) if leaf[0] == "k"]
        keep = ~np.isin(all_ids, constants)
        return all_ids[keep], values[:count][keep]

    def describe(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(sizes, roots)`` of kept forms: each one's size and its root operator's name
        (``"v"`` or ``"k"`` for a leaf)."""
        ids = np.asarray(ids, dtype=np.int64)
        ordered = sorted(self.levels.items(), key=lambda item: item[1].first_id)
        starts = np.array([level.first_id for _, level in ordered])
        where = np.searchsorted(starts, ids, side="right") - 1
        sizes = np.array([size for size, _ in ordered])[where]
        recipes = np.empty((ids.size, 2), dtype=np.int64)
        for index, (_, level) in enumerate(ordered):
            pick = where == index
            recipes[pick] = level.recipes[ids[pick] - level.first_id, :2]
        operators = np.array(self._codes + [""], dtype=object)  # code -1 reads the ""
        leaves = np.array([leaf[0] for leaf in self._leaves], dtype=object)
        codes, operands = recipes[:, 0], recipes[:, 1]
        roots = np.where(codes < 0, leaves[np.where(codes < 0, operands, 0)], operators[codes])
        return sizes, roots

    @staticmethod
    def _position(form_ids: np.ndarray, ids: list[np.ndarray]) -> np.ndarray:
        """Rows of ``values_on``'s buffer holding the forms ``form_ids`` (contiguous levels)."""
        starts = np.array([block[0] for block in ids])
        ends = np.array([block[-1] + 1 for block in ids])
        offsets = np.concatenate([[0], np.cumsum(ends - starts)[:-1]])
        level = np.searchsorted(starts, form_ids, side="right") - 1
        return offsets[level] + form_ids - starts[level]

    def built_only_from(self, ids: np.ndarray, operators: Sequence[str]) -> np.ndarray:
        """Whether each kept form uses no operator but ``operators`` (leaves are free)."""
        allowed = np.array([name in operators for name in self._codes] + [True])  # -1: leaf
        good = np.zeros(self._next_id, dtype=bool)
        for _, level in sorted(self.levels.items(), key=lambda item: item[1].first_id):
            codes, left, right = level.recipes.T
            if codes.size == 0:
                continue
            ok = allowed[codes]
            inner = codes >= 0
            ok[inner] &= good[left[inner]] & np.where(right[inner] >= 0,
                                                      good[np.maximum(right[inner], 0)], True)
            good[level.first_id:level.first_id + codes.size] = ok
        return good[np.asarray(ids, dtype=np.int64)]

    def forms_of_size(self, size: int) -> range:
        level = self.levels.get(size)
        return range(0) if level is None else range(level.first_id,
                                                    level.first_id + level.values.shape[0])


def _member(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    if sorted_keys.size == 0:
        return np.zeros(keys.size, dtype=bool)
    where = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return sorted_keys[where] == keys


def _real_rows(level: _Level, name: str) -> np.ndarray:
    """Operands a unary operator gives real values for (no log of negatives...)."""
    if name in ("sqrt", "log"):
        low = level.values.min(axis=1)
        return np.flatnonzero(low > 0 if name == "log" else low >= 0)
    if name in ("exp", "cube"):
        return np.flatnonzero(np.abs(level.values).max(axis=1) < 50)
    if name == "inv":
        return np.flatnonzero(np.abs(level.values).min(axis=1) > 1e-9)
    return np.arange(level.values.shape[0])


def _normalised(values: np.ndarray) -> np.ndarray:
    centred = values - values.mean()
    norm = float(np.linalg.norm(centred))
    return centred / norm if norm > 0 else centred


def unit_rows(values: np.ndarray) -> np.ndarray:
    """Centred and scaled to norm 1 along the last axis (zero rows stay zero): the rows'
    inner products with unit targets are their correlations."""
    centred = values - values.mean(axis=-1, keepdims=True)
    norm = np.linalg.norm(centred, axis=-1, keepdims=True)
    return centred / np.where(norm > 0, norm, 1.0)
