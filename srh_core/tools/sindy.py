"""call_sindy (alias sindy): sparse regression (STLSQ) over a polynomial (+ sin/cos) library.

Our own sequentially thresholded least squares, no pysindy: library columns
and the target are scaled to unit RMS, so a coefficient is the term's share of
the target's scale; coefficients below ``threshold`` are zeroed and the rest
refitted until the support stops changing. The support is then refitted on
the unscaled columns. Rows beyond ``max_samples`` are subsampled evenly
(deterministic).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core.tools.base import BaseTool
from srh_core.tools.formula import DataTerm, FormulaTool, linear_combination
from srh_core.tools.polynomial import (
    Exponents,
    distinct_indices,
    least_squares,
    monomial_columns,
    monomial_exponents,
    monomial_expression,
    prune_negligible,
    rmse,
    subsample_rows,
)

MAX_POLY_DEGREE = 5
MIN_THRESHOLD, MAX_THRESHOLD = 0.01, 1.0
MIN_SAMPLES, MAX_SAMPLES = 50, 100_000
MAX_STLSQ_ITERATIONS = 25


def stlsq(A: np.ndarray, y: np.ndarray, threshold: float) -> np.ndarray:
    """Sequentially thresholded least squares on unit-RMS columns; returns the support mask."""
    scale = np.sqrt(np.mean(A * A, axis=0))
    usable = np.isfinite(scale) & (scale > 0)
    y_scale = float(np.sqrt(np.mean(y * y))) or 1.0
    normalised = np.where(usable, A / np.where(usable, scale, 1.0), 0.0)
    support = usable.copy()
    for _ in range(MAX_STLSQ_ITERATIONS):
        weights = np.zeros(A.shape[1])
        if support.any():
            weights[support] = np.linalg.lstsq(normalised[:, support], y / y_scale,
                                               rcond=None)[0]
        kept = support & (np.abs(weights) >= threshold)
        if np.array_equal(kept, support):
            break
        support = kept
    return support


def sindy_terms(inputs: list[DataTerm], exponents: list[Exponents],
                include_trig: bool) -> tuple[list[engine.Expression], list[int]]:
    """Library expressions (monomials, then sin and cos of each input) and the distinct ones."""
    terms = [monomial_expression(inputs, powers) for powers in exponents]
    if include_trig:
        terms += [engine.sin(t.expression) for t in inputs]
        terms += [engine.cos(t.expression) for t in inputs]
    return terms, distinct_indices(terms)


def sindy_columns(X: np.ndarray, exponents: list[Exponents], include_trig: bool) -> np.ndarray:
    """Library columns in the order of :func:`sindy_terms`."""
    columns = [monomial_columns(X, exponents)]
    if include_trig:
        with np.errstate(all="ignore"):
            columns += [np.sin(X), np.cos(X)]
    return np.column_stack(columns)


@BaseTool.register("call_sindy", aliases=("sindy",))
class SINDyTool(FormulaTool):
    """Sparse identification of a formula from a polynomial (+ trig) library."""

    def execute(
        self,
        x: list[str] | None = None,
        y: str | None = None,
        poly_degree: int = 3,
        include_trig: bool = False,
        threshold: float = 0.1,
        max_samples: int = 5000,
        show_diagnostics: bool = True,
    ) -> dict[str, Any]:
        """Find a sparse formula: y as a few terms of a polynomial (+ sin/cos) library (STLSQ).

        Use it when y is likely a short sum of powers, products and (with
        include_trig) sin/cos of the inputs. Terms whose scaled coefficient is
        below threshold are dropped repeatedly until the set is stable. The
        result is a candidate when y is the target.

        Args:
            x: Inputs: names or expressions such as ["x1", "sin(x2)"]. Default: every numeric
                feature.
            y: Target variable or expression. Default: the target.
            poly_degree: Highest total degree of the polynomial terms, 1 to 5.
            include_trig: Add sin(x) and cos(x) of every input to the library.
            threshold: Smallest kept coefficient, as a share of the target's RMS when terms are
                scaled to unit RMS, 0.01 to 1 (larger gives shorter formulas).
            max_samples: Training rows used (evenly subsampled when there are more), 50 to 100000.
            show_diagnostics: Add residual diagnostics.
        """
        degree = self.check_int("poly_degree", poly_degree, 1, MAX_POLY_DEGREE)
        cutoff = self.check_float("threshold", threshold, MIN_THRESHOLD, MAX_THRESHOLD)
        limit = self.check_int("max_samples", max_samples, MIN_SAMPLES, MAX_SAMPLES)
        target = self.target_term(y)
        inputs = self.input_terms(x, target)
        exponents = monomial_exponents(len(inputs), degree, include_bias=True)
        every_term, distinct = sindy_terms(inputs, exponents, include_trig)
        terms = [every_term[i] for i in distinct]
        data = self.training_data(inputs, target)
        rows = subsample_rows(data.y.size, 1, limit=limit)
        rows = rows[subsample_rows(rows.size, len(every_term))]  # and a bounded design matrix
        A = sindy_columns(data.X[rows], exponents, include_trig)[:, distinct]
        b = data.y[rows]
        support = stlsq(A, b, cutoff)
        coefficients = np.zeros(A.shape[1])
        coefficients[support] = least_squares(A[:, support], b)
        coefficients = prune_negligible(A, b, coefficients, support)
        formula = linear_combination(coefficients, terms)
        kept = {engine.to_str(t): float(c) for c, t in zip(coefficients, terms, strict=True) if c}
        details = {"parameters": {"coefficients": kept, "library_size": len(terms),
                                  "n_fit_rows": int(b.size), "train_rmse": rmse(A, coefficients,
                                                                                  b)}}
        if not kept:
            details["warnings"] = ["every term fell below the threshold; lower it"]
        return self.evaluate_formula(formula, target, show_diagnostics=show_diagnostics,
                                     details=details)

    @classmethod
    def summary_lines(cls, result: Mapping[str, Any]) -> list[str]:
        """How many library terms survived the thresholding."""
        parameters = result.get("parameters") or {}
        return [f"kept {len(parameters.get('coefficients', {}))} of "
                f"{parameters.get('library_size')} library terms (fitted on "
                f"{parameters.get('n_fit_rows')} training rows)"]
