"""Regularised evolution over tuple trees, with linear scaling and fitted constants.

The population is an age-ordered queue (SymbolicRegression.jl's
regularised evolution): each step picks a parent by tournament, makes one
child (subtree mutation, operator change, a unary wrapper, hoisting, a
constant or variable change, or a crossover with a second tournament
winner), and the child replaces the oldest member. Fitness is the normalised
error of the best ``a + b*f`` fit (linear scaling, Keijzer 2003), so outer
constants cost no search at all. An archive keeps the best tree of every
size (the Pareto front); every ``TUNE_EVERY`` children, the constants of the
best archived trees are fitted by Levenberg-Marquardt on the subsample
(:func:`tune_constants`). Subtree values are memoised (bounded: the memo is
cleared when it holds ``MEMO_LIMIT`` arrays).
"""

from __future__ import annotations

import math
import random
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.optimize import leastsq  # here, not in the first tune: it is inside the budget

from .consistency import TreeDimensions, Vector
from .operators import BINARY, UNARY, Tree, evaluate_tree, size

__all__ = ["Evolution", "linear_nmse", "tune_constants"]

POPULATION = 160
TOURNAMENT = 6
TUNE_EVERY = 400
TUNE_BEST = 2
MEMO_LIMIT = 30_000
CROSSOVER_RATE = 0.3


def linear_nmse(values: np.ndarray, target: np.ndarray, target_var: float) -> float:
    """Normalised MSE of the best ``a + b*values`` fit (1.0 for a constant; inf if not finite)."""
    with np.errstate(all="ignore"):
        return _linear_nmse(values, target - target.mean(), target_var)


def _linear_nmse(values: np.ndarray, centred_target: np.ndarray, target_var: float) -> float:
    """:func:`linear_nmse` with the target centred once by the caller (call under
    ``np.errstate``): the evolution scores every child against one target.
    ``np.add.reduce(v) / v.size`` is what ``v.mean()`` computes, without its Python layer."""
    if not isinstance(values, np.ndarray) or values.shape != centred_target.shape:
        return 1.0 if np.isfinite(values).all() else float("inf")
    centred = values - np.add.reduce(values) / values.size
    spread = float(centred @ centred)
    if not np.isfinite(spread):
        return float("inf")
    if spread <= 1e-300:
        return 1.0
    r = float(centred @ centred_target)
    square, denominator = r * r, spread * target_var * centred_target.size
    if math.isfinite(square) and math.isfinite(denominator):  # the hot path: inline
        return max(0.0, 1.0 - square / denominator)
    return max(0.0, 1.0 - _explained_share(r, spread, target_var * centred_target.size))


def _explained_share(r: float, spread: float, energy: float) -> float:
    """``r**2 / (spread * energy)``, the squared correlation; when ``r**2`` or the product
    overflows (a form with values near 1e150 against a target of scale 1e4), the correlation
    first, then its square; -inf when that overflows too, so that the form scores inf.

    Written as one quotient, a correlated form's overflow gave ``inf/inf``, and
    ``max(0.0, 1 - nan)`` is an error of 0: a form of huge values looked exact, stopped
    every evolution at once (a few thousand children of a share of hundreds of thousands)
    and took the refits' places as an "exact" form.
    """
    square, denominator = r * r, spread * energy
    if math.isfinite(square) and math.isfinite(denominator):
        return square / denominator  # as before: the same scores bit for bit
    correlation = r / math.sqrt(spread) / math.sqrt(energy)
    return correlation * correlation if math.isfinite(correlation) else -math.inf


def weighted_linear_nmse(values: np.ndarray, target: np.ndarray, weights: np.ndarray) -> float:
    """:func:`linear_nmse` under row weights (summing to 1): ``1 - r_w^2`` of the weighted
    correlation, the weighted NMSE of the best ``a + b*values``."""
    if not isinstance(values, np.ndarray) or values.shape != target.shape:
        return 1.0 if np.isfinite(values).all() else float("inf")
    with np.errstate(all="ignore"):
        centred = values - float(weights @ values)
        spread = float(weights @ (centred * centred))
        if not np.isfinite(spread):
            return float("inf")
        if spread <= 1e-300:
            return 1.0
        rest = target - float(weights @ target)
        r = float(weights @ (centred * rest))
        target_var = float(weights @ (rest * rest))
    if not target_var > 0:
        return 1.0
    return max(0.0, 1.0 - _explained_share(r, spread, target_var))


@dataclass
class Evolution:
    """One regularised-evolution run on a problem view.

    Args:
        columns: Input columns on the fitness rows.
        target: Target on the same rows.
        binary, unary: Operator names.
        max_size: Largest tree size.
        seed: Seed of every random choice.
        weights: Row weights of the fitness rows (PySR's ``weights``); None: equal.
        allowed: Whether a tree may be kept (PySR's constraints); a tree it refuses
            scores inf. None: every tree.
        dimensions: Each input's dimension (:func:`.consistency.input_dimensions`); with
            them, a tree inconsistent inside scores infinite, unevaluated.
    """

    columns: Sequence[np.ndarray]
    target: np.ndarray
    binary: Sequence[str]
    unary: Sequence[str]
    max_size: int
    seed: int = 0
    weights: np.ndarray | None = None
    allowed: Callable[[Tree], bool] | None = None
    dimensions: tuple[Vector | None, ...] | None = None
    archive: dict[int, tuple[float, Tree]] = field(default_factory=dict)
    evaluated: int = 0

    def __post_init__(self) -> None:
        self.binary, self.unary = tuple(self.binary), tuple(self.unary)
        self.rng = random.Random(self.seed * 1_000_003 + 11)
        self.var = float(np.var(self.target))
        if self.weights is not None:
            self.weights = self.weights / float(self.weights.sum())
        self.memo: dict[Tree, np.ndarray] = {}
        self.scores: dict[Tree, float] = {}
        self.population: deque[tuple[float, int, Tree]] = deque()
        """Members as ``(score, size, tree)``: a tournament ranks by the first two."""
        self._centred = self.target - self.target.mean()
        self._consistent = None if self.dimensions is None else \
            TreeDimensions(self.dimensions).consistent
        # ``randrange(n)`` for an int n > 0 is ``_randbelow(n)`` (CPython's random.py): the
        # same numbers without its argument checks, in the loop's hottest call
        self._below = self.rng._randbelow

    # ----------------------------------------------------------- fitness
    def fitness(self, tree: Tree) -> float:
        """The tree's normalised error under linear scaling (inf: refused or not finite)."""
        with np.errstate(all="ignore"):
            return self._fitness(tree)

    def _fitness(self, tree: Tree) -> float:
        """:meth:`fitness` under the caller's ``np.errstate(all="ignore")``."""
        known = self.scores.get(tree)
        if known is not None:
            return known
        if len(self.memo) > MEMO_LIMIT:
            self.memo.clear()
        if len(self.scores) > 4 * MEMO_LIMIT:
            self.scores.clear()
        if self._consistent is not None and not self._consistent(tree):
            self.scores[tree] = math.inf
            return math.inf
        values = evaluate_tree(tree, self.columns, self.memo)
        if self.allowed is not None and not self.allowed(tree):
            score = float("inf")
        elif self.var <= 0:
            score = 1.0
        elif self.weights is not None:
            score = weighted_linear_nmse(values, self.target, self.weights)
        else:
            score = _linear_nmse(values, self._centred, self.var)
        self.evaluated += 1
        self.scores[tree] = score
        self._archive(tree, score)
        return score

    def _archive(self, tree: Tree, score: float) -> None:
        if not np.isfinite(score):
            return
        n = size(tree)
        held = self.archive.get(n)
        if held is None or score < held[0]:
            self.archive[n] = (score, tree)

    # --------------------------------------------------------------- run
    def seed_population(self, trees: Sequence[Tree]) -> None:
        for tree in trees:
            if size(tree) <= self.max_size:
                self.population.append((self.fitness(tree), size(tree), tree))
        while len(self.population) < POPULATION:
            tree = self.random_tree(self.rng.randrange(1, 4))
            self.population.append((self.fitness(tree), size(tree), tree))
        while len(self.population) > POPULATION:
            self.population.popleft()

    def run(self, over: Callable[[int], bool], stop_nmse: float = 1e-14) -> None:
        """Evolve until ``over(evaluated)`` or an exact fit."""
        with np.errstate(all="ignore"):  # once here, not around every child
            self._run(over, stop_nmse)

    def _run(self, over: Callable[[int], bool], stop_nmse: float) -> None:
        children = 0
        while not over(self.evaluated):
            child = self.child()
            if child is None:
                continue
            score = self._fitness(child)
            self.population.popleft()
            self.population.append((score, size(child), child))
            children += 1
            if score <= stop_nmse:
                return
            if children % TUNE_EVERY == 0:
                self.tune(over)

    def tune(self, over: Callable[[int], bool]) -> None:
        """Fit the constants of the best archived trees that have any."""
        best = sorted(self.archive.values(), key=lambda item: item[0])[:TUNE_BEST]
        for score, tree in best:
            if over(self.evaluated):
                return
            if not _constants(tree):
                continue
            tuned = tune_constants(tree, self.columns, self.target)
            if tuned is not None and tuned != tree:
                tuned_score = self.fitness(tuned)
                if tuned_score < score:
                    self.population.append((tuned_score, size(tuned), tuned))
                    self.population.popleft()

    # ---------------------------------------------------------- variation
    def tournament(self) -> Tree:
        population, below = self.population, self._below
        n = len(population)
        members = [population[below(n)] for _ in range(TOURNAMENT)]
        return min(members, key=_rank)[2]

    def child(self) -> Tree | None:
        parent = self.tournament()
        if self.rng.random() < CROSSOVER_RATE:
            donor = _subtrees(self.tournament())
            piece = donor[self._below(len(donor))]
            new = _replace_random(parent, piece, self.rng)
        else:
            new = self.mutate(parent)
        if new is None or new == parent or size(new) > self.max_size:
            return None
        return new

    def mutate(self, tree: Tree) -> Tree | None:
        kind = self._below(6)
        if kind == 0:
            return _replace_random(tree, self.random_tree(self.rng.randrange(1, 3)), self.rng)
        if kind == 1:
            return _map_random(tree, self._swap_operator, self.rng)
        if kind == 2 and self.unary:
            name = self.rng.choice(self.unary)
            return _map_random(tree, lambda node: (name, node), self.rng)
        if kind == 3:
            pieces = _subtrees(tree)
            return pieces[self._below(len(pieces))]
        if kind == 4:
            return _map_random(tree, self._leaf_change, self.rng, leaves_only=True)
        return _map_random(tree, self._wrap_binary, self.rng)

    def _swap_operator(self, node: Tree) -> Tree:
        if node[0] in BINARY:
            return (self.rng.choice(self.binary), node[1], node[2])
        if node[0] in UNARY and self.unary:
            return (self.rng.choice(self.unary), node[1])
        return node

    def _leaf_change(self, node: Tree) -> Tree:
        if node[0] == "k" and self.rng.random() < 0.7:
            return ("k", float(node[1]) * math.exp(self.rng.gauss(0.0, 0.5)))
        return self.random_leaf()

    def _wrap_binary(self, node: Tree) -> Tree:
        name = self.rng.choice(self.binary)
        other = self.random_tree(1)
        return (name, node, other) if self.rng.random() < 0.5 else (name, other, node)

    def random_leaf(self) -> Tree:
        if self.rng.random() < 0.2:
            return ("k", self.rng.choice((1.0, 2.0, 0.5, -1.0, 3.0)))
        return ("v", self._below(len(self.columns)))

    def random_tree(self, depth: int) -> Tree:
        if depth <= 1 or self.rng.random() < 0.3:
            return self.random_leaf()
        if self.unary and self.rng.random() < 0.3:
            return (self.rng.choice(self.unary), self.random_tree(depth - 1))
        return (self.rng.choice(self.binary), self.random_tree(depth - 1),
                self.random_tree(depth - 1))


def _rank(member: tuple[float, int, Tree]) -> tuple[float, int]:
    return member[0], member[1]


# -------------------------------------------------------------- tree surgery
@lru_cache(maxsize=1 << 16)
def _subtrees(tree: Tree) -> tuple[Tree, ...]:
    """Every subtree, pre-order (cached: trees are immutable and recur in a population)."""
    if tree[0] in ("v", "k"):
        return (tree,)
    found: tuple[Tree, ...] = (tree,)
    for child in tree[1:]:
        found += _subtrees(child)
    return found


def _replace_random(tree: Tree, piece: Tree, rng: random.Random) -> Tree:
    return _map_random(tree, lambda node: piece, rng)


def _map_random(tree: Tree, change, rng: random.Random, leaves_only: bool = False) -> Tree:
    """``tree`` with ``change`` applied to one node chosen uniformly (pre-order)."""
    nodes = _subtrees(tree)
    if leaves_only:
        choices = [i for i, n in enumerate(nodes) if n[0] in ("v", "k")]
        if not choices:
            return tree
        return _replace_at(tree, choices[rng.randrange(len(choices))], change)
    return _replace_at(tree, rng.randrange(len(nodes)), change)


def _replace_at(tree: Tree, index: int, change) -> Tree:
    """Rebuild only the path to pre-order node ``index``, applying ``change`` there."""
    if index == 0:
        return change(tree)
    index -= 1
    children = list(tree[1:])
    for position, child in enumerate(children):
        count = len(_subtrees(child))
        if index < count:
            children[position] = _replace_at(child, index, change)
            return (tree[0], *children)
        index -= count
    return tree


def _constants(tree: Tree) -> list[float]:
    return [float(n[1]) for n in _subtrees(tree) if n[0] == "k"]


def _with_constants(tree: Tree, values: list[float]) -> Tree:
    iterator = iter(values)

    def walk(node: Tree) -> Tree:
        if node[0] == "k":
            return ("k", float(next(iterator)))
        if node[0] == "v":
            return node
        return (node[0], *(walk(child) for child in node[1:]))

    return walk(tree)


def _evaluate_with_constants(tree: Tree, columns: Sequence[np.ndarray],
                             constants: Iterator[float]) -> Any:
    """``evaluate_tree(_with_constants(tree, constants), columns, None)`` without building the
    tree: the constants are taken in the same (pre-)order, so the values are the same."""
    kind = tree[0]
    if kind == "v":
        return columns[tree[1]]
    if kind == "k":
        return np.float64(next(constants))
    if len(tree) == 2:
        return UNARY[kind](_evaluate_with_constants(tree[1], columns, constants))
    left = _evaluate_with_constants(tree[1], columns, constants)
    return BINARY[kind](left, _evaluate_with_constants(tree[2], columns, constants))


def tune_constants(tree: Tree, columns: Sequence[np.ndarray], target: np.ndarray,
                   max_evaluations: int = 60) -> Tree | None:
    """``tree`` with its constants fitted by Levenberg-Marquardt under linear scaling."""
    start = _constants(tree)
    if not start or len(start) + 2 > target.size:  # MINPACK needs no more values than rows
        return tree

    def residuals(theta: np.ndarray) -> np.ndarray:  # called inside the errstate below
        values = _evaluate_with_constants(tree, columns, iter(theta[2:]))
        values = np.broadcast_to(np.asarray(values, dtype=float), target.shape)
        out = target - theta[0] - theta[1] * values
        return np.where(np.isfinite(out), out, 1e6)

    with np.errstate(all="ignore"):
        values = np.broadcast_to(np.asarray(evaluate_tree(tree, columns, None), dtype=float),
                                 target.shape)
        design = np.column_stack([np.ones_like(values), values])
        if not np.all(np.isfinite(design)):
            return None
        (a, b), *_ = np.linalg.lstsq(design, target, rcond=None)
        with warnings.catch_warnings():  # hitting maxfev is expected: the budget is small
            warnings.simplefilter("ignore")
            theta, *_ = leastsq(residuals, np.array([a, b, *start]), maxfev=max_evaluations)
    if not np.all(np.isfinite(theta)):
        return None
    return _with_constants(tree, [float(v) for v in theta[2:]])

