"""The default evaluation protocol for sample-aligned data.

Five classmethods, each a narrow extension point (override any subset in a
subclass; :func:`srh_core.evaluator.load_custom_evaluator` loads one from a file):

- ``split(context)``: train/validation views (validation ``None`` when disabled);
- ``fit(f, y, context)``: fit the parameters of ``f`` so that ``f ~ y`` on the
  (training) context; ``y`` is any expression of the data (``y``, ``log(y)``);
- ``evaluate(f, y, context)``: the metric dict of ``y = f`` on a context;
- ``fit_candidate`` / ``evaluate_candidate``: the same with ``y`` = the target.

Missing data: a row counts only when every sample variable the formula and
``y`` read is non-nan and ``y`` evaluates to a finite value there; other rows
are left out of both fitting and scoring (the metric dict's ``n_samples``
says how many rows were scored). A non-finite *prediction* on a counted row is
not dropped: it makes the error metrics nan (see :mod:`.metrics`).

Weights: with a ``weights`` setting (the data column of per-row weights, PySR's
``weights``), ``fit`` minimises the weighted MSE and ``evaluate`` gives the
weighted metrics (:mod:`.metrics`); rows of weight 0 take no part in either.

Graph data (``num_nodes`` and relations in the context) is evaluated
graph-aligned (see :mod:`.graph`). Derivative targets: when the settings name
a ``rollout_state`` (and ``rollout_time``, default ``"t"``), a candidate's
metrics also hold ``rollout_rmse``, the RMSE of integrating it as
``d state/dt = f`` over the observed trajectories (:mod:`.dynamics`; ``inf``
when the rollout blows up), so ``ranking_metric="rollout_rmse"`` ranks
derivative formulas by their trajectories.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np

import srh_engine as engine
from srh_core.errors import ConfigurationError, DataError, did_you_mean
from srh_core.evaluator import metrics
from srh_core.evaluator.dynamics import RolloutError, calc_trajectory_rollout_RMSE
from srh_core.evaluator.graph import engine_options, engine_values
from srh_core.evaluator.metrics import MetricDict
from srh_core.evaluator.splits import row_aligned_names, split_aligned_context

if TYPE_CHECKING:
    from srh_core.context import AgentContext

ContextSplits: TypeAlias = dict[Literal["train", "validation"], "AgentContext | None"]


class DefaultEvaluator:
    """Default implementation and extension point for formula evaluation."""

    @classmethod
    def split(cls, context: AgentContext) -> ContextSplits:
        """Split a context into training and validation views.

        Args:
            context: Complete, unsplit context.

        Returns:
            ``{"train": view, "validation": view or None}`` by the context's
            ``validation_fraction``, ``split_by`` and ``split_random_state``.
        """
        return split_aligned_context(context)  # type: ignore[return-value]

    @classmethod
    def fit(
        cls,
        f: engine.Expression,
        y: engine.Expression,
        context: AgentContext,
        *,
        fit_constants: bool | None = None,
    ) -> engine.Expression:
        """Fit the parameters of ``f`` so that ``f`` approximates ``y``.

        Args:
            f: Expression whose parameters are fitted.
            y: Expression giving the target values (a symbol or an expression of data).
            context: Training context holding every variable both read.
            fit_constants: Also fit numeric constants; defaults to the context's
                ``fit_constants`` setting.

        Returns:
            ``f`` with fitted parameter values (``f`` itself when there is nothing to fit).

        Raises:
            DataError: A symbol is not in the data, or no row is complete.
        """
        settings = context.settings()
        constants = settings.fit_constants if fit_constants is None else fit_constants
        used_symbols(context, (f, y))
        if not constants and engine.count_parameters(f) == 0:
            return f
        values, target, weights = weighted_data(f, y, context)
        if target.shape[0] == 0:
            raise DataError("No complete sample to fit on: every row has a missing value in a "
                            "variable the formula reads, a non-finite target or weight 0.")
        result = engine.fit(f, engine_values(f, values, context), target,
                            method=settings.fit_method, fit_constants=constants,
                            weights=weights, **engine_options(f, context))
        return result.expression

    @classmethod
    def evaluate(
        cls, f: engine.Expression, y: engine.Expression, context: AgentContext
    ) -> MetricDict:
        """Evaluate the equality ``y = f`` on a context.

        Args:
            f: Fitted expression.
            y: Expression giving the target values.
            context: Training or validation context.

        Returns:
            ``mse, rmse, mae, mape, r2, aic, bic, pearson, spearman, complexity,
            n_params, n_samples, n_finite``.
        """
        values, target, weights = weighted_data(f, y, context)
        prediction = engine.evaluate(f, engine_values(f, values, context),
                                     **engine_options(f, context))
        return metrics.weighted_regression_metrics(f, target, prediction, weights)

    @classmethod
    def fit_candidate(cls, f: engine.Expression, context: AgentContext) -> engine.Expression:
        """Fit a candidate against the configured target (see :meth:`fit`)."""
        return cls.fit(f, target_symbol(context), context)

    @classmethod
    def evaluate_candidate(cls, f: engine.Expression, context: AgentContext) -> MetricDict:
        """Evaluate a candidate against the configured target (see :meth:`evaluate`).

        With a ``rollout_state`` setting, ``rollout_rmse`` is added.
        """
        scores = cls.evaluate(f, target_symbol(context), context)
        options = rollout_options(context)
        if options is not None:
            scores["rollout_rmse"] = rollout_rmse(f, context, *options)
        return scores


def rollout_options(context: AgentContext) -> tuple[str, str] | None:
    """``(state, time)`` when the settings ask for rollout scores, else None.

    Raises:
        ConfigurationError: The named state or time is not a variable of the data.
    """
    args = context.args
    read = args.get if isinstance(args, dict) else lambda name, default: getattr(
        args, name, default)
    state = read("rollout_state", None)
    if state is None:
        return None
    time = read("rollout_time", "t") or "t"
    for name, setting in ((state, "rollout_state"), (time, "rollout_time")):
        if name not in context.data:
            raise ConfigurationError(f"The {setting!r} setting names {name!r}, which is not "
                                     f"in the data.{did_you_mean(name, context.data)}",
                                     setting=setting)
    return state, time


ROLLOUT_SECONDS = 2.0
"""Wall-clock budget of one candidate's rollout on one split (beyond it: inf)."""

ROLLOUT_RTOL, ROLLOUT_ATOL = 1e-7, 1e-9
"""Solver tolerances of the ranking rollouts (looser than the judges': a ranking needs
errors well below the candidates' differences, not to rounding)."""


_ROLLOUTS: weakref.WeakKeyDictionary[Any, dict[tuple[str, str, str, int], float]] = \
    weakref.WeakKeyDictionary()
"""Rollout scores per context view: tools often score the same formula again."""


def rollout_rmse(f: engine.Expression, context: AgentContext, state: str, time: str) -> float:
    """Trajectory rollout RMSE of ``d state/dt = f`` (inf when the rollout fails or takes
    longer than ``ROLLOUT_SECONDS``); remembered per context view and formula."""
    known = _ROLLOUTS.setdefault(context, {})
    key = (engine.to_str(f), state, time, context.revision)
    if key not in known:
        known[key] = _rollout_rmse(f, context, state, time)
    return known[key]


def _rollout_rmse(f: engine.Expression, context: AgentContext, state: str, time: str) -> float:
    try:
        value = calc_trajectory_rollout_RMSE(f, context, time=time, state=state,
                                             time_limit=ROLLOUT_SECONDS, rtol=ROLLOUT_RTOL,
                                             atol=ROLLOUT_ATOL)
    except RolloutError:
        return float("inf")
    return value if np.isfinite(value) else float("inf")


def target_symbol(context: AgentContext) -> engine.Expression:
    """Return the target of ``context`` as an engine symbol.

    Raises:
        DataError: The context has no target.
    """
    if context.target is None:
        raise DataError("The context has no target; select one before fitting candidates.")
    return engine.Symbol(context.target)


def weighted_data(
    f: engine.Expression, y: engine.Expression, context: AgentContext
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray | None]:
    """:func:`observed_data` without the rows of weight 0, and the weights of the rows kept
    (None without a ``weights`` setting)."""
    weights = getattr(context, "row_weights", lambda: None)()
    values, target, rows = _observed(f, y, context, weights)
    return values, target, None if weights is None else weights[rows]


def observed_data(
    f: engine.Expression, y: engine.Expression, context: AgentContext
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Return the data ``f`` and ``y`` read, and ``y``'s values, on the complete rows.

    Args:
        f: The formula.
        y: The target expression.
        context: The context.

    Returns:
        ``(values, target)``: arrays by symbol name (row-aligned ones cut to the
        complete rows) and the target values on those rows.

    Raises:
        DataError: A symbol of ``f`` or ``y`` is not in the data.
    """
    values, target, _ = _observed(f, y, context, None)
    return values, target


def _observed(f: engine.Expression, y: engine.Expression, context: AgentContext,
              weights: np.ndarray | None
              ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    names = used_symbols(context, (f, y))
    aligned = set(row_aligned_names(context))
    values = {name: context.data[name] for name in names}
    n_samples = context.n_samples
    target = _as_target(engine.evaluate(y, engine_values(y, values, context),
                                        **engine_options(y, context)), n_samples)
    rows = _complete_rows(n_samples, [values[n] for n in names if n in aligned], target)
    if weights is not None:
        rows &= weights > 0
    kept = {name: value[rows] if name in aligned else value for name, value in values.items()}
    return kept, target[rows], rows


def used_symbols(context: AgentContext, expressions: Iterable[engine.Expression]) -> list[str]:
    """Return the data symbols the expressions read, checking that each exists.

    Raises:
        DataError: A symbol is not a name of ``context.data``.
    """
    names = list(dict.fromkeys(n for e in expressions for n in engine.symbols(e)))
    weights = getattr(context, "weights_name", None)
    if weights in names:
        raise DataError(f"The formula uses {weights!r}, the weights column: it weighs the rows "
                        "and is not a variable of a formula.", variable=weights)
    for name in names:
        if name not in context.data:
            known = list(context.data)
            hint = did_you_mean(name, known) or f" To fit it as a parameter, write param({name!r})."
            raise DataError(f"The formula uses {name!r}, which is not in the data; available: "
                            f"{known}.{hint}", variable=name)
    return names


def _complete_rows(n_samples: int, arrays: list[np.ndarray], target: np.ndarray) -> np.ndarray:
    rows = np.isfinite(target.reshape(n_samples, -1)).all(axis=1)
    for value in arrays:
        if value.dtype.kind == "f":
            rows &= ~np.isnan(value.reshape(n_samples, -1)).any(axis=1)
    return rows


def _as_target(value: Any, n_samples: int) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        return np.full(n_samples, float(array))
    if array.shape[0] != n_samples:
        raise DataError(f"The target expression gives {array.shape[0]} values; expected one per "
                        f"sample ({n_samples}).")
    return array
