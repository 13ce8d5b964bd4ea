"""rational_fit: y = P(x) / Q(x) by linearised least squares, over a grid of degrees.

``y * Q = P`` with ``Q = 1 + sum(b_j q_j)`` is linear in the coefficients:
``y = sum(a_i p_i) - y * sum(b_j q_j)``. Every (numerator, denominator)
degree pair of the grid is fitted on part of the training split and ranked
on a deterministic holdout of it (seeded permutation) by
``holdout RMSE / rms(y) + complexity_penalty * kept coefficients``; the
``top_k`` pairs are refitted on the whole training split. Negligible terms
are pruned as in polynomial_fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool
from srh_core.tools.diagnostics import number_text
from srh_core.tools.formula import DataTerm, FormulaTool, TrainingData, linear_combination
from srh_core.tools.polynomial import (
    Exponents,
    distinct_monomials,
    least_squares,
    monomial_columns,
    monomial_exponents,
    monomial_expression,
    prune_negligible,
    subsample_rows,
)

MAX_DEGREE = 8
MAX_COLUMNS = 200
"""Most numerator plus denominator terms of one degree pair."""

MAX_TOP_K = 20
HOLDOUT_SEED = 0
NEAR_ZERO_DENOMINATOR = 1e-6


@dataclass(frozen=True, slots=True)
class RationalModel:
    """One fitted degree pair: exponents and coefficients of P and Q (Q's constant is 1)."""

    degrees: tuple[int, int]
    p_terms: tuple[Exponents, ...]
    q_terms: tuple[Exponents, ...]
    p_coefficients: np.ndarray
    q_coefficients: np.ndarray

    def predict(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(prediction, denominator) on ``X``."""
        with np.errstate(all="ignore"):
            numerator = monomial_columns(X, self.p_terms) @ self.p_coefficients
            denominator = 1.0 + monomial_columns(X, self.q_terms) @ self.q_coefficients
            return numerator / denominator, denominator

    @property
    def n_coefficients(self) -> int:
        return int(np.count_nonzero(self.p_coefficients) + np.count_nonzero(self.q_coefficients))


def fit_rational(X: np.ndarray, y: np.ndarray, p_terms: list[Exponents],
                 q_terms: list[Exponents], degrees: tuple[int, int]) -> RationalModel:
    """Linearised least squares of ``P/Q`` on the rows given, pruned."""
    A = np.column_stack([monomial_columns(X, p_terms), -y[:, None] * monomial_columns(X, q_terms)])
    coefficients = prune_negligible(A, y, least_squares(A, y))
    split = len(p_terms)
    return RationalModel(degrees, tuple(p_terms), tuple(q_terms), coefficients[:split],
                         coefficients[split:])


@BaseTool.register("rational_fit")
class RationalFitTool(FormulaTool):
    """Rational function P/Q of the inputs, degree pairs ranked on a holdout."""

    def execute(
        self,
        x: list[str] | None = None,
        y: str | None = None,
        numerator_degree: int = 2,
        denominator_degree: int = 1,
        include_interactions: bool = True,
        numerator_degrees: list[int] | None = None,
        denominator_degrees: list[int] | None = None,
        validation_fraction: float = 0.2,
        top_k: int = 5,
        complexity_penalty: float = 1e-12,
        show_diagnostics: bool = True,
    ) -> dict[str, Any]:
        """Fit y = P(x)/Q(x), polynomials P and Q with Q's constant term fixed to 1.

        Use it for saturation and resonance shapes such as x/(1 + x**2) or
        a*x/(b + x). Every degree pair from 0 up to the given maxima is tried;
        the best is the result and the runners-up are in all_formulas. The
        result is a candidate when y is the target.

        Args:
            x: Inputs: names or expressions. Default: every numeric feature.
            y: Target variable or expression. Default: the target.
            numerator_degree: Highest total degree of P, 0 to 8 (degrees 0..this are tried).
            denominator_degree: Highest total degree of Q, 0 to 8 (degrees 0..this are tried).
            include_interactions: Allow terms mixing inputs (x1*x2).
            numerator_degrees: Exact numerator degrees to try instead, e.g. [1, 3].
            denominator_degrees: Exact denominator degrees to try instead, e.g. [2].
            validation_fraction: Share of the training rows held out to rank degree pairs,
                0.05 to 0.5 (the context's validation split is never used for fitting).
            top_k: Degree pairs to return (the best plus top_k - 1 alternatives), 1 to 20.
            complexity_penalty: Added to the normalised holdout RMSE per kept coefficient,
                0 to 1.
            show_diagnostics: Add residual diagnostics.
        """
        grid = [(p, q) for p in self._degrees("numerator", numerator_degree, numerator_degrees)
                for q in self._degrees("denominator", denominator_degree, denominator_degrees)]
        holdout = self.check_float("validation_fraction", validation_fraction, 0.05, 0.5)
        k = self.check_int("top_k", top_k, 1, MAX_TOP_K)
        penalty = self.check_float("complexity_penalty", complexity_penalty, 0.0, 1.0)
        target = self.target_term(y)
        inputs = self.input_terms(x, target)
        libraries = self._libraries(inputs, grid, include_interactions)
        data = self.training_data(inputs, target, min_rows=4)
        ranked = self._ranked(data, libraries, holdout, penalty)[:k]
        rows = subsample_rows(data.y.size, MAX_COLUMNS)
        entries = []
        for rank, (pair, score) in enumerate(ranked):
            self.check_cancelled()
            model = fit_rational(data.X[rows], data.y[rows], *libraries[pair], pair)
            entries.append(self._entry(model, score, inputs, target, data,
                                       show_diagnostics and rank == 0))
        main, alternatives = entries[0], list(entries[0].pop("all_formulas", []))
        for entry in entries[1:]:
            alternatives += [entry, *entry.pop("all_formulas", [])]
        return main | ({"all_formulas": alternatives} if alternatives else {})

    @classmethod
    def summary_lines(cls, result: Mapping[str, Any]) -> list[str]:
        """The chosen degrees, the holdout error and the denominator's range."""
        parameters = result.get("parameters") or {}
        degrees = parameters.get("degrees") or [None, None]
        low, high = parameters.get("denominator_range") or [None, None]
        return [f"degrees: numerator {degrees[0]}, denominator {degrees[1]}; holdout RMSE "
                f"{number_text(parameters.get('holdout_rmse'))}; denominator on training rows "
                f"from {number_text(low)} to {number_text(high)}"]

    def _degrees(self, side: str, maximum: Any, explicit: Any) -> list[int]:
        if explicit is None:
            top = self.check_int(f"{side}_degree", maximum, 0, MAX_DEGREE)
            return list(range(top + 1))
        name = f"{side}_degrees"
        if not isinstance(explicit, list) or not 1 <= len(explicit) <= MAX_DEGREE + 1:
            raise ToolArgumentError(f"The {name!r} parameter of rational_fit must list 1 to "
                                    f"{MAX_DEGREE + 1} degrees. Got {explicit!r:.60} instead.",
                                    parameter=name)
        return sorted({self.check_int(name, value, 0, MAX_DEGREE) for value in explicit})

    def _libraries(self, inputs: list[DataTerm], grid: list[tuple[int, int]], interactions: bool,
                   ) -> dict[tuple[int, int], tuple[list[Exponents], list[Exponents]]]:
        def library(degree: int, bias: bool) -> list[Exponents]:
            return distinct_monomials(inputs, monomial_exponents(
                len(inputs), degree, include_bias=bias, include_interactions=interactions))[0]

        numerators = {p: library(p, True) for p in dict.fromkeys(p for p, _ in grid)}
        denominators = {q: library(q, False) for q in dict.fromkeys(q for _, q in grid)}
        libraries = {}
        for p, q in grid:
            p_terms, q_terms = numerators[p], denominators[q]
            if len(p_terms) + len(q_terms) > MAX_COLUMNS:
                raise ToolArgumentError(
                    f"Degrees ({p}, {q}) with {len(inputs)} inputs give "
                    f"{len(p_terms) + len(q_terms)} coefficients; at most {MAX_COLUMNS} are "
                    "allowed. Lower the degrees or use fewer inputs.", parameter="numerator_degree")
            libraries[(p, q)] = (p_terms, q_terms)
        return libraries

    def _ranked(self, data: TrainingData, libraries: dict, fraction: float,
                penalty: float) -> list[tuple[tuple[int, int], tuple[float, float]]]:
        """Degree pairs by (score, coefficients, total degree), with (score, holdout RMSE)."""
        order = np.random.default_rng(HOLDOUT_SEED).permutation(data.y.size)
        n_holdout = min(max(1, round(fraction * data.y.size)), data.y.size - 1)
        held, fitted = np.sort(order[:n_holdout]), np.sort(order[n_holdout:])
        fitted = fitted[subsample_rows(fitted.size, 2 * MAX_COLUMNS)]
        scale = float(np.sqrt(np.mean(data.y ** 2))) or 1.0
        scored = []
        for pair, (p_terms, q_terms) in libraries.items():
            self.check_cancelled()
            model = fit_rational(data.X[fitted], data.y[fitted], p_terms, q_terms, pair)
            prediction, _ = model.predict(data.X[held])
            with np.errstate(all="ignore"):
                error = float(np.sqrt(np.mean(np.square(prediction - data.y[held]))))
            score = error / scale + penalty * model.n_coefficients if np.isfinite(error) \
                else np.inf
            scored.append(((score, model.n_coefficients, sum(pair)), pair, error))
        scored.sort(key=lambda item: item[0])
        return [(pair, (key[0], error)) for key, pair, error in scored]

    def _entry(self, model: RationalModel, score: tuple[float, float], inputs: list[DataTerm],
               target: DataTerm, data: TrainingData, diagnostics: bool) -> dict[str, Any]:
        """The evaluation of one model (with its back-transform in all_formulas, if any)."""
        formula = rational_expression(model, inputs)
        _, denominator = model.predict(data.X)
        crosses = bool(denominator.min() <= 0 <= denominator.max())
        parameters = {"degrees": list(model.degrees), "selection_score": score[0],
                      "holdout_rmse": score[1],
                      "denominator_range": [float(denominator.min()), float(denominator.max())]}
        warnings = []
        if crosses or np.min(np.abs(denominator)) < NEAR_ZERO_DENOMINATOR:
            warnings.append("the denominator reaches or crosses zero on the training rows "
                            f"(range {denominator.min():.3g} to {denominator.max():.3g})")
        return self.evaluate_formula(formula, target, show_diagnostics=diagnostics,
                                     details={"parameters": parameters, "warnings": warnings})


def rational_expression(model: RationalModel, inputs: list[DataTerm]) -> engine.Expression:
    """``P / Q`` as an expression (``P`` alone when Q is the constant 1)."""
    numerator = linear_combination(model.p_coefficients,
                                   [monomial_expression(inputs, t) for t in model.p_terms])
    if not np.any(model.q_coefficients):
        return numerator
    denominator = linear_combination(
        [1.0, *model.q_coefficients],
        [engine.Number(1), *(monomial_expression(inputs, t) for t in model.q_terms)])
    return numerator / denominator
