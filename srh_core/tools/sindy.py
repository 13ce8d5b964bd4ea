"""call_sindy (alias sindy): sparse regression (STLSQ) over a polynomial (+ sin/cos) library.

Our own sequentially thresholded least squares, no pysindy: library columns
and the target are scaled to unit RMS, so a coefficient is the term's share of
the target's scale; coefficients below ``threshold`` are zeroed and the rest
refitted until the support stops changing. The support is then refitted on
the unscaled columns. Rows beyond ``max_samples`` are subsampled evenly
(deterministic).

Derivative targets (SINDy proper): ``y`` may be a given derivative column;
when the data holds trajectories but no derivative, ``derivative_of="x"`` fits
``dx/dt`` estimated numerically from ``x`` and the time ``time`` (finite
differences or a smoothing spline, :mod:`srh_core.tools.derivatives`), and the
result also reports the rollout RMSE of ``dx/dt = f`` per split. Such a formula
is scored against the numerical derivative, so it is not a candidate for the
run's target.

Graph data (``num_nodes`` in the context): the library holds the node terms
(monomials and sin/cos of the node fields at node ``i``) and coupling terms
``sum[j](A[i, j], m)`` for ``m = 1`` and every monomial ``m`` of the node fields
at both endpoints ``i`` and ``j`` up to ``coupling_degree`` (and, with
``include_trig``, ``sin``/``cos`` of ``u[j] - u[i]``), over the relation
``relation``; the found formula is an indexed formula.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core.errors import ToolArgumentError
from srh_core.evaluator.default import rollout_rmse
from srh_core.evaluator.metrics import regression_metrics
from srh_core.tools.base import BaseTool
from srh_core.tools.derivatives import MIN_POINTS, Differentiation, time_derivative
from srh_core.tools.formula import (
    DataTerm,
    FormulaTool,
    evaluate_on,
    formula_text,
    linear_combination,
)
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
MAX_COUPLING_DEGREE = 3
MAX_GRAPH_TERMS = 120
"""Most library terms of a graph library (node and coupling terms together)."""


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


def _indexed(term: DataTerm, index: str) -> engine.Expression:
    """A node field read at ``index``: ``x`` -> ``x[index]`` (symbols only)."""
    return engine.Indexed(term.expression, (engine.Index(index),))


def _monomials(factors: list[engine.Expression], degree: int) -> list[engine.Expression]:
    from itertools import combinations_with_replacement

    terms: list[engine.Expression] = []
    for order in range(1, degree + 1):
        for combo in combinations_with_replacement(range(len(factors)), order):
            product = factors[combo[0]]
            for k in combo[1:]:
                product = engine.Binary("*", product, factors[k])
            terms.append(product)
    return terms


def graph_library(inputs: list[DataTerm], relation: str, degree: int, coupling_degree: int,
                  include_trig: bool) -> list[engine.Expression]:
    """Node terms and coupling sums over ``relation`` (see the module docstring)."""
    at_i = [_indexed(term, "i") for term in inputs]
    at_j = [_indexed(term, "j") for term in inputs]
    terms: list[engine.Expression] = [engine.Number(1), *_monomials(at_i, degree)]
    if include_trig:
        terms += [engine.sin(u) for u in at_i] + [engine.cos(u) for u in at_i]
    edge = engine.Indexed(engine.Symbol(relation), (engine.Index("i"), engine.Index("j")))
    # messages without a j factor are node terms weighted by the in-degree (diffusion's -x[i])
    messages = [engine.Number(1), *_monomials(at_i + at_j, coupling_degree)]
    if include_trig:
        messages += [f(uj - ui) for ui, uj in zip(at_i, at_j, strict=True)
                     for f in (engine.sin, engine.cos)]
    terms += [engine.Reduction((engine.Index("j"),), message, edge) for message in messages]
    return terms


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
        derivative_of: str | None = None,
        time: str = "t",
        differentiation: Differentiation = "finite_difference",
        coupling_degree: int = 2,
        relation: str | None = None,
    ) -> dict[str, Any]:
        """Find a sparse formula: y as a few terms of a polynomial (+ sin/cos) library (STLSQ).

        Use it when y is likely a short sum of powers, products and (with
        include_trig) sin/cos of the inputs; it is the classic tool for
        derivative targets dx/dt = f(x, ...). Terms whose scaled coefficient is
        below threshold are dropped repeatedly until the set is stable. The
        result is a candidate when y is the target. On graph data the library
        also holds coupling sums sum[j](A[i, j], m) of monomials m of the node
        fields at both ends of each edge.

        Args:
            x: Inputs: names or expressions such as ["x1", "sin(x2)"]; on graph data the node
                fields. Default: every numeric feature (node fields on graph data).
            y: Target variable or expression. Default: the target.
            poly_degree: Highest total degree of the polynomial terms, 1 to 5.
            include_trig: Add sin(x) and cos(x) of every input (and, on graphs, sin/cos of
                x[j] - x[i] in the coupling) to the library.
            threshold: Smallest kept coefficient, as a share of the target's RMS when terms are
                scaled to unit RMS, 0.01 to 1 (larger gives shorter formulas).
            max_samples: Training rows used (evenly subsampled when there are more), 50 to 100000.
            show_diagnostics: Add residual diagnostics.
            derivative_of: Fit d(state)/dt of this state variable, differentiated numerically
                from its trajectories (when the data has no derivative column); y is then unused.
            time: Time variable of the trajectories, for derivative_of.
            differentiation: "finite_difference" (exact data) or "smoothing_spline" (noisy data).
            coupling_degree: Graph data: highest degree of the coupling monomials, 1 to 3.
            relation: Graph data: the relation to couple over. Default: the only relation.
        """
        degree = self.check_int("poly_degree", poly_degree, 1, MAX_POLY_DEGREE)
        cutoff = self.check_float("threshold", threshold, MIN_THRESHOLD, MAX_THRESHOLD)
        limit = self.check_int("max_samples", max_samples, MIN_SAMPLES, MAX_SAMPLES)
        context = self.require_context()
        if derivative_of is not None:
            return self._numerical_derivative(x, derivative_of, time, differentiation, degree,
                                              include_trig, cutoff, limit, coupling_degree,
                                              relation)
        target = self.target_term(y)
        if context.num_nodes is not None:
            inputs = self._node_inputs(x, target)
            terms = self._graph_terms(inputs, degree, coupling_degree, include_trig, relation)
            columns, b = self._term_columns(terms, target.expression, limit)
            return self._fit_terms(terms, columns, b, cutoff, target, show_diagnostics)
        inputs = self.input_terms(x, target)
        exponents = monomial_exponents(len(inputs), degree, include_bias=True)
        every_term, distinct = sindy_terms(inputs, exponents, include_trig)
        terms = [every_term[i] for i in distinct]
        data = self.training_data(inputs, target)
        rows = subsample_rows(data.y.size, 1, limit=limit)
        rows = rows[subsample_rows(rows.size, len(every_term))]  # and a bounded design matrix
        A = sindy_columns(data.X[rows], exponents, include_trig)[:, distinct]
        return self._fit_terms(terms, A, data.y[rows], cutoff, target, show_diagnostics)

    # ------------------------------------------------------------------ fitting
    def _sparse_fit(self, terms: list[engine.Expression], A: np.ndarray, b: np.ndarray,
                    cutoff: float) -> tuple[engine.Expression, dict[str, Any]]:
        support = stlsq(A, b, cutoff)
        coefficients = np.zeros(A.shape[1])
        coefficients[support] = least_squares(A[:, support], b)
        coefficients = prune_negligible(A, b, coefficients, support)
        formula = linear_combination(coefficients, terms)
        kept = {engine.to_str(t): float(c) for c, t in zip(coefficients, terms, strict=True) if c}
        details: dict[str, Any] = {"parameters": {
            "coefficients": kept, "library_size": len(terms), "n_fit_rows": int(b.size),
            "train_rmse": rmse(A, coefficients, b)}}
        if not kept:
            details["warnings"] = ["every term fell below the threshold; lower it"]
        return formula, details

    def _fit_terms(self, terms: list[engine.Expression], A: np.ndarray, b: np.ndarray,
                   cutoff: float, target: DataTerm, show_diagnostics: bool) -> dict[str, Any]:
        formula, details = self._sparse_fit(terms, A, b, cutoff)
        return self.evaluate_formula(formula, target, show_diagnostics=show_diagnostics,
                                     details=details)

    # -------------------------------------------------------------- graph data
    def _node_inputs(self, x: list[str] | None, target: DataTerm) -> list[DataTerm]:
        context = self.require_context()
        layout = context.layout
        node_fields = [name for name in layout.sample_names(context.data)
                       if name != context.target and name not in layout.variable_structures
                       and context.data[name].ndim == 2
                       and context.data[name].shape[-1] == context.num_nodes]
        names = node_fields if x is None else list(x)
        if not names:
            raise ToolArgumentError("The data has no node field (shape (samples, num_nodes)) "
                                    "to build a graph library from; pass x.", parameter="x")
        for name in names:
            if name not in node_fields:
                raise ToolArgumentError(f"On graph data the inputs of sindy are node fields "
                                        f"({', '.join(node_fields)}); got {name!r}.",
                                        parameter="x")
        return [DataTerm(name, engine.Symbol(name)) for name in names]

    def _graph_terms(self, inputs: list[DataTerm], degree: int, coupling_degree: int,
                     include_trig: bool, relation: str | None) -> list[engine.Expression]:
        context = self.require_context()
        coupling = self.check_int("coupling_degree", coupling_degree, 1, MAX_COUPLING_DEGREE)
        relations = sorted(name for name in context.relation_names
                           if context.data[name].shape[1] == 2)
        if relation is None and len(relations) != 1:
            raise ToolArgumentError(f"Name the relation to couple over: one of {relations}.",
                                    parameter="relation")
        chosen = relation or relations[0]
        if chosen not in relations:
            raise ToolArgumentError(f"relation must be a binary relation of the data "
                                    f"({', '.join(relations)}); got {chosen!r}.",
                                    parameter="relation")
        terms = graph_library(inputs, chosen, degree, coupling, include_trig)
        if len(terms) > MAX_GRAPH_TERMS:
            raise ToolArgumentError(f"The graph library would have {len(terms)} terms (at most "
                                    f"{MAX_GRAPH_TERMS}); lower poly_degree or coupling_degree, "
                                    "or pass fewer x.", parameter="poly_degree")
        return terms

    def _term_columns(self, terms: list[engine.Expression], target: engine.Expression | None,
                      limit: int, y: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Columns of every term and the target on the training split, complete rows only."""
        split = self.require_context().train_split
        values = [evaluate_on(target, split) if target is not None else y]
        shape = np.shape(values[0])
        values += [evaluate_on(term, split) for term in terms]
        matrix = np.column_stack([np.broadcast_to(np.asarray(v, dtype=float), shape).reshape(-1)
                                  for v in values])
        matrix = matrix[np.isfinite(matrix).all(axis=1)]
        if matrix.shape[0] < 3:
            raise ToolArgumentError("Fewer than 3 training values have a finite target and "
                                    "finite library terms.", parameter="y")
        keep = subsample_rows(matrix.shape[0], len(terms) + 1, limit=limit * 40)
        return matrix[keep, 1:], matrix[keep, 0]

    # ------------------------------------------------ numerically differentiated
    def _numerical_derivative(self, x: list[str] | None, state: str, time: str,
                              method: Differentiation, degree: int, include_trig: bool,
                              cutoff: float, limit: int, coupling_degree: int,
                              relation: str | None) -> dict[str, Any]:
        context = self.require_context()
        for name, parameter in ((state, "derivative_of"), (time, "time")):
            if name not in context.data:
                raise ToolArgumentError(f"The {parameter!r} parameter names {name!r}, which is "
                                        f"not in the data; variables: {self.variable_listing()}.",
                                        parameter=parameter)
        if method not in MIN_POINTS:
            raise ToolArgumentError(f"differentiation must be one of {sorted(MIN_POINTS)}; got "
                                    f"{method!r}.", parameter="differentiation")
        split = context.train_split
        derivative = time_derivative(split.data[state], split.data[time], method)
        if context.num_nodes is not None:
            inputs = self._node_inputs(x or [state], DataTerm(state, engine.Symbol(state)))
            terms = self._graph_terms(inputs, degree, coupling_degree, include_trig, relation)
        else:
            inputs = self.input_terms(x, DataTerm(time, engine.Symbol(time)))
            inputs = [term for term in inputs if term.text != time] or inputs
            exponents = monomial_exponents(len(inputs), degree, include_bias=True)
            every_term, distinct = sindy_terms(inputs, exponents, include_trig)
            terms = [every_term[i] for i in distinct]
        A, b = self._term_columns(terms, None, limit, y=derivative)
        formula, details = self._sparse_fit(terms, A, b, cutoff)
        return self._derivative_result(formula, details, state, time, method)

    def _derivative_result(self, f: engine.Expression, details: dict[str, Any], state: str,
                           time: str, method: Differentiation) -> dict[str, Any]:
        context = self.require_context()
        splits = {"train": context.train_split, "validation": context.validation_split}
        scores = {}
        for name, split in splits.items():
            if split is None:
                continue
            truth = time_derivative(split.data[state], split.data[time], method)
            entry = regression_metrics(f, truth, evaluate_on(f, split))
            entry["rollout_rmse"] = rollout_rmse(f, split, state, time)
            scores[name] = {k: (v.item() if isinstance(v, np.generic) else v)
                            for k, v in entry.items()}
        return {"formula": formula_text(f), "is_candidate": False,
                "target": f"d{state}/dt ({method.replace('_', ' ')} of {state})",
                "metrics": scores, **details,
                "warnings": [*details.get("warnings", []),
                             f"not a candidate: fitted against the numerical derivative of "
                             f"{state!r}, not the target"]}

    @classmethod
    def summary_lines(cls, result: Mapping[str, Any]) -> list[str]:
        """How many library terms survived the thresholding."""
        parameters = result.get("parameters") or {}
        return [f"kept {len(parameters.get('coefficients', {}))} of "
                f"{parameters.get('library_size')} library terms (fitted on "
                f"{parameters.get('n_fit_rows')} training rows)"]
