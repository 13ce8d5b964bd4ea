"""power_law_fit: y = c * prod(x_i ** a_i) by least squares in log space.

Signed targets: a target that is negative on every training row is fitted as
``-y`` and the formula negated (``y = -c * prod(x_i ** a_i)``); a target or
input with mixed signs or zeros is rejected with the count of offending rows.

Snapping: each exponent within ``snap_tolerance`` of a fraction with
denominator <= ``max_denominator`` is snapped, the remaining exponents and the
scale are refitted (log space, then the scale in y itself), and the snapped
law is kept only when its training RMSE is at most ``(1 +
max_snap_rmse_degradation)`` times the free fit's, plus ``SNAP_RMSE_FLOOR *
rms(y)`` so that exact fits, whose RMSE is rounding noise, can snap. All
exponents are tried together first, then one by one, closest first. Fractions
without a short decimal form stay fractions (``x**(1/3)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core import formats
from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool
from srh_core.tools.diagnostics import number_text
from srh_core.tools.formula import DataTerm, FormulaTool, TrainingData

MAX_DENOMINATOR = 32
MAX_STABILITY_FOLDS = 20
CONFIDENCE_Z = 1.96
"""Half-width of the exponent intervals in jackknife standard deviations (about 95%)."""

SNAP_RMSE_FLOOR = 1e-9
"""Snapping may always add this times rms(y) to the RMSE: below it is rounding noise."""

SHORT_DECIMAL_DENOMINATORS = frozenset({1, 2, 4, 5, 8, 10, 16, 20, 25, 32})


@dataclass(frozen=True, slots=True)
class PowerLaw:
    """A fitted law: ``sign * exp(log_scale) * prod(x_i ** exponents[i])``."""

    log_scale: float
    exponents: tuple[float, ...]
    sign: float = 1.0

    def predict(self, X: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return self.sign * np.exp(self.log_scale + np.log(X) @ np.asarray(self.exponents))


def fit_log_space(logs: np.ndarray, log_y: np.ndarray, include_scale: bool,
                  fixed: dict[int, float], sign: float = 1.0) -> PowerLaw:
    """Least squares of ``log y = log c + sum a_i log x_i`` with some exponents held fixed."""
    free = [i for i in range(logs.shape[1]) if i not in fixed]
    rest = log_y - sum((logs[:, i] * a for i, a in fixed.items()), np.zeros_like(log_y))
    design = logs[:, free]
    if include_scale:
        design = np.column_stack([np.ones_like(log_y), design])
    solution = np.linalg.lstsq(design, rest, rcond=None)[0] if design.shape[1] else np.zeros(0)
    log_scale = float(solution[0]) if include_scale else 0.0
    exponents = dict(fixed) | dict(zip(free, solution[int(include_scale):], strict=True))
    return PowerLaw(log_scale, tuple(float(exponents[i]) for i in range(logs.shape[1])), sign)


def _refit_scale(law: PowerLaw, data: TrainingData) -> PowerLaw:
    """The scale minimising the squared error in y itself (log space weighs rows unevenly)."""
    shape = PowerLaw(0.0, law.exponents, law.sign).predict(data.X)
    with np.errstate(all="ignore"):
        scale = float(np.dot(shape, data.y) / np.dot(shape, shape))
    if not np.isfinite(scale) or scale <= 0:
        return law
    return PowerLaw(float(np.log(scale)), law.exponents, law.sign)


def _rmse(law: PowerLaw, X: np.ndarray, y: np.ndarray) -> float:
    with np.errstate(all="ignore"):
        return float(np.sqrt(np.mean(np.square(law.predict(X) - y))))


@BaseTool.register("power_law_fit")
class PowerLawFitTool(FormulaTool):
    """Multiplicative power law fitted in log space, with optional rational exponents."""

    def execute(
        self,
        x: list[str] | None = None,
        y: str | None = None,
        include_scale: bool = True,
        snap_exponents: bool = False,
        max_denominator: int = 8,
        snap_tolerance: float = 0.05,
        max_snap_rmse_degradation: float = 0.01,
        n_stability_folds: int = 5,
        show_diagnostics: bool = True,
    ) -> dict[str, Any]:
        """Fit y = c * x1**a1 * x2**a2 * ... by least squares on log(y) (training split).

        Use it for scaling laws, products and ratios of variables (Newton's
        gravity, Kepler's law). Inputs and y must be strictly positive on
        every training row; a y that is negative everywhere is fitted as -y
        and the formula negated. Reports each exponent with a confidence
        interval from leave-one-fold-out refits.

        Args:
            x: Positive inputs: names or expressions such as ["m1", "m2", "r"]. Default: every
                numeric feature.
            y: Target variable or expression. Default: the target.
            include_scale: Fit the constant factor c (false fixes c = 1).
            snap_exponents: Try simple fractions for the exponents (1, -2, 1/2, 2/3...) and keep
                them if the fit stays as good.
            max_denominator: Largest denominator of a snapped exponent, 1 to 32.
            snap_tolerance: Largest distance between a fitted exponent and its fraction, 0 to 0.5.
            max_snap_rmse_degradation: Largest relative increase of the training RMSE that
                snapping may cause (0.01 = 1%), 0 to 1.
            n_stability_folds: Folds for the exponent confidence intervals, 2 to 20.
            show_diagnostics: Add residual diagnostics.
        """
        denominator = self.check_int("max_denominator", max_denominator, 1, MAX_DENOMINATOR)
        tolerance = self.check_float("snap_tolerance", snap_tolerance, 0.0, 0.5)
        degradation = self.check_float("max_snap_rmse_degradation", max_snap_rmse_degradation,
                                       0.0, 1.0)
        folds = self.check_int("n_stability_folds", n_stability_folds, 2, MAX_STABILITY_FOLDS)
        target = self.target_term(y)
        inputs = self.input_terms(x, target)
        data = self.training_data(inputs, target, min_rows=len(inputs) + 2)
        sign = self._sign(data, inputs, target)
        logs, log_y = np.log(data.X), np.log(sign * data.y)
        free = fit_log_space(logs, log_y, include_scale, {}, sign)
        law, fractions, snap = free, {}, None
        if snap_exponents:
            law, fractions, snap = self._snapped(free, logs, log_y, data, include_scale,
                                                 (denominator, tolerance, degradation))
        law = _refit_scale(law, data) if include_scale else law
        parameters = {"scale": float(sign * np.exp(law.log_scale)),
                      "exponents": {t.text: a for t, a in zip(inputs, law.exponents, strict=True)},
                      "exponent_intervals": self._intervals(logs, log_y, include_scale, folds,
                                                            inputs, free),
                      "train_rmse": _rmse(law, data.X, data.y)}
        if snap is not None:
            parameters["snapping"] = snap | {
                "snapped": {inputs[i].text: str(f) for i, f in sorted(fractions.items())}}
        formula = power_law_expression(law, inputs, include_scale, fractions)
        return self.evaluate_formula(formula, target, show_diagnostics=show_diagnostics,
                                     details={"parameters": parameters})

    @classmethod
    def summary_lines(cls, result: Mapping[str, Any]) -> list[str]:
        """Exponents with their intervals, the scale, and the snapping outcome."""
        parameters = result.get("parameters") or {}
        intervals = parameters.get("exponent_intervals") or {}
        exponents = [formats.exponent_item(name, number_text(value, 8), (
            number_text(intervals[name][0], 4), number_text(intervals[name][1], 4))
            if name in intervals else None)
            for name, value in (parameters.get("exponents") or {}).items()]
        lines = [formats.exponents_line(exponents, number_text(parameters.get("scale"), 8))]
        snap = parameters.get("snapping")
        if snap:
            verdict = "kept" if snap["accepted"] else "rejected (fit degraded too much)"
            lines.append(f"snapped exponents {snap.get('snapped') or '{}'}: {verdict}; train RMSE "
                         f"{number_text(snap['rmse_free'])} -> {number_text(snap['rmse_snapped'])}")
        return lines

    def _sign(self, data: TrainingData, inputs: list[DataTerm], target: DataTerm) -> float:
        """+1 for a positive target, -1 for a negative one; raise on mixed signs or zeros."""
        sign = -1.0 if np.all(data.y < 0) else 1.0
        counts = [(target.text, int(np.count_nonzero(sign * data.y <= 0)))]
        counts += [(t.text, int(np.count_nonzero(data.X[:, i] <= 0)))
                   for i, t in enumerate(inputs)]
        bad = [(name, count) for name, count in counts if count]
        if bad:
            listed = "; ".join(f"{name!r} has {count} non-positive value(s)" for name, count in bad)
            raise ToolArgumentError(
                f"power_law_fit needs strictly positive values on all {data.y.size} training "
                f"rows (or a target negative on all of them): {listed}. Use abs(...) or a shift "
                "such as x + 1 as the input, drop that input, or try polynomial_fit or "
                "rational_fit.", parameter="x" if bad[0][0] != target.text else "y")
        return sign

    def _snapped(self, free: PowerLaw, logs: np.ndarray, log_y: np.ndarray, data: TrainingData,
                 include_scale: bool, limits: tuple[int, float, float],
                 ) -> tuple[PowerLaw, dict[int, Fraction], dict[str, Any]]:
        denominator, tolerance, degradation = limits
        fractions = {i: Fraction(a).limit_denominator(denominator)
                     for i, a in enumerate(free.exponents)}
        near = {i: f for i, f in fractions.items() if abs(float(f) - free.exponents[i])
                <= tolerance}
        settle = (lambda law: _refit_scale(law, data)) if include_scale else (lambda law: law)
        base_rmse = _rmse(settle(free), data.X, data.y)  # compared as finally written
        floor = SNAP_RMSE_FLOOR * float(np.sqrt(np.mean(data.y ** 2)))
        allowance = degradation * base_rmse + floor
        order = sorted(near, key=lambda i: abs(float(near[i]) - free.exponents[i]))
        trials = [order] + [[i] for i in order] if len(order) > 1 else [order]
        accepted: dict[int, Fraction] = {}
        law = free
        for group in trials:
            proposal = accepted | {i: near[i] for i in group}
            if not group or proposal == accepted:
                continue
            fixed = {i: float(f) for i, f in proposal.items()}
            trial = settle(fit_log_space(logs, log_y, include_scale, fixed, free.sign))
            if _rmse(trial, data.X, data.y) <= base_rmse + allowance:
                accepted, law = proposal, trial
        return law, accepted, {"rmse_free": base_rmse, "accepted": bool(accepted),
                               "rmse_snapped": _rmse(law, data.X, data.y)}

    def _intervals(self, logs: np.ndarray, log_y: np.ndarray, include_scale: bool, folds: int,
                   inputs: list[DataTerm], free: PowerLaw) -> dict[str, list[float]]:
        """Jackknife (leave-one-fold-out) intervals of the free exponents."""
        n_rows = log_y.size
        if n_rows - n_rows // folds < logs.shape[1] + 2:
            return {}
        order = np.random.default_rng(0).permutation(n_rows)
        estimates = []
        for fold in np.array_split(order, folds):
            self.check_cancelled()
            keep = np.setdiff1d(order, fold)
            estimates.append(fit_log_space(logs[keep], log_y[keep], include_scale, {}).exponents)
        values = np.asarray(estimates)
        spread = np.sqrt((folds - 1) / folds * np.sum((values - values.mean(0)) ** 2, axis=0))
        return {t.text: [float(a - CONFIDENCE_Z * s), float(a + CONFIDENCE_Z * s)]
                for t, a, s in zip(inputs, free.exponents, spread, strict=True)}


def power_law_expression(law: PowerLaw, inputs: list[DataTerm], include_scale: bool,
                         fractions: dict[int, Fraction]) -> engine.Expression:
    """``c * num / den``: positive exponents in ``num``, negated negative ones in ``den``.

    Snapped exponents (``fractions``) print as integers, short decimals or ``(p/q)``.
    """
    numerator: list[engine.Expression] = []
    denominator: list[engine.Expression] = []
    for i, (term, exponent) in enumerate(zip(inputs, law.exponents, strict=True)):
        if exponent != 0:
            side = numerator if exponent > 0 else denominator
            side.append(_power(term.expression, abs(fractions.get(i, exponent))))
    scale = law.sign * float(np.exp(law.log_scale)) if include_scale else law.sign
    product: engine.Expression = engine.Number(scale)
    if scale in (1.0, -1.0) and numerator:
        product = numerator.pop(0)
        product = -product if scale < 0 else product
    for factor in numerator:
        product = product * factor
    for factor in denominator:
        product = product / factor
    return product


def _power(base: engine.Expression, exponent: float | Fraction) -> engine.Expression:
    if exponent == 1:
        return base
    if isinstance(exponent, float) or exponent.denominator in SHORT_DECIMAL_DENOMINATORS:
        value = int(exponent) if float(exponent).is_integer() else float(exponent)
        return base ** engine.Number(value)
    return base ** engine.Binary("/", engine.Number(exponent.numerator),
                                 engine.Number(exponent.denominator))
