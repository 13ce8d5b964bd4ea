"""Least-squares fitting of parameters (and optionally constants).

``fit`` minimises the mean squared error over every :class:`Parameter` and
every category value of every :class:`GroupedParameter`. The default method
(``"auto"``) is least squares with the analytic Jacobian of
:mod:`.derivative`: Levenberg-Marquardt (MINPACK) when there are at least as
many rows as unknowns, else trust-region reflective; see :mod:`.optimizers`.
Restarts make it robust on non-convex problems: unless the first run is exact or already explains
``SATISFACTORY_R2`` of the target variance, up to ``restarts`` deterministic
perturbed starts (seeded RNG: log-scale jitter of every value, random sign
flips, alternately around the initial and the best point) run, each with a
bounded evaluation budget, until the fit is good enough or
``RESTART_PATIENCE`` restarts in a row fail to improve.

Large fits start small: with more than ``SUBSAMPLE_ROWS`` rows (and no
grouped parameters), the first run and the restarts search an evenly spaced
subset of ``SUBSAMPLE_ROWS`` rows, and the best point found there is then
polished on every row: nothing to do when it is already exact there, else a
few Gauss-Newton steps (:func:`.optimizers.polish`), else one least-squares
run. The restarts (exploration) run on the subset only. The subset carries the
same optimum for exact data and nearly the same basin for noisy data, so the
expensive full evaluations are spent on a few polishing iterations.

With ``fit_constants=True`` the formula's numeric constants are fitted too:
every :class:`Number` except integer-valued exponents of ``**``, integers
with ``|v| <= STRUCTURAL_INTEGER_LIMIT`` (``1/(1 + x)``, ``x/2``, ``2*pi``)
and the named constants ``pi`` and ``e``. The fitted values are written back
into ``FitResult.expression`` as numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from .delays import DelayResolver
from .desugaring import desugar
from .errors import FitError
from .evaluation import as_float, evaluate, with_context
from .graph_nodes import STRUCTURAL_TYPES, Gather, Reduction
from .nodes import Binary, Expression, Number, Parameter
from .optimizers import LEAST_SQUARES_METHODS, MINIMIZE_METHODS, Run, polish, run_optimizer
from .problem import LeastSquaresProblem
from .transform import bind_parameters, map_postorder

__all__ = ["FitMethod", "FitResult", "METHODS", "fit", "free_constants"]

FitMethod = Literal["auto", "lm", "trf", "dogbox", "BFGS", "L-BFGS-B", "CG", "Nelder-Mead",
                    "Powell", "TNC", "SLSQP"]
METHODS: tuple[str, ...] = ("auto", *LEAST_SQUARES_METHODS, *MINIMIZE_METHODS)

DEFAULT_RESTARTS = 8
"""Most perturbed restarts tried after the first run."""

RESTART_PATIENCE = 3
"""Stop restarting after this many restarts in a row without improvement."""

SATISFACTORY_R2 = 0.999
"""No restarts when the first run already explains this share of the target variance."""

RESTART_EVALUATIONS_PER_VALUE = 20
"""A least-squares restart may use this many evaluations per fitted value (plus one),
so that restarts heading into a degenerate region stay cheap."""

EXACT_FIT_RTOL = 1e-20
"""A loss below this times mean(target**2) counts as exact: no more restarts."""

IMPROVEMENT_RTOL = 1e-6
"""A restart improves on the best only by more than this relative amount."""

STRUCTURAL_INTEGER_LIMIT = 2
"""With fit_constants, integer-valued numbers up to this magnitude stay fixed."""

SUBSAMPLE_ROWS = 2000
"""Fits on more rows than this search on an evenly spaced subset of this size first."""

_NAMED_CONSTANTS = (math.pi, math.e)


@dataclass(frozen=True, slots=True)
class FitResult:
    """Outcome of :func:`fit`.

    Attributes:
        expression: The input expression with fitted values bound into its
            parameters (and, with ``fit_constants``, fitted constants written
            back as numbers).
        parameters: Parameter name -> float; grouped family -> {category: float}.
        loss: Mean squared error on the rows whose prediction is finite.
        success: Whether the optimiser reported convergence.
        message: Human-readable summary.
        n_iter: Function evaluations summed over all starts.
        n_excluded: Rows left out of ``loss`` (non-finite prediction or target).
    """

    expression: Expression
    parameters: dict[str, Any]
    loss: float
    success: bool
    message: str
    n_iter: int
    n_excluded: int = 0

    def evaluate(self, values: Mapping[str, Any], *, time: Any = None,
                 delay_resolver: DelayResolver | None = None,
                 num_nodes: int | None = None) -> Any:
        """Predictions of the fitted expression on ``values``."""
        return evaluate(self.expression, values, time=time, delay_resolver=delay_resolver,
                        num_nodes=num_nodes)


@dataclass(frozen=True, slots=True)
class _Settings:
    method: str
    restarts: int
    seed: int
    passthrough: dict[str, Any]


def _resolve_settings(method: str, options: Mapping[str, Any] | None) -> _Settings:
    by_lower = {name.lower(): name for name in METHODS}
    if not isinstance(method, str) or method.lower() not in by_lower:
        import difflib

        close = difflib.get_close_matches(str(method), METHODS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise FitError(f"unknown fit method {method!r}; allowed: {', '.join(METHODS)}{hint}",
                       field="method")
    passthrough = dict(options or {})
    restarts = passthrough.pop("restarts", DEFAULT_RESTARTS)
    seed = passthrough.pop("seed", 0)
    for name, value in (("restarts", restarts), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise FitError(f"The {name!r} option of fit must be an int >= 0. Got {value!r} "
                           "instead.", field="options")
    return _Settings(by_lower[method.lower()], restarts, seed, passthrough)


def _target_array(values: Mapping[str, Any], target: Any) -> np.ndarray:
    if isinstance(target, str):
        if target not in values:
            raise FitError(f"target {target!r} is not among the values "
                           f"({', '.join(map(str, values))})", field="target")
        target = values[target]
    array = np.atleast_1d(as_float(target, "target"))
    if array.size == 0:
        raise FitError("target is empty: expected at least one sample", field="target")
    return array


def _is_structural(number: Number, is_exponent: bool) -> bool:
    value = number.value
    if float(value).is_integer() and (is_exponent or abs(value) <= STRUCTURAL_INTEGER_LIMIT):
        return True
    return isinstance(value, float) and abs(value) in _NAMED_CONSTANTS


def free_constants(expression: Expression) -> tuple[Expression, dict[str, float]]:
    """Replace each non-structural Number by its own fresh Parameter (what ``fit_constants``
    fits); the freed values by parameter name."""
    taken = {n.name for n in expression.iter_preorder() if isinstance(n, Parameter)}
    freed: dict[str, float] = {}

    def free(node: Expression, is_exponent: bool) -> Expression:
        if isinstance(node, Number):
            if _is_structural(node, is_exponent):
                return node
            name = next(f"_c{k}" for k in range(len(freed), len(freed) + len(taken) + 1)
                        if f"_c{k}" not in taken)
            taken.add(name)
            freed[name] = float(node.value)
            return Parameter(name, float(node.value))
        if isinstance(node, Reduction | Gather) and node.relation is not None:
            # relation weights stay as written: a relation argument holds no fitted value
            children = tuple(child if child is node.relation else free(child, False)
                             for child in node.operands)
            return node.with_operands(children)
        exponents = (False, True) if isinstance(node, Binary) and node.operator == "**" else \
            (False,) * len(node.operands)
        children = tuple(free(child, flag) for child, flag in
                         zip(node.operands, exponents, strict=True))
        return node.with_operands(children) if children else node

    return free(expression, False), freed


def _restore_constants(expression: Expression, fitted: Mapping[str, float]) -> Expression:
    def restore(node: Expression) -> Expression:
        if isinstance(node, Parameter) and node.name in fitted and math.isfinite(node.value or 0):
            return Number(node.value)
        return node

    return map_postorder(expression, restore)


def _resolved_method(settings: _Settings, problem: LeastSquaresProblem) -> str:
    if settings.method == "lm" and problem.n_rows < problem.size:
        raise FitError(f"method 'lm' needs at least as many usable rows as fitted values "
                       f"({problem.n_rows} < {problem.size}); use 'trf'", field="method")
    if settings.method != "auto":
        return settings.method
    return "lm" if problem.n_rows >= problem.size else "trf"


def _perturbed(center: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    scale = 10.0 ** rng.uniform(-1.0, 1.0, center.size)
    signs = np.where(rng.random(center.size) < 0.3, -1.0, 1.0)
    start = center * scale * signs
    zero = start == 0.0
    start[zero] = rng.normal(size=int(zero.sum()))
    return start


def _exact(problem: LeastSquaresProblem, loss: float) -> bool:
    """The loss is rounding: below ``EXACT_FIT_RTOL`` times the mean squared target."""
    return loss <= EXACT_FIT_RTOL * max(float(np.mean(problem.fitted_target**2)), 1e-300)


def _good_enough(problem: LeastSquaresProblem, loss: float) -> bool:
    """Exact fit, or the first run already explains nearly all the variance."""
    target = problem.fitted_target
    return _exact(problem, loss) or loss <= (1.0 - SATISFACTORY_R2) * float(np.var(target))


def _search(problem: LeastSquaresProblem, settings: _Settings,
            subset: LeastSquaresProblem | None = None) -> tuple[Run, int]:
    """First run plus restarts (on ``subset`` first when given, then polished on all rows);
    returns the best run and total evaluations."""
    method = _resolved_method(settings, problem)
    if subset is not None:  # explore on the subset, exploit on every row
        rough, total = _search(subset, settings)
        residual = problem.residuals(rough.theta)
        loss = float(residual @ residual) / residual.size
        if _exact(problem, loss):  # nothing left to polish
            return replace(rough, loss=loss), total + 1
        best = polish(problem, rough.theta, residual) if settings.method == "auto" else None
        if best is None:
            best = run_optimizer(problem, rough.theta, method, settings.passthrough)
        return best, total + best.n_evaluations
    best = run_optimizer(problem, problem.theta0, method, settings.passthrough)
    return _restart(problem, settings, method, best, best.n_evaluations)


def _restart(problem: LeastSquaresProblem, settings: _Settings, method: str, best: Run,
             total: int) -> tuple[Run, int]:
    """Perturbed restarts until the fit is good enough or patience runs out."""
    budget = RESTART_EVALUATIONS_PER_VALUE * (problem.size + 1)
    rng = np.random.default_rng(settings.seed)
    stale = 0
    for restart in range(settings.restarts):
        if _good_enough(problem, best.loss) or stale >= RESTART_PATIENCE:
            break
        center = problem.theta0 if restart % 2 == 0 else best.theta
        run = run_optimizer(problem, _perturbed(center, rng), method, settings.passthrough,
                            budget)
        total += run.n_evaluations
        improved = run.loss < best.loss * (1.0 - IMPROVEMENT_RTOL)
        best, stale = (run, 0) if improved else (best, stale + 1)
    return best, total


def _subset_problem(problem: LeastSquaresProblem, expression: Expression,
                    values: Mapping[str, Any], initial: Mapping[str, Any]
                    ) -> LeastSquaresProblem | None:
    """The same problem on ``SUBSAMPLE_ROWS`` evenly spaced rows, or None when the fit is
    small, has grouped parameters, or has values that are not one per row."""
    rows = problem.target.size
    if rows <= SUBSAMPLE_ROWS or problem.groups or problem.target.ndim != 1 or \
            problem.env.graph is not None or problem.env.time is not None or \
            any(isinstance(node, STRUCTURAL_TYPES) for node in expression.iter_preorder()):
        return None  # rows of graph data, or of a time series, are not independent
    keep = np.linspace(0, rows - 1, SUBSAMPLE_ROWS).round().astype(np.intp)
    subset: dict[str, Any] = {}
    for name, value in values.items():
        array = np.asarray(value)
        if array.ndim == 0:
            subset[name] = value
        elif array.shape == (rows,):
            subset[name] = array[keep]
        else:
            return None
    weights = None if problem.weights is None else problem.weights[keep]
    if weights is not None and not np.any(weights > 0):
        return None
    sub = LeastSquaresProblem(expression, subset, problem.target[keep], initial, weights)
    return sub if sub.n_rows >= sub.size else None


def _final_loss(problem: LeastSquaresProblem, theta: np.ndarray) -> tuple[float, int]:
    prediction = problem.predictions(theta)
    if problem.weights is not None:
        return _weighted_loss(problem.weights, prediction, problem.target)
    error = prediction - problem.target
    total = float(error @ error)
    if math.isfinite(total):  # every row usable: no masks, no copies
        return total / error.size, 0
    used = np.isfinite(prediction) & np.isfinite(problem.target)
    if not used.any():
        return math.nan, int(problem.target.size)
    error = prediction[used] - problem.target[used]
    return float(error @ error) / int(used.sum()), int(problem.target.size - used.sum())


def _weighted_loss(weights: np.ndarray, prediction: np.ndarray, target: np.ndarray
                   ) -> tuple[float, int]:
    """Weighted MSE ``sum w r^2 / sum w`` over the finite rows of positive weight; the
    rows of weight 0 are not counted as excluded."""
    positive = weights > 0
    used = positive & np.isfinite(prediction) & np.isfinite(target)
    excluded = int(positive.sum() - used.sum())
    if not used.any():
        return math.nan, excluded
    error = prediction[used] - target[used]
    return float(weights[used] @ (error * error)) / float(weights[used].sum()), excluded


def _no_fit(expression: Expression, problem: LeastSquaresProblem, message: str,
            success: bool) -> FitResult:
    loss, excluded = _final_loss(problem, problem.theta0)
    return FitResult(expression, {}, loss, success and math.isfinite(loss), message, 0, excluded)


def fit(
    expression: Expression,
    values: Mapping[str, Any],
    target: Any = None,
    *,
    initial: Mapping[str, Any] | None = None,
    method: FitMethod | str = "auto",
    options: Mapping[str, Any] | None = None,
    fit_constants: bool = False,
    num_nodes: int | None = None,
    time: Any = None,
    delay_resolver: DelayResolver | None = None,
    weights: Any = None,
) -> FitResult:
    """Fit parameters (and optionally constants) by minimising the mean squared error
    (weighted, ``sum w r^2 / sum w``, with ``weights``).

    Args:
        expression: The formula; its :class:`Parameter` and
            :class:`GroupedParameter` nodes are fitted. Bound values are starts.
        values: Symbol name -> samples, or a context exposing ``data``, ``target`` (a
            name) and ``num_nodes``.
        target: Target samples, or the name of an entry of ``values``; omitted, the
            context's target.
        initial: Start values: name -> float; grouped family -> {category: float}
            or float. Unset parameters start at their bound value, else 1.0.
        method: ``"auto"`` (least squares, analytic Jacobian), ``"lm"``,
            ``"trf"``, ``"dogbox"``, or a ``scipy.optimize.minimize`` method
            (``"BFGS"``, ``"L-BFGS-B"``, ``"CG"``, ``"Nelder-Mead"``,
            ``"Powell"``, ``"TNC"``, ``"SLSQP"``); case-insensitive.
        options: ``restarts`` (int, default 8) and ``seed`` (int, default 0);
            other keys go to scipy (``least_squares`` keyword arguments, or
            ``minimize``'s ``options``).
        fit_constants: Also fit the formula's non-structural numeric constants
            (numbers in the relation argument of ``sum``/``gather`` stay fixed).
        num_nodes: Number of graph nodes, for indexed formulas.
        time: Sample times along the leading axis, for ``delay``.
        delay_resolver: Custom ``delay`` history lookup.
        weights: One non-negative weight per row of the target (PySR's ``weights``);
            ``loss`` is then the weighted MSE and rows of weight 0 take no part.

    Returns:
        The fit result. A fit that fails to converge is not an error:
        ``success`` is False and ``message`` says why.

    Raises:
        FitError: Unknown method, invalid options, empty or mismatched
            target, initial value for an unknown parameter.
        EvaluationError: A symbol of the formula is missing from ``values``.
    """
    settings = _resolve_settings(method, options)
    if target is None:
        target = getattr(values, "target", None)
        if target is None:
            raise FitError("fit() needs a target: pass target=, or a context with one",
                           field="target")
    values, num_nodes = with_context(values, num_nodes)
    expression = desugar(expression)
    working, constants = free_constants(expression) if fit_constants else (expression, {})
    structure = {"num_nodes": num_nodes, "time": time, "delay_resolver": delay_resolver}
    with np.errstate(all="ignore"):
        problem = LeastSquaresProblem(working, values, _target_array(values, target),
                                      initial or {}, weights, **structure)
        if problem.size == 0:
            return _no_fit(expression, problem, "expression has no parameters to fit", True)
        if problem.n_rows == 0:
            return _no_fit(expression, problem, "no row has a finite prediction and target at "
                           "the start point; nothing to fit", False)
        subset = _subset_problem(problem, working, values, initial or {}) \
            if settings.method in ("auto", *LEAST_SQUARES_METHODS) else None
        best, evaluations = _search(problem, settings, subset)
        return _result(problem, best, evaluations, constants)


def _result(problem: LeastSquaresProblem, best: Run, evaluations: int,
            constants: Mapping[str, float]) -> FitResult:
    """Bind the best values into the expression and summarise the fit."""
    loss, excluded = _final_loss(problem, best.theta)
    fitted = problem.named_values(best.theta)
    bound = _restore_constants(bind_parameters(problem.expression, fitted), constants)
    note = f"; {excluded} row(s) with non-finite prediction or target excluded" if excluded \
        else ""
    public = {name: value for name, value in fitted.items() if name not in constants}
    return FitResult(bound, public, loss, best.success and math.isfinite(loss),
                     best.message + note, evaluations, excluded)
