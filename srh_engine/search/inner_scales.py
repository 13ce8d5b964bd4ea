"""Enumerated forms with an inner scale: each form again with inputs multiplied by a number.

Linear scaling fits a form's outer constants for free, and the refit frees the numbers
a tree holds, but a number inside a function that the tree does not hold is out of
reach: ``x/(exp(x) - 1)`` never becomes ``x/(exp(x/(2*pi)) - 1)``, and the
enumeration's own constant leaves (1, 2, pi) build ``x/(2*pi)`` only at four more
nodes, past the sizes it completes. On such a target (its argument in [0.16, 0.8]) the
truth at the wrong scale fits worse than hundreds of near-polynomial lookalikes, so it
was never among the candidates the refit sees.

So the small kept forms (up to ``SCAN_SIZE`` nodes, those not built of products,
quotients and powers alone, which scaling leaves alike) are evaluated once more with one
input (and, on several inputs, all of them at once) multiplied by each simple number of
:data:`SCALES`, vectorised over the forms and scales
(:meth:`.enumeration.Enumeration.values_on` on stacked rows), and scored against every
target transform by linear scaling on ``SCAN_ROWS`` rows. A form whose scaled copy is
exact (checked on every row) is a candidate; so is the best scaled form of each transform
that fits clearly better than every unscaled form (its scale then a start the refit
moves: a number of the tree, freed and fitted on every row). Scaling every input of a
form by one number is the form with that number inside its functions, up to the outer
scale: ``k*x/(exp(k*x) - 1)``; one input alone scales a product's argument:
``x*(k*t)``.

On a target this smooth a number that is not simple is found only when the truth at the
nearest simple scale still fits better than the lookalikes (not on the Bose shape
above: near-polynomial forms at a small scale fit it to 1e-8, the truth 20% off its
scale to 1e-5); at noise nothing is exact and little is kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .budget import Budget
from .enumeration import Enumeration, unit_rows
from .evolution import linear_nmse
from .operators import Tree, evaluate_tree
from .views import EXACT_NMSE, Found, View, all_rows_nmse

__all__ = ["SCALES", "scaled_forms"]


SCALES = (0.5, 2.0, 1.0 / 3.0, 3.0, 0.25, 4.0, 2.0 / 3.0, 1.5,
          math.pi, 1.0 / math.pi, 2.0 * math.pi, 1.0 / (2.0 * math.pi), math.pi / 2.0,
          2.0 / math.pi)
"""Inner scales tried, simplest first: ``p/q`` (``p, q <= 4``: 1/2, 1/3, 1/4, 2/3 and
their inverses), ``pi`` and ``1/pi``, each times 1 or 2, and ``pi/2``, ``2/pi``. A form
with one of them inside (``exp(x/(2*pi))``) is found exactly; another number is reached
from the nearest one by the refit (its value in the tree is a fitted number)."""
COUNTED_ROWS = 120
"""Rows one counted evaluation stands for here: a form scored at one scale on ``SCAN_ROWS``
rows counts ``SCAN_ROWS / COUNTED_ROWS`` of one. Measured so that a count budget buys the
scan what it buys the rest of the search in CPU time (with 32, the enumeration's rows, the
scan counted 477,000 per CPU second against the rest's 130,000 on a Bose law, and on a count
budget it took all of it; with 120, 114,000 against 115,000)."""
HOMOGENEOUS = ("*", "/", "sqrt", "square", "cube", "inv", "neg", "abs")
"""Operators that keep a form's shape when its inputs are scaled (the linear scaling
absorbs the factor); the scan skips forms built of them alone."""
SCALE_CHUNK = 8
"""Scales evaluated at once (the budget is checked between chunks)."""
SCAN_SIZE = 6
"""Largest form scanned (``x/(exp(x) - 1)`` is 6 nodes)."""
SCAN_ROWS = 6
"""Rows a scaled form is scored on (an exact one is checked on the fitness rows)."""
SCAN_FORMS = 14_000
"""Form-scalings scanned per view, shared among the scalings (one input each, and all)."""
SCAN_KEPT = 1
"""Best non-exact scaled forms kept per target transform (of all the scalings)."""
SCAN_GAIN = 10.0
"""A non-exact scaled form is kept when it fits this many times better than its form
unscaled and than every unscaled form scanned (near-polynomial lookalikes at a small
scale otherwise took the refit's places)."""
SCAN_EXACT = 1e-10
"""A scaled form this close on the scan rows is checked on the fitness rows."""
MAX_EXACT = 8
"""Most near-exact scaled forms checked per scan."""


def scaled_forms(enumeration: Enumeration, view: View, candidates: dict[str, np.ndarray],
                 rows: np.ndarray, fitness_rows: np.ndarray, budget: Budget,
                 allowed: Callable[[Tree], bool] | None = None,
                 largest: int = SCAN_SIZE) -> tuple[list[Found], int]:
    """Forms of ``enumeration`` (up to ``largest`` nodes) with inputs scaled by a number of
    :data:`SCALES`, as candidates of ``view`` scored on ``fitness_rows``; and the count of
    form-scalings evaluated. ``rows`` (``SCAN_ROWS`` of them) are the scan's rows."""
    names = list(candidates)
    inputs = view.columns.shape[1]
    scalings = [(i,) for i in range(inputs)] + ([tuple(range(inputs))] if inputs > 1 else [])
    limit = max(SCAN_FORMS // len(scalings), 1)
    targets = np.stack([unit_rows(candidates[name][rows]) for name in names])
    stacked_scales = (1.0, *SCALES)
    chunks = [stacked_scales[k:k + SCALE_CHUNK]
              for k in range(0, len(stacked_scales), SCALE_CHUNK)]
    picks: list[tuple[bool, float, int, Tree]] = []  # (exact, scan nmse, target, tree)
    evaluated = 0
    for scaled in scalings:
        parts: list[np.ndarray] = []
        ids = np.empty(0, dtype=np.int64)
        for chunk in chunks:
            if budget.over(evaluated + _counted(limit * len(chunk))):  # not yet counted
                break
            blocks = []
            for scale in chunk:
                block = view.columns[rows].copy()
                block[:, list(scaled)] *= scale
                blocks.append(block)
            ids, values = enumeration.values_on(np.vstack(blocks), largest, limit)
            evaluated += _counted(ids.size * len(chunk))
            # a form of products, quotients and powers alone is the same form scaled
            varied = ~enumeration.built_only_from(ids, HOMOGENEOUS)
            ids, values = ids[varied], values[varied]
            parts.append(_scores(values.reshape(ids.size, len(chunk), rows.size), targets))
        if not parts or ids.size == 0:  # the budget is spent before any scaled score
            break
        picks += _picks(enumeration, len(names), ids, np.concatenate(parts, axis=1), scaled)
    # the near-exact ones, then the best others of each target over all the scalings
    chosen = [pick for pick in picks if pick[0]]
    for target in range(len(names)):
        others = sorted((pick for pick in picks if not pick[0] and pick[2] == target),
                        key=lambda pick: pick[1])
        chosen += others[:SCAN_KEPT]
    return _scored(chosen, view, candidates, names, fitness_rows, allowed), evaluated


def _counted(scored: int) -> int:
    """Evaluations counted for ``scored`` form-scales on ``SCAN_ROWS`` rows."""
    return -(-scored * SCAN_ROWS // COUNTED_ROWS)


def _scores(values: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The linear-scaling NMSE of ``values`` ``(forms, scales, rows)`` against each
    normalised target: ``(forms, scales, targets)`` (1.0 where a value is not finite)."""
    with np.errstate(all="ignore"):
        r = unit_rows(values) @ targets.T  # nan where a value is not finite
        return np.nan_to_num(np.clip(1.0 - r * r, 0.0, 1.0), nan=1.0)


def _picks(enumeration: Enumeration, targets: int, ids: np.ndarray, nmse: np.ndarray,
           scaled: tuple[int, ...]) -> list[tuple[bool, float, int, Tree]]:
    """The scaled forms worth a refit, from ``nmse`` of shape ``(forms, 1 + scales,
    targets)`` (index 0 of the scales: unscaled): near-exact ones, and the best others
    (``SCAN_KEPT`` per target) that fit clearly better than every unscaled form."""
    picks: list[tuple[bool, float, int, Tree]] = []
    best_scale = 1 + np.argmin(nmse[:, 1:, :], axis=1)  # (forms, targets)
    best = np.take_along_axis(nmse, best_scale[:, None, :], axis=1)[:, 0, :]
    # (an unscaled form exact already gains nothing: its scaled copies differ by rounding)
    gain = (best * SCAN_GAIN < nmse[:, 0, :]) & (nmse[:, 0, :] > SCAN_EXACT)
    floors = [min((s.nmse for s in enumeration.best if s.target == target), default=1.0)
              for target in range(targets)]  # of every form (the scan's are not all)
    for target in range(targets):
        exact = np.flatnonzero(gain[:, target] & (best[:, target] <= SCAN_EXACT))
        exact = exact[np.argsort(best[exact, target], kind="stable")][:MAX_EXACT]
        others = np.flatnonzero(gain[:, target] & (best[:, target] > SCAN_EXACT) &
                                (best[:, target] * SCAN_GAIN < floors[target]))
        others = others[np.argsort(best[others, target], kind="stable")][:SCAN_KEPT]
        for forms, is_exact in ((exact, True), (others, False)):
            picks += [(is_exact, float(best[f, target]), target,
                       _scaled_tree(enumeration.tree(int(ids[f])), set(scaled),
                                    SCALES[int(best_scale[f, target]) - 1]))
                      for f in forms]
    return picks


def _scored(picks: list[tuple[bool, float, int, Tree]], view: View,
            candidates: dict[str, np.ndarray], names: list[str], fitness_rows: np.ndarray,
            allowed: Callable[[Tree], bool] | None) -> list[Found]:
    """``picks`` as candidates scored on ``fitness_rows`` (near-exact ones on every row;
    dropped when not near-exact there)."""
    columns = [view.columns[fitness_rows, i] for i in range(view.columns.shape[1])]
    found, seen = [], set()
    for exact, _, target, tree in picks:
        if (tree, target) in seen or (allowed is not None and not allowed(tree)):
            continue
        seen.add((tree, target))
        values_target = candidates[names[target]][fitness_rows]
        with np.errstate(all="ignore"):
            values = evaluate_tree(tree, columns, None)
            score = linear_nmse(values, values_target, float(np.var(values_target)))
        if score <= EXACT_NMSE:  # judged on every row, as the enumeration's are
            score = max(score, all_rows_nmse(tree, view, candidates[names[target]]))
        elif exact:  # exact on the few scan rows alone: a lookalike
            continue
        found.append(Found(score, tree, view, names[target]))
    return found


def _scaled_tree(tree: Tree, scaled: set[int], scale: float) -> Tree:
    """``tree`` with each input of ``scaled`` multiplied by ``scale``."""
    if tree[0] == "v":
        return ("*", ("k", scale), tree) if tree[1] in scaled else tree
    if tree[0] == "k":
        return tree
    return (tree[0], *(_scaled_tree(child, scaled, scale) for child in tree[1:]))
