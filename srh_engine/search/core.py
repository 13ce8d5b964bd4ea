"""The search driver: decompose, enumerate, evolve, refit, keep the front.

One call of :func:`search`:

0. a quick probe of the undivided problem: small forms and their sums and
   products (:mod:`.explore`, :mod:`.combination`);
1. decomposition tests on the data (:mod:`.decomposition`): power factors
   ``x_i**a`` are divided out; pairs of
   inputs the target depends on only through their difference, ratio,
   product or sum become one input of an extra *view* of the problem; an
   additive or multiplicative split into two groups of inputs becomes two
   sub-problems searched in turn (the first on the surrogate's part of the
   target, the second on what the first leaves of the real target);
2. in every view, bottom-up enumeration (:mod:`.enumeration`) scores each
   form against the target and its transforms ``y**2``, ``1/y``, ``log|y|``,
   ``sqrt|y|`` at once; once the forms up to ``MAX_FORM_SIZE`` exist, sparse
   sums of them are fitted to every transform and products of their powers
   to the target (:mod:`.combination`); then
   regularised evolution (:mod:`.evolution`) starts from the best forms of
   the most promising transform;
3. the best trees of every size are turned into engine expressions in the
   original variables (the linear scaling ``a + b*f`` and the inverse
   transform made explicit) and their constants fitted on all rows by the
   engine's Levenberg-Marquardt (:func:`srh_engine.fit`);
4. the front: for each complexity the lowest-MSE formula, kept when it is
   better than every simpler one.

Islands: :func:`search` runs :func:`_island` here and, with other seeds, on
the other cores (:mod:`.pool`), and merges the fronts.

Time: every phase checks a deadline; the refit phase owns the last
``REFIT_SHARE`` of the budget and stops fitting when the budget is spent,
so a call returns within the budget plus one fit. Determinism: every random
choice comes from ``seed``, and no phase depends on timing except for where
it stops: a search that ends on an exact fit or on ``max_complexity`` is
identical across runs, one cut by the clock may stop at a different point.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import BrokenExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import numpy as np

from ..nodes import Symbol
from .budget import Budget
from .explore import explore
from .operators import resolve_operators
from .pool import available_workers, broken, forget, submit_islands
from .refit import refit
from .results import ExpressionSearchResult, FrontEntry, pareto_front
from .threads import one_blas_thread
from .views import Run, View

__all__ = ["ExpressionSearchResult", "FrontEntry", "pareto_front", "search"]


REFIT_SHARE = 0.2
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
           workers: int | None = None) -> ExpressionSearchResult:
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

    Returns:
        The front (each formula fitted on every row), with counts and notes.

    Raises:
        ValueError: Bad shapes, non-finite data, unknown operators, bad budget or workers.
    """
    started = time.monotonic()
    X, y, names = _check(X, y, names, time_budget, max_complexity, max_evaluations)
    resolve_operators(operators)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or
                                workers < 1):
        raise ValueError(f"workers must be a positive int; got {workers!r}")
    count = available_workers() if workers is None else workers
    deadline = started + time_budget
    calls = [{"X": X, "y": y, "names": names, "deadline": deadline, "seed": seed + k,
              "operators": operators, "max_complexity": max_complexity,
              "max_evaluations": max_evaluations} for k in range(1, count)]
    futures, pool, failure = submit_islands(_island, calls)
    entries, evaluated, notes = _island(X, y, names, deadline, seed, operators, max_complexity,
                                        max_evaluations)
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
    return ExpressionSearchResult(pareto_front(entries), evaluated, time.monotonic() - started,
                        tuple(dict.fromkeys(notes)))


def _island(X: np.ndarray, y: np.ndarray, names: list[str], deadline: float, seed: int,
            operators: Sequence[str] | None, max_complexity: int,
            max_evaluations: int | None) -> tuple[list[FrontEntry], int, list[str]]:
    """One single-process search until ``deadline``: its fitted entries, count and notes."""
    binary, unary = resolve_operators(operators)
    time_budget = max(deadline - time.monotonic(), 0.0)
    run = Run(y, binary, unary, max_complexity, seed)
    budget = Budget(deadline - REFIT_SHARE * time_budget, run.counter, max_evaluations)
    values = {name: X[:, i] for i, name in enumerate(names)}
    run.columns_by_name = values
    base = View("inputs", [Symbol(n) for n in names], X)
    with np.errstate(all="ignore"), one_blas_thread():
        run.found = explore(run, base, y, budget)
        entries = refit(run, values, deadline)
    return entries, run.counter.value, run.notes
