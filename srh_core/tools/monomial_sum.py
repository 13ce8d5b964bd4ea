"""monomial_sum_fit: y = sum_k c_k * prod(x_i ** a_ki), exponents small rationals.

A sum of a few power laws of different scaling (``a*x/z - b*g**2*nu``,
``x**(1/3)*s**2 + n**1.5``) defeats a single power law and a polynomial of
fixed inputs. For given exponents the model is linear in the coefficients,
so the training error is a function of the exponents alone (variable
projection). The exponents are searched on a grid of small rationals
(integers, halves and thirds up to ``MAX_EXPONENT``) from several starts
(the free single power law's exponents split between the terms one variable
at a time, then seeded random ones): each start is polished with continuous
exponents (Levenberg-Marquardt, which moves several at once), snapped to the
grid, and improved by coordinate descent on the grid.

Variants, all linear in their coefficients:

- ``log_terms``: the model also holds a constant and ``log(x_i)`` for every
  input; fitted to ``y = log(T)`` it reads ``T = C * prod(x_i ** b_i) *
  exp(sum_k c_k * monomial_k)`` (a power law times an exponential of one);
- ``log_factor``: each monomial multiplies ``c0 + sum c_i * log(x_i)``
  (a power law times the log of a ratio or of a power law);
- ``factors``: each monomial multiplies ``c0 + sum c_j * factor_j`` for given
  expressions (``sin(theta)``, ``sin(theta)**2``...: a power law times a harmonic).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.optimize import least_squares as nonlinear_least_squares

import srh_engine as engine
from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool
from srh_core.tools.diagnostics import number_text
from srh_core.tools.formula import DataTerm, FormulaTool, linear_combination
from srh_core.tools.polynomial import least_squares, prune_negligible, rmse, subsample_rows

MAX_TERMS = 3
"""Most monomials one fit may hold."""

MAX_EXPONENT = 3
"""Largest absolute exponent searched."""

EXPONENT_DENOMINATORS = (1, 2, 3)
"""Denominators of the searched exponents (integers, halves, thirds)."""

MAX_SWEEPS = 3
"""Coordinate-descent passes over every exponent, per start."""

MAX_SEARCH_ROWS = 300
"""Rows used by the exponent search (evenly spaced); the final fit uses all rows."""

RANDOM_STARTS = 4
"""Seeded random starts tried after the structured ones (exponents from -2 to 2)."""

POLISH_EVALUATIONS = 25
"""Residual evaluations of the continuous polish, per exponent."""

MIN_IMPROVEMENT = 1e-9
"""Relative RMSE decrease a descent step must bring (smaller ones are rounding)."""

EXACT_RELATIVE_RMSE = 1e-9
"""A search RMSE this small relative to rms(y) ends the search: the fit is exact."""


def exponent_grid() -> tuple[Fraction, ...]:
    """Every searched exponent, zero included, in increasing order."""
    values = {Fraction(p, q) for q in EXPONENT_DENOMINATORS
              for p in range(-MAX_EXPONENT * q, MAX_EXPONENT * q + 1)}
    return tuple(sorted(values))


@dataclass(frozen=True, slots=True)
class Basis:
    """What the linear coefficients multiply, apart from the searched exponents.

    Attributes:
        logs: ``log(x_i)``, one column per input.
        extra: Columns added as they are (a constant and the logs, or none).
        multipliers: Columns each monomial multiplies (a constant, the ``factors`` and,
            with ``log_factor``, the logs).
    """

    logs: np.ndarray
    extra: np.ndarray
    multipliers: np.ndarray

    def rows(self, index: np.ndarray) -> Basis:
        return Basis(self.logs[index], self.extra[index], self.multipliers[index])


def design(basis: Basis, exponents: np.ndarray) -> np.ndarray:
    """Columns: the extra ones, then each monomial (rows of ``exponents``) times each
    multiplier."""
    with np.errstate(all="ignore"):
        monomials = np.exp(basis.logs @ exponents.T)
        products = monomials[:, :, None] * basis.multipliers[:, None, :]
    return np.column_stack([basis.extra, products.reshape(monomials.shape[0], -1)])


def projected_rmse(basis: Basis, y: np.ndarray, exponents: np.ndarray) -> float:
    """Training RMSE of the best coefficients for these exponents (inf when not finite)."""
    A = design(basis, exponents)
    if not np.all(np.isfinite(A)):
        return float("inf")
    value = rmse(A, least_squares(A, y), y)
    return value if np.isfinite(value) else float("inf")


def starts(free: np.ndarray, terms: int, grid: np.ndarray) -> list[np.ndarray]:
    """Starting exponents: the free power law's (snapped to the grid) in the first term, then
    each variable moved alone to the second term (further terms start at zero), then
    seeded random integers and halves."""
    snapped = grid[np.abs(grid[None, :] - free[:, None]).argmin(axis=1)]
    base = np.zeros((terms, free.size))
    base[0] = snapped
    found = [base]
    for i in range(free.size if terms > 1 else 0):
        start = base.copy()
        start[1, i], start[0, i] = snapped[i] if snapped[i] else 1.0, 0.0
        found.append(start)
    rng = np.random.default_rng(0)
    found += [rng.integers(-4, 5, size=base.shape) / 2 for _ in range(RANDOM_STARTS)]
    return found


def neighbours(best: np.ndarray, k: int, i: int, grid: np.ndarray) -> list[np.ndarray]:
    """Exponent ``(k, i)`` set to every grid value, and variable ``i`` moved from term ``k``
    to each other term (its exponent there taken over, zero left behind)."""
    found = []
    for value in grid:
        if value != best[k, i]:
            trial = best.copy()
            trial[k, i] = value
            found.append(trial)
    for j in range(best.shape[0]):
        if j != k and best[k, i] != 0:
            trial = best.copy()
            trial[j, i], trial[k, i] = best[k, i], 0.0
            found.append(trial)
    return found


def descend(basis: Basis, y: np.ndarray, start: np.ndarray, grid: np.ndarray,
            target_rmse: float) -> tuple[float, np.ndarray]:
    """Coordinate descent over the grid from ``start``: (RMSE, exponents)."""
    best, best_rmse = start.copy(), projected_rmse(basis, y, start)
    for _ in range(MAX_SWEEPS):
        improved = False
        for k, i in np.ndindex(*best.shape):
            for trial in neighbours(best, k, i, grid):
                score = projected_rmse(basis, y, trial)
                if score < best_rmse * (1 - MIN_IMPROVEMENT):
                    best, best_rmse, improved = trial, score, True
            if best_rmse <= target_rmse:
                return best_rmse, best
        if not improved:
            break
    return best_rmse, best


def polished(basis: Basis, y: np.ndarray, start: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Continuous exponents from ``start`` (Levenberg-Marquardt on the projected residual),
    snapped to the nearest grid values: it moves several exponents at once, where the grid
    descent moves one."""
    shape = start.shape

    def residual(theta: np.ndarray) -> np.ndarray:
        A = design(basis, np.clip(theta, -2 * MAX_EXPONENT, 2 * MAX_EXPONENT).reshape(shape))
        if not np.all(np.isfinite(A)):
            return np.full(y.size, 1e150)
        return A @ least_squares(A, y) - y

    try:
        found = nonlinear_least_squares(residual, start.ravel(), method="lm",
                                        max_nfev=POLISH_EVALUATIONS * start.size)
        theta = found.x.reshape(shape)
    except (ValueError, np.linalg.LinAlgError):
        return start
    return grid[np.abs(grid[None, :] - theta.ravel()[:, None]).argmin(axis=1)].reshape(shape)


def power_factor(base: engine.Expression, exponent: Fraction) -> engine.Expression:
    """``base ** exponent``: integers and halves as numbers, thirds as ``(p/q)``."""
    if exponent == 1:
        return base
    if exponent.denominator in (1, 2):
        value = int(exponent) if exponent.denominator == 1 else float(exponent)
        return base ** engine.Number(value)
    return base ** engine.Binary("/", engine.Number(exponent.numerator),
                                 engine.Number(exponent.denominator))


def monomial(inputs: list[DataTerm], exponents: np.ndarray) -> engine.Expression:
    """The product of the inputs raised to ``exponents`` (``1`` when all are zero)."""
    factors = [power_factor(term.expression, Fraction(float(a)).limit_denominator(6))
               for term, a in zip(inputs, exponents, strict=True) if a != 0]
    if not factors:
        return engine.Number(1)
    product = factors[0]
    for factor in factors[1:]:
        product = product * factor
    return product


@BaseTool.register("monomial_sum_fit")
class MonomialSumFitTool(FormulaTool):
    """A sum of power laws with small rational exponents, found by a grid search."""

    def execute(self, x: list[str] | None = None, y: str | None = None, terms: int = 2,
                log_terms: bool = False, log_factor: bool = False,
                factors: list[str] | None = None,
                show_diagnostics: bool = True) -> dict[str, Any]:
        """Fit y = c1*prod(x_i**a_i) + c2*prod(x_i**b_i) + ...: a sum of power laws.

        Use it when one power law fits poorly because the target is a sum or
        difference of terms of different scaling, e.g. y = 3*m*v**2 - q/r**2.
        Exponents are integers, halves or thirds up to 3 in size; coefficients
        are fitted. With log_terms=true the fit also holds a constant and
        log(x_i) for each input: fit y="log(T)" to find T = C*prod(x_i**b_i) *
        exp(c*prod(x_i**a_i)). With log_factor=true each monomial multiplies
        c0 + sum c_i*log(x_i): T = prod(x_i**a_i) * log(p/q) and the like. With
        factors, each monomial multiplies c0 + sum c_j*factor_j: factors=["sin(theta)",
        "cos(theta)", "sin(theta)**2"] finds T = prod(x_i**a_i) * sin(theta)**2.

        Args:
            x: Positive inputs: names or expressions. Default: every numeric feature.
            y: Target variable or expression. Default: the target.
            terms: Number of monomials, 1 to 3.
            log_terms: Also fit a constant and c_i*log(x_i) for every input.
            log_factor: Each monomial multiplies a constant plus c_i*log(x_i) for every input.
            factors: Expressions each monomial multiplies (with fitted weights, plus a
                constant), e.g. ["sin(theta)", "cos(theta)"]; they need not be positive.
            show_diagnostics: Add residual diagnostics.
        """
        terms = self.check_int("terms", terms, 1, MAX_TERMS)
        target = self.target_term(y)
        inputs = self.input_terms(x, target)
        waves = self.input_terms(factors, target, "factors") if factors is not None else []
        data = self.training_data([*inputs, *waves], target,
                                  min_rows=2 * len(inputs) + terms + len(waves) + 2)
        X, wave_columns = data.X[:, :len(inputs)], data.X[:, len(inputs):]
        if np.any(X <= 0):
            raise ToolArgumentError("monomial_sum_fit needs strictly positive inputs on every "
                                    "training row; drop or shift the others.", parameter="x")
        basis = self._basis(np.log(X), log_terms, log_factor, wave_columns)
        exponents = self._search(basis, data.y, terms)
        A = design(basis, exponents)
        coefficients = prune_negligible(A, data.y, least_squares(A, data.y))
        formula = linear_combination(coefficients,
                                     _column_terms(inputs, exponents, log_terms, log_factor,
                                                   [w.expression for w in waves]))
        details = {"parameters": {"train_rmse": rmse(A, coefficients, data.y), "exponents": [
            {t.text: str(Fraction(float(a)).limit_denominator(6)) for t, a in
             zip(inputs, row, strict=True) if a} for row in exponents]}}
        return self.evaluate_formula(formula, target, show_diagnostics=show_diagnostics,
                                     details=details)

    @classmethod
    def summary_lines(cls, result: Mapping[str, Any]) -> list[str]:
        """The exponents of each monomial and the training RMSE."""
        parameters = result.get("parameters") or {}
        return [f"monomial exponents {parameters.get('exponents')}; train RMSE "
                f"{number_text(parameters.get('train_rmse'))}"]

    @staticmethod
    def _basis(logs: np.ndarray, log_terms: bool, log_factor: bool,
               waves: np.ndarray) -> Basis:
        ones = np.ones((logs.shape[0], 1))
        extra = np.column_stack([ones, logs]) if log_terms else ones[:, :0]
        multipliers = np.column_stack([ones, waves, logs if log_factor else ones[:, :0]])
        return Basis(logs, extra, multipliers)

    def _search(self, basis: Basis, y: np.ndarray, terms: int) -> np.ndarray:
        """Best exponents over every start, on a row subsample."""
        rows = subsample_rows(y.size, 1, limit=MAX_SEARCH_ROWS)
        sample, sample_y = basis.rows(rows), y[rows]
        grid = np.array([float(value) for value in exponent_grid()])
        free = np.linalg.lstsq(np.column_stack([np.ones(rows.size), sample.logs]),
                               np.log(np.abs(sample_y) + 1e-300), rcond=None)[0][1:]
        target_rmse = EXACT_RELATIVE_RMSE * float(np.sqrt(np.mean(y * y)))
        best_rmse, best = float("inf"), np.zeros((terms, basis.logs.shape[1]))
        for start in starts(free, terms, grid):
            self.check_cancelled()
            snapped = polished(sample, sample_y, start, grid)
            score, found = descend(sample, sample_y, snapped, grid, target_rmse)
            if score < best_rmse:
                best_rmse, best = score, found
            if best_rmse <= target_rmse:
                break
        return best


def _column_terms(inputs: list[DataTerm], exponents: np.ndarray, log_terms: bool,
                  log_factor: bool, waves: list[engine.Expression]) -> list[engine.Expression]:
    """The expressions of :func:`design`'s columns, in the same order."""
    logs = [engine.log(term.expression) for term in inputs]
    extra = [engine.Number(1), *logs] if log_terms else []
    multipliers: list[engine.Expression | None] = [None, *waves, *(logs if log_factor else [])]
    products = []
    for row in exponents:
        base = monomial(inputs, row)
        products += [base if factor is None else base * factor for factor in multipliers]
    return [*extra, *products]
