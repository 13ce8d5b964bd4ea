"""The search driver: decompose, enumerate, evolve, refit, keep the front.

One call of :func:`search`:

1. decomposition tests on the data (:mod:`.decomposition`): pairs of
   inputs the target depends on only through their difference, ratio,
   product or sum become one input of an extra *view* of the problem; an
   additive or multiplicative split into two groups of inputs becomes two
   sub-problems searched in turn (the first on the surrogate's part of the
   target, the second on what the first leaves of the real target);
2. in every view, bottom-up enumeration (:mod:`.enumeration`) scores each
   form against the target and its transforms ``y**2``, ``1/y``, ``log|y|``,
   ``sqrt|y|`` at once; once the forms up to ``MAX_FORM_SIZE`` exist, sparse
   sums of them are fitted to every transform (:mod:`.combination`); then
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
from dataclasses import dataclass, field

import numpy as np

from ..fitting import fit
from ..nodes import Binary, Expression, Function, Number, Parameter, Symbol, Unary
from ..rendering import to_str
from ..transform import complexity, fold_constants, map_postorder
from . import decomposition as dec
from .budget import Budget, Counter
from .combination import DICTIONARY_ROWS, MAX_FORM_SIZE, combinations
from .enumeration import Enumeration
from .evolution import Evolution, linear_nmse
from .operators import Tree, evaluate_tree, resolve_operators, size, to_expression
from .pool import available_workers, broken, forget, submit_islands
from .selection import steepest
from .threads import one_blas_thread

__all__ = ["FrontEntry", "SearchResult", "search"]

ENUMERATION_ROWS = 32
FITNESS_ROWS = 256
ENUMERATION_SHARE = 0.6
COMBINATION_SHARE = 0.3
"""Of what the enumeration leaves: the sparse combinations of its forms."""
REFIT_SHARE = 0.2
ANALYSIS_SHARE = 0.1
MAX_REFITS = 60
EXACT_NMSE = 1e-13
MAX_PAIR_VIEWS = 2
SEEDS_PER_RUN = 60
SURROGATE_NMSE = 1e-8
"""A surrogate's part is matched this closely by a form that is the exact part."""
MAX_PAIR_INPUTS = 6
"""Pair tests cost ~4 d**2/2 surrogate fits: skipped on wider problems."""


@dataclass(frozen=True, slots=True)
class FrontEntry:
    """One formula of the front."""

    expression: Expression
    complexity: int
    mse: float
    r2: float

    @property
    def formula(self) -> str:
        return to_str(self.expression)


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The outcome of :func:`search`.

    Attributes:
        front: Pareto front, simplest first (complexity strictly increasing, MSE decreasing).
        evaluated: Expressions evaluated (enumerated forms plus evolved trees).
        seconds: Wall-clock time used.
        notes: Decompositions found and phases run.
    """

    front: tuple[FrontEntry, ...]
    evaluated: int
    seconds: float
    notes: tuple[str, ...] = ()

    @property
    def best(self) -> FrontEntry | None:
        """The lowest-error formula (what ``selection = "accuracy"`` reports)."""
        return min(self.front, key=lambda e: (e.mse, e.complexity)) if self.front else None

    @property
    def selected(self) -> FrontEntry | None:
        """The formula PySR's "best" rule picks (:func:`.selection.steepest`): on noisy
        data the simple formula the error stops falling at, not the largest one that
        fits the noise. The loss is the unexplained share of the variance."""
        if not self.front:
            return None
        losses = [max(1.0 - e.r2, 0.0) for e in self.front]
        return self.front[steepest([e.complexity for e in self.front], losses)]


@dataclass(slots=True)
class _View:
    """The problem in other inputs: ``inputs[i]`` is an engine expression of the originals."""

    name: str
    inputs: list[Expression]
    columns: np.ndarray  # (rows, len(inputs))


@dataclass(slots=True)
class _Found:
    nmse: float
    tree: Tree
    view: _View
    transform: str
    wraps: tuple[tuple[str, Expression], ...] = ()
    """Split factors or terms taken out first, outermost first: ("add"|"mul", expression)."""


@dataclass
class _Run:
    y: np.ndarray
    binary: tuple[str, ...]
    unary: tuple[str, ...]
    max_size: int
    seed: int
    counter: Counter = field(default_factory=Counter)
    found: list[_Found] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    columns_by_name: dict[str, np.ndarray] = field(default_factory=dict)


# ------------------------------------------------------------------ targets
TRANSFORMS = ("identity", "log", "inv", "square", "sqrt")


def _transforms(y: np.ndarray) -> dict[str, np.ndarray]:
    signed = bool(np.all(y > 0) or np.all(y < 0))
    magnitude = np.abs(y)
    found = {"identity": y, "square": y * y}
    if signed:
        found["log"] = np.log(magnitude)
        found["sqrt"] = np.sqrt(magnitude)
    if np.all(magnitude > 1e-300):
        found["inv"] = 1.0 / y
    return {k: v for k, v in found.items() if np.all(np.isfinite(v)) and np.std(v) > 0}


def _inverse(transform: str, scaled: Expression, sign: float) -> Expression:
    """``y`` from the scaled form of ``transform(y)``."""
    if transform == "identity":
        return scaled
    if transform == "log":
        body = Function("exp", (scaled,))
    elif transform == "inv":
        return Binary("/", Number(1), scaled)
    elif transform == "square":
        body = Function("sqrt", (scaled,))
    else:
        body = Binary("**", scaled, Number(2))
    return Unary("-", body) if sign < 0 else body


# --------------------------------------------------------------- searching
def _rows(n: int, count: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, size=min(n, count), replace=False))


def _search_view(run: _Run, view: _View, target: np.ndarray, budget: Budget, seed: int,
                 transforms: bool = True, evolve: bool = True, combine: bool = True,
                 largest: int | None = None) -> list[_Found]:
    """Enumerate then evolve on one view of (a sub-problem of) the problem."""
    rng = np.random.default_rng([seed, 3])
    candidates = _transforms(target) if transforms else {"identity": target}
    names = list(candidates)
    few = _rows(target.size, ENUMERATION_ROWS, rng)
    many = _rows(target.size, FITNESS_ROWS, rng)
    enumeration_budget = budget.share(ENUMERATION_SHARE)
    enumeration = Enumeration(view.columns[few], np.stack([candidates[n][few] for n in names]),
                              run.binary, run.unary, seed=seed)
    combined: list[tuple[str, Tree]] | None = None
    combine = combine and view.columns.shape[0] > ENUMERATION_ROWS
    for level in range(2, min(run.max_size, largest or run.max_size) + 1):
        complete = enumeration.grow(level, enumeration_budget.over)
        if _claims_exact(enumeration, view, candidates, names):
            break
        if combine and combined is None and (level >= MAX_FORM_SIZE or not complete):
            # the dictionary is complete at this level: combine before growing further
            combined = _combined(run, enumeration, view, candidates, budget, rng, seed,
                                 COMBINATION_SHARE if evolve else 1.0)
            if any(_all_rows_nmse(tree, view, candidates[name]) <= EXACT_NMSE
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
    found = [_Found(s, tree, view, name) for name, items in scored.items() for s, tree in items]
    for item in found:  # a few extreme rows can make a form look exact on a subsample
        if item.nmse <= EXACT_NMSE:
            item.nmse = max(item.nmse, _all_rows_nmse(item.tree, view, candidates[item.transform]))
    best_name = min(names, key=lambda n: min((s for s, _ in scored[n]), default=1.0))
    if evolve and min((f.nmse for f in found), default=1.0) > EXACT_NMSE and \
            not budget.over():
        found += _evolve(run, view, candidates[best_name][many], columns, scored[best_name],
                         best_name, budget, seed)
    return found


def _combined(run: _Run, enumeration: Enumeration, view: _View,
              candidates: dict[str, np.ndarray], budget: Budget, rng: np.random.Generator,
              seed: int, fraction: float) -> list[tuple[str, Tree]]:
    """Sparse combinations of the enumerated forms, per transform (:mod:`.combination`),
    in ``fraction`` of what is left of ``budget`` (all of it when nothing evolves after)."""
    if budget.over():
        return []
    share = budget.share(fraction)
    rows = _rows(view.columns.shape[0], DICTIONARY_ROWS, rng)
    targets = {name: values[rows] for name, values in candidates.items()}
    # its work (forms scored against residuals) is checked against the budget as pending
    # evaluations, so that a count budget stays deterministic; only the fitted sums count as
    # evaluated expressions
    found = combinations(enumeration, view.columns[rows], targets, share.over, seed=seed)
    run.counter.value += sum(len(items) for items in found.values())
    ranked = sorted(((item.nmse, name, item.tree) for name, items in found.items()
                     for item in items), key=lambda entry: entry[0])
    return [(name, tree) for _, name, tree in ranked]  # best first


def _claims_exact(enumeration: Enumeration, view: _View, candidates: dict[str, np.ndarray],
                  names: list[str]) -> bool:
    """Whether the enumeration's best form is exact on every row (not only on its subsample)."""
    if enumeration.best_nmse() > EXACT_NMSE:
        return False
    best = min(enumeration.best, key=lambda s: (s.nmse, s.size))
    tree = enumeration.tree(best.recipe)
    return _all_rows_nmse(tree, view, candidates[names[best.target]]) <= EXACT_NMSE


def _all_rows_nmse(tree: Tree, view: _View, target: np.ndarray) -> float:
    values = _column_values(tree, view)
    if values is None:
        return 1.0
    return linear_nmse(values, target, float(np.var(target)))


def _evolve(run: _Run, view: _View, target: np.ndarray, columns: list[np.ndarray],
            seeds: list[tuple[float, Tree]], transform: str, budget: Budget, seed: int
            ) -> list[_Found]:
    evolution = Evolution(columns, target, run.binary, run.unary, run.max_size, seed=seed)
    ordered = [tree for _, tree in sorted(seeds, key=lambda s: (s[0], size(s[1])))]
    evolution.seed_population(list(dict.fromkeys(ordered))[:SEEDS_PER_RUN])
    evolution.run(budget.over, EXACT_NMSE)
    run.counter.value += evolution.evaluated
    return [_Found(s, tree, view, transform) for s, tree in evolution.archive.values()]


# ------------------------------------------------------------ decomposition
def _pair_views(run: _Run, base: _View, target: np.ndarray) -> list[_View]:
    if base.columns.shape[1] > MAX_PAIR_INPUTS:
        return []
    pairs = dec.pair_combinations(base.columns, target, limit=MAX_PAIR_VIEWS)
    views = []
    for i, j, operator in pairs:
        combined = dec.combine(base.columns, i, j, operator)
        u = Binary(operator, base.inputs[i], base.inputs[j])
        rest = [base.inputs[k] for k in range(len(base.inputs)) if k not in (i, j)]
        views.append(_View(f"{to_str(u)} as one input", [u, *rest], combined))
        run.notes.append(f"the target depends on {to_str(base.inputs[i])} and "
                         f"{to_str(base.inputs[j])} only through {to_str(u)}")
    return views


def _split(run: _Run, base: _View, target: np.ndarray, budget: Budget
           ) -> dec.Separation | None:
    d = base.columns.shape[1]
    if d < 2:
        return None
    groups = [(i,) for i in range(d)]
    for kind, test in (("multiplicative", dec.multiplicative_separable),
                       ("additive", dec.additive_separable)):
        for first in groups:
            if budget.over():
                return None
            if test(base.columns, target, list(first)):
                second = tuple(k for k in range(d) if k not in first)
                run.notes.append(f"{kind}ly separable: "
                                 f"{[to_str(base.inputs[k]) for k in first]} | rest")
                return dec.Separation(kind, first, second)
    return None


def _sub_view(base: _View, indices: Sequence[int]) -> _View:
    return _View("subset", [base.inputs[k] for k in indices], base.columns[:, list(indices)])


def _search_split(run: _Run, base: _View, target: np.ndarray, split: dec.Separation,
                  budget: Budget, depth: int) -> list[_Found]:
    """Search the first group on the surrogate's part, then the rest on the real remainder."""
    multiplicative = split.kind == "multiplicative"
    t = np.log(np.abs(target)) if multiplicative else target
    part, _ = dec.separable_parts(base.columns, t, split.first, logged=multiplicative)
    first_target = np.exp(part) if multiplicative else part
    first_view = _sub_view(base, split.first)
    found = _search_view(run, first_view, first_target, budget.share(0.3),
                         run.seed + 101 + depth,
                         transforms=False, evolve=False, combine=False)
    # (no sums there: the surrogate's part is approximate, and a sum of lookalikes fits its
    # errors better than the simple form the split needs)
    best = _simplest(found)
    second_view = _sub_view(base, split.second)
    results = []
    for rank, item in enumerate(best):
        factor = _fitted_linear(item, first_target)
        if factor is None:
            continue
        expression, values = factor
        with np.errstate(all="ignore"):
            rest = target / values if multiplicative else target - values
        if not np.all(np.isfinite(rest)):
            continue
        share = budget.share(1.0 / (len(best) - rank))
        wrap = ("mul" if multiplicative else "add", expression)
        for sub in _explore(run, second_view, rest, share, depth + 1):
            sub.wraps = (wrap, *sub.wraps)
            results.append(sub)
    return results


def _simplest(found: list[_Found], count: int = 2) -> list[_Found]:
    """The smallest forms that fit a surrogate's part about as well as the best one."""
    floor = min((f.nmse for f in found), default=1.0)
    close = [f for f in found if f.nmse <= 10.0 * floor + SURROGATE_NMSE]
    return sorted(close, key=lambda f: (size(f.tree), f.nmse))[:count]


def _fitted_linear(item: _Found, target: np.ndarray) -> tuple[Expression, np.ndarray] | None:
    expression = to_expression(item.tree, item.view.inputs)
    values = _column_values(item.tree, item.view)
    if values is None:
        return None
    design = np.column_stack([np.ones_like(values), values])
    (a, b), *_ = np.linalg.lstsq(design, target, rcond=None)
    return Binary("*", Number(float(b)), expression), b * values


def _column_values(tree: Tree, view: _View) -> np.ndarray | None:
    columns = [view.columns[:, i] for i in range(view.columns.shape[1])]
    with np.errstate(all="ignore"):
        values = np.broadcast_to(np.asarray(evaluate_tree(tree, columns, None), dtype=float),
                                 (view.columns.shape[0],))
    return values if np.all(np.isfinite(values)) else None


# ---------------------------------------------------------------- refitting
def _scaled_expression(item: _Found, target: np.ndarray) -> Expression | None:
    """``a + b*f`` with a and b fitted by least squares, as engine parameters."""
    values = _column_values(item.tree, item.view)
    if values is None:
        return None
    design = np.column_stack([np.ones_like(values), values])
    (a, b), *_ = np.linalg.lstsq(design, target, rcond=None)
    if not (math.isfinite(a) and math.isfinite(b)):
        return None
    scale = max(float(np.sqrt(np.mean(target**2))), 1e-300)
    body = to_expression(item.tree, item.view.inputs)
    if abs(b - 1.0) > 1e-9:
        body = Binary("*", Parameter("b", float(b)), body)
    if abs(a) > 1e-9 * scale:
        body = Binary("+", Parameter("a", float(a)), body)
    return body


def _candidate_expression(item: _Found, run: _Run) -> Expression | None:
    target = run.y
    for kind, expression in item.wraps:
        factor = _values(expression, run)
        if factor is None:
            return None
        with np.errstate(all="ignore"):
            target = target / factor if kind == "mul" else target - factor
    transformed = _transforms(target).get(item.transform)
    if transformed is None:
        return None
    scaled = _scaled_expression(item, transformed)
    if scaled is None:
        return None
    body = _inverse(item.transform, scaled, float(np.sign(target[0])))
    for kind, expression in reversed(item.wraps):
        if kind == "mul":  # the body's own scale absorbs the factor's
            body = Binary("*", _unscaled(expression), body)
        else:
            body = Binary("+", expression, body)
    return body


def _unscaled(expression: Expression) -> Expression:
    if isinstance(expression, Binary) and expression.operator == "*" and \
            isinstance(expression.left, Number):
        return expression.right
    return expression


def _values(expression: Expression, run: _Run) -> np.ndarray | None:
    from ..evaluation import evaluate

    with np.errstate(all="ignore"):
        values = np.asarray(evaluate(expression, run.columns_by_name), dtype=float)
    values = np.broadcast_to(values, run.y.shape)
    return values if np.all(np.isfinite(values)) else None


def _refit(run: _Run, values: dict[str, np.ndarray], deadline: float) -> list[FrontEntry]:
    ranked = sorted(run.found, key=lambda f: (f.nmse, size(f.tree)))
    chosen: list[_Found] = ranked[:MAX_REFITS // 3]
    sizes: set[tuple[int, bool]] = set()
    for item in ranked[MAX_REFITS // 3:]:  # then the best of every size, untransformed or not
        key = (size(item.tree), item.transform == "identity")
        if key not in sizes:
            sizes.add(key)
            chosen.append(item)
        if len(chosen) >= MAX_REFITS:
            break
    variance = float(np.var(run.y))
    mean = float(np.mean(run.y))  # the simplest formula: every front starts with it
    entries = [FrontEntry(Number(mean), 1, variance, 0.0)]
    seen, slowest = set(), 0.0
    for item in chosen:
        tick = time.monotonic()
        if tick + slowest > deadline:  # the next fit would likely overrun the budget
            break
        expression = _candidate_expression(item, run)
        if expression is None:
            continue
        key = to_str(expression)
        if key in seen:
            continue
        seen.add(key)
        entry = _fit_entry(expression, values, run.y, variance)
        if entry is not None:
            entries.append(entry)
        slowest = max(slowest, time.monotonic() - tick)
    return entries


def _fit_entry(expression: Expression, values: dict[str, np.ndarray], y: np.ndarray,
               variance: float) -> FrontEntry | None:
    expression = fold_constants(expression)  # ``cos(cos(2.9))/(M*r)`` is a number over M*r
    try:
        result = fit(expression, values, y, fit_constants=True, options={"restarts": 1})
    except Exception:  # noqa: BLE001 - a candidate that cannot be fitted is dropped
        return None
    if not math.isfinite(result.loss) or result.n_excluded:
        return None
    fitted = fold_constants(map_postorder(result.expression, _inline_parameter))
    loss = float(result.loss)
    pruned = map_postorder(fitted, _pruner(float(np.sqrt(np.mean(y**2)))))
    if pruned != fitted:
        pruned_loss = _mse(pruned, values, y)
        if pruned_loss <= loss * (1.0 + 1e-6) + 1e-300:
            fitted, loss = pruned, pruned_loss
    r2 = 1.0 - loss / variance if variance > 0 else 0.0
    return FrontEntry(fitted, complexity(fitted), loss, float(r2))


PRUNE_RTOL = 1e-10
"""Fitted additive constants below this share of the target's scale, and factors this close
to 1, are dropped when the fit stays as good."""


def _pruner(scale: float):
    def prune(node: Expression) -> Expression:
        if not isinstance(node, Binary):
            return node
        left, right = node.left, node.right
        if node.operator == "+":
            if isinstance(left, Number) and abs(left.value) <= PRUNE_RTOL * scale:
                return right
            if isinstance(right, Number) and abs(right.value) <= PRUNE_RTOL * scale:
                return left
        if node.operator == "*":
            if isinstance(left, Number) and abs(left.value - 1.0) <= PRUNE_RTOL:
                return right
            if isinstance(right, Number) and abs(right.value - 1.0) <= PRUNE_RTOL:
                return left
        return node

    return prune


def _mse(expression: Expression, values: dict[str, np.ndarray], y: np.ndarray) -> float:
    from ..evaluation import evaluate

    with np.errstate(all="ignore"):
        predicted = np.broadcast_to(np.asarray(evaluate(expression, values), dtype=float),
                                    y.shape)
        error = float(np.mean((predicted - y) ** 2))
    return error if math.isfinite(error) else math.inf


def _inline_parameter(node: Expression) -> Expression:
    if isinstance(node, Parameter) and node.value is not None:
        return Number(node.value)
    return node


def pareto_front(entries: Sequence[FrontEntry]) -> tuple[FrontEntry, ...]:
    """Simplest first; each entry strictly better than every simpler one."""
    front, best = [], math.inf
    for entry in sorted(entries, key=lambda e: (e.complexity, e.mse)):
        if entry.mse < best:
            front.append(entry)
            best = entry.mse
    return tuple(front)


# ------------------------------------------------------------------- public
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
           workers: int | None = None) -> SearchResult:
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
    return SearchResult(pareto_front(entries), evaluated, time.monotonic() - started,
                        tuple(dict.fromkeys(notes)))


ISLAND_GRACE = 0.05
"""Islands' results are waited for until this share of the budget past the deadline."""


def _island(X: np.ndarray, y: np.ndarray, names: list[str], deadline: float, seed: int,
            operators: Sequence[str] | None, max_complexity: int,
            max_evaluations: int | None) -> tuple[list[FrontEntry], int, list[str]]:
    """One single-process search until ``deadline``: its fitted entries, count and notes."""
    binary, unary = resolve_operators(operators)
    time_budget = max(deadline - time.monotonic(), 0.0)
    run = _Run(y, binary, unary, max_complexity, seed)
    budget = Budget(deadline - REFIT_SHARE * time_budget, run.counter, max_evaluations)
    values = {name: X[:, i] for i, name in enumerate(names)}
    run.columns_by_name = values
    base = _View("inputs", [Symbol(n) for n in names], X)
    with np.errstate(all="ignore"), one_blas_thread():
        run.found = _explore(run, base, y, budget)
        entries = _refit(run, values, deadline)
    return entries, run.counter.value, run.notes


MAX_DEPTH = 3
"""Most nested splits."""


def _explore(run: _Run, base: _View, target: np.ndarray, budget: Budget, depth: int = 0
             ) -> list[_Found]:
    """Decompose (pairs, then a split), then search every view and sub-problem.

    At the top, a quick probe first: forms up to ``PROBE_SIZE`` and their sums and
    products, with no decomposition (a wrong one, say an input taken for a power factor,
    would otherwise cost most of the time before the undivided problem is searched).
    """
    probe: list[_Found] = []
    if depth == 0:
        probe = _search_view(run, base, target, budget.share(PROBE_SHARE), run.seed + 7,
                             evolve=False, largest=PROBE_SIZE)
        if _exact_on_all_rows(run, probe):
            return probe
    return probe + _decomposed(run, base, target, budget, depth)


PROBE_SHARE = 0.15
PROBE_SIZE = 5


def _decomposed(run: _Run, base: _View, target: np.ndarray, budget: Budget, depth: int
                ) -> list[_Found]:
    analysis = budget.share(ANALYSIS_SHARE)
    views, split, factors = [base], None, {}
    if base.columns.shape[1] >= 2 and depth < MAX_DEPTH:
        factors = dec.power_factors(base.columns, target)
        if len(factors) == base.columns.shape[1]:  # a pure product of powers
            return _factored(run, base, target, factors, budget, depth)
        if not factors and not analysis.over():
            split = _split(run, base, target, analysis)
        if not factors and split is None and not analysis.over():
            views += _pair_views(run, base, target)
    if factors:
        now = _factored(run, base, target, factors, budget.share(FACTORED_SHARE), depth)
        if _exact_on_all_rows(run, now):
            return now
        return now + _search_view(run, base, target, budget, run.seed + 10 * depth)
    plans: list = ([("split", split)] if split else []) + [("view", v) for v in views]
    found: list[_Found] = []
    for index, (kind, item) in enumerate(plans):
        share_end = budget.share(1.0 / (len(plans) - index))
        if kind == "view" and item is not base:
            found += _explore(run, item, target, share_end, depth + 1)
        elif kind == "view":
            found += _search_view(run, item, target, share_end, run.seed + index + 10 * depth)
        else:
            found += _search_split(run, base, target, item, share_end, depth)
        if depth == 0 and _exact_on_all_rows(run, found):
            break
    return found


FACTORED_SHARE = 0.7
"""Time for the remainder once power factors are divided out (the rest: the whole problem)."""


def _factored(run: _Run, base: _View, target: np.ndarray, factors: dict[int, float],
              budget: Budget, depth: int) -> list[_Found]:
    """Divide out ``x_i**a_i`` and search the remainder over the other inputs."""
    product: Expression | None = None
    values = np.ones_like(target)
    for index, exponent in sorted(factors.items()):
        power = base.inputs[index] if exponent == 1 else \
            Binary("**", base.inputs[index], Number(_exponent_number(exponent)))
        product = power if product is None else Binary("*", product, power)
        values = values * base.columns[:, index] ** exponent
    run.notes.append("power factors divided out: " + to_str(product))
    rest = [k for k in range(base.columns.shape[1]) if k not in factors]
    remainder = target / values
    if not rest:  # the factors are the whole formula up to a constant
        leaf = _View("constant", [Number(1)], np.ones((target.size, 1)))
        found = [_Found(0.0, ("v", 0), leaf, "identity")]
    else:
        found = _explore(run, _sub_view(base, rest), remainder, budget, depth + 1)
    for item in found:
        item.wraps = (("mul", product), *item.wraps)
    return found


def _exponent_number(exponent: float) -> float | int:
    return int(exponent) if float(exponent).is_integer() else float(exponent)


def _exact_on_all_rows(run: _Run, found: list[_Found]) -> bool:
    if min((f.nmse for f in found), default=1.0) > EXACT_NMSE:
        return False
    best = min(found, key=lambda f: (f.nmse, size(f.tree)))
    expression = _candidate_expression(best, run)
    if expression is None:
        return False
    entry = _fit_entry(expression, run.columns_by_name, run.y, float(np.var(run.y)))
    return entry is not None and entry.mse <= 1e-20 * float(np.mean(run.y**2))
