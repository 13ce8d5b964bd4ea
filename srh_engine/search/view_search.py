"""Searching one view: enumeration, sums and products of its forms, then evolution."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..constraints import constraint_violations
from .budget import Budget
from .combination import MAX_FORM_SIZE, combinations
from .consistency import input_dimensions
from .enumeration import Enumeration
from .evolution import Evolution, linear_nmse
from .inner_scales import SCAN_ROWS, SCAN_SIZE, scaled_forms
from .operators import Tree, evaluate_tree, size, to_expression
from .views import (
    BOUNDED_INVERSES,
    EXACT_NMSE,
    Found,
    Run,
    View,
    all_rows_nmse,
    sample_rows,
    target_transforms,
)

__all__ = ["search_view"]


ENUMERATION_ROWS = 32
FITNESS_ROWS = 256
ENUMERATION_SHARE = 0.6
COMBINATION_SHARE = 0.3
"""Of what the enumeration leaves: the sparse combinations of its forms."""
SEEDS_PER_RUN = 60
CONSISTENT_FORMS = True
"""With the inputs' units known, enumerated and evolved forms that are dimensionally
inconsistent inside are dropped as they are built (:mod:`.consistency`)."""
ELIMINATION_ROWS = 512
"""Rows given to the combinations: the dictionary uses 128 of them, the backward
elimination over monomials all of them (its full fit has up to a third as many terms)."""


def search_view(run: Run, view: View, target: np.ndarray, budget: Budget, seed: int,
                transforms: bool = True, evolve: bool = True, combine: bool = True,
                largest: int | None = None) -> list[Found]:
    """Enumerate then evolve on one view of (a sub-problem of) the problem."""
    rng = np.random.default_rng([seed, 3])
    candidates = target_transforms(target) if transforms else {"identity": target}
    if not candidates:  # no transform with a finite spread (squares beyond 1e308)
        return []
    names = list(candidates)
    few = sample_rows(target.size, ENUMERATION_ROWS, rng, run.weights)
    many = sample_rows(target.size, FITNESS_ROWS, rng)
    enumeration_budget = budget.share(ENUMERATION_SHARE)
    dimensions = input_dimensions(view.inputs, run.units) if CONSISTENT_FORMS else None
    enumeration = Enumeration(view.columns[few], np.stack([candidates[n][few] for n in names]),
                              run.binary, run.unary, seed=seed, dimensions=dimensions,
                              limits=run.limits, inputs=view.inputs)
    combined: list[tuple[str, Tree]] | None = None
    combine = combine and view.columns.shape[0] > ENUMERATION_ROWS
    scanned: list[Found] | None = None
    top = min(run.max_size, largest or run.max_size)
    for level in range(2, top + 1):
        complete = enumeration.grow(level, enumeration_budget.over)
        if _claims_exact(enumeration, view, candidates, names):
            scanned = []
            break
        if scanned is None and (level >= min(SCAN_SIZE, top) or not complete):
            # the forms with an inner scale, once the scanned sizes exist
            scanned = _scaled(run, enumeration, view, candidates, many, budget, seed, level)
            if any(item.nmse <= EXACT_NMSE for item in scanned):
                break
        if combine and combined is None and (level >= MAX_FORM_SIZE or not complete):
            # the dictionary is complete at this level: combine before growing further
            combined = _combined(run, enumeration, view, candidates, budget, rng, seed,
                                 COMBINATION_SHARE if evolve else 1.0)
            if any(all_rows_nmse(tree, view, candidates[name]) <= EXACT_NMSE
                   for name, tree in combined[:len(candidates) * 2]):
                break
        if not complete:
            break
    if combine and combined is None:
        combined = _combined(run, enumeration, view, candidates, budget, rng, seed,
                                 COMBINATION_SHARE if evolve else 1.0)
    run.counter.value += enumeration.evaluated
    columns = [view.columns[many, i] for i in range(view.columns.shape[1])]
    trees = [(names[item.target], enumeration.tree(item.recipe))
             for item in sorted(enumeration.best, key=lambda s: (s.nmse, s.size))[:400]]
    trees += combined or []
    scored: dict[str, list[tuple[float, Tree]]] = {n: [] for n in names}
    for name, tree in trees:
        t = candidates[name][many]
        with np.errstate(all="ignore"):
            values = evaluate_tree(tree, columns, None)
        scored[name].append((linear_nmse(values, t, float(np.var(t))), tree))
    found = [Found(s, tree, view, name) for name, items in scored.items() for s, tree in items]
    found += scanned or []
    for item in found:  # a few extreme rows can make a form look exact on a subsample
        if item.nmse <= EXACT_NMSE:
            item.nmse = max(item.nmse, all_rows_nmse(item.tree, view, candidates[item.transform]))
    best_name = min(names, key=lambda n: min((s for s, _ in scored[n]), default=1.0))
    if evolve and min((f.nmse for f in found), default=1.0) > EXACT_NMSE and \
            not budget.over():
        found += _evolve(run, view, candidates[best_name][many], columns, scored[best_name],
                         best_name, budget, seed, many, dimensions)
    return found


def _combined(run: Run, enumeration: Enumeration, view: View,
              candidates: dict[str, np.ndarray], budget: Budget, rng: np.random.Generator,
              seed: int, fraction: float) -> list[tuple[str, Tree]]:
    """Sparse combinations of the enumerated forms, per transform (:mod:`.combination`),
    in ``fraction`` of what is left of ``budget`` (all of it when nothing evolves after)."""
    if budget.over():
        return []
    share = budget.share(fraction)
    rows = sample_rows(view.columns.shape[0], ELIMINATION_ROWS, rng, run.weights)
    rows = rng.permutation(rows)  # the first DICTIONARY_ROWS of them: the dictionary's rows
    # sums fitted inside a bounded inverse (``arcsin(f + g)``) are rare, and each transform
    # more is a stage more of every combination: those transforms get forms, not sums
    targets = {name: values[rows] for name, values in candidates.items()
               if name not in BOUNDED_INVERSES}
    # its work (forms scored against residuals) is checked against the budget as pending
    # evaluations, so that a count budget stays deterministic; only the fitted sums count as
    # evaluated expressions
    found = combinations(enumeration, view.columns[rows], targets, share, seed=seed)
    run.counter.value += sum(len(items) for items in found.values())
    allowed = _allowed(run, view) or (lambda tree: True)
    ranked = sorted(((item.nmse, name, item.tree) for name, items in found.items()
                     for item in items if allowed(item.tree)), key=lambda entry: entry[0])
    return [(name, tree) for _, name, tree in ranked]  # best first


def _scaled(run: Run, enumeration: Enumeration, view: View, candidates: dict[str, np.ndarray],
            fitness_rows: np.ndarray, budget: Budget, seed: int, level: int) -> list[Found]:
    """The enumerated forms with an inner scale (:mod:`.inner_scales`) worth a refit."""
    if budget.over() or view.columns.shape[0] <= SCAN_ROWS:
        return []
    rng = np.random.default_rng([seed, 5])
    rows = np.sort(rng.choice(fitness_rows, size=SCAN_ROWS, replace=False))
    found, evaluated = scaled_forms(enumeration, view, candidates, rows, fitness_rows, budget,
                                    _allowed(run, view), min(level, SCAN_SIZE))
    run.counter.value += evaluated
    return found


def _claims_exact(enumeration: Enumeration, view: View, candidates: dict[str, np.ndarray],
                  names: list[str]) -> bool:
    """Whether the enumeration's best form is exact on every row (not only on its subsample)."""
    if enumeration.best_nmse() > EXACT_NMSE:
        return False
    best = min(enumeration.best, key=lambda s: (s.nmse, s.size))
    tree = enumeration.tree(best.recipe)
    return all_rows_nmse(tree, view, candidates[names[best.target]]) <= EXACT_NMSE


def _allowed(run: Run, view: View) -> Callable[[Tree], bool] | None:
    """Whether a tree of ``view`` keeps the run's constraints (None: no constraints)."""
    limits = run.limits
    if limits is None:
        return None
    return lambda tree: not constraint_violations(to_expression(tree, view.inputs), *limits)


def _evolve(run: Run, view: View, target: np.ndarray, columns: list[np.ndarray],
            seeds: list[tuple[float, Tree]], transform: str, budget: Budget, seed: int,
            rows: np.ndarray, dimensions: tuple | None = None) -> list[Found]:
    weighted = run.weights is not None and run.weights.size == view.columns.shape[0]
    weights = run.weights[rows] if weighted else None
    evolution = Evolution(columns, target, run.binary, run.unary, run.max_size, seed=seed,
                          weights=weights, allowed=_allowed(run, view), dimensions=dimensions)
    ordered = [tree for _, tree in sorted(seeds, key=lambda s: (s[0], size(s[1])))]
    evolution.seed_population(list(dict.fromkeys(ordered))[:SEEDS_PER_RUN])
    evolution.run(budget.over, EXACT_NMSE)
    run.counter.value += evolution.evaluated
    return [Found(s, tree, view, transform) for s, tree in evolution.archive.values()]
