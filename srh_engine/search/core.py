"""The search driver: decompose, enumerate, evolve, refit, keep the front.

One call of :func:`search`:

0. a quick probe of the undivided problem: small forms and their sums and
   products (:mod:`.explore`, :mod:`.combination`), and sums of monomials with
   cross terms (``a**2 + b**2 - 2*a*b*cos(t)`` under the square, :mod:`.cross_terms`);
1. decomposition tests on the data (:mod:`.decomposition`): power factors
   ``x_i**a`` are divided out; pairs of
   inputs the target depends on only through their difference, ratio,
   product or sum become one input of an extra *view* of the problem; an
   additive or multiplicative split into two groups of inputs becomes two
   sub-problems searched in turn (the first on the surrogate's part of the
   target, the second on what the first leaves of the real target);
2. in every view, bottom-up enumeration (:mod:`.enumeration`) scores each
   form against the target and its transforms ``y**2``, ``1/y``, ``log|y|``,
   ``sqrt|y|`` (and, on a target inside their ranges, the bounded inverses ``sin y``,
   ``cos y``, ``tan y``, ``arctanh y``) at once; its small forms are scored again with
   an input scaled by a simple number (``x/(exp(x/(2*pi)) - 1)``: :mod:`.inner_scales`);
   once the forms up to ``MAX_FORM_SIZE`` exist, sparse sums of them are fitted to
   every transform and products of their powers to the target (:mod:`.combination`); then
   regularised evolution (:mod:`.evolution`) starts from the best forms of
   the most promising transform;
3. the best trees of every size are turned into engine expressions in the
   original variables (the linear scaling ``a + b*f`` and the inverse
   transform made explicit) and their constants fitted on all rows by the
   engine's Levenberg-Marquardt (:func:`srh_engine.fit`);
4. the front's fitted numbers snapped to simple values (integers, halves, ``1/(4*pi)``,
   ``sqrt(2*pi)``...) with the others refitted, kept when the BIC allows
   (:func:`srh_engine.snapping.snap_constants`; the last ``SNAP_SHARE`` of the budget);
5. the front: every formula written as a person writes it (:func:`srh_engine.readable`),
   and for each complexity the lowest-MSE one, kept when it is better than every
   simpler one.

Islands: :func:`search` runs :func:`_island` here and, with other seeds, on
the other cores (:mod:`.pool`), and merges the fronts.

Units (``units``, ``target_units``): with the dimension of every input and
of the target, the problem is first searched reduced to dimensionless groups
(:mod:`.pi_groups`: ``y = M(x) * g(pi)``) in ``PI_SHARE`` of the budget, and
the answer is mapped back through the monomial; the inputs' power factors
(:func:`.decomposition.power_factors`) go into the monomial and the groups are
formed of the other inputs when that leaves fewer groups; when that finds no exact
formula (or the reduction is impossible), the undivided problem is searched
in the rest. Every fitted formula is then checked for dimensional
consistency (:func:`srh_engine.check_dimensions`: constants may carry units)
and an inconsistent one is dropped from the front, with a note saying which
and why.

Weights (``weights``, PySR's): rows of weight 0 are dropped first (they take no
part in a weighted loss); when the other rows weigh differently, the evolution's
fitness, the refit of the front (:func:`srh_engine.fit` with ``weights``), the
front's MSE and R^2 and so the choice between formulas are weighted; the
enumeration and the sums score forms on row samples drawn in proportion to the
weights; the decomposition tests and the exactness checks weigh the kept rows
equally.

Time: every phase checks a deadline; the refit phase owns the last
``REFIT_SHARE`` of the budget and stops fitting when the budget is spent,
so a call returns within the budget plus one fit, or plus ``MIN_REFITS`` fits
and ``SNAP_ROUNDS`` snaps of the chosen formula when an earlier phase overran its
share (the front is never the mean alone because time ran out). Determinism: every random
choice comes from ``seed``, and no phase depends on timing except for where
it stops, so a search cut by the clock may stop at a different point. Not
bit-for-bit reproducible even without the clock: two runs of the same
evolution at a fixed evaluation count ended with different archives on 4 of 6
problems (rounding differences that a tie or a comparison then amplifies; the
cause, perhaps the linear algebra library's threads, is not established).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import BrokenExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import numpy as np

from ..constraints import constraint_violations
from ..dimensional import check_dimensions
from ..evaluation import evaluate
from ..nodes import Binary, Number, Symbol
from ..readability import readable
from ..transform import complexity
from ..units import Dimension, parse_units
from . import decomposition as dec
from .budget import Budget
from .explore import explore
from .operators import resolve_operators
from .pi_groups import (
    Reduction,
    common_monomial_out,
    merged_powers,
    monomial_into_root,
    monomial_into_sum,
    reduce_beside_factors,
    reduce_by_units,
)
from .pool import available_workers, broken, forget, submit_islands, warm
from .refit import exact_floor, exact_on_all_rows, refit, rounded_front, snap_front
from .results import ExpressionSearchResult, FrontEntry, pareto_front
from .threads import one_blas_thread
from .views import Found, Run, View, unfolded

__all__ = ["ExpressionSearchResult", "FrontEntry", "pareto_front", "search", "warm_islands"]


REFIT_SHARE = 0.2
PI_SHARE = 0.6
"""Of the search (before the refit): the problem reduced to dimensionless groups."""
MAX_DROPPED_NOTES = 3
SNAP_SHARE = 0.05
"""The last share of the budget: the front's numbers snapped to simple values."""
ISLAND_GRACE = 0.05
"""Islands' results are waited for until this share of the budget past the deadline."""


def _check(X: np.ndarray, y: np.ndarray, names: Sequence[str] | None, budget: float,
           max_complexity: int, max_evaluations: int | None
           ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float).reshape(-1)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] != y.size or y.size < 3:
        raise ValueError(f"search needs X of shape (rows, inputs) and y of matching rows "
                         f"(at least 3); got X {X.shape} and y {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("search needs finite X and y (drop or impute non-finite rows)")
    names = list(names) if names is not None else [f"x{i + 1}" for i in range(X.shape[1])]
    if len(names) != X.shape[1] or not all(isinstance(n, str) and n.isidentifier()
                                           for n in names):
        raise ValueError(f"names must be {X.shape[1]} identifiers; got {names!r:.80}")
    if not (isinstance(budget, int | float) and 0 < budget < math.inf):
        raise ValueError(f"time_budget must be a positive number of seconds; got {budget!r}")
    if max_evaluations is not None and (isinstance(max_evaluations, bool) or not isinstance(
            max_evaluations, int) or max_evaluations < 1):
        raise ValueError(f"max_evaluations must be a positive int; got {max_evaluations!r}")
    if isinstance(max_complexity, bool) or not isinstance(max_complexity, int) or \
            not 3 <= max_complexity <= 60:
        raise ValueError(f"max_complexity must be an int in [3, 60]; got {max_complexity!r}")
    return X, y, names


def search(X: np.ndarray, y: np.ndarray, names: Sequence[str] | None = None, *,
           time_budget: float = 10.0, seed: int = 0, operators: Sequence[str] | None = None,
           max_complexity: int = 30, max_evaluations: int | None = None,
           workers: int | None = None, units: Mapping[str, str | Dimension] | None = None,
           target_units: str | Dimension | None = None,
           weights: np.ndarray | None = None,
           nested_constraints: Mapping[str, Mapping[str, int]] | None = None,
           constraints: Mapping[str, Any] | None = None) -> ExpressionSearchResult:
    """Search for formulas ``y = f(X)``: a Pareto front of complexity against error.

    Args:
        X: ``(rows, inputs)`` inputs.
        y: ``(rows,)`` target.
        names: Input names (identifiers); default ``x1, x2, ...``.
        time_budget: Wall-clock seconds for the whole call.
        seed: Seed of every random choice.
        operators: Operator names from :data:`~srh_engine.search.operators.OPERATORS`
            (default: ``+ - * / sqrt square exp log sin cos``).
        max_complexity: Largest searched tree, in engine nodes (the scaling constants and
            inverse transforms added at the end come on top).
        max_evaluations: Stop after about this many evaluated expressions per island (the
            time budget still bounds the call); with it, the result is the same for a seed
            whenever the clock does not run out first.
        workers: Islands (processes) searching at once, with seeds ``seed, seed + 1, ...``
            (:mod:`.pool`); default: the CPUs this process may use (1 in a daemonic
            process such as a Celery prefork child); 1 searches in this process only.
        units: Units of the inputs by name (unit text such as ``"m/s"``, or Dimensions);
            with ``target_units`` and every input's units, the problem is reduced to
            dimensionless groups first; every formula is checked against them.
        target_units: Units of the target.
        weights: ``(rows,)`` weights >= 0 of the rows (PySR's ``weights``): the front is
            fitted and ranked by the weighted MSE; rows of weight 0 take no part.
        nested_constraints, constraints: PySR's limits in its names
            (:mod:`srh_engine.constraints`): the enumeration skips forms that break them
            (:mod:`.form_constraints`), the evolution discards such a tree, and the front
            keeps no formula that does.

    Returns:
        The front (each formula fitted on every row), with counts and notes.

    Raises:
        ValueError: Bad shapes, non-finite data, unknown operators, bad budget or workers.
        UnitError: Unit text that does not parse (a ValueError).
    """
    started = time.monotonic()
    X, y, names = _check(X, y, names, time_budget, max_complexity, max_evaluations)
    X, y, weights = _weighted_rows(X, y, weights)
    resolve_operators(operators)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or
                                workers < 1):
        raise ValueError(f"workers must be a positive int; got {workers!r}")
    dimensions = {name: str(parse_units(text)) for name, text in (units or {}).items()}
    wanted = None if target_units is None else str(parse_units(target_units))
    count = available_workers() if workers is None else workers
    deadline = started + time_budget
    limits = (nested_constraints, constraints) if nested_constraints or constraints else None
    calls = [{"X": X, "y": y, "names": names, "deadline": deadline, "seed": seed + k,
              "operators": operators, "max_complexity": max_complexity,
              "max_evaluations": max_evaluations, "units": dimensions, "target_units": wanted,
              "weights": weights, "limits": limits}
             for k in range(1, count)]
    futures, pool, failure = submit_islands(_island, calls)
    entries, evaluated, notes = _island(X, y, names, deadline, seed, operators, max_complexity,
                                        max_evaluations, dimensions, wanted, weights, limits)
    if failure is not None:
        notes.append(f"searched in one process: the island pool did not start ({failure})")
    merged = 0
    for index, future in enumerate(futures, start=1):
        wait = deadline + ISLAND_GRACE * time_budget - time.monotonic()
        try:
            more, counted, _ = future.result(timeout=max(wait, 0.0))
        except FutureTimeout:
            future.cancel()
            if broken(pool):  # a lost worker does not always fail its future
                forget(pool)
                notes.append(f"island {index} was lost (its process died); left out")
            else:
                notes.append(f"island {index} did not finish within the budget; left out")
            continue
        except BrokenExecutor as error:
            forget(pool)
            notes.append(f"island {index} was lost ({type(error).__name__}); left out")
            continue
        entries += more
        evaluated += counted
        merged += 1
    if merged:
        notes.append(f"{1 + merged} islands merged (seeds {seed}..{seed + len(futures)})")
    entries = _written(entries, X, names)
    columns = {name: X[:, i] for i, name in enumerate(names)}
    rounded = rounded_front(entries, columns, y, weights)
    # only what the rounding replaced is written again (a pass over all: 23 ms for 52)
    entries = [entry if entry is before else _written([entry], X, names)[0]
               for entry, before in zip(rounded, entries, strict=True)]
    if dimensions:
        entries = _consistent(entries, dimensions, wanted, notes)
    if limits is not None:
        entries = _within(entries, limits, notes)
    return ExpressionSearchResult(pareto_front(entries, exact_floor(y)), evaluated,
                                  time.monotonic() - started, tuple(dict.fromkeys(notes)))


def warm_islands(workers: int | None = None, *, wait: bool = False,
                 timeout: float = 60.0) -> int:
    """Start the island processes of a later :func:`search` with ``workers`` now, with
    this module imported (:func:`.pool.warm`); with ``wait``, once they are ready.
    Returns the islands started."""
    return warm(workers, modules=(__name__,), wait=wait, timeout=timeout)


def _within(entries: list[FrontEntry], limits: tuple[Any, Any], notes: list[str]
            ) -> list[FrontEntry]:
    """The entries that keep PySR's constraints; a note counts the dropped ones."""
    kept = [entry for entry in entries if not constraint_violations(entry.expression, *limits)]
    if len(kept) < len(entries):
        notes.append(f"dropped {len(entries) - len(kept)} of {len(entries)} fitted formulas "
                     "that break the constraints")
    return kept


def _weighted_rows(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The rows of positive weight and their weights (None when they weigh the same).

    Raises:
        ValueError: Not one finite weight >= 0 per row, or fewer than 3 of positive weight.
    """
    if weights is None:
        return X, y, None
    weights = np.asarray(weights, dtype=float).reshape(-1)
    if weights.size != y.size or not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError(f"weights must be {y.size} finite numbers >= 0 (one per row); got "
                         f"shape {weights.shape}")
    keep = weights > 0
    if int(keep.sum()) < 3:
        raise ValueError(f"search needs at least 3 rows of positive weight; got "
                         f"{int(keep.sum())}")
    X, y, weights = X[keep], y[keep], weights[keep]
    return X, y, None if weights.min() == weights.max() else weights


def _consistent(entries: list[FrontEntry], dimensions: Mapping[str, str], wanted: str | None,
                notes: list[str]) -> list[FrontEntry]:
    """The dimensionally consistent entries; a note names the dropped ones and why."""
    kept, dropped = [], []
    for entry in entries:
        check = check_dimensions(entry.expression, dimensions, wanted)
        (kept if check.consistent else dropped).append((entry, check.reason))
    if dropped:
        shown = "; ".join(f"{entry.formula}: {reason}"
                          for entry, reason in dropped[:MAX_DROPPED_NOTES])
        notes.append(f"dropped {len(dropped)} of {len(entries)} fitted formulas as "
                     f"dimensionally inconsistent ({shown})")
    return [entry for entry, _ in kept]


def _island(X: np.ndarray, y: np.ndarray, names: list[str], deadline: float, seed: int,
            operators: Sequence[str] | None, max_complexity: int,
            max_evaluations: int | None, units: Mapping[str, str] | None = None,
            target_units: str | None = None, weights: np.ndarray | None = None,
            limits: tuple[Any, Any] | None = None
            ) -> tuple[list[FrontEntry], int, list[str]]:
    """One single-process search until ``deadline``: its fitted entries, count and notes."""
    binary, unary = resolve_operators(operators)
    time_budget = max(deadline - time.monotonic(), 0.0)
    run = Run(y, binary, unary, max_complexity, seed, weights=weights, limits=limits)
    budget = Budget(deadline - REFIT_SHARE * time_budget, run.counter, max_evaluations)
    values = {name: X[:, i] for i, name in enumerate(names)}
    run.columns_by_name = values
    run.units = {name: parse_units(text) for name, text in (units or {}).items()}
    base = View("inputs", [Symbol(n) for n in names], X)
    with np.errstate(all="ignore"), one_blas_thread():
        reduction = None
        if _constant(y):  # nothing to reduce or search
            run.notes.append("the target is constant: its formula is that constant")
            found = _constant_found(y.size)
        else:
            reduction = _reduction(run, X, y, names, units, target_units, budget)
            found = [] if reduction is None else _reduced(run, reduction, y,
                                                          budget.share(PI_SHARE))
            if not exact_on_all_rows(run, found):
                found += explore(run, base, y, budget)
        run.found = found
        entries = refit(run, values, deadline - SNAP_SHARE * time_budget)
        if reduction is not None:  # answers mapped back: one monomial per product
            entries = [_merged(entry, values) for entry in entries]
        entries = snap_front(entries, values, y, deadline, weights)
        entries = [_unfolded(entry, values, reduction is not None) for entry in entries]
    return entries, run.counter.value, run.notes


def _unfolded(entry: FrontEntry, values: Mapping[str, np.ndarray], merge: bool) -> FrontEntry:
    """``entry`` with ``arccos(cos(w))`` and the like written ``w`` or ``-w``
    (:func:`.views.unfolded`), where that gives the same values on every row (then, after
    a units reduction, merged again: :func:`_merged`)."""
    with np.errstate(all="ignore"):
        before = None
        for sign in (1.0, -1.0):
            candidate = unfolded(entry.expression, sign)
            if candidate == entry.expression:
                return entry
            if before is None:
                before = np.asarray(evaluate(entry.expression, values), dtype=float)
            after = np.asarray(evaluate(candidate, values), dtype=float)
            if np.allclose(after, before, rtol=1e-9, atol=0.0):
                written = FrontEntry(candidate, complexity(candidate), entry.mse, entry.r2)
                return _merged(written, values) if merge else written
    return entry


def _written(entries: list[FrontEntry], X: np.ndarray, names: Sequence[str]
             ) -> list[FrontEntry]:
    """The entries as a person writes them (:func:`srh_engine.readable`, the same rules
    as every scored formula of a run; the inputs positive on every row count as
    positive), each with the complexity of what it now is."""
    positive = [name for i, name in enumerate(names) if bool(np.all(X[:, i] > 0))]
    written = []
    for entry in entries:
        expression = readable(entry.expression, positive)
        written.append(entry if expression == entry.expression else
                       FrontEntry(expression, complexity(expression), entry.mse, entry.r2))
    return written


def _merged(entry: FrontEntry, values: Mapping[str, np.ndarray]) -> FrontEntry:
    """``entry`` with its products of powers merged (:func:`.pi_groups.merged_powers`), the
    powers common to a sum's terms taken out of it (:func:`.pi_groups.common_monomial_out`),
    a monomial taken into a sum (:func:`.pi_groups.monomial_into_sum`) or into a root of a
    sum (:func:`.pi_groups.monomial_into_root`):
    the smallest of these that gives the same values."""
    merged = merged_powers(entry.expression)
    best, size = entry, entry.complexity
    with np.errstate(all="ignore"):
        before = np.asarray(evaluate(entry.expression, values), dtype=float)
    common = merged_powers(common_monomial_out(merged))
    distributed = merged_powers(monomial_into_sum(merged))
    rooted = [monomial_into_root(candidate, name) for candidate in (merged, common)
              for name in candidate.symbols()]
    for candidate in (merged, common, distributed, *rooted):
        candidate_size = complexity(candidate)
        if candidate_size >= size:
            continue
        with np.errstate(all="ignore"):
            after = np.asarray(evaluate(candidate, values), dtype=float)
        if np.allclose(after, before, rtol=1e-9, atol=0.0, equal_nan=False):
            best = FrontEntry(candidate, candidate_size, entry.mse, entry.r2)
            size = candidate_size
    return best


def _reduction(run: Run, X: np.ndarray, y: np.ndarray, names: list[str],
               units: Mapping[str, str] | None, target_units: str | None,
               budget: Budget | None = None) -> Reduction | None:
    """The problem in dimensionless groups when the units allow it (notes say why not).

    Of the reduction of all the inputs and the one beside the inputs' power factors
    (:func:`.pi_groups.reduce_beside_factors`), the one with fewer groups."""
    if not units or target_units is None:
        return None
    missing = [name for name in names if name not in units]
    if missing:
        run.notes.append(f"no dimensional analysis: no units for {', '.join(missing[:5])}")
        return None
    dimensions = [parse_units(units[n]) for n in names]
    wanted = parse_units(target_units)
    reduction, reason = reduce_by_units(X, y, names, dimensions, wanted)
    if reduction is None:
        run.notes.append(f"no dimensional analysis: {reason}")
        return None
    if reduction.exponents and not any(reduction.exponents) and \
            len(reduction.groups) == len(names):
        return None  # every input is dimensionless already: nothing to reduce
    if len(reduction.groups) >= 2:
        factors = dec.power_factors(X, y, None if budget is None else budget.over)
        if budget is None or not budget.over():  # (a test cut short finds none)
            run.known_factors = (X, y, factors)
        beside = reduce_beside_factors(X, y, names, dimensions, wanted, factors)
        if beside is not None and len(beside.groups) < len(reduction.groups):
            run.notes.append(f"power factors of the inputs kept out of the groups "
                             f"({len(reduction.groups)} groups of all the inputs)")
            reduction = beside
    run.notes.append(reduction.note)
    return reduction


def _constant(y: np.ndarray) -> bool:
    """Whether ``y`` is one value to 12 digits (0 included), or varies too little for its
    variance to be a float (a spread of subnormal numbers): no form can be scored on it."""
    spread = float(np.max(y) - np.min(y)) if y.size else 0.0
    return spread <= 1e-12 * float(np.max(np.abs(y), initial=0.0)) or not np.var(y) > 0


def _constant_found(rows: int) -> list[Found]:
    """The one form of a constant target: ``1``, scaled to the target by the refit."""
    leaf = View("constant", [Number(1)], np.ones((rows, 1)))
    return [Found(0.0, ("v", 0), leaf, "identity")]


def _reduced(run: Run, reduction: Reduction, y: np.ndarray, budget: Budget) -> list[Found]:
    """Search ``y / M`` over the groups; each found item wrapped in the monomial ``M``.

    One group is offered both ways up (``g`` and ``1/g``): the orientation of a ratio of
    overlapping quantities is a convention (:func:`.pi_groups.simplest_basis`), and the law
    over the other one (``g**3/(exp(g) - 1)`` over ``1/g``: ``exp(1/g)``) was found late
    or not at all; a second input costs a one-input search little."""
    target = y / reduction.monomial_values
    if not reduction.groups or _constant(target):
        found = _constant_found(y.size)
    else:
        inputs, columns = list(reduction.groups), reduction.columns
        if len(inputs) == 1:  # which way up the law takes it is not known: offer both
            inputs.append(Binary("/", Number(1), inputs[0]))
            columns = np.column_stack([columns, 1.0 / columns[:, 0]])
        view = View("dimensionless groups", inputs, columns)
        found = explore(run, view, target, budget)
    if reduction.monomial != Number(1):
        for item in found:
            item.wraps = (("power", reduction.monomial), *item.wraps)
    return found
