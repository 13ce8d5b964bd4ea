"""Invariance tests on the data: symmetries that replace two inputs by one.

A target that does not change when two inputs move together depends on them
only through one combination of the two:

* translational symmetry, ``f(a + t, b + t) = f(a, b)``: through ``a - b``;
* scaling symmetry, ``f(s*a, s*b) = f(a, b)``: through ``a / b``;
* the conjugate moves: through ``a + b`` or ``a * b``;
* rotational symmetry of ``(a, b)``: through ``sqrt(a**2 + b**2)``.

Each is tested as the pair decompositions are (:func:`.decomposition.pair_combinations`,
the same fitted polynomial surrogates: the surrogate over the combined input and the others
fits about as well as the free one), whatever function of the combination the target is;
on the target, then (when none holds there and the target has one sign) on ``log|y|``,
where a Gaussian or an exponential of the combination is a polynomial.
A property found reduces the problem: the pair becomes one input of a new view (its input
is the combination as an expression of the original inputs, so an answer found in the view
maps back by substitution), and further properties are tested on that view, greedily, so
that ``(x1 - x2)``, ``(y1 - y2)`` and then their rotation can all be taken out in one view.
The view is searched recursively (:func:`.explore.explore`) inside the caller's budget.
When no pair holds, a group of inputs entering only through one power-law monomial
(``m*v**2``, ``a*b/c``, exponents read from the data: :mod:`.monomials`) becomes one input
of a view the same way.

With units known (:mod:`.consistency`), they propose the pairs: the sum, the difference,
the rotation and the ratio of two inputs only for inputs of one dimension (the others are
inconsistent, or not invariant), the product and ratio of unlike ones only on problems
narrow enough to test every pair; so wider problems can be tested. Without units every pair
is tested on the data.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence

import numpy as np

from ..nodes import Binary, Expression, Function, Number
from ..rendering import to_str
from . import decomposition as dec
from .consistency import TOLERANCE, Vector, input_dimensions
from .monomials import Monomial, monomial_combinations
from .views import Run, View

__all__ = ["OPERATORS", "candidate_pairs", "combined_view", "invariant_views", "monomial_input",
           "pair_input"]

OPERATORS = ("-", "/", "*", "+", "hypot")
"""Combinations tested: translation, scaling, their conjugates, rotation."""
SYMMETRY = {"-": "translational", "/": "scaling", "*": "inverse scaling", "+": "opposite "
            "translation", "hypot": "rotational"}
LIKE_OPERATORS = ("-", "/", "+", "hypot")
"""The combinations of two inputs of one dimension (with units, unlike inputs get ``* /``)."""
MAX_TESTS = 80
"""Most pair tests in one view (each a least-squares surrogate fit)."""
MAX_VIEWS = 2
"""Views made of one problem: the best pair alone, and every pair that holds at once."""
MAX_COMBINED = 4
"""Most pairs taken out of one view."""
MONOMIALS = True
"""When no pair combination holds, test power-law monomials of the inputs (:mod:`.monomials`)."""


def pair_input(operator: str, a: Expression, b: Expression) -> Expression:
    """The combined input ``a op b`` as an expression (``hypot``: ``sqrt(a**2 + b**2)``)."""
    if operator == "hypot":
        return Function("sqrt", (Binary("+", Binary("**", a, Number(2)),
                                        Binary("**", b, Number(2))),))
    return Binary(operator, a, b)


def candidate_pairs(dimensions: Sequence[Vector | None] | None, n_inputs: int,
                    max_untyped_inputs: int) -> list[tuple[int, int, str]]:
    """The ``(i, j, op)`` to test, like pairs first; at most ``MAX_TESTS``.

    Without ``dimensions`` (or for inputs of unknown dimension), every operator on every
    pair, on at most ``max_untyped_inputs`` inputs; with them, like inputs get
    ``LIKE_OPERATORS`` and unlike ones ``* /`` while the tests stay within ``MAX_TESTS``.
    """
    like, unlike = [], []
    for i, j in itertools.combinations(range(n_inputs), 2):
        a = None if dimensions is None else dimensions[i]
        b = None if dimensions is None else dimensions[j]
        if a is None or b is None:
            (like if dimensions is not None or n_inputs <= max_untyped_inputs else []).extend(
                (i, j, op) for op in OPERATORS)
        elif all(abs(x - z) <= TOLERANCE for x, z in zip(a, b, strict=True)):
            like += [(i, j, op) for op in LIKE_OPERATORS]
        else:
            unlike += [(i, j, op) for op in ("*", "/")]
    if dimensions is not None and len(like) + len(unlike) > MAX_TESTS:
        unlike = []
    return (like + unlike)[:MAX_TESTS]


def invariant_views(run: Run, base: View, target: np.ndarray, max_untyped_inputs: int,
                    over: Callable[[], bool] | None = None) -> list[View]:
    """Views of ``base`` with the pairs the target is invariant under taken out.

    The first view takes out the best pair; the second every other pair that still holds
    on the view before it (at most ``MAX_COMBINED``), when there are two or more.
    ``over``: asked between the pair tests; once the time is spent, no view.
    """
    d = base.columns.shape[1]
    dimensions = input_dimensions(base.inputs, run.units)
    candidates = candidate_pairs(dimensions, d, max_untyped_inputs)
    found, tested = [], target
    for tested in _tested_targets(target):
        found = dec.pair_combinations(base.columns, tested, limit=len(candidates),
                                      candidates=candidates, over=over) if candidates else []
        if found:
            break
    if not found:
        spent = over is not None and over()
        return _monomial_views(run, base, target, dimensions) if MONOMIALS and not spent else []
    first = combined_view(base, *found[0])
    if first is None:
        return []
    views = [first]
    run.notes.append(f"{SYMMETRY[found[0][2]]} symmetry: the target depends on "
                     f"{to_str(base.inputs[found[0][0]])} and {to_str(base.inputs[found[0][1]])} "
                     f"only through {to_str(views[0].inputs[0])}")
    view, taken = views[0], 1
    inputs = {id(x): k for k, x in enumerate(base.inputs)}
    while taken < MAX_COMBINED:
        # the remaining found pairs, in the current view's column numbers
        position = {inputs[id(x)]: k for k, x in enumerate(view.inputs) if id(x) in inputs}
        more = [(position[i], position[j], op) for i, j, op in found
                if i in position and j in position]
        if not more:
            break
        still = dec.pair_combinations(view.columns, tested, limit=1, candidates=more,
                                      over=over)
        if not still:
            break
        after = combined_view(view, *still[0])
        if after is None:
            break
        view, taken = after, taken + 1
    if taken > 1:
        views.append(View(f"{taken} pairs as single inputs", view.inputs, view.columns))
        run.notes.append("invariance: " + ", ".join(to_str(x) for x in view.inputs[:taken])
                         + " taken out together")
    return views[:MAX_VIEWS]


def _monomial_views(run: Run, base: View, target: np.ndarray,
                    dimensions: Sequence[Vector | None] | None) -> list[View]:
    """The view with the inputs of a power-law monomial the target depends on them only
    through (:mod:`.monomials`) taken out as one input; none when there is none."""
    for tested in _tested_targets(target):
        for monomial in monomial_combinations(base.columns, tested, dimensions):
            columns = monomial.values(base.columns)
            if not np.all(np.isfinite(columns)):
                continue
            u = monomial_input(monomial, base.inputs)
            rest = [k for k in range(len(base.inputs)) if k not in monomial.indices]
            run.notes.append("power-law combination: the target depends on "
                             + ", ".join(to_str(base.inputs[k]) for k in monomial.indices)
                             + f" only through {to_str(u)}")
            return [View(f"{to_str(u)} as one input", [u, *(base.inputs[k] for k in rest)],
                         np.column_stack([columns, base.columns[:, rest]]))]
    return []


def monomial_input(monomial: Monomial, inputs: Sequence[Expression]) -> Expression:
    """The monomial as an expression of ``inputs``: positive powers over negative ones."""
    def product(pairs: list[tuple[int, int]]) -> Expression | None:
        factors = [inputs[i] if e == 1 else Binary("**", inputs[i], Number(e))
                   for i, e in pairs]
        return None if not factors else functools.reduce(
            lambda a, b: Binary("*", a, b), factors)

    pairs = list(zip(monomial.indices, monomial.exponents, strict=True))
    numerator = product([(i, e) for i, e in pairs if e > 0])
    denominator = product([(i, -e) for i, e in pairs if e < 0])
    if denominator is None:
        return numerator if numerator is not None else Number(1)
    return Binary("/", numerator if numerator is not None else Number(1), denominator)


def _tested_targets(target: np.ndarray):
    """The target, then ``log|y|`` when it has one sign: a symmetry of one is a symmetry of
    the other, and a peaked target (a Gaussian) is a smooth one in logarithms."""
    yield target
    if np.all(target > 0) or np.all(target < 0):
        yield np.log(np.abs(target))


def combined_view(view: View, i: int, j: int, operator: str) -> View | None:
    """``view`` with ``x_i op x_j`` as one input in place of the pair (first); None when
    the combination is not finite on every row."""
    columns = dec.combine(view.columns, i, j, operator)
    if columns is None:
        return None
    u = pair_input(operator, view.inputs[i], view.inputs[j])
    rest = [view.inputs[k] for k in range(len(view.inputs)) if k not in (i, j)]
    return View(f"{to_str(u)} as one input", [u, *rest], columns)
