"""SRHarnessRegressor: the search behind scikit-learn's estimator conventions.

No scikit-learn import is needed: the class follows the conventions
(arguments stored untouched, ``get_params``/``set_params``, fitted state in
attributes ending with ``_``), so ``sklearn.base.clone`` and pipelines work
when scikit-learn is installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from srh_core.agent.settings import SearchSettings
from srh_core.errors import ConfigurationError, DataError, SRHarnessError, did_you_mean
from srh_core.types import SearchResult


class NotFittedError(SRHarnessError, ValueError, AttributeError):
    """``predict`` or ``score`` was called before ``fit``."""


class SRHarnessRegressor:
    """Symbolic regression estimator (``fit`` runs an embedded R-C-L-K search).

    Args:
        **settings: Any :class:`~srh_core.agent.SearchSettings` field
            (``llm_provider``, ``max_refinement_depth``, ``local_sample_size``, ...).

    Attributes:
        best_formula_: The best formula found (engine syntax).
        pareto_front_: The Pareto front, best first, as candidate dicts.
        result_: The full :class:`~srh_core.types.SearchResult`.
        feature_names_in_: Variable names used for the columns of X.
        n_features_in_: Number of columns of X.
    """

    def __init__(self, **settings: Any) -> None:
        self._settings = dict(settings)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return dict(self._settings)

    def set_params(self, **params: Any) -> SRHarnessRegressor:
        for name in params:
            if name not in SearchSettings.model_fields:
                raise ConfigurationError(f"Invalid parameter {name!r} for SRHarnessRegressor."
                                         f"{did_you_mean(name, SearchSettings.model_fields)}",
                                         setting=name)
        self._settings.update(params)
        return self

    def __repr__(self) -> str:
        arguments = ", ".join(f"{k}={v!r}" for k, v in self._settings.items())
        return f"SRHarnessRegressor({arguments})"

    def fit(self, X: Any, y: Any, variable_names: Sequence[str] | None = None,
            problem_description: str = "") -> SRHarnessRegressor:
        """Search for a formula y = f(X).

        Args:
            X: ``(n_samples, n_features)`` array, or a DataFrame (column names used).
            y: ``(n_samples,)`` array or Series.
            variable_names: Names of X's columns (default: DataFrame columns or x0, x1, ...).
            problem_description: What the data is, for the model.
        """
        from srh_core.agent import SRAgent

        names, matrix = _named_columns(X, variable_names)
        target = _target_name(y, names)
        agent = SRAgent(**self._settings)
        data = {name: matrix[:, i] for i, name in enumerate(names)}
        result = SearchResult.from_dict(agent.run(data, {target: _vector(y, len(matrix))},
                                                  problem_description))
        self.result_ = result
        self.feature_names_in_ = list(names)
        self.n_features_in_ = len(names)
        self.best_formula_ = result.best.formula if result.best is not None else None
        self.pareto_front_ = [candidate.to_dict() for candidate in result.front()]
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Evaluate the best formula on X (columns as in ``fit``)."""
        from srh_engine import parse

        if getattr(self, "best_formula_", None) is None:
            raise NotFittedError("This SRHarnessRegressor is not fitted (or found no formula); "
                                 "call fit(X, y) first.")
        if getattr(X, "columns", None) is not None:
            X = X[self.feature_names_in_]  # a DataFrame: pick the fitted columns by name
        names, matrix = _named_columns(X, self.feature_names_in_)
        values = {name: matrix[:, i] for i, name in enumerate(names)}
        with np.errstate(all="ignore"):
            predicted = parse(self.best_formula_).evaluate(values)
        return np.broadcast_to(np.asarray(predicted, dtype=float), (len(matrix),)).copy()

    def score(self, X: Any, y: Any) -> float:
        """Coefficient of determination R^2 of ``predict(X)``."""
        truth = _vector(y, None)
        predicted = self.predict(X)
        total = float(np.sum((truth - truth.mean()) ** 2))
        residual = float(np.sum((truth - predicted) ** 2))
        return 1.0 - residual / total if total > 0 else float(residual == 0.0)


def _named_columns(X: Any, names: Sequence[str] | None) -> tuple[list[str], np.ndarray]:
    columns = getattr(X, "columns", None)
    matrix = np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X, dtype=float)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.ndim != 2:
        raise DataError(f"X must be 2-D (n_samples, n_features); got shape {matrix.shape}.")
    chosen = list(names if names is not None else (columns if columns is not None
                                                    else [f"x{i}" for i in
                                                          range(matrix.shape[1])]))
    if len(chosen) != matrix.shape[1]:
        raise DataError(f"X has {matrix.shape[1]} columns but {len(chosen)} variable names "
                        f"were given: {chosen}.")
    return [str(name) for name in chosen], matrix


def _target_name(y: Any, features: Sequence[str]) -> str:
    name = getattr(y, "name", None)
    name = name if isinstance(name, str) and name.isidentifier() else "y"
    return name if name not in features else f"{name}_target"


def _vector(y: Any, length: int | None) -> np.ndarray:
    vector = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y, dtype=float).ravel()
    if length is not None and len(vector) != length:
        raise DataError(f"y has {len(vector)} values but X has {length} rows.", variable="y")
    return vector
