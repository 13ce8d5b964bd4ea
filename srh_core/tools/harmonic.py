"""harmonic_interaction_fit: y = P0(c) + P1(c)*sin(w*t) + P2(c)*cos(w*t), scanning w.

``c`` is the carrier, ``t`` the oscillator. For a fixed frequency ``w`` the
model is linear in its coefficients, so the training error is a function of
``w`` alone (variable projection): it is scanned on a grid from a quarter
cycle to ``max_cycles`` cycles over the oscillator's span, the best local
minima are refined with a bounded Brent search, and the coefficients at the
best ``w`` are pruned as in polynomial_fit. ``P(c)*sin(w*t + phi)`` is the
special case ``P1 = P*cos(phi)``, ``P2 = P*sin(phi)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.optimize import least_squares as nonlinear_least_squares
from scipy.optimize import minimize_scalar

import srh_engine as engine
from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool
from srh_core.tools.diagnostics import number_text
from srh_core.tools.formula import DataTerm, FormulaTool, linear_combination
from srh_core.tools.polynomial import least_squares, prune_negligible, rmse, subsample_rows

MAX_DEGREE = 4
MIN_GRID_SIZE, MAX_GRID_SIZE = 64, 2048
MIN_CYCLES, MAX_CYCLES = 0.5, 1000.0
MAX_SCAN_ROWS = 2_000
"""Rows used for the frequency scan (evenly spaced); the refinement uses all rows."""

N_REFINED_MINIMA = 6
FREQUENCY_XATOL = 1e-13


def harmonic_columns(c: np.ndarray, t: np.ndarray, w: float, degree: int,
                     include_bias: bool) -> np.ndarray:
    """Columns [1?, c..c^d, c^k sin(w t), c^k cos(w t) for k = 0..d]."""
    powers = [c ** k for k in range(degree + 1)]
    sine, cosine = np.sin(w * t), np.cos(w * t)
    base = powers[0:1] if include_bias else []
    return np.column_stack([*base, *powers[1:], *(p * sine for p in powers),
                            *(p * cosine for p in powers)])


def harmonic_terms(carrier: engine.Expression, oscillator: engine.Expression, w: float,
                   degree: int, include_bias: bool) -> list[engine.Expression]:
    """The expressions of :func:`harmonic_columns`, in the same order."""
    powers = [engine.Number(1), carrier] + [carrier ** engine.Number(k)
                                            for k in range(2, degree + 1)]
    phase = engine.Number(w) * oscillator
    waves = [engine.sin(phase), engine.cos(phase)]
    base = powers[0:1] if include_bias else []
    return [*base, *powers[1:], *(_times(p, wave) for wave in waves for p in powers)]


def _times(power: engine.Expression, wave: engine.Expression) -> engine.Expression:
    return wave if power == engine.Number(1) else power * wave


@BaseTool.register("harmonic_interaction_fit")
class HarmonicInteractionFitTool(FormulaTool):
    """A carrier-modulated oscillation with a scanned frequency."""

    def execute(
        self,
        carrier: str,
        oscillator: str,
        y: str | None = None,
        degree: int = 2,
        include_bias: bool = False,
        max_cycles: float = 20.0,
        grid_size: int = 320,
        show_diagnostics: bool = True,
    ) -> dict[str, Any]:
        """Fit y = P0(c) + P1(c)*sin(w*t) + P2(c)*cos(w*t): polynomials of the carrier c, unknown w.

        Use it when a variable modulates an oscillation, e.g. y = x*sin(3.1*t)
        or y = x**2*cos(w*t + phase). The frequency w is scanned, refined, and
        negligible terms are dropped. The result is a candidate when y is the target.

        Args:
            carrier: Variable or expression c whose polynomial multiplies the waves, e.g. "x".
            oscillator: Variable or expression t inside the waves, e.g. "t".
            y: Target variable or expression. Default: the target.
            degree: Degree of the carrier polynomials, 1 to 4.
            include_bias: Fit an additive constant.
            max_cycles: Highest frequency scanned, as cycles over the oscillator's observed
                range, 0.5 to 1000.
            grid_size: Frequencies in the initial scan, 64 to 2048.
            show_diagnostics: Add residual diagnostics.
        """
        degree = self.check_int("degree", degree, 1, MAX_DEGREE)
        cycles = self.check_float("max_cycles", max_cycles, MIN_CYCLES, MAX_CYCLES)
        grid_size = self.check_int("grid_size", grid_size, MIN_GRID_SIZE, MAX_GRID_SIZE)
        target = self.target_term(y)
        inputs = [self._input(carrier, "carrier"), self._input(oscillator, "oscillator")]
        data = self.training_data(inputs, target, min_rows=2 * degree + 4)
        c, t, values = data.X[:, 0], data.X[:, 1], data.y
        span = float(t.max() - t.min())
        if not span > 0:
            raise ToolArgumentError("The oscillator does not vary on the training rows.",
                                    parameter="oscillator")
        model = (degree, include_bias)
        frequencies = np.linspace(math.pi / (2 * span), 2 * math.pi * cycles / span, grid_size)
        w = self._frequency(c, t, values, frequencies, model)
        A = harmonic_columns(c, t, w, degree, include_bias)
        coefficients = prune_negligible(A, values, least_squares(A, values))
        terms = harmonic_terms(inputs[0].expression, inputs[1].expression, w, degree, include_bias)
        formula = linear_combination(coefficients, terms)
        details = {"parameters": {"frequency": w, "train_rmse": rmse(A, coefficients, values),
                                  "scanned": [float(frequencies[0]), float(frequencies[-1])]}}
        if grid_size < 4 * cycles:
            details["warnings"] = ["the scan has under 4 points per cycle of the highest "
                                   "frequency; raise grid_size or lower max_cycles"]
        return self.evaluate_formula(formula, target, show_diagnostics=show_diagnostics,
                                     details=details)

    @classmethod
    def summary_lines(cls, result: Mapping[str, Any]) -> list[str]:
        """The fitted frequency."""
        parameters = result.get("parameters") or {}
        low, high = parameters.get("scanned", [None, None])
        return [f"frequency w={number_text(parameters.get('frequency'), 12)} (scanned "
                f"{number_text(low)} to {number_text(high)})"]

    def _input(self, text: str, parameter: str) -> DataTerm:
        expression = self.parse_text(text, parameter, allow_parameters=False)
        return DataTerm(engine.to_str(expression), expression)

    def _frequency(self, c: np.ndarray, t: np.ndarray, y: np.ndarray, grid: np.ndarray,
                   model: tuple[int, bool]) -> float:
        """Best w: scan and refine the best local minima on a row subsample, then polish."""
        scan = subsample_rows(y.size, 1, limit=MAX_SCAN_ROWS)
        sample = (c[scan], t[scan], y[scan], model)
        scores = np.array([_profile(w, *sample) for w in grid])
        minima = [i for i in range(grid.size) if scores[i] <= scores[max(i - 1, 0)]
                  and scores[i] <= scores[min(i + 1, grid.size - 1)]]
        best_w, best_score = float(grid[int(np.argmin(scores))]), math.inf
        for i in sorted(minima, key=lambda i: scores[i])[:N_REFINED_MINIMA]:
            self.check_cancelled()
            low, high = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
            found = minimize_scalar(_profile, bounds=(low, high), method="bounded", args=sample)
            if found.fun < best_score:
                best_w, best_score = float(found.x), float(found.fun)
        rows = subsample_rows(y.size, harmonic_columns(c[:1], t[:1], 1.0, *model).shape[1])
        return _polished(best_w, c[rows], t[rows], y[rows], model)


def _profile(w: float, c: np.ndarray, t: np.ndarray, y: np.ndarray,
             model: tuple[int, bool]) -> float:
    """Training RMSE of the best linear fit at frequency ``w`` (scan and Brent only)."""
    A = harmonic_columns(c, t, float(w), *model)
    return rmse(A, _normal_equations(A, y), y)


def _normal_equations(A: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Fast scaled normal equations; precise enough to rank frequencies (the polish uses SVD)."""
    scale = np.sqrt(np.mean(A * A, axis=0))
    if not np.all(scale > 0):
        return least_squares(A, y)
    scaled = A / scale
    try:
        solution = np.linalg.solve(scaled.T @ scaled, scaled.T @ y) / scale
    except np.linalg.LinAlgError:
        return least_squares(A, y)
    return solution if np.all(np.isfinite(solution)) else least_squares(A, y)


def _polished(w: float, c: np.ndarray, t: np.ndarray, y: np.ndarray,
              model: tuple[int, bool]) -> float:
    """Gauss-Newton on the projected residual: Brent alone stops near sqrt(eps) * w."""
    def residual(theta: np.ndarray) -> np.ndarray:
        A = harmonic_columns(c, t, float(theta[0]), *model)
        return A @ least_squares(A, y) - y

    found = nonlinear_least_squares(residual, [w], method="lm", xtol=FREQUENCY_XATOL,
                                    ftol=FREQUENCY_XATOL, gtol=FREQUENCY_XATOL)
    polished = float(found.x[0])
    better = np.sum(residual(np.array([polished])) ** 2) <= np.sum(residual(np.array([w])) ** 2)
    return polished if better and math.isfinite(polished) else w
