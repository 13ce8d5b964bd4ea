"""polynomial_fit: least squares over monomials, and the linear algebra other fitters share.

The shared pieces (:func:`monomial_exponents`, :func:`monomial_columns`,
:func:`monomial_expression`, :func:`least_squares`, :func:`prune_negligible`)
are used by rational_fit, sindy and harmonic_interaction_fit too, so every
linear fitter scales columns, solves and prunes the same way.

Pruning rule (conservative): a term is negligible when its contribution on the
training rows, ``rms(c_j * column_j)``, is at most ``PRUNE_CONTRIBUTION_RTOL``
times ``rms(y)``; the remaining terms are refitted and the pruned model is kept
only if its training RMSE is no worse than the full model's by more than
``PRUNE_RMSE_RTOL`` (relative) plus ``PRUNE_RMSE_ATOL * rms(y)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool
from srh_core.tools.formula import DataTerm, FormulaTool, linear_combination

MAX_DEGREE = 8
MAX_TERMS = 300
"""Most monomials one library may hold (columns of the least-squares problem)."""

MAX_ENUMERATED_MONOMIALS = 200_000
"""Most exponent tuples examined while generating a filtered library."""

MAX_DESIGN_CELLS = 4_000_000
"""Rows x columns of a design matrix; larger training sets are subsampled (deterministically)."""

PRUNE_CONTRIBUTION_RTOL = 1e-7
PRUNE_RMSE_RTOL = 1e-6
PRUNE_RMSE_ATOL = 1e-12
MAX_PRUNE_ROUNDS = 3

Exponents = tuple[int, ...]


def monomial_exponents(n_inputs: int, max_degree: int, *, include_bias: bool,
                       include_interactions: bool = True,
                       allowed: Any = None) -> list[Exponents]:
    """Exponent tuples of every monomial up to ``max_degree`` (constant first when wanted).

    Args:
        n_inputs: Number of inputs.
        max_degree: Highest total degree.
        include_bias: Include the constant monomial.
        include_interactions: Allow monomials of two or more inputs.
        allowed: Optional predicate on the set of input indices a monomial uses.

    Raises:
        ToolArgumentError: The library would exceed ``MAX_TERMS`` monomials.
    """
    if include_interactions and math.comb(n_inputs + max_degree, max_degree) > \
            MAX_ENUMERATED_MONOMIALS:
        raise _too_many(n_inputs, max_degree)
    terms: list[Exponents] = [(0,) * n_inputs] if include_bias else []
    for degree in range(1, max_degree + 1):
        for combination in _combinations(n_inputs, degree, include_interactions):
            exponents = tuple(combination.count(i) for i in range(n_inputs))
            used = frozenset(i for i, power in enumerate(exponents) if power)
            if len(used) > 1 and allowed is not None and not allowed(used):
                continue
            terms.append(exponents)
            if len(terms) > MAX_TERMS:
                raise _too_many(n_inputs, max_degree)
    return terms


def _combinations(n_inputs: int, degree: int, interactions: bool) -> Any:
    if interactions:
        return itertools.combinations_with_replacement(range(n_inputs), degree)
    return ((i,) * degree for i in range(n_inputs))


def _too_many(n_inputs: int, max_degree: int) -> ToolArgumentError:
    return ToolArgumentError(
        f"{n_inputs} inputs up to degree {max_degree} give more than {MAX_TERMS} monomials; "
        "use fewer inputs (x), a lower degree, or include_interactions=false.",
        parameter="max_degree")


def monomial_columns(X: np.ndarray, exponents: Sequence[Exponents]) -> np.ndarray:
    """The ``(n_rows, n_terms)`` matrix of the monomials evaluated on ``X``."""
    columns = np.ones((X.shape[0], len(exponents)))
    with np.errstate(all="ignore"):
        for j, powers in enumerate(exponents):
            for i, power in enumerate(powers):
                if power:
                    columns[:, j] *= X[:, i] if power == 1 else X[:, i] ** power
    return columns


def monomial_expression(inputs: Sequence[DataTerm], powers: Exponents) -> engine.Expression:
    """The monomial as an expression (``1`` for the constant)."""
    factors = [term.expression if power == 1 else term.expression ** engine.Number(power)
               for term, power in zip(inputs, powers, strict=True) if power]
    if not factors:
        return engine.Number(1)
    product = factors[0]
    for factor in factors[1:]:
        product = product * factor
    return product


def distinct_indices(terms: Sequence[engine.Expression]) -> list[int]:
    """Indices of the first term of each canonical form.

    Inputs may overlap (``x``, ``z`` and ``x*z``), making ``x*z`` two identical
    columns; a repeated column only splits one coefficient in two.
    """
    seen: set[str] = set()
    kept = []
    for index, term in enumerate(terms):
        key = engine.canonical_key(term)
        if key not in seen:
            seen.add(key)
            kept.append(index)
    return kept


def distinct_monomials(inputs: Sequence[DataTerm], exponents: Sequence[Exponents],
                       ) -> tuple[list[Exponents], list[engine.Expression]]:
    """The monomials without canonical repeats, and their expressions."""
    terms = [monomial_expression(inputs, powers) for powers in exponents]
    kept = distinct_indices(terms)
    return [exponents[i] for i in kept], [terms[i] for i in kept]


def subsample_rows(n_rows: int, n_columns: int, limit: int = MAX_DESIGN_CELLS) -> np.ndarray:
    """Evenly spaced row indices keeping ``n_rows * n_columns`` under ``limit`` (all when it is)."""
    keep = max(n_columns + 1, limit // max(n_columns, 1))
    if n_rows <= keep:
        return np.arange(n_rows)
    return np.unique(np.linspace(0, n_rows - 1, keep).round().astype(int))


def least_squares(A: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Minimum-norm least squares with columns scaled to unit RMS (zero columns get 0)."""
    if A.shape[1] == 0:
        return np.zeros(0)
    scale = np.sqrt(np.mean(A * A, axis=0))
    usable = np.isfinite(scale) & (scale > 0)
    coefficients = np.zeros(A.shape[1])
    if usable.any():
        solution = np.linalg.lstsq(A[:, usable] / scale[usable], y, rcond=None)[0]
        coefficients[usable] = solution / scale[usable]
    return coefficients


def rmse(A: np.ndarray, coefficients: np.ndarray, y: np.ndarray) -> float:
    """Training RMSE of ``A @ coefficients`` against ``y``."""
    with np.errstate(all="ignore"):
        residual = A @ coefficients - y
        return float(np.sqrt(np.mean(residual * residual)))


def prune_negligible(A: np.ndarray, y: np.ndarray, coefficients: np.ndarray,
                     active: np.ndarray | None = None) -> np.ndarray:
    """Drop negligible terms and refit (the module's conservative rule); returns coefficients."""
    active = np.ones(A.shape[1], dtype=bool) if active is None else active.copy()
    scale = float(np.sqrt(np.mean(y * y))) or 1.0
    best, best_rmse = coefficients, rmse(A, coefficients, y)
    for _ in range(MAX_PRUNE_ROUNDS):
        contribution = np.abs(best) * np.sqrt(np.mean(A * A, axis=0))
        negligible = active & (contribution <= PRUNE_CONTRIBUTION_RTOL * scale)
        if not negligible.any():
            break
        trial_active = active & ~negligible
        trial = np.zeros_like(best)
        trial[trial_active] = least_squares(A[:, trial_active], y)
        trial_rmse = rmse(A, trial, y)
        if trial_rmse > best_rmse * (1 + PRUNE_RMSE_RTOL) + PRUNE_RMSE_ATOL * scale:
            break
        active, best, best_rmse = trial_active, trial, min(best_rmse, trial_rmse)
    return best


def interaction_filter(inputs: Sequence[DataTerm], blacklist: Any, whitelist: Any) -> Any:
    """A predicate on input-index sets from black/white lists of input pairs (or None)."""
    black = _pairs(inputs, blacklist, "interaction_blacklist")
    white = _pairs(inputs, whitelist, "interaction_whitelist")
    if black is None and white is None:
        return None

    def allowed(used: frozenset[int]) -> bool:
        pairs = {frozenset(p) for p in itertools.combinations(sorted(used), 2)}
        return not (black and pairs & black) and (white is None or pairs <= white)

    return allowed


def _pairs(inputs: Sequence[DataTerm], pairs: Any, name: str) -> set[frozenset[int]] | None:
    if pairs is None:
        return None
    if not isinstance(pairs, list) or len(pairs) > MAX_TERMS:
        raise ToolArgumentError(f"The {name!r} parameter must be a list of at most {MAX_TERMS} "
                                'pairs such as [["x1", "x2"]].', parameter=name)
    index = {term.text: i for i, term in enumerate(inputs)}
    found: set[frozenset[int]] = set()
    for pair in pairs:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise ToolArgumentError(f"Each entry of {name!r} must be a pair of inputs like "
                                    f'["x1", "x2"]. Got {pair!r:.60} instead.', parameter=name)
        found.add(frozenset(_input_index(index, item, name) for item in pair))
    return found


def _input_index(index: dict[str, int], item: Any, name: str) -> int:
    text = item.strip() if isinstance(item, str) else item
    if text not in index:
        try:
            text = engine.to_str(engine.parse(str(text)))
        except engine.EngineError:
            pass
    if text not in index:
        raise ToolArgumentError(f"{name!r} names {item!r:.60}, which is not one of the inputs: "
                                f"{', '.join(index)}.", parameter=name)
    return index[text]


@BaseTool.register("polynomial_fit")
class PolynomialFitTool(FormulaTool):
    """Least-squares polynomial in the given inputs, pruned of negligible terms."""

    def execute(
        self,
        x: list[str] | None = None,
        y: str | None = None,
        max_degree: int = 2,
        include_interactions: bool = True,
        interaction_blacklist: list[list[str]] | None = None,
        interaction_whitelist: list[list[str]] | None = None,
        include_bias: bool = True,
        simplify: bool = True,
        show_diagnostics: bool = True,
    ) -> dict[str, Any]:
        """Fit y as a polynomial of the inputs by linear least squares on the training split.

        Use it for smooth relationships, interactions (x1*x2) and as a quick
        baseline. Coefficients are plain floats; pass the result to
        constant_fit to turn 0.4999999 into 1/2. The result is a candidate
        when y is the target and no input uses the target.

        Args:
            x: Inputs: variable names or expressions such as ["x1", "x1*x2", "sin(x3)"].
                Default: every numeric feature (at most 16).
            y: Target variable or expression such as "log(y)". Default: the target.
            max_degree: Highest total degree of a monomial, 1 to 8.
            include_interactions: Allow monomials mixing inputs (x1*x2); false keeps pure powers.
            interaction_blacklist: Input pairs that must never appear together, e.g. [["x1", "x2"]].
            interaction_whitelist: If given, only these input pairs may appear together.
            include_bias: Fit a constant term.
            simplify: Drop terms whose contribution is negligible (relative 1e-7 of the
                target's RMS) and refit the rest.
            show_diagnostics: Add residual diagnostics (worst rows, residual correlations).
        """
        degree = self.check_int("max_degree", max_degree, 1, MAX_DEGREE)
        target = self.target_term(y)
        inputs = self.input_terms(x, target)
        allowed = interaction_filter(inputs, interaction_blacklist, interaction_whitelist)
        exponents, terms = distinct_monomials(inputs, monomial_exponents(
            len(inputs), degree, include_bias=include_bias,
            include_interactions=include_interactions, allowed=allowed))
        data = self.training_data(inputs, target)
        rows = subsample_rows(data.y.size, len(exponents))
        A, b = monomial_columns(data.X[rows], exponents), data.y[rows]
        coefficients = least_squares(A, b)
        if simplify:
            coefficients = prune_negligible(A, b, coefficients)
        formula = linear_combination(coefficients, terms)
        kept = {engine.to_str(t): float(c) for c, t in zip(coefficients, terms, strict=True) if c}
        details = {"parameters": {"coefficients": kept, "n_terms_library": len(terms),
                                  "n_terms_kept": len(kept), "n_fit_rows": int(rows.size)}}
        return self.evaluate_formula(formula, target, show_diagnostics=show_diagnostics,
                                     details=details)

    @classmethod
    def summary_lines(cls, result: Mapping[str, Any]) -> list[str]:
        """How many library terms survived."""
        parameters = result.get("parameters") or {}
        return [f"kept {parameters.get('n_terms_kept')} of {parameters.get('n_terms_library')} "
                f"monomials (fitted on {parameters.get('n_fit_rows')} training rows)"]
